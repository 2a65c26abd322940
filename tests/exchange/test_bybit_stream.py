"""The stream client: where it may connect, how it reads Bybit's messages, and pybit against the paper exchange."""

from __future__ import annotations

import json
import queue
import time
from decimal import Decimal
from typing import Any

import pytest

from pilot.exchange.bybit_stream import BybitStreams, stream_urls
from pilot.exchange.sim import PaperExchange, start_paper_exchange
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
)


@pytest.mark.parametrize(
    "environment, url",
    [
        ("paper", "ws://10.0.0.1:9000"),
        ("paper", "wss://stream.bybit.com"),
        ("paper", "ws://127.0.0.1"),
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


def test_unreadable_messages_and_refusals_make_the_channel_untrusted() -> None:
    events: list[StreamEvent] = []
    client = offline(events)
    client.receive(PRIVATE, "not json")
    client.receive(PRIVATE, json.dumps({"op": "auth", "success": False, "ret_msg": "Signature Error"}))
    client.receive(PRIVATE, json.dumps({"topic": "order", "creationTime": 1, "data": [{"no": "fields"}]}))
    assert [type(e) for e in events] == [Refused, Refused, Refused]


def test_subscribed_is_said_once_every_subscription_of_the_connection_is_acknowledged() -> None:
    events: list[StreamEvent] = []
    client = offline(events)
    client.opened(PRIVATE)
    for number in range(len(client.subscriptions[PRIVATE])):
        client.receive(PRIVATE, json.dumps({"op": "subscribe", "success": True, "req_id": str(number)}))
    assert [type(e) for e in events] == [Connected, Subscribed]


def test_pybit_streams_the_paper_exchange_over_loopback() -> None:
    events: queue.Queue[StreamEvent] = queue.Queue()
    seen: list[StreamEvent] = []

    def wait_for(kind: type, match: Any = lambda e: True) -> Any:
        """The first event so far of `kind` that matches, else the next one to come (within 10 s)."""
        deadline = time.monotonic() + 10
        while True:
            for index, event in enumerate(seen):
                if isinstance(event, kind) and match(event):
                    del seen[index]
                    return event
            seen.append(events.get(timeout=max(deadline - time.monotonic(), 0.001)))

    with start_paper_exchange() as paper:
        client = BybitStreams(
            "paper",
            api_key=paper.api_key,
            api_secret=paper.api_secret,
            markets={"linear": ("BTCUSDT",), "spot": ("BTCUSDT",)},
            sink=events.put,
            paper_ws_url=paper.ws_url,
        )
        try:
            client.start()
            for channel in ("linear", "spot", PRIVATE):
                wait_for(Subscribed, lambda e, c=channel: e.channel == c)
            first = wait_for(BookUpdate, lambda e: e.channel == "linear")
            assert first.bid == Decimal("80220.00")
            ping = client.ping()
            assert wait_for(Alive, lambda e: e.channel == PRIVATE and e.req_id == str(ping))
            _buy(paper)
            order = wait_for(OrderUpdate, lambda e: any(o.order_link_id == "stream-1" for o in e.orders))
            assert order.orders[0].status == "Filled"
            paper.drop_streams()  # pybit reconnects, authenticates and subscribes again
            wait_for(Connected, lambda e: e.channel == PRIVATE)
            wait_for(Subscribed, lambda e: e.channel == PRIVATE)
        finally:
            client.close()


def _buy(paper: PaperExchange) -> None:
    import asyncio

    from pilot.exchange.bybit import BybitExchange
    from pilot.exchange.models import OrderRequest

    async def send() -> None:
        rest = BybitExchange.connect(
            "paper", api_key=paper.api_key, api_secret=paper.api_secret, base_url=paper.url
        )
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
