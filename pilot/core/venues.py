"""How a venue applies stops, declared once per venue: what the core's judgement of the loss at the stops
assumes, in Pilot's words rather than any venue's parameter names.

What every venue Pilot trades on does, so no field says it: a position's stop-loss lives on the position.
A whole stop closes all of the position, whatever its size when it triggers, and a new one replaces the old;
partial stops each close their own size and add up beside the whole one; a fill that closes or flips the
position takes its stops with it; a stop or a target is set only on a position, beyond the price now. What a
cancel-all reaches is the venue port's to say in Pilot's words (`include_stops`): each adapter makes its venue
keep the position's stops, or take them, as asked.

What differs, and is declared here: what a stop-loss sent with an order becomes once the order fills, on each
product. Each adapter names its venue's profile (pilot.exchange.bybit.adapter.BybitExchange.profile,
pilot.exchange.okx.adapter.OkxExchange.profile); the use cases read it from their reader
(`ExchangeReader.profile`) and hand it to the core (`Facts.venue`, and the stop checks, as the scope of the
product they judge: `VenueProfile.scope`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class StopScope(StrEnum):
    """What a stop-loss sent with an order covers once the order fills."""

    POSITION = "position"  # the whole position: it becomes the position's stop, replacing the one it had
    ORDER = "order"  # the quantity that filled: a partial stop of its own, beside the position's others


WHOLE_POSITION = StopScope.POSITION  # read as a module name on the hot path (pilot.core.facts says why)


@dataclass(frozen=True, slots=True)
class VenueProfile:
    """How one venue applies stops.

    Attributes:
        name: the venue, as a human reads it.
        order_stop: on a perpetual (linear), what a stop-loss sent with an order becomes once the order
            fills; orders are sent asking for exactly this (OrderRequest.stop_scope).
        spot_order_stop: the same on spot, where the coin held is the position.
    """

    name: str
    order_stop: StopScope
    spot_order_stop: StopScope = StopScope.ORDER

    def scope(self, category: str) -> StopScope:
        """What a stop-loss sent with an order in `category` covers once the order fills."""
        return self.spot_order_stop if category == "spot" else self.order_stop


# Bybit V5: a stop-loss sent with a linear create in the whole-position mode (which Pilot asks for on every
# linear create that carries one) becomes the position's stop once the order fills, replacing its stop. On
# spot a stop-loss sent with a limit order becomes, once it fills, a TP/SL order of its own that sells the
# quantity that filled when the trigger is reached, and holds that coin meanwhile (create-order.mdx,
# takeProfit / stopLoss and orderFilter tpslOrder): it protects that quantity, not the coin held before.
BYBIT = VenueProfile(name="Bybit", order_stop=StopScope.POSITION, spot_order_stop=StopScope.ORDER)

# OKX v5: a stop-loss sent with a create (attachAlgoOrds) becomes a TP/SL algo order for the quantity that
# filled, once the order is done (filled, or partly filled with the rest cancelled): a partial stop of its
# own beside the position's others, never the whole position's (OKX's announcement on attached TP/SL, 2026;
# docs-v5 "Place order", attachAlgoOrds). The whole position's stop is an algo order of its own
# (closeFraction 1), which set_trading_stop sets (pilot.exchange.okx.order_writes).
OKX = VenueProfile(name="OKX", order_stop=StopScope.ORDER)
