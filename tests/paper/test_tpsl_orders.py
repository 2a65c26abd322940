"""The position's TP/SL are orders, as Bybit keeps them, over HTTP through pybit.

Sources: trading-stop.mdx (the system creates conditional orders for TP/SL and adjusts their qty to the
position; Full modifies, Partial adds; tpSize and slSize equal), create-order.mdx (takeProfit / stopLoss on
create, tpslMode Full or Partial, a Limit TP/SL only in Partial mode, none on a reduce-only order),
open-order.mdx (the fields listed), position.mdx (takeProfit / stopLoss on the position), error.mdx (34040
not modified, 110058 insufficient size, 110061 more than 20 Partial TP/SLs), and a recorded whole-position
trailing stop from Bybit's order stream (2024-09-28, quoted by a C++ client's tests: qty the position's
size, price "0", reduceOnly and closeOnTrigger true, createType CreateByTrailingStop). The real error text
"slOrderType only support Market when tpSlMode is Full" (10001) is from ccxt/ccxt pull request #27233.
"""

from __future__ import annotations

from decimal import Decimal

from tests.paper.stop_world import LAST, dec, default_scenario, ret_code, stop_world


def test_full_tpsl_on_a_create_become_two_untriggered_orders_of_the_whole_position():
    with stop_world() as w:
        w.create(qty="0.002", stopLoss="79000", takeProfit="85000")  # tpslMode not sent: Full
        legs = w.legs()
        assert sorted(legs) == ["StopLoss", "TakeProfit"]
        for kind, trigger, direction, create_type in (
            ("TakeProfit", "85000", 1, "CreateByTakeProfit"),
            ("StopLoss", "79000", 2, "CreateByStopLoss"),
        ):
            [row] = legs[kind]
            assert (row["orderStatus"], row["tpslMode"], row["createType"]) == (
                "Untriggered",
                "Full",
                create_type,
            )
            assert dec(row["triggerPrice"]) == dec(trigger) and row["triggerDirection"] == direction
            assert (row["triggerBy"], row["orderType"], row["side"]) == ("LastPrice", "Market", "Sell")
            assert row["reduceOnly"] is True and row["closeOnTrigger"] is True
            assert dec(row["qty"]) == dec("0.002") == dec(row["leavesQty"]) and dec(row["price"]) == 0
            assert row["orderLinkId"] == ""
        position = w.position()
        assert dec(position["stopLoss"]) == 79000 and dec(position["takeProfit"]) == 85000


def test_the_order_that_carried_them_shows_its_tpsl_and_a_full_leg_follows_the_position_size():
    with stop_world() as w:
        first = w.create(qty="0.002", stopLoss="79000", takeProfit="85000", orderLinkId="with-stops")
        row = w.order(first)
        assert (dec(row["stopLoss"]), dec(row["takeProfit"]), row["tpslMode"]) == (79000, 85000, "Full")
        assert (row["slTriggerBy"], row["tpTriggerBy"]) == ("LastPrice", "LastPrice")
        w.create(qty="0.003")
        assert {dec(r["qty"]) for r in w.realtime(orderFilter="StopOrder")} == {dec("0.005")}
        w.create(side="Sell", qty="0.001")
        assert {dec(r["qty"]) for r in w.realtime(orderFilter="StopOrder")} == {dec("0.004")}


def test_a_later_fill_with_full_tpsl_replaces_the_positions_and_keeps_one_of_each():
    with stop_world() as w:
        w.create(qty="0.002", stopLoss="79000", takeProfit="85000")
        ids = {kind: rows[0]["orderId"] for kind, rows in w.legs().items()}
        w.create(qty="0.001", stopLoss="79500", tpslMode="Full")
        legs = w.legs()
        assert [len(legs["StopLoss"]), len(legs["TakeProfit"])] == [1, 1]
        assert dec(legs["StopLoss"][0]["triggerPrice"]) == dec("79500")
        assert legs["StopLoss"][0]["orderId"] == ids["StopLoss"]  # modified, as trading-stop.mdx says
        assert dec(w.position()["stopLoss"]) == dec("79500")


def test_partial_tpsl_on_creates_add_up_as_legs_for_what_each_order_filled():
    with stop_world() as w:
        w.create(qty="0.002", stopLoss="79000", takeProfit="85000", tpslMode="Partial", orderLinkId="entry-1")
        w.create(qty="0.003", stopLoss="78000", tpslMode="Partial", orderLinkId="entry-2")
        legs = w.legs()
        assert sorted(dec(r["qty"]) for r in legs["PartialStopLoss"]) == [dec("0.002"), dec("0.003")]
        assert [dec(r["qty"]) for r in legs["PartialTakeProfit"]] == [dec("0.002")]
        assert {r["parentOrderLinkId"] for r in legs["PartialStopLoss"]} == {"entry-1", "entry-2"}
        assert {r["tpslMode"] for rows in legs.values() for r in rows} == {"Partial"}
        position = w.position()  # only Partial legs: the position shows no TP/SL of its own
        assert (position["stopLoss"], position["takeProfit"], position["tpslMode"]) == ("", "", "Full")


def test_a_limit_tpsl_is_partial_only_and_needs_its_limit_price():
    with stop_world() as w:
        limit_sl = {"stopLoss": "79000", "slOrderType": "Limit", "slLimitPrice": "78900"}
        assert ret_code(w.create, tpslMode="Full", **limit_sl) == 10001
        assert ret_code(w.create, tpslMode="Partial", stopLoss="79000", slOrderType="Limit") == 10001
        assert w.paper.position("BTCUSDT").size == 0
        w.create(tpslMode="Partial", **limit_sl)
        [leg] = w.legs()["PartialStopLoss"]
        assert (leg["orderType"], dec(leg["price"]), leg["timeInForce"]) == ("Limit", dec("78900"), "GTC")


def test_tpsl_on_the_wrong_side_off_the_tick_or_on_a_reduce_only_order_are_refused():
    with stop_world() as w:
        assert ret_code(w.create, stopLoss="81000") == 10001  # a long's stop above the base price
        assert ret_code(w.create, takeProfit="79000") == 10001
        assert ret_code(w.create, stopLoss="79000.05") == 10001  # tick 0.10
        assert ret_code(w.create, tpslMode="Half", stopLoss="79000") == 10001
        w.create()
        assert ret_code(w.create, side="Sell", reduceOnly=True, qty="0.001", stopLoss="81000") == 10001
        assert w.paper.position("BTCUSDT").size == dec("0.002") and w.legs() == {}


def test_trading_stop_needs_tpsl_mode_and_full_sets_moves_and_cancels_the_positions_tpsl():
    with stop_world() as w:
        w.create()
        assert (
            ret_code(
                w.session.set_trading_stop,
                category="linear",
                symbol="BTCUSDT",
                positionIdx=0,
                stopLoss="79000",
            )
            == 10001
        )
        w.trading_stop(tpslMode="Full", stopLoss="79000", takeProfit="85000")
        [stop] = w.legs()["StopLoss"]
        w.trading_stop(tpslMode="Full", stopLoss="79500", slTriggerBy="MarkPrice")
        [moved] = w.legs()["StopLoss"]
        assert moved["orderId"] == stop["orderId"] and dec(moved["triggerPrice"]) == dec("79500")
        assert moved["triggerBy"] == "MarkPrice"
        w.trading_stop(tpslMode="Full", takeProfit="0")
        assert sorted(w.legs()) == ["StopLoss"] and w.position()["takeProfit"] == ""
        [gone] = [r for r in w.history(orderFilter="StopOrder") if r["stopOrderType"] == "TakeProfit"]
        assert (gone["orderStatus"], gone["cancelType"]) == ("Deactivated", "CancelByUser")


def test_an_unchanged_full_tpsl_is_not_modified_34040_and_changes_nothing():
    with stop_world() as w:
        w.create()
        w.trading_stop(tpslMode="Full", stopLoss="79000")
        [before] = w.legs()["StopLoss"]
        assert ret_code(w.trading_stop, tpslMode="Full", stopLoss="79000") == 34040
        assert ret_code(w.trading_stop, tpslMode="Full", takeProfit="0") == 34040  # none to cancel
        assert ret_code(w.trading_stop, tpslMode="Full") == 34040  # nothing asked
        assert w.legs()["StopLoss"] == [before]


def test_trading_stop_full_is_checked_like_bybit():
    with stop_world() as w:
        assert ret_code(w.trading_stop, tpslMode="Full", stopLoss="79000") == 10001  # no position
        w.create()
        assert ret_code(w.trading_stop, tpslMode="Full", stopLoss="81000") == 10001  # above the last price
        assert ret_code(w.trading_stop, tpslMode="Full", stopLoss="-1") == 10001
        assert (
            ret_code(
                w.trading_stop, tpslMode="Full", stopLoss="79000", slOrderType="Limit", slLimitPrice="78000"
            )
            == 10001
        )
        assert w.legs() == {}


def test_trading_stop_partial_adds_legs_of_their_own_size_within_the_position():
    with stop_world() as w:
        w.create(qty="0.004")
        w.trading_stop(
            tpslMode="Partial", stopLoss="79000", slSize="0.001", takeProfit="85000", tpSize="0.001"
        )
        w.trading_stop(tpslMode="Partial", stopLoss="78000", slSize="0.003")
        legs = w.legs()
        assert sorted(dec(r["qty"]) for r in legs["PartialStopLoss"]) == [dec("0.001"), dec("0.003")]
        assert [dec(r["qty"]) for r in legs["PartialTakeProfit"]] == [dec("0.001")]
        partial = {"tpslMode": "Partial"}
        assert ret_code(w.trading_stop, **partial, stopLoss="77000", slSize="0.001") == 110058  # 0.004 taken
        assert ret_code(w.trading_stop, **partial, takeProfit="86000") == 10001  # no tpSize
        assert (
            ret_code(
                w.trading_stop,
                **partial,
                takeProfit="86000",
                tpSize="0.001",
                stopLoss="77000",
                slSize="0.002",
            )
            == 10001
        )
        assert ret_code(w.trading_stop, **partial, takeProfit="86000", tpSize="0.0015") == 10001  # step 0.001


def test_no_more_than_twenty_partial_legs():
    with stop_world(default_scenario(rateLimits=False)) as w:
        w.create(qty="0.020")
        for n in range(20):
            w.trading_stop(tpslMode="Partial", stopLoss=str(79000 - n), slSize="0.001")
        assert ret_code(w.trading_stop, tpslMode="Partial", takeProfit="85000", tpSize="0.001") == 110061


def test_a_trailing_stop_is_an_order_that_follows_the_best_last_price():
    with stop_world() as w:
        w.create()
        w.trading_stop(tpslMode="Full", trailingStop="500")
        [trail] = w.legs()["TrailingStop"]
        assert (trail["createType"], trail["triggerDirection"], trail["closeOnTrigger"]) == (
            "CreateByTrailingStop",
            2,
            True,
        )
        assert dec(trail["triggerPrice"]) == LAST - 500 and dec(w.position()["trailingStop"]) == 500
        w.move("81000")
        assert dec(w.legs()["TrailingStop"][0]["triggerPrice"]) == Decimal("80500")
        w.move("80600")  # down, not through the stop: it stays where the best price put it
        assert dec(w.legs()["TrailingStop"][0]["triggerPrice"]) == Decimal("80500")
        w.move("80500")
        assert w.paper.position("BTCUSDT").size == 0
        assert w.order(trail["orderId"])["orderStatus"] == "Filled"
