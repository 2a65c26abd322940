"""The coin held on spot and the spot orders that sell it at a trigger: what cancelling one of them, or all of
them, is judged on (the same stop rules as a position's stops: pilot.core.stops.check_stop_change), and which
spot orders a cancel must name by their kind (a spot TP/SL or conditional order is found only so).

On spot the position is the coin held. Its stops are the spot orders waiting to sell it below the price (a
stop sent with a buy becomes one of them once the buy fills, for what it bought); what none sells can lose
its whole value (pilot.core.stops.Exposure.held). Cancelling one takes its coin out from under a stop: judged
as any removal of a stop, it must keep the holding's loss within maxLossPerTradeUsd/Pct and a stop on all of
it under requireStopLoss, and it is refused unless trading is active.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from decimal import Decimal

from pilot.app.answers.responses import Refusal
from pilot.app.facts.pending import partial_stop_legs, spot_stops
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import Position
from pilot.core.stops import Exposure, check_stop_change
from pilot.core.violations import NextAction, ToolCall, plain
from pilot.exchange.models import ExchangeOrder


@dataclass(frozen=True, slots=True)
class SpotHolding:
    """The coin held on one spot market, with the stops selling it, and what judging a change needs."""

    position: Position  # size: the coin held; partial_stops: the spot stop orders below the bid
    bid: Decimal
    equity: Decimal | None
    orders: tuple[ExchangeOrder, ...]

    def exposure(self, without: frozenset[str] = frozenset()) -> Exposure:
        """The holding as the loss rules see it, without the stops of the orders in `without`."""
        legs = tuple(leg for leg in self.position.partial_stops if leg.order_id not in without)
        return Exposure.held(replace(self.position, partial_stops=legs), self.bid)


async def spot_holding(runtime: Runtime, symbol: str) -> SpotHolding:
    """Read the coin held, its stops, the bid and the equity.

    Raises:
        ExchangeError: a read failed.
    """
    exchange = runtime.exchange
    rules, balance, touch, orders = await asyncio.gather(
        exchange.get_instrument("spot", symbol),
        exchange.get_balance(),
        exchange.get_touch("spot", symbol),
        exchange.get_open_orders("spot", symbol),
    )
    held = next((coin.wallet_balance for coin in balance.coins if coin.coin == rules.base), Decimal(0))
    legs = spot_stops(partial_stop_legs(orders), touch.bid)
    position = Position(symbol, held, Decimal(0), Decimal(1), partial_stops=legs)
    return SpotHolding(position, touch.bid, balance.total_equity_usd, tuple(orders))


def waiting_kind(
    orders: tuple[ExchangeOrder, ...] | list[ExchangeOrder], order_id: str | None, link: str | None
) -> str:
    """The kind of the spot order named, when it waits for a trigger ("" for an ordinary one, or none found)."""
    order = find(orders, order_id, link)
    return order.stop_order_type if order is not None and order.is_untriggered else ""


def find(
    orders: tuple[ExchangeOrder, ...] | list[ExchangeOrder], order_id: str | None, link: str | None
) -> ExchangeOrder | None:
    """The order named by its exchange id, else by its client id."""
    return next(
        (
            o
            for o in orders
            if (order_id and o.order_id == order_id) or (not order_id and o.order_link_id == link)
        ),
        None,
    )


def keep_spot_stops(symbol: str) -> NextAction:
    """What a refused removal of a spot stop offers: keep it; close_position sells the coin (cancelling the
    stops that hold it first) where the agent wants out."""
    close = ToolCall("close_position", {"symbol": symbol, "category": "spot"}, "sell the coin held instead")
    return NextAction.stop(
        "keep the stop on the coin held; to be rid of the coin, close_position sells it",
        human="raise maxLossPerTradeUsd/Pct, or turn requireStopLoss off, in policy.json",
        options=(close,),
    )


async def judge_spot_removal(
    runtime: Runtime, holding: SpotHolding, removed: frozenset[str], what: str
) -> Refusal | None:
    """Why taking the stops of the orders `removed` off the coin held may not go ahead, or None."""
    view = runtime.policy()
    symbol = holding.position.symbol
    if not any(leg.order_id in removed for leg in holding.position.partial_stops):
        return None  # no stop of the coin held goes (a take-profit, a buy waiting for a rise)
    state = await runtime.trading_state(view.policy)
    change = (holding.exposure(), holding.exposure(removed))
    keep = keep_spot_stops(symbol)
    violations = check_stop_change(view.policy, state, symbol, change, holding.equity, what, keep)
    if not violations:
        return None
    return Refusal("refused", violations[0].detail, tuple(violations), violations[0].next)


def what_cancel(order: ExchangeOrder) -> str:
    price = plain(order.trigger_price) if order.trigger_price is not None else "?"
    return f"cancelling the spot {order.stop_order_type} sell at {price}"
