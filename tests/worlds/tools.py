"""The tools beside plan_order in random worlds (issue 24): the cases an agent sends them, and what passes.

Cases are drawn from the account as it is when they are sent: an amend of an order resting now, a stop
moved closer, farther, off the tick, to the wrong side or removed, a cancel of an ordinary order or of a
position's stop, a cancel-all with or without the stops, a leverage lowered or raised past a cap, and
place_order with a plan id that is unknown, used or expired.

What passes is restated here apart from pilot.core, from docs/ and Bybit's documentation
(amend-order.mdx, trading-stop.mdx, set-leverage.mdx, cancel-order.mdx, cancel-all.mdx):

* an amend changes an ordinary order's total quantity and/or price (Bybit amends only what has not
  filled); the new total must be above what has filled, at least the instrument's minimum, and change
  something; the order it becomes (what is left of the new total, at the new price, with the stop it
  carries) is judged in place of the one resting, as any order is; shrinking at the same price always
  passes. An amend is never parked for a human: under `confirm.aboveNotionalUsd` it is sized to need none;
* a position's whole stop may move closer or be added whatever the policy says, if it lies beyond the price
  now (below it for a long: Bybit refuses a long's stop at or above the last price) and on the tick; moving
  it farther or removing it widens the loss: refused unless trading is active, and then it must keep the
  position's loss at its stops within the loss limit and a stop in place under requireStopLoss. A stop on
  a flat market is refused by Bybit (10001);
* cancelling an ordinary order always passes (every trading state); cancelling a stop-loss of the position
  is judged as removing it; cancel-all keeps the stops unless asked, and with them is judged the same way;
* lowering leverage passes unless trading is halted; raising it must stay within maxLeverage (the market's
  override) and the instrument's, in an allowed market, while trading is active.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from tests.worlds.at_stops import Fill, Protected, worst_left
from tests.worlds.oracle import ZERO, Miss, OpenOrder, Oracle, Order, ceil_steps, floor_steps
from tests.worlds.world import World, plain


@dataclass(frozen=True, slots=True)
class AmendCase:
    """plan_amend of an order resting now, and whether to place a plan that passes."""

    args: dict[str, Any]
    place: bool


@dataclass(frozen=True, slots=True)
class StopCase:
    """set_trading_stop on a market (usually one with a position)."""

    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CancelCase:
    """cancel_order of an order resting or waiting now (an ordinary one, or one of a position's TP/SL)."""

    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CancelAllCase:
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LeverageCase:
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LifecycleCase:
    """place_order with a plan id that is not a fresh one: unknown, already used, or expired."""

    kind: str  # "unknown" | "used" | "expired"


ToolCase = AmendCase | StopCase | CancelCase | CancelAllCase | LeverageCase | LifecycleCase

# How each tool's answer says it did what was asked (a read answers "ok").
SUCCESS = {
    "plan_order": frozenset({"ok"}),
    "plan_amend": frozenset({"ok"}),
    "place_order": frozenset({"filled", "partially_filled", "open", "cancelled", "accepted"}),
    "close_position": frozenset({"filled", "partially_filled", "open", "cancelled", "accepted"}),
    "cancel_order": frozenset({"done", "unchanged"}),
    "cancel_all_orders": frozenset({"done", "unchanged"}),
    "set_leverage": frozenset({"done", "unchanged"}),
    "set_trading_stop": frozenset({"done", "unchanged"}),
    "activate_kill_switch": frozenset({"done", "unchanged"}),
}
READ_OK = frozenset({"ok"})


def succeeded(tool: str, answer: dict[str, Any] | None) -> bool:
    return answer is not None and answer.get("status") in SUCCESS.get(tool, READ_OK)


# --- drawing the cases ----------------------------------------------------------------------------


def ordinary_orders(oracle: Oracle) -> list[OpenOrder]:
    return [o for o in oracle.account.open_orders if o.ordinary and o.order_id]


def stop_orders(oracle: Oracle) -> list[OpenOrder]:
    return [o for o in oracle.account.open_orders if not o.ordinary and o.order_id]


@st.composite
def amend_cases(draw: st.DrawFn, world: World, oracle: Oracle) -> AmendCase | None:
    resting = ordinary_orders(oracle)
    if not resting:
        return None
    order = draw(st.sampled_from(resting))
    instrument = world.instrument(order.category, order.symbol)
    assert instrument is not None
    step, tick = instrument.step, instrument.tick
    args: dict[str, Any] = {"symbol": order.symbol, "category": order.category, "order_id": order.order_id}
    change = draw(st.sampled_from(["qty", "qty", "price", "both"]))
    if change in ("qty", "both"):
        kind = draw(st.sampled_from(["half", "same", "double", "tenfold", "below_min", "off_step", "one"]))
        total = {
            "half": order.qty / 2,
            "same": order.qty,
            "double": order.qty * 2,
            "tenfold": order.qty * 10,
            "below_min": instrument.min_qty - step,
            "off_step": order.qty + step / 2,
            "one": order.qty + step,
        }[kind]
        if kind != "off_step":
            total = floor_steps(total, step) * step
        args["qty"] = plain(max(total, step / 2 if kind == "off_step" else step))
    if change in ("price", "both"):
        kind = draw(st.sampled_from(["near", "near", "away", "outside_band", "off_tick", "same"]))
        quote = oracle.quote(order.symbol)
        if kind == "same":
            price = order.price
        elif kind == "outside_band":
            price = order.price * (Decimal("1.08") if order.side == "buy" else Decimal("0.92"))
            price = floor_steps(price, tick) * tick
        else:
            toward = quote.bid if order.side == "buy" else quote.ask
            moved = draw(st.integers(-20, 20)) * tick
            price = (toward if kind == "near" else order.price) + moved
            if kind == "off_tick":
                price += tick / 3
        args["price"] = plain(max(price, tick).quantize(Decimal("1e-12")))
    return AmendCase(args, place=draw(st.booleans()))


@st.composite
def stop_cases(draw: st.DrawFn, world: World, oracle: Oracle) -> StopCase | None:
    linear = [i for i in world.instruments if not i.spot]
    if not linear:
        return None
    held = [i for i in linear if oracle.held(Order(i.symbol, "linear", "buy", "market")) != 0]
    instrument = draw(st.sampled_from(held if held and draw(st.integers(0, 5)) else linear))
    symbol, tick = instrument.symbol, instrument.tick
    size = oracle.held(Order(symbol, "linear", "buy", "market"))
    quote = oracle.quote(symbol)
    long = size >= 0
    current = oracle.protected(symbol).stop
    reference = min(quote.bid, quote.mark) if long else max(quote.ask, quote.mark)
    kind = draw(st.sampled_from(["closer", "farther", "farther", "remove", "new", "wrong_side", "off_tick"]))
    away = draw(st.sampled_from([Decimal("0.001"), Decimal("0.005"), Decimal("0.02"), Decimal("0.1")]))
    if kind == "remove":
        return StopCase({"symbol": symbol, "stop_loss": "0"})
    if kind == "closer" and current is not None:
        stop = (current + reference) / 2
    elif kind == "farther" and current is not None:
        stop = current * (1 - away) if long else current * (1 + away)
    elif kind == "wrong_side":
        stop = reference * (1 + away) if long else reference * (1 - away)
    else:
        stop = reference * (1 - away) if long else reference * (1 + away)
    stop = floor_steps(stop, tick) * tick if long else ceil_steps(stop, tick) * tick
    if kind == "off_tick":
        stop += tick / 3
    args: dict[str, Any] = {"symbol": symbol, "stop_loss": plain(max(stop, tick).quantize(Decimal("1e-12")))}
    if draw(st.integers(0, 4)) == 0:
        target = reference * (1 + away) if long else reference * (1 - away)
        if draw(st.booleans()):  # on the wrong side
            target = reference * (1 - away) if long else reference * (1 + away)
        args["take_profit"] = plain(max(floor_steps(target, tick) * tick, tick))
    return StopCase(args)


@st.composite
def cancel_cases(draw: st.DrawFn, world: World, oracle: Oracle) -> CancelCase | None:
    orders = ordinary_orders(oracle) + stop_orders(oracle)
    if not orders:
        return None
    order = draw(st.sampled_from(orders))
    return CancelCase({"symbol": order.symbol, "category": order.category, "order_id": order.order_id})


@st.composite
def cancel_all_cases(draw: st.DrawFn, world: World, oracle: Oracle) -> CancelAllCase:
    args: dict[str, Any] = {"category": draw(st.sampled_from(["linear", "linear", "spot"]))}
    if draw(st.booleans()):
        args["symbol"] = draw(st.sampled_from(world.symbols))
    if draw(st.booleans()):  # on spot too: its TP/SL and conditional orders (issue 36)
        args["include_stops"] = True
    return CancelAllCase(args)


@st.composite
def leverage_cases(draw: st.DrawFn, world: World, oracle: Oracle) -> LeverageCase | None:
    linear = [i for i in world.instruments if not i.spot]
    if not linear:
        return None
    instrument = draw(st.sampled_from(linear))
    current = oracle.leverage(instrument.symbol)
    policy_max = oracle.policy.limits(instrument.symbol).max_leverage
    leverage = draw(
        st.sampled_from(
            [
                max(current - 1, Decimal(1)),
                current,
                current + 1,
                policy_max,
                policy_max + 1,
                instrument.max_leverage + 5,
                Decimal(1),
            ]
        )
    )
    return LeverageCase({"symbol": instrument.symbol, "leverage": plain(leverage), "category": "linear"})


@st.composite
def tool_cases(draw: st.DrawFn, world: World, oracle: Oracle) -> ToolCase | None:
    """One case for a tool other than plan_order and close_position, or None when the account has nothing
    it can act on (no order to amend or cancel, no linear market)."""
    kind = draw(st.sampled_from(["amend"] * 4 + ["stop"] * 3 + ["cancel"] * 2 + ["all", "leverage", "life"]))
    if kind == "amend":
        return draw(amend_cases(world, oracle))
    if kind == "stop":
        return draw(stop_cases(world, oracle))
    if kind == "cancel":
        return draw(cancel_cases(world, oracle))
    if kind == "all":
        return draw(cancel_all_cases(world, oracle))
    if kind == "leverage":
        return draw(leverage_cases(world, oracle))
    return LifecycleCase(draw(st.sampled_from(["unknown", "used", "expired"])))


# --- what passes ----------------------------------------------------------------------------------


def find(oracle: Oracle, order_id: str) -> OpenOrder | None:
    return next((o for o in oracle.account.open_orders if o.order_id == order_id), None)


def amended(
    oracle: Oracle, resting: OpenOrder, total: Decimal, price: Decimal
) -> tuple[Oracle, Order, Decimal]:
    """The amended order as it is judged: what is left of the new total at the new price, carrying the
    resting order's stop, in an account where the resting order no longer counts."""
    kept = tuple(o for o in oracle.account.open_orders if o.order_id != resting.order_id)
    # and an amend's turnover is what it adds: what the resting order still may trade is taken out
    turnover = oracle.account.turnover - resting.leaves * resting.price
    without = Oracle(
        oracle.world, replace(oracle.account, open_orders=kept, turnover=turnover), reaches_human=False
    )
    order = Order(
        resting.symbol,
        resting.category,
        resting.side,
        "limit",
        price,
        resting.reduce_only,
        stop_loss=resting.stop_loss,
    )
    return without, order, total - (resting.qty - resting.leaves)


def amend_misses(oracle: Oracle, resting: OpenOrder, total: Decimal, price: Decimal) -> list[Miss]:
    """Why an amend of `resting` to `total` at `price` (both already on the grid) does not pass."""
    instrument = oracle.world.instrument(resting.category, resting.symbol)
    assert instrument is not None
    filled = resting.qty - resting.leaves
    if total <= filled:
        return [Miss("amend", "atMostFilled", f"{plain(total)} <= {plain(filled)} filled")]
    if total == resting.qty and price == resting.price:
        return [Miss("amend", "unchanged", "the same total and price")]
    if total < instrument.min_qty:
        return [Miss("grid", "minOrderQty", f"{plain(total)} < {plain(instrument.min_qty)}")]
    without, order, left = amended(oracle, resting, total, price)
    if total <= resting.qty and price == resting.price:  # shrinking at the same price: always allowed,
        return [m for m in oracle.misses(order, left) if m.kind == "throttle"]  # but it is a message
    # The exchange's own minimums are on the new total (checked above); the rest as for any order.
    return [
        miss
        for miss in without.misses(order, left)
        if miss.name not in ("minOrderQty", "minNotionalValue", "qtyStep")
        and not (miss.kind == "confirm" and without.reducing(order, left))
    ] + _confirm_misses(without, order, left)


def _confirm_misses(oracle: Oracle, order: Order, qty: Decimal) -> list[Miss]:
    """An amend is never parked: one that would need a human under aboveNotionalUsd does not pass."""
    above = oracle.policy.above_notional
    if above is None or oracle.reducing(order, qty) or qty * oracle.worst(order) <= above:
        return []
    if "place_order" in oracle.policy.confirm_actions:
        return []  # every order asks a human; the amend is judged without one
    return [Miss("confirm", "aboveNotionalUsd", f"{plain(qty * oracle.worst(order))} > {plain(above)}")]


def amend_witness(oracle: Oracle, resting: OpenOrder, asked_total: Decimal, price: Decimal) -> Decimal | None:
    """The largest total at `price`, at most what was asked, whose amend passes (None: none does). An amend
    asked to grow the order is answered by one that grows it: shrinking it is not what was asked."""
    instrument = oracle.world.instrument(resting.category, resting.symbol)
    assert instrument is not None
    step = instrument.step
    filled = resting.qty - resting.leaves
    low = max(floor_steps(filled, step) + 1, ceil_steps(instrument.min_qty, step), 1)
    if asked_total > resting.qty:
        low = max(low, floor_steps(resting.qty, step) + 1)
    high = floor_steps(asked_total, step)
    best = None
    for k in sorted({low, high, *range(max(low, high - 40), high + 1)}, reverse=True):
        if low <= k <= high and not amend_misses(oracle, resting, k * step, price):
            best = k * step
            break
    return best


def stop_loss_after(oracle: Oracle, symbol: str, stop: Decimal | None) -> tuple[Decimal, Decimal, Decimal]:
    """(loss, uncovered, size) of the position of `symbol` with its whole stop at `stop` (None: removed),
    with the orders resting on its side filled in the way that loses most. A resting order's own stop is not
    counted on (what is left of it may fill after its first part set it): a stop change is judged on the
    position's stops alone."""
    held = oracle.protected(symbol)
    position = Protected(held.size, held.entry, stop, held.legs)
    if held.size == 0:
        return ZERO, ZERO, ZERO
    side = "buy" if held.size > 0 else "sell"
    probe = Order(symbol, "linear", side, "market")
    nothing = Fill(ZERO, held.entry)  # no order: the position as it stands, with what rests on its side
    resting = [replace(fill, stop=None) for fill in oracle.resting_fills(probe)]
    left, loss, uncovered = worst_left(position, resting, nothing, _step(oracle, symbol))
    return loss, uncovered, left.size


def _step(oracle: Oracle, symbol: str) -> Decimal:
    instrument = oracle.world.instrument("linear", symbol)
    assert instrument is not None
    return instrument.step


def stop_misses(oracle: Oracle, symbol: str, stop: Decimal | None) -> list[Miss]:
    """Why moving the whole stop of `symbol`'s position to `stop` (None: removing it) does not pass."""
    instrument = oracle.world.instrument("linear", symbol)
    assert instrument is not None
    held = oracle.protected(symbol)
    if held.size == 0:
        return [Miss("exchange", "noPosition", "a stop needs a position (10001)")]
    quote, tick = oracle.quote(symbol), instrument.tick
    if stop is not None:
        if stop <= 0 or stop % tick != 0:
            return [Miss("protection", "stopLoss", f"{plain(stop)} off the tick {plain(tick)}")]
        if (held.size > 0 and stop >= min(quote.bid, quote.mark)) or (
            held.size < 0 and stop <= max(quote.ask, quote.mark)
        ):
            return [Miss("protection", "stopLoss", f"{plain(stop)} not beyond the price")]
    before = stop_loss_after(oracle, symbol, held.stop)
    after = stop_loss_after(oracle, symbol, stop)
    if not widens(before, after):
        return []
    state = oracle.tool_state
    if state != "active":
        return [Miss("state", state, "a wider stop grows the risk")]
    edge = oracle.collar_edge(symbol, "sell" if held.size > 0 else "buy", instrument)
    if stop is not None and edge is not None and (stop < edge if held.size > 0 else stop > edge):
        return [Miss("protection", "priceCollar.stopLoss", f"{plain(stop)} beyond {plain(edge)}")]
    loss, uncovered, _size = after
    if oracle.policy.require_stop(symbol) and uncovered > 0:
        return [Miss("protection", "requireStopLoss", "part of the position would be left without a stop")]
    cap = oracle.policy.loss_limit(symbol, oracle.equity())
    if cap is not None and (uncovered > before[1] or loss > cap):
        return [Miss("cap", "maxLossPerTrade", f"{plain(loss)} > {plain(cap)}, {plain(uncovered)} uncovered")]
    return []


def widens(before: tuple[Decimal, Decimal, Decimal], after: tuple[Decimal, Decimal, Decimal]) -> bool:
    """A change of stops widens the loss when it leaves more of the position without a stop, or as much and
    loses more at the stops (docs/policy.md, maxLossPerTradeUsd: a stop moved away or removed)."""
    if after[1] != before[1]:
        return after[1] > before[1]
    return after[0] > before[0]


def leverage_misses(oracle: Oracle, symbol: str, leverage: Decimal) -> list[Miss]:
    instrument = oracle.world.instrument("linear", symbol)
    assert instrument is not None
    current = oracle.leverage(symbol)
    state = oracle.tool_state
    if leverage <= current:
        return [Miss("state", "halted", "only cancels")] if state == "halted" else []
    out = []
    if state != "active":
        out.append(Miss("state", state, "raising leverage grows the risk"))
    if symbol not in oracle.policy.allowed:
        out.append(Miss("market", "allowedMarkets", symbol))
    ceiling = min(oracle.policy.limits(symbol).max_leverage, instrument.max_leverage)
    if leverage > ceiling:
        out.append(Miss("cap", "maxLeverage", f"{plain(leverage)} > {plain(ceiling)}"))
    return out
