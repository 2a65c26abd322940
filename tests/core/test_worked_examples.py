"""The article's two worked examples, with instrument numbers that reproduce its figures."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal as D

from pilot.core.evaluate import evaluate
from pilot.core.facts import (
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    PendingOrders,
    Position,
    PriceBand,
    Side,
    Touch,
    TradingState,
)
from pilot.core.policy import Policy

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
POLICY = Policy(allowed_markets=("BTCUSDT", "SOLUSDT"), max_notional_usd=D(25), max_order_notional_usd=D(100))
BTC = InstrumentRules(
    "BTCUSDT", "linear", D("0.1"), D("0.00001"), D("0.00001"), D(100), D(1), D(100), D("0.005"), "BTC"
)
SOL = InstrumentRules(
    "SOLUSDT", "linear", D("0.01"), D("0.01"), D("0.1"), D(1000), D(5), D(50), D("0.01"), "SOL"
)


def btc_short(qty: str) -> Facts:
    return Facts(
        order=OrderIntent("BTCUSDT", Side.SELL, D(qty), OrderType.MARKET),
        rules=BTC,
        touch=Touch(bid=D("80220"), ask=D("80220.1"), mark=D("80220"), observed_at=NOW),
        position=Position.flat("BTCUSDT"),
        equity=D(1000),
        orders_today=0,
        trading_state=TradingState.ACTIVE,
        now=NOW,
    )


def sol_add(qty: str, held: str = "0.2") -> Facts:
    return Facts(
        order=OrderIntent("SOLUSDT", Side.BUY, D(qty), OrderType.LIMIT, limit_price=D("102.67")),
        rules=SOL,
        touch=Touch(bid=D("102.66"), ask=D("102.67"), mark=D("102.66"), observed_at=NOW),
        position=Position("SOLUSDT", D(held), D("100"), D(1)),
        equity=D(1000),
        orders_today=0,
        trading_state=TradingState.ACTIVE,
        now=NOW,
    )


def test_btc_short_over_the_cap_names_40_11_and_suggests_at_most_0_00031():
    [violation] = evaluate(POLICY, btc_short("0.0005")).violations
    assert violation.rule == "maxNotionalUsd"
    assert (violation.limit, violation.attempted) == ("25", "40.11")
    assert "$40.11" in violation.detail and "$25" in violation.detail
    assert violation.next.tool == "plan_order"
    assert violation.next.args == {
        "symbol": "BTCUSDT",
        "side": "sell",
        "qty": "0.00031",
        "order_type": "market",
        "reduce_only": False,
        "category": "linear",
    }


def test_btc_short_replanned_at_the_suggested_size_passes_under_the_cap():
    result = evaluate(POLICY, btc_short("0.00031"))
    assert result.passed
    assert result.situation.after_notional == D("24.8682")


def test_sol_add_with_room_below_the_minimum_says_nothing_fits_and_close_frees_room():
    [violation] = evaluate(POLICY, sol_add("0.1")).violations
    assert violation.rule == "maxNotionalUsd"
    assert violation.attempted == "30.801"
    action = violation.next
    assert action.tool is None
    assert action.to_dict()["nothing_fits"] == {"rule": "maxNotionalUsd", "room": "0.04", "minimum": "0.1"}
    assert "room left is 0.04 SOL" in action.text  # the article's sentence, for the human reading along
    assert action.human and "maxNotionalUsd" in action.human
    assert [option.tool for option in action.options] == ["close_position"]
    assert action.options[0].args == {"symbol": "SOLUSDT", "category": "linear"}


def test_sol_add_on_a_flat_account_has_no_close_option():
    [violation] = evaluate(
        POLICY.model_copy(update={"max_notional_usd": D(5)}), sol_add("0.1", held="0")
    ).violations
    assert violation.next.tool is None and violation.next.options == ()


def test_resting_orders_on_the_same_side_count_towards_the_position_cap():
    from dataclasses import replace

    from pilot.core.facts import PendingOrders

    resting = PendingOrders(buy_qty=D("0.2"))  # two $10 limit buys resting below the market
    facts = replace(sol_add("0.1", held="0"), pending=resting)
    [violation] = evaluate(POLICY, facts).violations
    assert violation.rule == "maxNotionalUsd" and violation.attempted == "30.801"
    assert "open orders" in violation.detail
    assert evaluate(POLICY, replace(facts, pending=PendingOrders(sell_qty=D("0.2")))).passed


def test_unknown_open_orders_refuse_a_growing_order_but_not_a_reduce_only_one():
    from dataclasses import replace

    facts = replace(sol_add("0.1"), pending=None)
    result = evaluate(POLICY, facts)
    assert result.violations[0].rule == "facts" and "pending" in result.violations[0].attempted
    assert result.next_safe_action.retry_after is not None  # wait and plan again, not a resize
    reducing = replace(facts, order=replace(facts.order, side=Side.SELL, reduce_only=True))
    assert evaluate(POLICY, reducing).passed


BTC_SPOT = InstrumentRules(
    "BTCUSDT", "spot", D("0.1"), D("0.000001"), D("0.000048"), D(71), D(5), D(1), D(0), "BTC"
)


def spot_buy_above_band(price: str) -> Facts:
    return Facts(
        order=OrderIntent("BTCUSDT", Side.BUY, D("0.001"), OrderType.LIMIT, limit_price=D(price)),
        rules=BTC_SPOT,
        touch=Touch(bid=D("80000"), ask=D("80000.1"), mark=D("80000"), observed_at=NOW),
        position=Position.flat("BTCUSDT"),
        equity=D(1000),
        orders_today=0,
        trading_state=TradingState.ACTIVE,
        now=NOW,
        band=PriceBand(buy_limit=D("80400"), sell_limit=D("79600")),
    )


def test_a_spot_buy_priced_above_the_band_is_sent_back_inside_it_not_told_nothing_fits():
    policy = Policy(allowed_markets=("BTCUSDT",), max_notional_usd=D(500), max_order_notional_usd=D(500))
    refused = evaluate(policy, spot_buy_above_band("81600"))

    assert [v.rule for v in refused.violations] == ["instrument.priceBand"]
    assert refused.next_safe_action is not None and refused.next_safe_action.tool == "plan_order"
    assert (
        refused.next_safe_action.args["price"] == "80400" and refused.next_safe_action.args["qty"] == "0.001"
    )
    assert evaluate(policy, spot_buy_above_band("80400")).passed


DOGE = InstrumentRules(
    "DOGEUSDT", "linear", D("0.0001"), D("0.01"), D(1), D("8.2"), D(0), D(50), D("0.01"), "DOGE"
)


def test_a_close_raised_to_the_minimum_that_no_longer_shrinks_is_not_offered_in_reducing():
    # A random world's loop: short 1.09 with 1.89 of buys resting, trading reducing. Only a buy of at most
    # 0.29 shrinks the worst case, below the minimum of 1; a buy of 1 grows it and is refused again.
    policy = Policy(
        allowed_markets=("DOGEUSDT",),
        max_notional_usd=D(1900),
        max_order_notional_usd=D(230),
        trading_state=TradingState.REDUCING,
    )
    facts = Facts(
        order=OrderIntent("DOGEUSDT", Side.BUY, D("1.08"), OrderType.MARKET),
        rules=DOGE,
        touch=Touch(bid=D("121.8449"), ask=D("121.8451"), mark=D("121.8447"), observed_at=NOW),
        position=Position("DOGEUSDT", D("-1.09"), D("121"), D(13)),
        equity=D(456),
        orders_today=0,
        trading_state=TradingState.REDUCING,
        now=NOW,
        pending=PendingOrders(buy_qty=D("1.89")),
    )
    refused = evaluate(policy, facts)

    assert [v.rule for v in refused.violations] == ["tradingState"]
    action = refused.next_safe_action
    assert action is not None
    if action.tool == "plan_order":  # whatever is offered must pass as offered
        again = replace(
            facts,
            order=replace(facts.order, qty=D(action.args["qty"]), reduce_only=action.args["reduce_only"]),
        )
        assert evaluate(policy, again).passed
