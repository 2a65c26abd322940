"""An okx-demo home with its facts from OKX's WebSocket streams (pilot.exchange.okx.stream), on the OKX front's
WebSocket side (tests/okx_front/streams.py) over the paper exchange: what a plan and a place cost on OKX's
REST, and what happens when the private stream is dropped or its login refused.

The streams' rules are Bybit's (pilot.app.facts.stream_cache): a fact is judged on only while its channel is
in sync and fresh; otherwise it is read over REST, and a private channel that comes back is read again over
REST and confirmed by a ping before it is trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.facts.streaming_reader import StreamingReader
from pilot.app.human.exchange_keys import add_key
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import open_runtime
from pilot.core.facts import OrderType, Side
from pilot.exchange.okx.stream import DISCOVERY_PATH
from pilot.exchange.okx.urls import standing_in_for_okx_demo
from pilot.exchange.stream_events import PRIVATE, Refused, StreamEvent, Subscribed
from pilot.paper import PaperExchange
from pilot.server import build_server
from tests.clocks import FakeClock
from tests.okx_front import OkxFront, Rule
from tests.okx_front.streams import BUSINESS as BUSINESS_PATH
from tests.okx_front.streams import PRIVATE as PRIVATE_PATH
from tests.venue import connect_okx, modules_naming

from .conftest import Venue, call, open_test_runtime, until_in_sync, venue_on

pytestmark = pytest.mark.anyio
RESTING = {"symbol": "BTC-USDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": "70000"}
SELL = PlanRequest("BTC-USDT", Side.SELL, OrderType.MARKET, Decimal("0.0003"), None, None, False, "linear")
PRIVATE_FACTS = ("position", "balance", "open_orders_linear")


@pytest.fixture
def okx(paper: PaperExchange) -> Iterator[Venue]:
    with venue_on("okx", paper) as chosen:
        yield chosen


@pytest.fixture
async def runtime(tmp_path: Path, okx: Venue, clock: FakeClock) -> AsyncIterator[Runtime]:
    okx.write_policy(tmp_path, requireStopLoss=False)
    async with open_test_runtime(tmp_path, okx.endpoint, clock, streams=True) as opened:
        yield opened


def front(okx: Venue) -> OkxFront:
    assert isinstance(okx.endpoint, OkxFront)
    return okx.endpoint


def streams(runtime: Runtime) -> StreamingReader:
    assert isinstance(runtime.exchange, StreamingReader)
    return runtime.exchange


async def until(runtime: Runtime, condition: Any, timeout: float = 30.0) -> None:
    """Wait until `condition()` holds, re-checking on each stream event; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        left = deadline - loop.time()
        assert left > 0, "the condition did not hold in time"
        await streams(runtime).hub.changed(min(left, 0.5))


def private_usable(runtime: Runtime) -> bool:
    reader = streams(runtime)
    return reader.facts.usable(PRIVATE, reader.hub.now_ms(), 5000)


async def sources(runtime: Runtime) -> dict[str, str]:
    plan = await plan_order(runtime, SELL)
    assert plan.status == "ok", plan
    assert plan.snapshot is not None and plan.snapshot.fact_sources is not None
    return plan.snapshot.fact_sources


async def test_a_plan_reads_nothing_over_rest_and_a_place_sends_only_its_create(okx, runtime):
    """With OKX's streams in sync, a plan's facts all come from them and a place costs one request (its
    create): the outcome is read on the orders channel, not looked up."""
    await one_request_per_order(okx, runtime)


async def one_request_per_order(okx: Venue, runtime: Runtime) -> None:
    """Through a real MCP client: a plan reads nothing over REST, a place sends its create and nothing else,
    and the order is in the cache from the orders channel."""
    assert set((await sources(runtime)).values()) == {"stream"}
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        before = len(front(okx).seen())
        planned = await call(client, "plan_order", RESTING)
        assert planned["status"] == "ok", planned
        assert len(front(okx).seen()) == before
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert placed["status"] == "open", placed
        sent = [seen.path for seen in front(okx).seen()[before:]]
        assert sent == ["/api/v5/trade/order"]
    (resting,) = okx.paper.open_orders("BTCUSDT")
    assert resting.price == Decimal("70000")
    reader = streams(runtime)
    listed = reader.facts.open_orders("linear", "BTC-USDT", reader.hub.now_ms(), 5000)
    assert listed is not None and [o.order_id for o in listed] == [placed["order_id"]]


@contextlib.asynccontextmanager
async def serving(home: Path, okx: Venue, clock: FakeClock) -> AsyncIterator[Runtime]:
    """`pilot serve --exchange okx-demo --streams` on `home`, its key stored by `pilot keys add`, as boot
    assembles it, with OKX demo's address routed to the stand-in (the suite's seam, pilot.exchange.okx.urls)."""
    stand_in = front(okx)
    okx.write_policy(home, requireStopLoss=False)
    with standing_in_for_okx_demo(stand_in.url):
        await add_key(
            home,
            "okx-demo",
            stand_in.api_key,
            stand_in.api_secret,
            now=clock.now(),
            passphrase=stand_in.passphrase,
        )
        async with open_runtime(home, exchange="okx-demo", streams=True, clock=clock) as runtime:
            yield runtime


async def test_pilot_serve_on_a_stand_in_for_okx_asks_it_where_its_streams_are(okx, tmp_path, clock):
    """The key's address is all `pilot serve` has: the stand-in names its WebSocket at GET /pilot/streams
    (as a `pilot sim` names its own), and once in sync an order costs one request, its create."""
    async with serving(tmp_path, okx, clock) as runtime:
        assert isinstance(runtime.exchange, StreamingReader)
        await until_in_sync(runtime.exchange)
        await one_request_per_order(okx, runtime)
    assert len(front(okx).seen(DISCOVERY_PATH)) == 1


async def test_a_stand_in_that_names_no_streams_is_read_over_rest(okx, tmp_path, clock):
    """A stand-in that does not answer GET /pilot/streams (or names a place off loopback) has no streams
    Pilot connects to: the server starts, and reads its facts over REST."""
    off_loopback = {"code": "0", "msg": "", "data": [{"url": "ws://192.0.2.7:9000"}]}
    front(okx).add(Rule("GET", DISCOVERY_PATH, answer=off_loopback))
    async with serving(tmp_path, okx, clock) as runtime:
        assert not isinstance(runtime.exchange, StreamingReader)
        planned = await plan_order(runtime, SELL)
        assert planned.status == "ok"
    assert len(front(okx).seen(DISCOVERY_PATH)) == 1


async def test_a_fill_s_stop_reaches_the_cache_on_the_algo_channel(okx, runtime):
    """The stop OKX places for what filled (an algo order, on /ws/v5/business) is an open order of the
    market in the cache, as get_open_orders lists it over REST."""
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        buy = {"symbol": "BTC-USDT", "side": "buy", "qty": "0.0003", "stop_loss": "79000"}
        planned = await call(client, "plan_order", buy)
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert placed["status"] == "filled", placed
        reader = streams(runtime)

        def stop_seen() -> bool:
            listed = reader.facts.open_orders("linear", "BTC-USDT", reader.hub.now_ms(), 5000) or []
            return [o.trigger_price for o in listed if o.order_id.startswith("algo:")] == [Decimal("79000")]

        await until(runtime, stop_seen)
        await until(runtime, lambda: reader.facts.positions.get("BTC-USDT") is not None)
        await until(runtime, lambda: reader.facts.positions["BTC-USDT"].size == Decimal("0.0003"))


@pytest.mark.parametrize("path", [PRIVATE_PATH, BUSINESS_PATH])
async def test_a_dropped_private_stream_is_read_over_rest_until_it_is_read_again_and_confirmed(
    okx, runtime, path
):
    """Either of the private channel's two connections dropped (orders, positions, account; or the algo
    orders) takes the account's facts to REST until both are back, read again and confirmed."""
    stand_in = front(okx).streams
    assert set((await sources(runtime)).values()) == {"stream"}
    stand_in.unavailable = True
    stand_in.drop(path)
    await until(runtime, lambda: not private_usable(runtime))
    facts = await sources(runtime)
    assert {facts[name] for name in PRIVATE_FACTS} == {"rest"}
    assert facts["touch"] == "stream"  # the public channels stayed up
    resyncs = streams(runtime).hub.resyncs
    stand_in.unavailable = False
    await until(runtime, lambda: private_usable(runtime))
    assert streams(runtime).hub.resyncs > resyncs  # read again over REST before it was trusted
    assert {(await sources(runtime))[name] for name in PRIVATE_FACTS} == {"stream"}


async def test_a_refused_login_is_said_with_okx_s_code_and_nothing_private_is_trusted(okx, runtime):
    stand_in = front(okx).streams
    stand_in.refuse_login = "60009"
    stand_in.drop(PRIVATE_PATH)
    await until(runtime, lambda: not private_usable(runtime))
    await until(runtime, lambda: "60009" in stand_in.logins)
    facts = await sources(runtime)
    assert {facts[name] for name in PRIVATE_FACTS} == {"rest"}
    stand_in.refuse_login = None
    await until(runtime, lambda: private_usable(runtime))


async def test_a_wrong_passphrase_is_refused_at_login_with_its_code(okx):
    """The login OKX refuses (60024: wrong passphrase) is a Refused event of the private channel, its code
    kept by the client; the private channel is never subscribed."""
    stand_in = front(okx)
    adapter = connect_okx(stand_in)
    await adapter.get_instrument("linear", "BTC-USDT")
    stand_in.passphrase = "not-the-key-s-passphrase"
    events: list[StreamEvent] = []
    refused = threading.Event()

    def sink(event: StreamEvent) -> None:
        events.append(event)
        if isinstance(event, Refused) and event.channel == PRIVATE:
            refused.set()

    client = adapter.open_streams({"linear": ("BTC-USDT",)}, sink, stand_in.ws_url)
    try:
        await asyncio.to_thread(client.start)
        assert await asyncio.to_thread(refused.wait, 10)
    finally:
        await asyncio.to_thread(client.close)
        await adapter.close()
    assert client.login_refused == "60024"
    assert "60024" in stand_in.streams.logins
    refusals = [e for e in events if isinstance(e, Refused) and e.channel == PRIVATE]
    assert refusals and len(set(refusals)) == 1  # the connection's end says the refused login again
    assert not any(isinstance(e, Subscribed) and e.channel == PRIVATE for e in events)


async def test_facts_older_than_the_bound_are_read_over_rest(okx, runtime, clock):
    """A minute later on Pilot's clock with nothing newer heard (the test's clock stands still otherwise),
    every fact is too old to judge on: each is read over REST."""
    clock.advance(60)
    assert set((await sources(runtime)).values()) == {"rest"}


async def test_with_the_private_stream_down_and_rest_failing_a_growing_order_is_refused(okx, runtime):
    """The fallback is REST; when REST cannot answer either, nothing is judged on the stream's last word: a
    growing order is refused (nothing sent), and it passes again once the stream is back in sync."""
    stand_in = front(okx)
    stand_in.streams.unavailable = True
    stand_in.streams.drop(PRIVATE_PATH)
    await until(runtime, lambda: not private_usable(runtime))
    busy = {"code": "50001", "msg": "Service temporarily unavailable", "data": []}
    stand_in.add(Rule("GET", "/api/v5/account/balance", answer=busy, status=503))
    creates = len(stand_in.seen("/api/v5/trade/order"))
    refused = await plan_order(runtime, SELL)
    assert refused.status != "ok" and refused.plan_id is None
    assert len(stand_in.seen("/api/v5/trade/order")) == creates
    stand_in.rules.clear()
    stand_in.streams.unavailable = False
    await until(runtime, lambda: private_usable(runtime))
    assert (await plan_order(runtime, SELL)).status == "ok"


def test_the_okx_demo_stand_in_takes_only_loopback_and_cannot_be_reached_from_outside_python():
    """As Bybit mainnet's seam: nothing in the package but OKX's urls.py names it (no command, variable, file
    or tool sets it), so a shell's `pilot` always reaches OKX's own address."""
    with pytest.raises(ValueError), standing_in_for_okx_demo("https://www.okx.com"):
        pass
    assert modules_naming("standing_in_for_okx_demo") == {"exchange/okx/urls.py"}
    assert modules_naming("import os").isdisjoint({"exchange/okx/urls.py"})
