"""The paper exchange's Bybit V5 WebSocket side, spoken to with a plain WebSocket client (no pybit, no Pilot).

Message shapes follow Bybit's websocket pages (connect, auth, ping/pong, tickers, orderbook, priceLimit,
order, execution, position, wallet). Waits are bounded receives, never sleeps.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
import urllib.request
from decimal import Decimal
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from pilot.paper import PaperExchange, start_paper_exchange
from tests.venue import connect_adapter

WAIT = 5.0


@pytest.fixture
def paper() -> Any:
    with start_paper_exchange() as exchange:
        yield exchange


def send(ws: ClientConnection, message: dict[str, Any]) -> None:
    ws.send(json.dumps(message))


def receive(ws: ClientConnection, match: Any = lambda m: True, timeout: float = WAIT) -> dict[str, Any]:
    """The next message that `match`es (others are skipped), within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        message = json.loads(ws.recv(timeout=max(deadline - time.monotonic(), 0.001)))
        if match(message):
            return message


def topic(name: str) -> Any:
    return lambda m: m.get("topic") == name


def signed_auth(key: str, secret: str, expires: int) -> dict[str, Any]:
    signature = hmac.new(secret.encode(), f"GET/realtime{expires}".encode(), hashlib.sha256).hexdigest()
    return {"op": "auth", "args": [key, expires, signature]}


def authenticate(paper: PaperExchange, ws: ClientConnection) -> None:
    send(ws, signed_auth(paper.api_key, paper.api_secret, paper.now_ms() + 10_000))
    assert receive(ws, lambda m: m.get("op") == "auth")["success"] is True
    send(ws, {"op": "subscribe", "req_id": "s", "args": ["order", "execution", "position", "wallet"]})
    assert receive(ws, lambda m: m.get("op") == "subscribe")["success"] is True


def test_public_topics_start_with_a_snapshot_and_go_on_with_deltas_in_sequence(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/public/linear") as ws:
        send(ws, {"op": "subscribe", "req_id": "1", "args": ["tickers.BTCUSDT", "orderbook.50.BTCUSDT"]})
        assert receive(ws, lambda m: m.get("op") == "subscribe")["success"] is True
        ticker = receive(ws, topic("tickers.BTCUSDT"))
        book = receive(ws, topic("orderbook.50.BTCUSDT"))
        assert ticker["type"] == book["type"] == "snapshot"
        assert Decimal(book["data"]["b"][0][0]) == Decimal(ticker["data"]["bid1Price"])
        paper.set_prices("BTCUSDT", bid=70000, ask="70000.1")
        seen: dict[str, dict[str, Any]] = {}
        while len(seen) < 2:  # the book's delta and the ticker's, in either order
            message = receive(
                ws, lambda m: m.get("topic") == "orderbook.50.BTCUSDT" or "bid1Price" in m.get("data", {})
            )
            seen[message["topic"]] = message
        delta, moved = seen["orderbook.50.BTCUSDT"], seen["tickers.BTCUSDT"]
        assert delta["type"] == "delta" and delta["data"]["u"] == book["data"]["u"] + 1
        assert ["70000.00", delta["data"]["b"][0][1]] in delta["data"]["b"]
        assert moved["type"] == "delta" and Decimal(moved["data"]["bid1Price"]) == Decimal(70000)


def test_a_bad_topic_is_refused(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/public/spot") as ws:
        send(ws, {"op": "subscribe", "req_id": "1", "args": ["tickers.NOSUCHUSDT"]})
        assert receive(ws, lambda m: m.get("op") == "subscribe")["success"] is False


def test_ping_is_answered_on_both_paths(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/public/linear") as ws:
        send(ws, {"op": "ping", "req_id": "p1"})
        pong = receive(ws, lambda m: m.get("req_id") == "p1")
        assert pong["ret_msg"] == "pong" and pong["success"] is True
    with connect(f"{paper.ws_url}/v5/private") as ws:
        send(ws, {"op": "ping", "req_id": "p2"})
        pong = receive(ws, lambda m: m.get("req_id") == "p2")
        assert pong["op"] == "pong" and abs(int(pong["args"][0]) - paper.now_ms()) < 60_000


@pytest.mark.parametrize("problem", ["signature", "expired", "key"])
def test_private_auth_is_checked_as_bybit_does(paper: PaperExchange, problem: str) -> None:
    key, secret, expires = paper.api_key, paper.api_secret, paper.now_ms() + 10_000
    if problem == "signature":
        secret = "not-the-secret"
    elif problem == "expired":
        expires = paper.now_ms() - 1
    else:
        key = "unknown-key"
    with connect(f"{paper.ws_url}/v5/private") as ws:
        send(ws, signed_auth(key, secret, expires))
        assert receive(ws, lambda m: m.get("op") == "auth")["success"] is False
        send(ws, {"op": "subscribe", "req_id": "s", "args": ["order"]})
        assert receive(ws, lambda m: m.get("op") == "subscribe")["success"] is False


def test_private_topics_push_what_rest_shows(paper: PaperExchange) -> None:
    from pilot.exchange.models import OrderRequest

    rest = connect_adapter(paper)
    with connect(f"{paper.ws_url}/v5/private") as ws:
        authenticate(paper, ws)
        receive(ws, topic("wallet"))  # the first push after subscribing: the account as it is
        request = OrderRequest(
            category="linear",
            symbol="BTCUSDT",
            side="Buy",
            qty=Decimal("0.001"),
            price=Decimal("90000"),
            time_in_force="IOC",
            order_link_id="ws-push-1",
        )
        import asyncio

        asyncio.run(rest.create_order(request))
        order = receive(
            ws, lambda m: m.get("topic") == "order" and m["data"][0]["orderLinkId"] == "ws-push-1"
        )
        execution = receive(ws, topic("execution"))
        position = receive(ws, lambda m: m.get("topic") == "position" and m["data"][0]["symbol"] == "BTCUSDT")
        receive(ws, topic("wallet"))
        row = order["data"][0]
        assert row["category"] == "linear" and row["orderStatus"] == "Filled" and row["cumExecQty"] == "0.001"
        assert execution["data"][0]["orderLinkId"] == "ws-push-1"
        assert Decimal(position["data"][0]["size"]) == paper.position("BTCUSDT").size == Decimal("0.001")
    asyncio.run(rest.close())


def test_stall_holds_everything_and_drop_resets_the_connection(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/private") as ws:
        paper.stream_faults.stall = True
        send(ws, {"op": "ping", "req_id": "held"})
        with pytest.raises(TimeoutError):
            ws.recv(timeout=0.3)
        paper.stream_faults.stall = False
        send(ws, {"op": "ping", "req_id": "after"})
        assert receive(ws, lambda m: m.get("req_id") == "after")["op"] == "pong"
        paper.drop_streams()
        with pytest.raises(ConnectionClosed):
            receive(ws, lambda m: False)


def test_delayed_messages_arrive_late_and_in_order(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/private") as ws:
        paper.stream_faults.delay_ms = 200
        started = time.monotonic()
        for n in range(3):
            send(ws, {"op": "ping", "req_id": str(n)})
        got = [receive(ws, lambda m: m.get("op") == "pong")["req_id"] for _ in range(3)]
        assert got == ["0", "1", "2"] and time.monotonic() - started >= 0.2


def test_swapped_deltas_arrive_out_of_sequence(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/public/linear") as ws:
        send(ws, {"op": "subscribe", "req_id": "1", "args": ["orderbook.50.BTCUSDT", "tickers.BTCUSDT"]})
        first = receive(ws, topic("orderbook.50.BTCUSDT"))["data"]["u"]
        paper.stream_faults.swap_next_deltas = 1
        paper.set_prices("BTCUSDT", bid=70000, ask="70000.1")
        receive(
            ws, lambda m: m.get("topic") == "tickers.BTCUSDT" and m["data"].get("bid1Price") == "70000.00"
        )
        paper.set_prices("BTCUSDT", bid=71000, ask="71000.1")
        seen = [receive(ws, topic("orderbook.50.BTCUSDT"))["data"]["u"] for _ in range(2)]
        assert seen == [first + 2, first + 1]


def wait_until(condition: Any, timeout: float = WAIT) -> None:
    """Wait for something the exchange's thread does (polling, bounded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        threading.Event().wait(0.005)


def test_the_rest_side_names_the_websocket_side_at_pilot_streams(paper: PaperExchange) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{paper.url}/pilot/streams", timeout=WAIT) as answer:
        body = json.loads(answer.read())
    assert body["retCode"] == 0 and body["result"] == {"url": paper.ws_url}


def test_an_unavailable_stream_answers_new_connections_503_until_it_is_back(paper: PaperExchange) -> None:
    paper.stream_faults.unavailable = True
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{paper.ws_url}/v5/private", open_timeout=WAIT)
    assert refused.value.response.status_code == 503
    assert paper.streams.refused["/v5/private"] == paper.streams.handshakes["/v5/private"] == 1
    paper.stream_faults.unavailable = False
    with connect(f"{paper.ws_url}/v5/private", open_timeout=WAIT) as ws:
        send(ws, {"op": "ping", "req_id": "back"})
        assert receive(ws, lambda m: m.get("req_id") == "back")["op"] == "pong"
    assert paper.streams.handshakes["/v5/private"] == 2


def test_a_held_handshake_opens_once_it_is_let_go(paper: PaperExchange) -> None:
    paper.stream_faults.hold_handshakes = True
    opened: list[ClientConnection] = []
    opener = threading.Thread(target=lambda: opened.append(connect(f"{paper.ws_url}/v5/public/spot")))
    opener.start()
    wait_until(lambda: paper.streams.held == 1)
    assert not opened and paper.streams.open_connections == 0
    paper.stream_faults.hold_handshakes = False
    opener.join(WAIT)
    with opened[0] as ws:
        send(ws, {"op": "ping", "req_id": "let-go"})
        assert receive(ws, lambda m: m.get("req_id") == "let-go")["success"] is True
    assert paper.streams.held == 0


def test_stopping_does_not_wait_on_a_client_that_never_answers_the_close() -> None:
    paper = start_paper_exchange()
    silent = socket.create_connection(("127.0.0.1", paper.streams.port), timeout=WAIT)
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    silent.sendall(
        f"GET /v5/public/linear HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    assert silent.recv(4096).startswith(b"HTTP/1.1 101")
    wait_until(lambda: paper.streams.open_connections == 1)
    stopping = threading.Thread(target=paper.stop)
    stopping.start()
    stopping.join(WAIT)  # the client never sends its close frame: it is reset after a grace period
    try:
        assert not stopping.is_alive()
        assert paper.streams.open_connections == 0
    finally:
        silent.close()
