"""Fixtures for use-case and MCP tests: a temp home, the real paper exchange on loopback, an injected clock,
and the venues a test may run on (`venue`: Bybit's wire, the paper exchange itself; OKX's, the OKX front
over it, tests/okx_front)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import pytest

from pilot.app.facts.streaming_reader import StreamingReader, start_streams
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.exchange.okx.markets import wire_client_id
from pilot.exchange.stream_events import PRIVATE
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.handlers import ROUTES
from pilot.server import build_server
from pilot.store import open_store
from tests.clocks import FakeClock
from tests.okx_front import OkxFront
from tests.scenarios import ARTICLE, policy_with
from tests.venue import connect_adapter, connect_okx

# The tests that read a real `pilot serve`'s answers (test_answer_sizes, test_refusal_examples) share one
# worker and one served session: a pilot init and a server over stdio, run once instead of once per module
# on every worker that drew one of their tests.
SERVED_ANSWERS = pytest.mark.xdist_group("served_answers")


@pytest.fixture(scope="session")
def served_answer_lines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The raw answer lines of benchmarks/bench_answers' measured calls, from one `pilot serve` on a new home."""
    from benchmarks.bench_answers import answer_lines, measured_home

    return answer_lines(measured_home(Path(tmp_path_factory.mktemp("answers"))))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paper() -> Any:
    """The paper exchange on the article's scenario (BTCUSDT step 0.00001), which the figures here assume."""
    with start_paper_exchange(ARTICLE) as exchange:
        yield exchange


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


def write_policy(home: Path, **changes: Any) -> None:
    (home / "policy.json").write_text(json.dumps(policy_with(**changes), indent=2))


class PaperVenue(Protocol):
    """Where a paper exchange listens and the key it takes: the running PaperExchange itself, or a picklable
    copy for a spawned process (tests/adversarial/one_home.Venue)."""

    @property
    def url(self) -> str: ...
    @property
    def api_key(self) -> str: ...
    @property
    def api_secret(self) -> str: ...
    @property
    def ws_url(self) -> str: ...


@contextlib.asynccontextmanager
async def open_test_runtime(
    home: Path, paper: PaperVenue, clock: FakeClock, *, timeout_seconds: float = 10, streams: bool = False
) -> AsyncIterator[Runtime]:
    """A Runtime as `pilot serve` assembles it, on `home` (its own store connection, gate, lease holder and
    ledger) and the paper exchange (or the OKX front over it: okx-demo); closing it is a restart. Several on
    one home are several servers. With `streams`, its facts come from the venue's streams (every channel
    in sync before it is handed out), as `pilot serve --streams` has them."""
    okx = isinstance(paper, OkxFront)
    environment = "okx-demo" if okx else "paper"
    adapter = (
        connect_okx(paper, timeout_seconds=timeout_seconds)
        if okx
        else connect_adapter(paper, timeout_seconds=timeout_seconds)
    )
    store = await open_store(Home(home).database_path, clock=clock)
    try:
        async with contextlib.AsyncExitStack() as stack:
            reader = await streamed_reader(stack, home, paper, adapter, clock) if streams else None
            yield assemble_runtime(home, store, adapter, clock, environment=environment, reader=reader)
    finally:
        await store.close()
        await adapter.close()


async def streamed_reader(
    stack: contextlib.AsyncExitStack, home: Path, venue: PaperVenue, adapter: Any, clock: FakeClock
) -> StreamingReader:
    """The venue's streams for the home policy's markets, once every channel is in sync (30 s at most)."""
    okx = isinstance(venue, OkxFront)
    policy = json.loads((home / "policy.json").read_text())
    reader = await start_streams(
        stack,
        adapter,
        clock,
        lambda: 5000,
        environment="okx-demo" if okx else "paper",
        api_key=venue.api_key,
        api_secret=venue.api_secret,
        symbols=tuple(policy["allowedMarkets"]),
        paper_ws_url=venue.ws_url,
    )
    assert reader is not None
    await until_in_sync(reader)
    return reader


def in_sync(reader: StreamingReader) -> bool:
    now = reader.hub.now_ms()
    channels = (*(c for c, symbols in reader.facts.markets.items() if symbols), PRIVATE)
    return all(reader.facts.usable(channel, now, 5000) for channel in channels)


async def until_in_sync(reader: StreamingReader, timeout: float = 30.0) -> None:
    """Wait until every channel is in sync, re-checking on each stream event; fail after `timeout` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not in_sync(reader):
        left = deadline - loop.time()
        assert left > 0, "the streams did not come in sync in time"
        await reader.hub.changed(min(left, 0.5))


@pytest.fixture
async def runtime(tmp_path: Path, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, paper, clock) as opened:
        yield opened


@pytest.fixture
def server(runtime: Runtime) -> Any:
    return build_server(runtime)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content


async def call(client: Any, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool through an MCP client and return its structured answer (a tool error fails the test)."""
    return structured(await client.call_tool(tool, args or {}))


def next_of(answer: dict[str, Any], violation: dict[str, Any]) -> dict[str, Any]:
    """A violation's next action: its own, or (left out of it) the answer's next_safe_action."""
    return violation.get("next") or answer["next_safe_action"]


def total_requests(paper: PaperExchange) -> int:
    """Every request the paper exchange received, on any endpoint."""
    return sum(paper.request_count(path) for path in ROUTES)


CREATE = "/v5/order/create"
BTC_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}


async def plan_and_place(client: Any, order: dict[str, Any] | None = None) -> dict[str, Any]:
    """Plan an order that passes and place it; return place_order's answer."""
    plan = await call(client, "plan_order", order or BTC_SHORT)
    assert plan["status"] == "ok", plan
    return await call(client, "place_order", {"plan_id": plan["plan_id"]})


# ---- venues: a test that takes `venue` runs on Bybit's wire and on OKX's -----------------------------------

VENUES = ("bybit", "okx")


@dataclass(frozen=True)
class Venue:
    """The venue a test drives: the paper exchange itself (Bybit V5's wire), or the OKX front over it (OKX
    v5's wire, okx-demo). Either way `paper` is the account behind it, so what the paper exchange shows is
    what the venue did. Tests write markets in Bybit's names (BTCUSDT) and ask `sym` for the venue's."""

    name: str
    paper: PaperExchange
    endpoint: PaperVenue

    def sym(self, symbol: str) -> str:
        """The venue's name for a paper market: BTCUSDT on Bybit, BTC-USDT on OKX (spot and perpetual)."""
        if self.name == "bybit":
            return symbol
        quote = next(q for q in ("USDT", "USDC") if symbol.endswith(q))
        return f"{symbol[: -len(quote)]}-{quote}"

    def args(self, args: dict[str, Any]) -> dict[str, Any]:
        """A tool call's arguments with its symbol in the venue's spelling."""
        return {**args, "symbol": self.sym(args["symbol"])} if "symbol" in args else dict(args)

    def policy(self, **changes: Any) -> dict[str, Any]:
        """The test policy with `changes`, its markets named as the venue names them."""
        policy = policy_with(**changes)
        policy["allowedMarkets"] = [self.sym(s) for s in policy["allowedMarkets"]]
        if "markets" in policy:
            policy["markets"] = {self.sym(s): limits for s, limits in policy["markets"].items()}
        return policy

    def write_policy(self, home: Path, **changes: Any) -> None:
        (home / "policy.json").write_text(json.dumps(self.policy(**changes), indent=2))

    def client_id(self, order_link_id: str) -> str:
        """Pilot's client order id as the venue's wire carries it (OKX's alphabet: pilot.exchange.okx.markets)."""
        return order_link_id if self.name == "bybit" else wire_client_id(order_link_id)

    @property
    def environment(self) -> str:
        return "paper" if self.name == "bybit" else "okx-demo"

    def stop_loss(self, symbol: str) -> Decimal:
        """The stop a stop sent with an order became, where the venue puts it: the position's whole stop
        (Bybit), or the partial stop of what filled (OKX): the paper exchange's partial leg."""
        if self.name == "bybit":
            return self.paper.position(symbol).stop_loss
        legs = [
            o
            for o in self.paper.orders(symbol)
            if o.stop_order_type == "PartialStopLoss" and o.status == "Untriggered"
        ]
        return legs[0].trigger_price if legs else Decimal(0)


@contextlib.contextmanager
def venue_on(name: str, paper: PaperExchange) -> Iterator[Venue]:
    """The venue `name` over `paper`: the paper exchange itself (bybit), or the OKX front over it (okx)."""
    if name == "bybit":
        yield Venue("bybit", paper, paper)
        return
    with OkxFront(paper) as front:
        yield Venue("okx", paper, front)


@pytest.fixture(params=VENUES)
def venue(request: pytest.FixtureRequest, paper: PaperExchange) -> Iterator[Venue]:
    with venue_on(request.param, paper) as chosen:
        yield chosen


@pytest.fixture
async def venue_runtime(tmp_path: Path, venue: Venue, clock: FakeClock) -> AsyncIterator[Runtime]:
    venue.write_policy(tmp_path)
    async with open_test_runtime(tmp_path, venue.endpoint, clock) as opened:
        yield opened


@pytest.fixture
def venue_server(venue_runtime: Runtime) -> Any:
    return build_server(venue_runtime)
