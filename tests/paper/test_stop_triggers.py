"""Triggering: a TP/SL whose trigger the price reaches becomes its order and fills through the book; a
position that closes takes its remaining TP/SL with it.

Sources: trading-stop.mdx (the system cancels the TP/SL orders when the position is closed), enum.mdx
(orderStatus Triggered is instantaneous, from Untriggered to New; cancelType CancelByTpSlTsClear when the
position is cleared, CancelByOCOTpCanceledBySlTriggered / CancelByOCOSlCanceledByTpTriggered for the other
leg of a pair), execution.mdx (createType and stopOrderType on each fill; the public recordings quoted by
trading bots' tests show CreateByStopLoss / StopLoss on a stop-loss fill), closed-pnl.mdx.
"""

from __future__ import annotations

from decimal import Decimal

from tests.paper.stop_world import dec, default_scenario, stop_world


def test_a_full_stop_loss_fills_as_its_own_order_and_the_take_profit_goes_with_the_position():
    with stop_world() as w:
        w.create(qty="0.003", stopLoss="79000", takeProfit="85000")
        legs = w.legs()
        stop, target = legs["StopLoss"][0]["orderId"], legs["TakeProfit"][0]["orderId"]
        w.move("79050")
        assert w.order(stop)["orderStatus"] == "Untriggered"
        w.move("79000")
        row = w.order(stop)
        assert (row["orderStatus"], dec(row["cumExecQty"]), row["createType"]) == (
            "Filled",
            dec("0.003"),
            "CreateByStopLoss",
        )
        [fill] = w.executions(stop)
        assert (fill["createType"], fill["stopOrderType"], fill["side"]) == (
            "CreateByStopLoss",
            "StopLoss",
            "Sell",
        )
        gone = w.order(target)
        assert (gone["orderStatus"], gone["cancelType"]) == ("Deactivated", "CancelByTpSlTsClear")
        assert w.paper.position("BTCUSDT").size == 0 and w.realtime() == []
        [closed] = w.session.get_closed_pnl(category="linear", symbol="BTCUSDT")["result"]["list"]
        assert closed["orderId"] == stop and dec(closed["closedSize"]) == dec("0.003")


def test_a_short_take_profit_sits_below_and_triggers_on_a_fall():
    with stop_world() as w:
        w.create(side="Sell", stopLoss="81000", takeProfit="79500")
        [target] = w.legs()["TakeProfit"]
        assert (target["side"], target["triggerDirection"]) == ("Buy", 2)
        w.move("79500")
        assert w.order(target["orderId"])["orderStatus"] == "Filled" and w.paper.position("BTCUSDT").size == 0


def test_closing_the_position_by_hand_cancels_its_full_and_partial_tpsl():
    with stop_world() as w:
        w.create(qty="0.002", stopLoss="79000")
        w.create(qty="0.002", takeProfit="85000", tpslMode="Partial")
        ids = [row["orderId"] for rows in w.legs().values() for row in rows]
        w.create(side="Sell", qty="0.004", reduceOnly=True)
        assert {(w.order(i)["orderStatus"], w.order(i)["cancelType"]) for i in ids} == {
            ("Deactivated", "CancelByTpSlTsClear")
        }
        assert w.position()["stopLoss"] == ""


def test_a_flip_clears_the_old_sides_tpsl():
    with stop_world() as w:
        w.create(qty="0.002", stopLoss="79000")
        w.create(side="Sell", qty="0.005")
        assert w.legs() == {} and w.paper.position("BTCUSDT").size == dec("-0.003")


def test_a_partial_leg_that_triggers_takes_its_pair_and_shrinks_nothing_else():
    with stop_world() as w:
        w.create(qty="0.002", stopLoss="79000", takeProfit="85000", tpslMode="Partial")
        w.create(qty="0.003", stopLoss="78000", tpslMode="Full")
        partial = {
            row["stopOrderType"]: row["orderId"]
            for kind in ("PartialStopLoss", "PartialTakeProfit")
            for row in w.legs()[kind]
        }
        w.move("79000")
        assert w.order(partial["PartialStopLoss"])["orderStatus"] == "Filled"
        pair = w.order(partial["PartialTakeProfit"])
        assert (pair["orderStatus"], pair["cancelType"]) == (
            "Deactivated",
            "CancelByOCOTpCanceledBySlTriggered",
        )
        assert w.paper.position("BTCUSDT").size == dec("0.003")
        [full] = w.legs()["StopLoss"]
        assert dec(full["qty"]) == dec("0.003")  # the Full stop follows the smaller position


def test_partial_legs_never_add_up_to_more_than_what_is_left_of_the_position():
    with stop_world() as w:
        w.create(qty="0.004")
        w.trading_stop(tpslMode="Partial", stopLoss="79000", slSize="0.002")
        w.trading_stop(tpslMode="Partial", stopLoss="78000", slSize="0.002")
        by_price = {row["triggerPrice"]: row["orderId"] for row in w.legs()["PartialStopLoss"]}
        older, newer = (
            by_price[k] for k in sorted(by_price, key=dec, reverse=True)
        )  # two requests may share a millisecond
        w.create(side="Sell", qty="0.001", reduceOnly=True)
        assert sum(dec(row["qty"]) for row in w.legs()["PartialStopLoss"]) == dec("0.003")
        w.create(side="Sell", qty="0.002", reduceOnly=True)
        legs = w.legs()["PartialStopLoss"]
        assert [(row["orderId"], dec(row["qty"])) for row in legs] == [(older, dec("0.001"))]
        row = w.order(newer)
        assert (row["orderStatus"], row["cancelType"]) == ("Deactivated", "CancelByReduceOnly")


def test_a_limit_partial_take_profit_rests_at_its_limit_once_triggered():
    with stop_world() as w:
        w.create(takeProfit="81000", tpOrderType="Limit", tpLimitPrice="81200", tpslMode="Partial")
        [target] = w.legs()["PartialTakeProfit"]
        w.move("81000")
        row = w.order(target["orderId"])
        assert (row["orderStatus"], dec(row["price"]), row["reduceOnly"]) == ("New", dec("81200"), True)
        w.move("81300")
        assert w.order(target["orderId"])["orderStatus"] == "Filled" and w.paper.position("BTCUSDT").size == 0


def test_a_random_walk_step_triggers_through_engine_rematch():
    walk = {"walk": {"start": "80220", "volatilityPct": "3", "seed": 7, "spreadTicks": 1}}
    scenario = default_scenario()
    scenario["prices"] = scenario["prices"] | {"BTCUSDT": walk}
    with stop_world(scenario) as w:
        w.create(qty="0.002", stopLoss="80000", takeProfit="80440")
        for _ in range(200):
            if w.paper.position("BTCUSDT").size == 0:
                break
            w.paper.tick()
        assert w.paper.position("BTCUSDT").size == 0
        fired = [o for o in w.paper.orders("BTCUSDT") if o.stop_order_type and o.status == "Filled"]
        assert len(fired) == 1 and fired[0].cum_exec_qty == Decimal("0.002")


def test_a_stop_its_fill_places_beyond_the_price_fires_at_once():
    with stop_world() as w:
        # a buy limit above the market fills at the ask; its stop sits below the limit (valid on create)
        # but above the last price: it triggers as soon as it exists
        w.create(qty="0.002", price="81000", timeInForce="IOC", stopLoss="80500")
        assert w.paper.position("BTCUSDT").size == 0
        [stop] = [o for o in w.paper.orders("BTCUSDT") if o.stop_order_type == "StopLoss"]
        assert stop.status == "Filled" and stop.cum_exec_qty == dec("0.002")
