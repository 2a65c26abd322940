"""Cancelling, amending and listing TP/SL and conditional orders by id, and cancel-all's orderFilter.

Sources: cancel-order.mdx and amend-order.mdx (by orderId or orderLinkId; amend triggerPrice, and an order's
takeProfit / stopLoss with "0" cancelling), trading-stop.mdx (a TP and SL set together are bound: cancelling
one by its id cancels both, until a one-sided trading-stop change unbinds them), cancel-all.mdx (linear
without orderFilter: every kind; Order; StopOrder; stopOrderType Stop for conditional orders only; the
cancelled orders listed), open-order.mdx and order-list.mdx (orderFilter Order / StopOrder; all kinds by
default), enum.mdx (Deactivated: cancelled before it triggered), error.mdx (110059: no TP/SL change on a
partially filled order).
"""

from __future__ import annotations

from tests.paper.stop_world import dec, ret_code, stop_world

RISE, FALL = 1, 2


def cancel(w, order_id: str) -> dict:
    return w.session.cancel_order(category="linear", symbol="BTCUSDT", orderId=order_id)["result"]


def amend(w, order_id: str, **params) -> dict:
    return w.session.amend_order(category="linear", symbol="BTCUSDT", orderId=order_id, **params)["result"]


def cancel_all(w, **params) -> list[str]:
    answer = w.session.cancel_all_orders(category="linear", symbol="BTCUSDT", **params)["result"]
    assert answer["success"] == "1"
    return sorted(row["orderId"] for row in answer["list"])


def test_cancelling_a_full_stop_by_id_deactivates_it_and_the_take_profit_bound_to_it():
    with stop_world() as w:
        w.create(stopLoss="79000", takeProfit="85000")
        legs = w.legs()
        stop, target = legs["StopLoss"][0]["orderId"], legs["TakeProfit"][0]["orderId"]
        assert cancel(w, stop)["orderId"] == stop
        for order_id in (stop, target):
            row = w.order(order_id)
            assert (row["orderStatus"], row["cancelType"]) == ("Deactivated", "CancelByUser")
        position = w.position()
        assert (position["stopLoss"], position["takeProfit"]) == ("", "")
        assert ret_code(w.session.cancel_order, category="linear", symbol="BTCUSDT", orderId=stop) == 110010


def test_a_one_sided_change_unbinds_the_pair_so_a_cancel_takes_one_leg():
    with stop_world() as w:
        w.create()
        w.trading_stop(tpslMode="Full", stopLoss="79000", takeProfit="85000")
        w.trading_stop(tpslMode="Full", stopLoss="79200")
        cancel(w, w.legs()["StopLoss"][0]["orderId"])
        assert sorted(w.legs()) == ["TakeProfit"] and dec(w.position()["takeProfit"]) == 85000


def test_a_conditional_order_cancelled_by_its_link_id_is_deactivated():
    with stop_world() as w:
        order_id = w.create(triggerPrice="81000", triggerDirection=RISE, orderLinkId="breakout-1")
        w.session.cancel_order(category="linear", symbol="BTCUSDT", orderLinkId="breakout-1")
        row = w.history(orderId=order_id)[0]
        assert (row["orderStatus"], row["cancelType"], row["stopOrderType"]) == (
            "Deactivated",
            "CancelByUser",
            "Stop",
        )


def test_amending_trigger_prices_of_a_conditional_order_and_a_stop_is_checked_like_a_create():
    with stop_world() as w:
        conditional = w.create(triggerPrice="81000", triggerDirection=RISE)
        amend(w, conditional, triggerPrice="81500")
        assert dec(w.order(conditional)["triggerPrice"]) == 81500
        assert (
            ret_code(
                w.session.amend_order,
                category="linear",
                symbol="BTCUSDT",
                orderId=conditional,
                triggerPrice="80000",
            )
            == 110092
        )
        w.create(stopLoss="79000")
        stop = w.legs()["StopLoss"][0]["orderId"]
        amend(w, stop, triggerPrice="79400")
        assert dec(w.position()["stopLoss"]) == 79400 and dec(w.order(stop)["triggerPrice"]) == 79400
        assert (
            ret_code(
                w.session.amend_order, category="linear", symbol="BTCUSDT", orderId=stop, triggerPrice="80500"
            )
            == 10001
        )
        assert (
            ret_code(
                w.session.amend_order, category="linear", symbol="BTCUSDT", orderId=stop, triggerPrice="79400"
            )
            == 10001
        )
        assert (
            ret_code(w.session.amend_order, category="linear", symbol="BTCUSDT", orderId=stop, qty="0.001")
            == 10001
        )


def test_amending_a_resting_orders_tpsl_sets_moves_and_with_0_removes_them():
    with stop_world() as w:
        resting = w.create(price="79500", orderLinkId="dip")
        amend(w, resting, stopLoss="78000", takeProfit="82000")
        row = w.order(resting)
        assert (dec(row["stopLoss"]), dec(row["takeProfit"]), row["tpslMode"]) == (78000, 82000, "Full")
        amend(w, resting, takeProfit="0")
        row = w.order(resting)
        assert (dec(row["stopLoss"]), row["takeProfit"]) == (78000, "")
        assert (
            ret_code(
                w.session.amend_order, category="linear", symbol="BTCUSDT", orderId=resting, stopLoss="80000"
            )
            == 10001
        )
        w.move("79400")  # the order fills: its stop becomes the position's
        assert dec(w.position()["stopLoss"]) == 78000 and sorted(w.legs()) == ["StopLoss"]


def test_cancel_all_without_a_filter_cancels_every_kind_and_lists_them():
    with stop_world() as w:
        w.create(stopLoss="79000", takeProfit="85000")
        resting = w.create(price="79000")
        conditional = w.create(triggerPrice="81000", triggerDirection=RISE)
        legs = [rows[0]["orderId"] for kind, rows in w.legs().items() if kind != "Stop"]
        assert cancel_all(w) == sorted([resting, conditional, *legs])
        assert w.realtime() == [] and w.position()["stopLoss"] == ""


def test_cancel_all_by_order_filter():
    with stop_world() as w:
        w.create(stopLoss="79000")
        resting = w.create(price="79000")
        conditional = w.create(triggerPrice="81000", triggerDirection=RISE)
        [stop] = [row["orderId"] for row in w.legs()["StopLoss"]]
        assert cancel_all(w, orderFilter="Order") == [resting]
        assert cancel_all(w, orderFilter="StopOrder", stopOrderType="Stop") == [conditional]
        assert w.realtime()[0]["orderId"] == stop and dec(w.position()["stopLoss"]) == 79000
        assert cancel_all(w, orderFilter="StopOrder") == [stop]
        assert (
            ret_code(w.session.cancel_all_orders, category="linear", symbol="BTCUSDT", orderFilter="Nope")
            == 10001
        )


def test_order_lists_filter_by_kind_and_history_shows_deactivated_stops():
    with stop_world() as w:
        w.create(stopLoss="79000")
        resting = w.create(price="79000")
        conditional = w.create(triggerPrice="81000", triggerDirection=RISE)
        assert [row["orderId"] for row in w.realtime(orderFilter="Order")] == [resting]
        assert {row["stopOrderType"] for row in w.realtime(orderFilter="StopOrder")} == {"StopLoss", "Stop"}
        assert len(w.realtime()) == 3
        cancel(w, conditional)
        assert [row["orderStatus"] for row in w.history(orderFilter="StopOrder")] == ["Deactivated"]
        assert all(row["stopOrderType"] == "" for row in w.history(orderFilter="Order"))


def test_a_refused_amend_of_a_stop_changes_nothing():
    with stop_world() as w:
        w.create(qty="0.004")
        w.trading_stop(tpslMode="Partial", stopLoss="79000", slSize="0.002")
        [leg] = w.legs()["PartialStopLoss"]
        params = {"category": "linear", "symbol": "BTCUSDT", "orderId": leg["orderId"]}
        assert ret_code(w.session.amend_order, **params, triggerPrice="79500", qty="0.005") == 110058
        assert w.legs()["PartialStopLoss"] == [leg]
        amend(w, leg["orderId"], triggerPrice="79500", qty="0.003")
        [moved] = w.legs()["PartialStopLoss"]
        assert (dec(moved["triggerPrice"]), dec(moved["qty"])) == (dec("79500"), dec("0.003"))
