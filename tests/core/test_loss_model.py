"""One loss model for spot and linear (issue 36), checked against its restatement in tests/oracle.py
(judged_loss), not the code under test.

maxLossPerTradeUsd/Pct: the position an order leaves may lose at most the cap at its stops. On a perpetual
some of it under no stop has no bound: refused, with a next action that carries a stop that fits; on spot the
coin no stop sells can lose its whole value, and a buy whose whole value is within the cap needs no stop. A
limit order beside a position is judged as if the position were gone first too. Every answer replays.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, localcontext

from hypothesis import assume, given

from pilot.core.codes import Code
from pilot.core.evaluate import evaluate
from pilot.core.facts import (
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    Position,
    Side,
    StopLeg,
    Touch,
    TradingState,
)
from pilot.core.policy import Policy
from pilot.core.stops import Exposure, Fill, after_fills, check_trading_stop, loss_at_stops, spot_fill
from pilot.core.venues import StopScope
from pilot.core.violations import plain_usd, usd
from tests.core.suggested import replay
from tests.oracle import TAKER, UNBOUNDED, judged_loss, stop_reference, trade_loss_limit
from tests.strategies import loss_model_cases

LOSS = {Code.MAX_LOSS_PER_TRADE_USD, Code.MAX_LOSS_PER_TRADE_PCT}


def loss_refusal(policy: Policy, f: Facts) -> list[str]:
    return [v.attempted for v in evaluate(policy, f).violations if v.rule in LOSS]


def stop_ok(policy: Policy, f: Facts) -> bool:
    """The stop the order carries can be sent: on the tick, beyond the price (the loss is judged at it)."""
    stop = f.order.stop_loss
    if stop is None:
        return True
    reference = stop_reference(policy, f)
    beyond = stop < reference if f.order.side is Side.BUY else stop > reference
    return beyond and stop % f.rules.tick_size == 0


def required(policy: Policy, f: Facts) -> bool:
    """requireStopLoss refuses this order for want of a stop (and then answers for the loss limit too)."""
    order = f.order
    buys = order.category != "spot" or order.side is Side.BUY
    return policy.require_stop_loss and order.stop_loss is None and buys and not order.reduce_only


@given(loss_model_cases())
def test_a_loss_refusal_comes_exactly_where_the_oracle_finds_the_position_past_the_cap(case):
    policy, f = case
    assume(stop_ok(policy, f) and not required(policy, f))
    loss, cap = judged_loss(policy, f), trade_loss_limit(policy, f)
    refused = loss_refusal(policy, f)
    assert bool(refused) == (loss > cap), (loss, cap, refused)
    if refused:
        attempted = refused[0]
        if loss == UNBOUNDED:
            assert attempted == "unbounded"
        else:
            assert Decimal(attempted) == loss.quantize(Decimal("0.01"))


@given(loss_model_cases())
def test_a_passing_order_leaves_no_position_that_loses_more_than_the_cap_at_its_stops(case):
    policy, f = case
    result = evaluate(policy, f)
    action = result.next_safe_action
    if not result.passed and action is not None and action.tool == "plan_order":
        f = replay(f, action.args)
    assume(evaluate(policy, f).passed)
    assert judged_loss(policy, f) <= trade_loss_limit(policy, f)
    if f.order.category == "linear":
        assert judged_loss(policy, f) != UNBOUNDED


@given(loss_model_cases())
def test_every_answer_to_a_loss_refusal_replays_to_pass(case):
    policy, f = case
    result = evaluate(policy, f)
    assume(any(v.rule in LOSS or v.rule is Code.REQUIRE_STOP_LOSS for v in result.violations))
    action = result.next_safe_action
    assume(action is not None)
    calls = [action, *action.options] if action.tool == "plan_order" else list(action.options)
    for call in calls:
        if call.tool != "plan_order":
            continue
        again = replay(f, call.args)
        judged = evaluate(policy, again)
        assert judged.passed, (call, [(v.rule, v.attempted) for v in judged.violations])
        assert judged_loss(policy, again) <= trade_loss_limit(policy, f)


@given(loss_model_cases())
def test_an_order_refused_for_want_of_a_stop_is_answered_with_a_stop_that_fits(case):
    """An order with no stop that the loss limit refuses (unbounded on a perpetual, its whole value past the
    cap on spot) gets, as its next action, an order the oracle finds within the cap: the order with a stop
    that fits, or, where no stop fits it, a cut the position's own stops (on spot, its whole value) keep
    within the cap, or what only shrinks the position."""
    policy, f = case
    assume(f.order.stop_loss is None and not f.order.reduce_only)
    result = evaluate(policy, f)
    assume(any(v.rule in LOSS for v in result.violations))
    action = result.next_safe_action
    if action is None or action.tool != "plan_order":
        return  # "nothing fits" is checked by the next property
    # with a stop, or without one where the position's own stops (or, on spot, its whole value) keep it
    # within the cap: never unbounded
    assert judged_loss(policy, replay(f, action.args)) <= trade_loss_limit(policy, f)


@given(loss_model_cases(flip=True))
def test_a_flip_without_a_stop_is_refused_and_offered_with_a_stop_or_the_close(case):
    policy, f = case
    size = f.position.size
    order = f.order
    flips = size != 0 and (size > 0) != (order.side is Side.BUY) and order.qty > abs(size)
    assume(flips and order.stop_loss is None)
    policy = policy.model_copy(update={"require_stop_loss": False})
    result = evaluate(policy, f)
    loss = [v for v in result.violations if v.rule in LOSS]
    assert loss and loss[0].attempted == "unbounded"
    action = result.next_safe_action
    assume(action is not None and action.tool == "plan_order")
    closes = [
        o
        for o in action.options
        if o.tool == "plan_order" and o.args["reduce_only"] and o.args["side"] == order.side.value
    ]
    # the flip with a stop, or what only shrinks the position (the close, or the sell cut to it)
    assert "stop_loss" in action.args or judged_loss(policy, replay(f, action.args)) == 0, action
    close = replace(f, order=replace(order, qty=abs(size), reduce_only=True, order_type=OrderType.MARKET))
    if (
        "stop_loss" in action.args
        and Decimal(action.args["qty"]) > abs(size)
        and evaluate(policy, close).passed
    ):
        assert closes, action  # the flip with its stop, and the close beside it where it passes


@given(loss_model_cases())
def test_under_require_stop_loss_and_a_cap_the_answer_is_never_nothing_fits_while_the_minimum_with_a_stop_passes(
    case,
):
    """Issue 36's first refusal fault: the minimum order (or the one asked) with the farthest stop the
    oracle finds within the cap passes, so "nothing fits" is false."""
    policy, f = case
    policy = policy.model_copy(update={"require_stop_loss": True})
    f = replace(f, order=replace(f.order, stop_loss=None, reduce_only=False))
    assume(f.order.category == "linear" or f.order.side is Side.BUY)
    action = evaluate(policy, f).next_safe_action
    assume(action is not None and action.tool is None)
    qty = max(f.order.qty, f.rules.min_qty)
    witness = _oracle_stop(policy, replace(f, order=replace(f.order, qty=qty)))
    if witness is None:
        return
    probe = replace(f, order=replace(f.order, qty=qty, stop_loss=witness))
    assert not evaluate(policy, probe).passed, ("nothing fits, yet this passes", probe.order)


def _oracle_stop(policy: Policy, f: Facts) -> Decimal | None:
    """The nearest stop to the price on the tick beyond it, if its loss (oracle) fits the cap: the one a
    witness needs (a nearer stop loses less)."""
    tick, reference = f.rules.tick_size, stop_reference(policy, f)
    if f.order.side is Side.BUY:
        stop = (reference / tick).to_integral_value() * tick
        stop = stop - tick if stop >= reference else stop
    else:
        stop = (reference / tick).to_integral_value() * tick
        stop = stop + tick if stop <= reference else stop
    if stop <= 0:
        return None
    probe = replace(f, order=replace(f.order, stop_loss=stop))
    return stop if judged_loss(policy, probe) <= trade_loss_limit(policy, f) else None


# --- the two refusal faults the random worlds found (issue 36), as worked cases -----------------------------

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _facts(rules: InstrumentRules, bid: str, ask: str, position: Position, order: OrderIntent) -> Facts:
    touch = Touch(Decimal(bid), Decimal(ask), Decimal(bid), NOW)
    return Facts(order, rules, touch, position, Decimal(10_000), 0, TradingState.ACTIVE, NOW)


def _policy(symbol: str, cap: str, **more: object) -> Policy:
    return Policy(
        allowed_markets=(symbol,),
        max_notional_usd=Decimal(10**6),
        max_order_notional_usd=Decimal(10**6),
        max_leverage=Decimal(10),
        max_loss_per_trade_usd=Decimal(cap),
        **more,
    )


def test_an_order_below_the_minimum_without_a_stop_is_offered_the_minimum_with_a_stop_that_fits():
    """The worlds' "room 0.5 < minimum 25": under requireStopLoss and a $1 cap, a 0.5 XRP buy (the minimum
    is 25) was given a stop fitted to 0.5, raised to 25, and then answered "nothing fits"; 25 with a stop
    fitted to 25 passes (25 x (2.0001 - 1.9724 + fees ~0.0022) = $0.75)."""
    rules = InstrumentRules(
        "XRPUSDT",
        "linear",
        Decimal("0.0001"),
        Decimal("0.5"),
        Decimal(25),
        Decimal(10**5),
        Decimal(5),
        Decimal(50),
        Decimal("0.01"),
        "XRP",
    )
    order = OrderIntent("XRPUSDT", Side.BUY, Decimal("0.5"), OrderType.MARKET)
    f = _facts(rules, "2.0000", "2.0001", Position.flat("XRPUSDT"), order)
    policy = _policy("XRPUSDT", "1", require_stop_loss=True)
    action = evaluate(policy, f).next_safe_action
    assert action is not None and action.tool == "plan_order"
    assert Decimal(action.args["qty"]) == 25 and "stop_loss" in action.args
    answered = replay(f, action.args)
    assert evaluate(policy, answered).passed
    assert judged_loss(policy, answered) <= 1


def test_adding_to_a_short_with_its_own_stop_is_offered_the_minimum_with_a_stop_that_fits():
    """The worlds' "room 965 < minimum 5310": adding 965 DOGE (minimum 5310) to a short of 20,000 with its
    own stop, under requireStopLoss and a $150 cap, was answered "nothing fits" while 6,000 with a stop near
    the price passed. Now the answer is the minimum with the farthest stop that fits all of the short."""
    rules = InstrumentRules(
        "DOGEUSDT",
        "linear",
        Decimal("0.00001"),
        Decimal(1),
        Decimal(5310),
        Decimal(10**7),
        Decimal(5),
        Decimal(50),
        Decimal("0.01"),
        "DOGE",
    )
    short = Position("DOGEUSDT", Decimal(-20_000), Decimal("0.205"), Decimal(5), stop_loss=Decimal("0.21"))
    order = OrderIntent("DOGEUSDT", Side.SELL, Decimal(965), OrderType.MARKET)
    f = _facts(rules, "0.20000", "0.20001", short, order)
    policy = _policy("DOGEUSDT", "150", require_stop_loss=True)
    witness = replay(f, {**plan(order), "qty": "6000", "stop_loss": "0.206"})
    assert evaluate(policy, witness).passed
    action = evaluate(policy, f).next_safe_action
    assert action is not None and action.tool == "plan_order"
    assert Decimal(action.args["qty"]) == 5310 and Decimal(action.args["stop_loss"]) > Decimal("0.20001")
    answered = replay(f, action.args)
    assert evaluate(policy, answered).passed and judged_loss(policy, answered) <= 150


def test_a_wider_stop_asked_where_the_stop_already_loses_more_than_the_cap_is_answered_with_the_stop_kept():
    """The worlds' LINK 0.00425 -> 0.0049: a long whose stop at 0.0045 already loses $7.55 against a $1 cap
    asked for 0.00425; the answer moved the stop to 0.00491, nearer than the one it has (a move the agent did
    not ask for, and one tick farther than 0.00491 passed: it is still nearer than 0.0045). The answer now
    keeps the stop, and one tick farther than it is refused."""
    policy = _policy("LINKUSDT", "1")
    held = Position("LINKUSDT", Decimal(10_000), Decimal("0.005"), Decimal(5), stop_loss=Decimal("0.0045"))
    tick, price = Decimal("0.00001"), Decimal("0.005")

    def judge(stop: str) -> list:
        return check_trading_stop(
            policy, TradingState.ACTIVE, held, Decimal(1000), Decimal(stop), tick, market=price, mark=price
        )

    (refused,) = judge("0.00425")
    assert refused.rule is Code.MAX_LOSS_PER_TRADE_USD
    assert refused.next.tool == "set_trading_stop" and refused.next.args["stop_loss"] == "0.0045"
    assert not judge("0.0045")  # keeping it is no change
    assert judge("0.00449")  # one tick farther is refused


def test_the_farthest_stop_that_fits_may_lie_between_the_entry_and_the_price_now():
    """Found by the worlds (seed 36106): a long of 8.76 from 82.085, its stop at 83.092 (in profit), a $0.01
    cap; 81.43 asked was answered by keeping 83.092, while 83.091 passes: no stop past the entry fits, but
    the stops between the entry and the price do, down to where the loss reaches the cap."""
    policy = _policy("ETHUSDT", "0.01")
    held = Position("ETHUSDT", Decimal("8.76"), Decimal("82.085"), Decimal(1), stop_loss=Decimal("83.092"))
    tick, price = Decimal("0.001"), Decimal("83.93")

    def judge(stop: str) -> list:
        return check_trading_stop(
            policy, TradingState.ACTIVE, held, Decimal(2265), Decimal(stop), tick, market=price, mark=price
        )

    (refused,) = judge("81.43")
    fits = Decimal(refused.next.args["stop_loss"])
    assert fits < Decimal("83.092")  # farther than the stop it has
    entry, size = Decimal("82.085"), Decimal("8.76")
    loss = size * (entry - fits) + size * TAKER * (entry + fits)
    farther = fits - tick
    assert loss <= Decimal("0.01") < size * (entry - farther) + size * TAKER * (entry + farther)
    assert not judge(str(fits)) and judge(str(farther))


def plan(order: OrderIntent) -> dict[str, object]:
    return {
        "symbol": order.symbol,
        "side": order.side.value,
        "qty": str(order.qty),
        "order_type": order.order_type.value,
        "reduce_only": order.reduce_only,
        "category": order.category,
    }


def test_a_loss_from_an_average_entry_is_the_exact_one_and_shows_half_to_even_whatever_the_context():
    """The example hypothesis found: 400 BTC held (valued at the bid, 2998) with a stop leg of 260 at 2994,
    a spot buy of 967 at 3003 and buys resting of 177 at 2990 (stop 2989) and 383 at 2995 (stop 2990). Its
    loss is cost 5779416 with the fee in, less what the stops sell for with the fee out: 3337256.355 exactly,
    though the average entry (5779416/1927) has no end; shown 3337256.36 even where the thread's context
    rounds half up (as a process hosting ccxt does) and 5.345 shown 5.34."""
    held = Position(
        "BTCUSDT", Decimal(400), Decimal(0), Decimal(1), None, (StopLeg(Decimal(2994), Decimal(260)),)
    )
    fills = [
        Fill(Decimal(967), Decimal(3003)),
        spot_fill(Fill(Decimal(177), Decimal(2990), Decimal(2989)), Decimal(1)),
        spot_fill(Fill(Decimal(383), Decimal(2995), Decimal(2990)), Decimal(1)),
    ]
    left = after_fills(Exposure.held(held, Decimal(2998)), fills, StopScope.ORDER)
    loss = loss_at_stops(left).loss
    assert loss == Decimal(5779416) * (1 + TAKER) - Decimal(2446684) * (1 - TAKER) == Decimal("3337256.355")
    with localcontext() as context:
        context.rounding = ROUND_HALF_UP
        assert (plain_usd(loss), plain_usd(Decimal("5.345")), usd(Decimal("5.345"))) == (
            "3337256.36",
            "5.34",
            "$5.34",
        )


def test_a_buy_whose_coin_a_stop_leg_of_the_coin_held_sells_too_is_offered_not_nothing_fits():
    """The example hypothesis found: 0.73 BTC held (valued at the bid, 0.31) with stop legs of 0.16 at 0.30
    and 0.62 at 0.26 loses 0.0303 at its stops, past a 0.03 cap; but the leg at 0.26 has 0.05 to spare, so a
    buy of 1.18 at 0.02 with its stop at 0.01 (the lowest tick) loses 0.0297 in all: it fits, and the answer
    under requireStopLoss offers it, where it said that no buy fits."""
    cent, now = Decimal("0.01"), datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    rules = InstrumentRules(
        "BTCUSDT", "spot", cent, cent, cent, Decimal(100), Decimal(0), Decimal(1), Decimal(0), "BTC"
    )
    legs = (StopLeg(Decimal("0.30"), Decimal("0.16")), StopLeg(Decimal("0.26"), Decimal("0.62")))
    f = Facts(
        order=OrderIntent(
            "BTCUSDT", Side.BUY, Decimal("1.18"), OrderType.LIMIT, Decimal("0.02"), category="spot"
        ),
        rules=rules,
        touch=Touch(Decimal("0.31"), Decimal("0.32"), Decimal("0.34"), now),
        position=Position("BTCUSDT", Decimal("0.73"), Decimal(0), Decimal(1), None, legs),
        equity=Decimal(10) ** 9,
        orders_today=0,
        trading_state=TradingState.ACTIVE,
        now=now,
    )
    policy = Policy(
        allowed_markets=("BTCUSDT",),
        max_notional_usd=Decimal(10) ** 9,
        max_order_notional_usd=Decimal(10) ** 9,
        max_leverage=Decimal(20),
        max_loss_per_trade_usd=Decimal("0.03"),
        require_stop_loss=True,
        daily_order_cap=50,
    )
    action = evaluate(policy, f).next_safe_action
    assert action is not None and action.tool == "plan_order", action
    assert (action.args["qty"], action.args["stop_loss"]) == ("1.18", "0.01")
    again = replay(f, action.args)
    assert evaluate(policy, again).passed
    assert judged_loss(policy, again) <= Decimal("0.03")
