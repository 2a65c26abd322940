"""plan_order and place_order with facts kept fresh by the paper exchange's WebSocket streams.

The real stream client (pybit over loopback) feeds the real cache; the runtime's reader judges on streamed
facts when fresh and reads REST otherwise. The clock is injected and frozen: a fact's age grows only when
the test moves it, so "stalled" is a stall plus time passing. Waits are bounded (events, not sleeps).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.facts.stream_cache import StreamFacts
from pilot.app.facts.stream_hub import StreamHub
from pilot.app.facts.streaming_reader import StreamingReader, start_streams
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.core.facts import OrderType, Side
from pilot.exchange.stream_events import PRIVATE
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.endpoints import ROUTES
from pilot.store import open_store
from tests.app.conftest import CREATE, FakeClock, write_policy
from tests.scenarios import article_scenario
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio

SELL = PlanRequest("BTCUSDT", Side.SELL, OrderType.MARKET, Decimal("0.00031"), None, None, False, "linear")
BUY = PlanRequest("BTCUSDT", Side.BUY, OrderType.MARKET, Decimal("0.00031"), None, None, False, "linear")
FACT_READS = ("/v5/market/tickers", "/v5/position/list", "/v5/account/wallet-balance", "/v5/order/realtime")
READ_BACK = ("/v5/order/realtime", "/v5/order/history")


async def until(runtime: Runtime, condition: Any, timeout: float = 30.0) -> None:
    """Wait until `condition()` holds, re-checking on each stream event; fail after `timeout` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        left = deadline - asyncio.get_running_loop().time()
        assert left > 0, "the condition did not hold in time"
        await streams(runtime).hub.changed(min(left, 0.5))


@contextlib.asynccontextmanager
async def streamed_runtime(home: Path, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    write_policy(home)
    adapter = connect_adapter(paper)
    store = await open_store(Home(home).database_path)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(adapter.close)
        stack.push_async_callback(store.close)
        reader = await start_streams(
            stack,
            adapter,
            clock,
            lambda: 300,
            environment="paper",
            api_key=paper.api_key,
            api_secret=paper.api_secret,
            symbols=("BTCUSDT", "ETHUSDT"),
            paper_ws_url=paper.ws_url,
        )
        assert reader is not None
        runtime = assemble_runtime(home, store, adapter, clock, reader=reader)
        await until(runtime, lambda: in_sync(runtime))
        yield runtime


def streams(runtime: Runtime) -> StreamingReader:
    assert isinstance(runtime.exchange, StreamingReader)
    return runtime.exchange


def in_sync(runtime: Runtime) -> bool:
    reader = streams(runtime)
    now = reader.hub.now_ms()
    return all(reader.facts.usable(channel, now, 300) for channel in ("linear", "spot", PRIVATE))


def market_pushed_again(runtime: Runtime, symbol: str) -> bool:
    facts, now = streams(runtime).facts, streams(runtime).hub.now_ms()
    return (
        facts.touch("linear", symbol, now, 5000) is not None
        and facts.band("linear", symbol, now, 5000) is not None
    )


def reads(paper: PaperExchange, paths: tuple[str, ...]) -> int:
    return sum(paper.request_count(path) for path in paths)


@pytest.fixture
async def runtime(tmp_path: Path, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    async with streamed_runtime(tmp_path, paper, clock) as opened:
        yield opened


async def test_healthy_streams_judge_without_reading_rest_and_say_so(
    runtime: Runtime, paper: PaperExchange
) -> None:
    before = reads(paper, FACT_READS)
    plan = await plan_order(runtime, SELL)
    assert plan.status == "ok", plan
    assert plan.snapshot is not None and plan.snapshot.fact_sources is not None
    assert set(plan.snapshot.fact_sources.values()) == {"stream"}
    assert reads(paper, FACT_READS) == before


async def test_facts_older_than_the_bound_are_read_over_rest(
    runtime: Runtime, paper: PaperExchange, clock: FakeClock
) -> None:
    paper.stream_faults.stall = True
    # A minute later on Pilot's clock, nothing came. Not a second: the test's clock stands still while the
    # exchange stamps its messages in real time, so on a slow machine a message already on its way when the
    # stall began arrives stamped more than a second after the clock's start and, taken at the older of the
    # two stamps, would look as young as the advanced clock (seen under load: one fact still "stream").
    clock.advance(60)
    before = reads(paper, FACT_READS)
    plan = await plan_order(runtime, SELL)
    assert plan.status == "ok", plan
    assert plan.snapshot is not None and plan.snapshot.fact_sources is not None
    assert set(plan.snapshot.fact_sources.values()) == {"rest"}
    assert reads(paper, FACT_READS) > before


async def test_a_coin_without_a_spot_market_is_judged_and_placed_without_a_rest_read(
    tmp_path: Path, clock: FakeClock
) -> None:
    """ETHUSDT here is a perpetual with no spot market of that name: "no such instrument" is kept as long as
    listed rules are, so a plan reads nothing over REST and a place sends only its create."""
    scenario = article_scenario()
    scenario["instruments"] = [
        i for i in scenario["instruments"] if (i["category"], i["symbol"]) != ("spot", "ETHUSDT")
    ]
    with start_paper_exchange(scenario) as paper:
        async with streamed_runtime(tmp_path, paper, clock) as runtime:
            eth = PlanRequest(
                "ETHUSDT", Side.SELL, OrderType.MARKET, Decimal("0.005"), None, None, False, "linear"
            )
            before = sum(paper.request_count(path) for path in ROUTES)
            for _ in range(3):
                plan = await plan_order(runtime, eth)
                assert plan.status == "ok", plan
                assert plan.snapshot is not None and plan.snapshot.fact_sources is not None
                assert set(plan.snapshot.fact_sources.values()) == {"stream"}
            assert sum(paper.request_count(path) for path in ROUTES) == before
            placed = await place_order(runtime, plan.plan_id or "")
            assert placed.status == "filled", placed
            assert sum(paper.request_count(path) for path in ROUTES) == before + 1
            assert paper.request_count(CREATE) == 1


async def test_place_learns_the_outcome_from_the_order_stream(runtime: Runtime, paper: PaperExchange) -> None:
    plan = await plan_order(runtime, SELL)
    assert plan.plan_id is not None
    creates, read_back = paper.request_count(CREATE), reads(paper, READ_BACK)
    placed = await place_order(runtime, plan.plan_id)
    assert placed.status == "filled", placed
    assert paper.request_count(CREATE) == creates + 1
    assert reads(paper, READ_BACK) == read_back  # no REST read-back: the stream said it
    assert paper.position("BTCUSDT").size == Decimal("-0.00031")


async def test_the_plan_right_after_a_fill_sees_the_position_it_left(
    runtime: Runtime, paper: PaperExchange
) -> None:
    """The order stream may tell a fill before the position and wallet streams do: until their pushes come,
    the old position and balance are not judged on (REST is read instead)."""
    paper.stream_faults.hold_topics = frozenset({"position", "wallet"})
    plan = await plan_order(runtime, SELL)
    assert plan.plan_id is not None, plan
    assert (await place_order(runtime, plan.plan_id)).status == "filled"
    again = await plan_order(runtime, BUY)
    assert again.snapshot is not None and again.snapshot.position_size == "-0.00031"
    assert again.snapshot.fact_sources is not None
    assert again.snapshot.fact_sources["position"] == again.snapshot.fact_sources["balance"] == "rest"
    paper.stream_faults.hold_topics = frozenset()
    paper.tick()  # the next push releases what was held
    reader = streams(runtime)
    await until(runtime, lambda: not reader.facts.position_behind and reader.facts.wallet_behind is None)
    latest = await plan_order(runtime, BUY)
    assert latest.snapshot is not None and latest.snapshot.position_size == "-0.00031"
    assert latest.snapshot.fact_sources is not None and latest.snapshot.fact_sources["position"] == "stream"


@pytest.mark.parametrize("fault", ["none", "stall", "delay", "drop", "swap"])
async def test_exactly_one_create_per_send_under_every_stream_fault(
    runtime: Runtime, paper: PaperExchange, clock: FakeClock, fault: str
) -> None:
    for round_ in range(2):
        plan = await plan_order(runtime, SELL if round_ == 0 else BUY)
        assert plan.plan_id is not None, plan
        if fault == "stall":
            paper.stream_faults.stall = True
            clock.advance(1)
        elif fault == "delay":
            paper.stream_faults.delay_ms = 150
        elif fault == "drop":
            paper.drop_streams()
        elif fault == "swap":
            paper.stream_faults.swap_next_deltas = 2
            paper.tick()
            paper.tick()
        creates = paper.request_count(CREATE)
        placed = await place_order(runtime, plan.plan_id)
        assert paper.request_count(CREATE) == creates + 1, placed
        assert placed.status == "filled", placed
        paper.stream_faults.stall, paper.stream_faults.delay_ms = False, 0
    assert paper.position("BTCUSDT").size == 0
    assert len(paper.orders("BTCUSDT")) == 2


async def test_after_a_drop_the_stream_is_trusted_again_only_after_a_rest_read(
    runtime: Runtime, paper: PaperExchange
) -> None:
    """Failed once under a full suite: in sync again, but BTCUSDT's own book or band not pushed since the drop
    (a market is trusted again only after its own update: pilot.app.facts.stream_cache), or a read more than
    the default 300 ms after the last pong on a loaded machine; either sends a fact to REST. The test waits
    for the market's own update, as the outage test does, and allows the largest age the policy accepts."""
    write_policy(runtime.home.path, maxFactAgeMs=5000)
    reader = streams(runtime)
    resyncs = reader.hub.resyncs
    paper.drop_streams()
    await until(
        runtime,
        lambda: reader.hub.resyncs > resyncs and in_sync(runtime) and market_pushed_again(runtime, "BTCUSDT"),
    )
    plan = await plan_order(runtime, SELL)
    assert plan.snapshot is not None and plan.snapshot.fact_sources is not None
    assert set(plan.snapshot.fact_sources.values()) == {"stream"}


async def test_pilot_serve_streams_the_embedded_paper_exchange_unless_told_not_to(
    tmp_path: Path, clock: FakeClock
) -> None:
    from pilot.app.service.boot import open_runtime
    from tests.scenarios import ARTICLE

    for streams_wanted, home in ((None, tmp_path / "auto"), (False, tmp_path / "off")):
        home.mkdir()
        write_policy(home)
        async with open_runtime(home, scenario=ARTICLE, clock=clock, streams=streams_wanted) as opened:
            plan = await plan_order(opened, SELL)
            assert plan.status == "ok" and plan.snapshot is not None
            if streams_wanted is None:
                assert isinstance(opened.exchange, StreamingReader)
            else:  # exactly today's REST path: the adapter itself, and nothing said about sources
                assert not isinstance(opened.exchange, StreamingReader)
                assert plan.snapshot.fact_sources is None


async def test_the_streams_come_back_after_an_outage_longer_than_pybit_would_wait(
    runtime: Runtime, paper: PaperExchange
) -> None:
    """pybit 5.17 gives up after three back-to-back attempts, leaving every fact on REST for good."""
    # Judged on age as well: on a loaded machine a plan's reads can come more than the default 300 ms after
    # the last pong (pings every 100 ms, answered on threads), which sends that fact to REST. This test is
    # about the streams coming back, so it allows the largest age the policy accepts.
    write_policy(runtime.home.path, maxFactAgeMs=5000)
    paper.stream_faults.unavailable = True
    paper.drop_streams()
    paths = ("/v5/public/linear", "/v5/public/spot", "/v5/private")
    await until(runtime, lambda: all(paper.streams.refused[path] >= 4 for path in paths))
    during = await plan_order(runtime, SELL)
    assert during.snapshot is not None and during.snapshot.fact_sources is not None
    assert set(during.snapshot.fact_sources.values()) == {"rest"}
    paper.stream_faults.unavailable = False
    # In sync, and BTCUSDT's book and band pushed again since (a market is trusted again only once its own
    # update came after the outage: a machine under load may push the first one a little later).
    await until(runtime, lambda: in_sync(runtime) and market_pushed_again(runtime, "BTCUSDT"))
    after = await plan_order(runtime, SELL)
    assert after.snapshot is not None and after.snapshot.fact_sources is not None
    assert set(after.snapshot.fact_sources.values()) == {"stream"}, after.snapshot.fact_sources


async def test_a_wait_for_stream_events_cancelled_as_an_event_arrives_ends_cancelled(
    clock: FakeClock,
) -> None:
    """Closing the streams cancels the loop waiting in changed(); an event arriving in the same turn must not
    swallow the cancel (Python 3.11's wait_for did, and the loop ran on until close gave up 5 s later)."""
    rest = None  # changed() reads nothing over REST
    hub = StreamHub(StreamFacts({"linear": ("BTCUSDT",)}), rest, clock, lambda: 300)
    waiting = asyncio.create_task(hub.changed(60.0))
    await asyncio.sleep(0)  # it waits on the event now
    hub._changed.set()  # an event arrives ...
    waiting.cancel()  # ... as the streams close
    await asyncio.wait([waiting], timeout=1.0)
    assert waiting.cancelled()
