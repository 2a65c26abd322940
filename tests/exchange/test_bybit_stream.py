"""The stream client: where it may connect, how it reads Bybit's messages, and pybit against the paper exchange."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pilot.exchange.bybit.stream import (
    BybitStreams,
    NoStreams,
    discover_paper_streams,
    stream_urls,
)
from pilot.exchange.stream_events import (
    PRIVATE,
    Alive,
    BookGap,
    BookUpdate,
    Connected,
    OrderUpdate,
    Refused,
    StreamEvent,
    Subscribed,
    Unreadable,
)
from pilot.exchange.stream_sockets import RECONNECT_MAX_SECONDS, next_pause
from pilot.paper import PaperExchange, start_paper_exchange
from tests.venue import connect_adapter


@pytest.mark.parametrize(
    "environment, url",
    [
        ("paper", "ws://10.0.0.1:9000"),
        ("paper", "wss://stream.bybit.com"),
        ("paper", "ws://127.0.0.1"),
        ("paper", "ws://127.0.0.1:9000/v5"),
        ("paper", "ws://127.0.0.1:9000?to=10.0.0.1"),
        ("paper", "ws://user:secret@127.0.0.1:9000"),
        ("mainnet", None),
        ("bybit-live", None),
    ],
)
def test_only_demo_testnet_and_loopback_paper_streams_are_allowed(environment: str, url: str | None) -> None:
    with pytest.raises(ValueError):
        stream_urls(environment, url)


def test_demo_reads_public_data_from_mainnet_streams_and_its_account_from_the_demo_host() -> None:
    assert stream_urls("bybit-demo") == ("wss://stream.bybit.com", "wss://stream-demo.bybit.com")
    assert stream_urls("paper", "ws://127.0.0.1:9000") == ("ws://127.0.0.1:9000", "ws://127.0.0.1:9000")


def offline(events: list[StreamEvent]) -> BybitStreams:
    return BybitStreams(
        "paper",
        api_key="k",
        api_secret="s",
        markets={"linear": ("BTCUSDT",)},
        sink=events.append,
        paper_ws_url="ws://127.0.0.1:1",
    )


def book(kind: str, u: int, bids: list[list[str]], asks: list[list[str]]) -> str:
    data = {"s": "BTCUSDT", "b": bids, "a": asks, "u": u, "seq": u}
    return json.dumps({"topic": "orderbook.50.BTCUSDT", "type": kind, "ts": 1000 + u, "data": data})


def test_a_book_delta_out_of_sequence_forgets_the_book_until_the_next_snapshot() -> None:
    events: list[StreamEvent] = []
    client = offline(events)
    client.receive("linear", book("snapshot", 5, [["100", "1"]], [["101", "1"]]))
    client.receive("linear", book("delta", 7, [["99", "1"], ["100", "0"]], []))  # 6 is missing
    client.receive("linear", book("delta", 8, [["98", "1"]], []))  # still no snapshot: still unknown
    client.receive("linear", book("snapshot", 1, [["97", "2"]], [["98", "2"]]))
    client.receive("linear", book("delta", 2, [["97.5", "1"]], [["98", "0"], ["98.5", "1"]]))
    kinds = [type(e) for e in events if not isinstance(e, Alive)]
    assert kinds == [BookUpdate, BookGap, BookGap, BookUpdate, BookUpdate]
    last = [e for e in events if isinstance(e, BookUpdate)][-1]
    assert (last.bid, last.ask) == (Decimal("97.5"), Decimal("98.5"))


def test_unreadable_messages_are_named_by_their_topic_and_refusals_make_the_channel_untrusted() -> None:
    events: list[StreamEvent] = []
    client = offline(events)
    client.receive(PRIVATE, "not json")
    client.receive(PRIVATE, json.dumps({"op": "auth", "success": False, "ret_msg": "Signature Error"}))
    client.receive(PRIVATE, json.dumps({"topic": "order", "creationTime": 1, "data": [{"no": "fields"}]}))
    client.receive(PRIVATE, json.dumps({"topic": "made up\nby the exchange", "creationTime": 1, "data": 5}))
    assert events == [
        Unreadable(PRIVATE, "other"),
        Refused(PRIVATE, "auth refused"),
        Unreadable(PRIVATE, "order"),
        Unreadable(PRIVATE, "other"),  # a name Pilot did not subscribe to is not repeated
    ]


def test_subscribed_is_said_once_every_subscription_of_the_connection_is_acknowledged() -> None:
    events: list[StreamEvent] = []
    client = offline(events)
    client.opened(PRIVATE)
    for number in range(len(client.subscriptions[PRIVATE])):
        client.receive(PRIVATE, json.dumps({"op": "subscribe", "success": True, "req_id": str(number)}))
    assert [type(e) for e in events] == [Connected, Subscribed]


class Received:
    """Events from the client's threads, waited for with a deadline (never a sleep)."""

    def __init__(self) -> None:
        self.events: queue.Queue[StreamEvent] = queue.Queue()
        self.seen: list[StreamEvent] = []

    def wait_for(self, kind: type, match: Any = lambda e: True, timeout: float = 10) -> Any:
        """The first event so far of `kind` that matches, else the next one to come (within `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.seen):
                if isinstance(event, kind) and match(event):
                    del self.seen[index]
                    return event
            self.seen.append(self.events.get(timeout=max(deadline - time.monotonic(), 0.001)))

    def in_sync(self, *channels: str) -> None:
        """Wait until each channel's connection (first or again) has every subscription acknowledged."""
        for channel in channels:
            self.wait_for(Subscribed, lambda e, c=channel: e.channel == c)


def wait_until(condition: Any, timeout: float = 10) -> None:
    """Wait for something another thread does (polling, bounded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        threading.Event().wait(0.005)


@contextlib.contextmanager
def streaming(paper: PaperExchange, received: Received, **markets: tuple[str, ...]) -> Iterator[BybitStreams]:
    client = BybitStreams(
        "paper",
        api_key=paper.api_key,
        api_secret=paper.api_secret,
        markets=markets,
        sink=received.events.put,
        paper_ws_url=paper.ws_url,
    )
    try:
        assert client.start()
        yield client
    finally:
        client.close()


def test_pybit_streams_the_paper_exchange_over_loopback() -> None:
    received = Received()
    with (
        start_paper_exchange() as paper,
        streaming(paper, received, linear=("BTCUSDT",), spot=("BTCUSDT",)) as client,
    ):
        received.in_sync("linear", "spot", PRIVATE)
        first = received.wait_for(BookUpdate, lambda e: e.channel == "linear")
        assert first.bid == Decimal("80220.00")
        ping = client.ping()
        assert received.wait_for(Alive, lambda e: e.channel == PRIVATE and e.req_id == str(ping))
        _buy(paper)
        order = received.wait_for(OrderUpdate, lambda e: any(o.order_link_id == "stream-1" for o in e.orders))
        assert order.orders[0].status == "Filled"
        paper.drop_streams()  # it connects again, authenticates and subscribes again
        received.wait_for(Connected, lambda e: e.channel == PRIVATE)
        received.in_sync(PRIVATE)


def test_a_stream_comes_back_after_more_failed_reconnections_than_pybit_would_make() -> None:
    """pybit 5.17 gives up after three attempts made back to back; the exchange here refuses a dozen."""
    received = Received()
    with start_paper_exchange() as paper, streaming(paper, received, linear=("BTCUSDT",)) as client:
        received.in_sync("linear", PRIVATE)
        paper.stream_faults.unavailable = True
        paper.drop_streams()
        paths = ("/v5/public/linear", "/v5/private")
        wait_until(lambda: all(paper.streams.refused[path] >= 4 for path in paths))
        paper.stream_faults.unavailable = False
        received.in_sync("linear", PRIVATE)
        assert client.running() == ["linear", PRIVATE]
        ping = client.ping()
        assert received.wait_for(Alive, lambda e: e.channel == PRIVATE and e.req_id == str(ping))


def test_close_during_a_reconnection_returns_and_nothing_connects_after_it() -> None:
    """The teardown that hung: pybit's exit() could not stop a reconnection in flight, which then connected
    after it (and its `while self.ws.sock` wait could spin on that new socket forever)."""
    received = Received()
    with start_paper_exchange() as paper:
        before = set(threading.enumerate())
        client = BybitStreams(
            "paper",
            api_key=paper.api_key,
            api_secret=paper.api_secret,
            markets={"linear": ("BTCUSDT",)},
            sink=received.events.put,
            paper_ws_url=paper.ws_url,
        )
        try:
            assert client.start()
            received.in_sync("linear", PRIVATE)
            paper.stream_faults.hold_handshakes = True
            paper.drop_streams()
            wait_until(lambda: paper.streams.held == 2)  # both channels are mid-reconnection
            closing = threading.Thread(target=client.close, daemon=True)
            closing.start()
            closing.join(10)
            assert not closing.is_alive()
            assert client.running() == []
        finally:
            paper.stream_faults.hold_handshakes = False
            client.close()
        wait_until(lambda: paper.streams.held == 0 and paper.streams.open_connections == 0)
        wait_until(lambda: not [t for t in threading.enumerate() if t not in before and t.is_alive()])
        assert sum(paper.streams.handshakes.values()) == 4  # two first connections, two reconnections


@pytest.mark.parametrize(
    "previous, stable, pause",
    [
        (None, False, 0.1),
        (0.1, False, 0.2),
        (3.2, False, RECONNECT_MAX_SECONDS),
        (5.0, False, 5.0),
        (2, True, 0),
    ],
)
def test_reconnection_pauses_double_after_each_failure_and_vanish_after_a_healthy_connection(
    previous: float | None, stable: bool, pause: float
) -> None:
    assert next_pause(previous, stable) == pause


def test_a_paper_exchange_names_its_streams_at_pilot_streams() -> None:
    with start_paper_exchange() as paper:
        assert discover_paper_streams(paper.url) == paper.ws_url


@contextlib.contextmanager
def venue_answering(body: bytes, status: int = 200) -> Iterator[str]:
    """A loopback HTTP server that answers every GET with `body`: a venue that is not (this) `pilot sim`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def envelope(result: Any, code: int = 0) -> bytes:
    return json.dumps({"retCode": code, "retMsg": "OK", "result": result}).encode()


@pytest.mark.parametrize(
    "body, status",
    [
        (envelope({"url": "ws://10.0.0.7:9000"}), 200),  # off loopback: refused
        (envelope({"url": "wss://stream.bybit.com"}), 200),  # mainnet: refused
        (envelope({"url": "ws://127.0.0.1:9000/v5/private"}), 200),
        (envelope({"url": 9000}), 200),
        (envelope({}), 200),
        (envelope({"url": "ws://127.0.0.1:9000"}, code=10017), 200),
        (b"<html>not json</html>", 200),
        (envelope({}, code=10017), 404),  # an older `pilot sim`, or a recording served back
    ],
)
def test_a_venue_that_does_not_name_a_loopback_stream_has_none(body: bytes, status: int) -> None:
    with venue_answering(body, status) as url, pytest.raises(NoStreams):
        discover_paper_streams(url)


def test_discovery_asks_only_loopback_and_gives_up_on_silence() -> None:
    with pytest.raises(NoStreams):
        discover_paper_streams("https://api.bybit.com")
    with venue_answering(b"") as url:
        pass  # closed again: nothing listens on its port now
    with pytest.raises(NoStreams):
        discover_paper_streams(url)


def _buy(paper: PaperExchange) -> None:
    import asyncio

    from pilot.exchange.models import OrderRequest

    async def send() -> None:
        rest = connect_adapter(paper)
        request = OrderRequest(
            category="linear",
            symbol="BTCUSDT",
            side="Buy",
            qty=Decimal("0.001"),
            price=Decimal("90000"),
            time_in_force="IOC",
            order_link_id="stream-1",
        )
        await rest.create_order(request)
        await rest.close()

    asyncio.run(send())
