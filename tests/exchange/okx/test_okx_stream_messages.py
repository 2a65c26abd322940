"""OKX's WebSocket messages as pilot.exchange.okx.stream reads them: recorded and documented pushes
(tests/fixtures/okx/ws/pushes.json, each naming its source) become Pilot's stream events, sizes in coins.

The client is built and fed messages directly (`receive`), as its connections would: no socket is opened.
BTC-USDT-SWAP's contract is 0.01 BTC, as OKX lists it (tests/fixtures/okx/instruments_swap.json).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.exchange.okx.client import Keys
from pilot.exchange.okx.markets import Contract
from pilot.exchange.okx.stream import BUSINESS, OkxStreams, stream_base
from pilot.exchange.stream_events import (
    PRIVATE,
    Alive,
    BookUpdate,
    Connected,
    OrderUpdate,
    PositionUpdate,
    Refused,
    StreamEvent,
    Subscribed,
    Unreadable,
    WalletUpdate,
)

FIXTURES = json.loads((Path(__file__).parents[2] / "fixtures" / "okx" / "ws" / "pushes.json").read_text())
CONTRACTS = {"BTC-USDT-SWAP": Contract(Decimal("0.01"))}


def message(name: str) -> dict[str, Any]:
    found: dict[str, Any] = FIXTURES["messages"][name]["message"]
    return found


def client(events: list[StreamEvent]) -> OkxStreams:
    return OkxStreams(
        "okx-demo",
        keys=Keys("key", "secret", "passphrase"),
        markets={"linear": ("BTC-USDT",), "spot": ("BTC-USDT",)},
        sink=events.append,
        contract=CONTRACTS.get,
        clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
    )


def fed(connection: str, text: str) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    client(events).receive(connection, text)
    return events


def test_every_fixture_names_its_source():
    for entry in FIXTURES["messages"].values():
        assert entry["source"]["repository"] and entry["source"]["path"]


def test_an_order_push_is_an_order_in_coins():
    (update,) = fed(PRIVATE, json.dumps(message("orders")))
    assert isinstance(update, OrderUpdate) and update.exchange_ms == 1746947317402
    (order,) = update.orders
    assert (order.symbol, order.category, order.side, order.status) == ("BTC-USDT", "linear", "Buy", "Filled")
    assert order.qty == order.cum_exec_qty == Decimal("0.0003")  # 0.03 contracts of 0.01 BTC
    assert order.avg_price == Decimal("103698.9") and order.cum_exec_fee == Decimal("0.021776769")
    assert order.order_type == "Market" and order.time_in_force == "IOC"


def test_algo_orders_are_the_port_s_conditional_orders():
    (update,) = fed(BUSINESS, json.dumps(message("orders_algo")))
    assert isinstance(update, OrderUpdate) and update.exchange_ms == 1737400400000
    rows = {o.order_id: o for o in update.orders}
    first = rows["algo:706620792746729472"]
    assert (first.stop_order_type, first.status, first.qty) == ("Stop", "Untriggered", Decimal("0.0001"))
    assert first.trigger_price == Decimal("95000") and first.order_type == "Market"
    assert rows["algo:706620792746729473"].price == Decimal("106000")
    assert rows["algo:706620792746729473"].trigger_by == "MarkPrice"
    assert rows["algo:706620792746729475"].status == "canceled"  # not open: it leaves the open orders


def test_a_long_short_leg_is_pushed_as_hedged_never_as_the_position():
    (update,) = fed(PRIVATE, json.dumps(message("positions_long_leg")))
    assert isinstance(update, PositionUpdate)
    assert update.positions == () and update.hedged == ("BTC-USDT",)


def test_a_net_position_is_signed_in_coins_with_its_whole_stop():
    row = {**message("positions_long_leg")["data"][0], "posSide": "net", "pos": "-5"}
    row["closeOrderAlgo"] = [{"algoId": "1", "slTriggerPx": "11000", "closeFraction": "1"}]
    text = json.dumps({"arg": {"channel": "positions", "instType": "SWAP"}, "data": [row]})
    (update,) = fed(PRIVATE, text)
    assert isinstance(update, PositionUpdate) and update.hedged == ()
    (position,) = update.positions
    assert (position.size, position.entry_price, position.stop_loss) == (
        Decimal("-0.05"),
        Decimal("10000"),
        Decimal("11000"),
    )


def test_the_account_push_is_the_balance():
    (update,) = fed(PRIVATE, json.dumps(message("account")))
    assert isinstance(update, WalletUpdate) and update.exchange_ms == 1751531646836
    assert update.balance.total_equity_usd == Decimal("100.56089404807182")
    (usdt,) = update.balance.coins
    assert (usdt.coin, usdt.wallet_balance, usdt.locked) == ("USDT", Decimal("100.52768569797846"), 0)


def test_books5_is_the_top_of_the_book():
    events = fed("spot", json.dumps(message("books5")))
    assert events == [
        BookUpdate("spot", "BTC-USDT", Decimal("31738.2"), Decimal("31738.3"), 1626537446491),
        Alive("spot", 1626537446491),
    ]


def test_a_book_that_cannot_be_read_names_its_market():
    broken = message("books5")
    broken = {**broken, "data": [{**broken["data"][0], "bids": [["not a price", "1", "0", "1"]]}]}
    assert fed("spot", json.dumps(broken)) == [Unreadable("spot", "books5.BTC-USDT")]
    assert fed("spot", "{not json") == [Unreadable("spot", "other")]


def test_a_refused_login_is_refused_with_okx_s_code():
    events: list[StreamEvent] = []
    streams = client(events)
    streams.opened(PRIVATE)
    streams.receive(PRIVATE, json.dumps(message("login_refused")))
    assert events[0] == Connected(PRIVATE)
    assert [type(e) for e in events[1:]] == [Refused] and events[1].channel == PRIVATE
    assert streams.login_refused == "60005"


def test_the_private_channel_is_subscribed_once_both_its_connections_acknowledged():
    events: list[StreamEvent] = []
    streams = client(events)
    for name in (PRIVATE, BUSINESS):
        streams.opened(name)
        streams.receive(name, json.dumps({"event": "login", "code": "0", "msg": "", "connId": "a"}))
    for arg in streams.subscriptions[PRIVATE]:
        streams.receive(PRIVATE, json.dumps({"event": "subscribe", "arg": arg, "connId": "a"}))
    assert Subscribed(PRIVATE) not in events
    (arg,) = streams.subscriptions[BUSINESS]
    streams.receive(BUSINESS, json.dumps({"event": "subscribe", "arg": arg, "connId": "b"}))
    assert events[-1] == Subscribed(PRIVATE)


@pytest.mark.parametrize(
    "url", ["wss://ws.okx.com:8443", "ws://203.0.113.7:8443", "http://127.0.0.1:9000", "ws://127.0.0.1"]
)
def test_only_okx_demo_or_a_loopback_stand_in_is_connected_to(url):
    with pytest.raises(ValueError):
        stream_base("okx-demo", url)
    assert stream_base("okx-demo") == "wss://wspap.okx.com:8443"
    assert stream_base("okx-demo", "ws://127.0.0.1:9000/") == "ws://127.0.0.1:9000"
    with pytest.raises(ValueError):
        stream_base("okx-live")


@pytest.mark.parametrize(
    ("host", "base"),
    [
        ("www.okx.com", "wss://ws.okx.com:8443"),
        ("us.okx.com", "wss://wsus.okx.com:8443"),
        ("eea.okx.com", "wss://wseea.okx.com:8443"),
    ],
)
def test_the_real_account_connects_to_the_websocket_host_of_its_key_s_rest_host(host, base):
    assert stream_base("okx", rest_host=host) == base


@pytest.mark.parametrize(
    "host", [None, "my.okx.com", "okx.com", "ws.okx.com", "127.0.0.1", "www.okx.com.evil"]
)
def test_a_real_account_on_any_other_host_has_no_streams(host):
    with pytest.raises(ValueError):
        stream_base("okx", rest_host=host)
