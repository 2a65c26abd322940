"""Conditional orders (a create with triggerPrice) as Bybit runs them, over HTTP through pybit.

Sources: create-order.mdx (triggerPrice makes a conditional order that occupies no margin and is cancelled
if the margin is insufficient when it triggers; triggerDirection 1 rise / 2 fall; triggerBy LastPrice,
IndexPrice, MarkPrice; at most 10 conditional orders per symbol), error.mdx (110092 / 110093 a trigger on
the wrong side, 110009 too many stop orders), enum.mdx (orderStatus Untriggered, stopOrderType Stop,
createType CreateByStopOrder), and a demo-account realtime read of an Untriggered conditional Market order
(stopOrderType Stop, createType CreateByStopOrder) quoted in a public trading-system report.
"""

from __future__ import annotations

from decimal import Decimal

from tests.paper.stop_world import dec, default_scenario, ret_code, stop_world

RISE, FALL = 1, 2


def wallet(w) -> dict:
    return w.session.get_wallet_balance(accountType="UNIFIED")["result"]["list"][0]


def test_a_conditional_order_waits_untriggered_and_takes_no_margin():
    with stop_world() as w:
        before = wallet(w)
        order_id = w.create(
            qty="0.010", price="81000", triggerPrice="81000", triggerDirection=RISE, orderLinkId="breakout"
        )
        row = w.order(order_id)
        assert (row["orderStatus"], row["stopOrderType"], row["createType"]) == (
            "Untriggered",
            "Stop",
            "CreateByStopOrder",
        )
        assert (dec(row["triggerPrice"]), row["triggerDirection"], row["triggerBy"]) == (
            81000,
            RISE,
            "LastPrice",
        )
        assert dec(row["leavesQty"]) == dec("0.010") and row["reduceOnly"] is False
        after = wallet(w)
        assert (after["totalInitialMargin"], after["totalAvailableBalance"]) == (
            before["totalInitialMargin"],
            before["totalAvailableBalance"],
        )
        assert w.paper.open_orders() == []  # nothing on the book


def test_a_rising_trigger_must_be_above_the_market_and_a_falling_one_below():
    with stop_world() as w:
        assert ret_code(w.create, triggerPrice="80000", triggerDirection=RISE) == 110092
        assert ret_code(w.create, triggerPrice="81000", triggerDirection=FALL) == 110093
        assert ret_code(w.create, triggerPrice="81000") == 10001  # triggerDirection is required
        assert ret_code(w.create, triggerPrice="81000.05", triggerDirection=RISE) == 10001  # tick 0.10
        assert ret_code(w.create, triggerPrice="81000", triggerDirection=RISE, triggerBy="Other") == 10001
        assert w.realtime() == []


def test_reaching_the_trigger_makes_it_a_market_order_that_fills_under_the_same_id():
    with stop_world() as w:
        order_id = w.create(qty="0.002", triggerPrice="79000", triggerDirection=FALL, side="Sell")
        w.move("79500")
        assert w.order(order_id)["orderStatus"] == "Untriggered"
        w.move("78950")
        row = w.order(order_id)
        assert (row["orderStatus"], dec(row["cumExecQty"]), row["stopOrderType"]) == (
            "Filled",
            dec("0.002"),
            "Stop",
        )
        [fill] = w.executions(order_id)
        assert (fill["createType"], fill["stopOrderType"]) == ("CreateByStopOrder", "Stop")
        assert w.paper.position("BTCUSDT").size == dec("-0.002")


def test_a_limit_conditional_order_rests_at_its_price_once_triggered():
    with stop_world() as w:
        order_id = w.create(price="80700", triggerPrice="80800", triggerDirection=RISE)
        w.move("80850")
        row = w.order(order_id)
        assert (row["orderStatus"], dec(row["price"]), row["orderType"]) == ("New", dec("80700"), "Limit")
        assert [o.order_id for o in w.paper.open_orders()] == [order_id]


def test_mark_price_triggers_compare_with_the_mark():
    with stop_world() as w:
        order_id = w.create(triggerPrice="81000", triggerDirection=RISE, triggerBy="MarkPrice")
        w.move("80220", mark="80990")
        assert w.order(order_id)["orderStatus"] == "Untriggered"
        w.move("80220", mark="81000")  # the last price has not moved; the mark has reached the trigger
        assert w.order(order_id)["orderStatus"] == "Filled"


def test_a_reduce_only_conditional_closes_at_most_the_position_and_goes_without_one():
    with stop_world() as w:
        w.create(qty="0.002")
        closing = w.create(
            side="Sell", qty="0.005", reduceOnly=True, triggerPrice="79000", triggerDirection=FALL
        )
        idle = w.create(
            side="Sell", qty="0.001", closeOnTrigger=True, triggerPrice="78000", triggerDirection=FALL
        )
        assert w.order(idle)["closeOnTrigger"] is True
        w.move("78990")
        assert dec(w.order(closing)["cumExecQty"]) == dec("0.002") and w.paper.position("BTCUSDT").size == 0
        w.move("77990")
        row = w.order(idle)
        assert (row["orderStatus"], row["cancelType"], dec(row["cumExecQty"])) == (
            "Deactivated",
            "CancelByReduceOnly",
            0,
        )


def test_a_conditional_order_the_margin_cannot_cover_at_its_trigger_is_cancelled():
    with stop_world() as w:
        order_id = w.create(qty="0.100", triggerPrice="81000", triggerDirection=RISE)  # ~$8,100 at 10x: $810
        w.create(qty="0.080")  # takes most of the $1,000
        w.move("81000")
        row = w.order(order_id)
        assert (row["orderStatus"], dec(row["cumExecQty"])) == ("Cancelled", 0)
        assert w.paper.position("BTCUSDT").size == dec("0.080")


def test_no_more_than_ten_conditional_orders_per_symbol():
    with stop_world(default_scenario(rateLimits=False)) as w:
        for n in range(10):
            w.create(qty="0.001", triggerPrice=str(81000 + n * 10), triggerDirection=RISE)
        assert ret_code(w.create, qty="0.001", triggerPrice="82000", triggerDirection=RISE) == 110009
        assert len(w.legs()["Stop"]) == 10


def test_a_conditional_order_can_carry_tpsl_that_apply_once_it_fills():
    with stop_world() as w:
        order_id = w.create(triggerPrice="81000", triggerDirection=RISE, stopLoss="80000", takeProfit="83000")
        row = w.order(order_id)
        assert (dec(row["stopLoss"]), dec(row["takeProfit"]), row["tpslMode"]) == (80000, 83000, "Full")
        assert ret_code(w.create, triggerPrice="81000", triggerDirection=RISE, stopLoss="81500") == 10001
        w.move("81000")
        assert sorted(w.legs()) == ["StopLoss", "TakeProfit"]
        assert dec(w.position()["stopLoss"]) == Decimal("80000")
