"""A latch also stops what rests. When the daily loss limit, the drawdown or the cooldown turns trading
reducing, the orders Pilot's agent left resting that could grow a position are cancelled through the gate,
with the dead-man's switch's machinery (pilot.app.service.dead_man: `opening_orders`, `cancel_each`, the
send turn): each cancel judged by the message throttles and journaled, the rest in the next rounds.

It runs between calls (pilot.app.service.upkeep: every second in `pilot serve`, and once at start-up), so a
latch journaled by any process of the home, on any host sharing its store, is answered within a round by
whichever process looks first: the look is taken under the send turn (a lease in the store), and the
first to find orders journals one `latch.cancel` entry naming the latch (its entry's seq) and the orders;
the next finds them gone. A process that found nothing resting that could open a position for a latch
does not look again for it (a newer latch is looked at afresh); while an exit it kept rests, it looks every
round, since that exit opens a position the other way once its own is gone (its stop hit, a close).

Which orders could grow is the core's rule (pilot.core.risk.is_risk_reducing): a spot buy; a linear order
that is not reduce-only, unless it is on the other side of the position and, with the orders on its side
kept before it (oldest first), no larger than the position. So an exit resting against a position (a limit
sell of a long) stays, and so does every reduce-only order.
"""

from __future__ import annotations

from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.road.gate import TurnBusy
from pilot.app.runtime.latches import holding_latch
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.dead_man import cancel_each, described, opening_orders
from pilot.core.facts import OrderIntent, OrderType, PendingOrders, Side
from pilot.core.risk import is_risk_reducing
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ExchangeOrder
from pilot.store import JournalEntry


async def stop_what_rests(runtime: Runtime) -> None:
    """One look: while a latch holds, cancel the resting orders that could grow a position."""
    now = runtime.now()
    latch = holding_latch(runtime.policy().policy, await runtime.ledger.state(now), now)
    if latch is None or runtime.latch_swept == latch.seq:
        return
    try:
        async with runtime.gate.turn():  # one process at a time, and it sees what another already did
            await _sweep(runtime, latch)
    except TurnBusy:
        return  # another process is sending: look again next round


async def _sweep(runtime: Runtime, latch: JournalEntry) -> None:
    found = await growing_orders(runtime)
    if found is None:
        return  # a read failed: the next round
    opening, orders = found
    if not orders:
        if not opening and not (await runtime.ledger.state(runtime.now())).unsettled:
            runtime.latch_swept = latch.seq  # nothing rests, nothing may yet: done for this latch
        return  # an exit kept grows once its position is gone (its stop, a close): looked at each round
    last = await runtime.store.journal.latest(entry_kinds.LATCH_CANCEL)
    named = {o.get("order_id") for o in last.data.get("orders", ())} if last is not None else set()
    if (
        last is None
        or last.data.get("latch_seq") != latch.seq
        or any(o.order_id not in named for o in orders)
    ):
        data = {
            "latch": latch.kind,
            "latch_seq": latch.seq,
            "orders": [described(order) for order in orders],
        }
        await runtime.store.journal.append(entry_kinds.LATCH_CANCEL, data, now=runtime.now(), actor="pilot")
    await cancel_each(runtime, orders, latch.kind)


async def growing_orders(runtime: Runtime) -> tuple[list[ExchangeOrder], list[ExchangeOrder]] | None:
    """The orders Pilot's agent left resting that can open a position, and of them those that could grow
    one now (None: the positions could not be read while a linear order needs them; a failed list of one
    category is left for the next round)."""
    orders = sorted(await opening_orders(runtime), key=lambda order: order.created_at)
    positions: dict[str, Decimal] = {}
    if any(order.category == "linear" for order in orders):
        try:
            positions = {p.symbol: p.size for p in await runtime.exchange.get_positions("linear")}
        except ExchangeError:
            return None
    kept: dict[str, PendingOrders] = {}  # the exits kept so far, by market
    growing = []
    for order in orders:
        side = Side.BUY if order.side == "Buy" else Side.SELL
        left = order.qty - order.cum_exec_qty
        intent = OrderIntent(order.symbol, side, left, OrderType.LIMIT, order.price, category=order.category)
        exits = kept.get(order.symbol, PendingOrders())
        held = positions.get(order.symbol, Decimal(0))
        if order.category == "linear" and is_risk_reducing(held, intent, exits):
            kept[order.symbol] = _with(exits, side, left)
        else:
            growing.append(order)
    return orders, growing


def _with(pending: PendingOrders, side: Side, qty: Decimal) -> PendingOrders:
    if side is Side.BUY:
        return PendingOrders(pending.buy_qty + qty, pending.sell_qty)
    return PendingOrders(pending.buy_qty, pending.sell_qty + qty)
