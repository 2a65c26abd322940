"""The adapter reads TP/SL and conditional orders by Bybit's wire names, and cancel-all leaves the position's
stops alone unless asked.

Sources: tests/fixtures/bybit/open_orders_tpsl_orders.json (nautilus_trader's realtime TP/SL rows and
open-order.mdx's documented order with TP/SL attached); open-order.mdx (stopOrderType, triggerPrice,
triggerDirection, triggerBy, tpslMode, closeOnTrigger, createType); cancel-all.mdx (linear without orderFilter
cancels every kind, TP/SL included; orderFilter Order the active orders only), on the paper exchange.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from pilot.exchange.bybit.payloads import order_params
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.models import OrderRequest
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bybit" / "open_orders_tpsl_orders.json"


def buy(link: str, **extra) -> OrderRequest:
    return OrderRequest("linear", "BTCUSDT", "Buy", Decimal("0.002"), Decimal("80300"), "IOC", link, **extra)


async def test_tpsl_orders_and_an_order_carrying_tpsl_are_told_apart_from_the_wire():
    with ReplayServer.from_path(FIXTURE) as stub:
        adapter = connect_adapter(stub.url, timeout_seconds=2)
        try:
            take, stop, ordinary = await adapter.get_open_orders("linear")
        finally:
            await adapter.close()
    assert (take.stop_order_type, take.trigger_price, take.trigger_direction, take.trigger_by) == (
        "TakeProfit",
        Decimal("55000.00"),
        1,
        "LastPrice",
    )
    assert take.is_stop_leg and take.is_untriggered and take.close_on_trigger and take.tpsl_mode == "Full"
    assert (stop.stop_order_type, stop.trigger_price, stop.trigger_direction) == (
        "StopLoss",
        Decimal("48000"),
        2,
    )
    assert not take.is_ordinary and not take.is_conditional
    assert ordinary.is_ordinary and not ordinary.is_stop_leg and ordinary.trigger_price is None
    assert (ordinary.take_profit, ordinary.stop_loss, ordinary.tpsl_mode) == (
        Decimal("2500"),
        Decimal("1500"),
        "Full",
    )
    assert (ordinary.stop_order_type, ordinary.trigger_by) == ("", "")  # Bybit's "UNKNOWN" means none


async def test_partial_tpsl_sent_by_the_adapter_come_back_as_stop_legs(paper, exchange):
    await exchange.create_order(buy("pilot-partial-1", stop_loss=Decimal("79000"), stop_scope="order"))
    orders = await exchange.get_open_orders("linear", "BTCUSDT")
    [leg] = [o for o in orders if o.is_stop_leg]
    assert (leg.stop_order_type, leg.tpsl_mode, leg.qty, leg.side) == (
        "PartialStopLoss",
        "Partial",
        Decimal("0.002"),
        "Sell",
    )
    assert (leg.trigger_price, leg.trigger_direction, leg.create_type) == (
        Decimal("79000"),
        2,
        "CreateByPartialStopLoss",
    )
    [sent] = [
        o
        for o in await exchange.get_order_history("linear", "BTCUSDT")
        if o.order_link_id == "pilot-partial-1"
    ]
    assert (sent.stop_loss, sent.tpsl_mode, sent.is_ordinary) == (Decimal("79000"), "Partial", True)


async def test_a_conditional_order_reads_as_one(paper, session, exchange):
    session.place_order(
        category="linear",
        symbol="BTCUSDT",
        side="Buy",
        orderType="Market",
        qty="0.001",
        triggerPrice="81000",
        triggerDirection=1,
    )
    [order] = await exchange.get_open_orders("linear", "BTCUSDT")
    assert order.is_conditional and order.is_untriggered and not order.is_stop_leg
    assert (order.trigger_price, order.trigger_direction, order.create_type) == (
        Decimal("81000"),
        1,
        "CreateByStopOrder",
    )


async def test_cancel_all_orders_leaves_the_positions_stops_unless_every_kind_is_asked_for(paper, exchange):
    await exchange.create_order(buy("pilot-with-stop", stop_loss=Decimal("79000")))
    resting = OrderRequest(
        "linear", "BTCUSDT", "Buy", Decimal("0.001"), Decimal("70000"), "GTC", "pilot-rest"
    )
    await exchange.create_order(resting)
    [rest] = [o.order_id for o in paper.open_orders("BTCUSDT")]
    assert await exchange.cancel_all_orders("linear", "BTCUSDT") == [rest]  # orderFilter Order
    assert paper.position("BTCUSDT").stop_loss == Decimal("79000")
    [stop] = [o.order_id for o in await exchange.get_open_orders("linear", "BTCUSDT") if o.is_stop_leg]
    assert await exchange.cancel_all_orders("linear", "BTCUSDT", include_stops=True) == [stop]
    assert paper.position("BTCUSDT").stop_loss == 0


def spot_buy(link: str, **extra) -> OrderRequest:
    return OrderRequest("spot", "ETHUSDT", "Buy", Decimal("0.1"), Decimal("3100.01"), "IOC", link, **extra)


def test_a_spot_orders_stop_and_target_go_as_spot_takes_them():
    """create-order.mdx: spot takes takeProfit / stopLoss on a Limit order with tpOrderType / slOrderType;
    tpslMode is for linear and inverse only."""
    params = order_params(spot_buy("pilot-spot-1", stop_loss=Decimal(3000), take_profit=Decimal(3200)))
    assert (params["stopLoss"], params["slOrderType"]) == ("3000", "Market")
    assert (params["takeProfit"], params["tpOrderType"]) == ("3200", "Market")
    assert "tpslMode" not in params and "positionIdx" not in params


async def test_a_spot_stop_is_read_back_cancelled_by_its_kind_and_kept_by_a_plain_cancel_all(paper, exchange):
    await exchange.create_order(spot_buy("pilot-spot-2", stop_loss=Decimal(3000), stop_scope="order"))
    [leg] = await exchange.get_open_orders("spot", "ETHUSDT")
    assert (leg.stop_order_type, leg.side, leg.trigger_price, leg.is_untriggered) == (
        "tpslOrder",
        "Sell",
        Decimal(3000),
        True,
    )
    assert leg.is_spot_stop_sell and not leg.is_ordinary
    assert await exchange.cancel_all_orders("spot", "ETHUSDT") == []  # the ordinary orders only
    await exchange.cancel_order("spot", "ETHUSDT", order_id=leg.order_id, waiting_kind=leg.stop_order_type)
    assert await exchange.get_open_orders("spot", "ETHUSDT") == []


async def test_cancel_all_with_stops_on_spot_asks_for_each_kind(paper, exchange):
    await exchange.create_order(spot_buy("pilot-spot-3", stop_loss=Decimal(3000), stop_scope="order"))
    before = paper.request_count("/v5/order/cancel-all")
    cancelled = await exchange.cancel_all_orders("spot", "ETHUSDT", include_stops=True)
    assert len(cancelled) == 1 and paper.request_count("/v5/order/cancel-all") - before == 3
    assert await exchange.get_open_orders("spot", "ETHUSDT") == []
