"""Fixtures for use-case and MCP tests: a temp home, the real paper exchange on loopback, an injected clock."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pytest

from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.handlers import ROUTES
from pilot.server import build_server
from pilot.store import open_store
from tests.clocks import FakeClock
from tests.scenarios import ARTICLE, policy_with
from tests.venue import connect_adapter

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


@contextlib.asynccontextmanager
async def open_test_runtime(
    home: Path, paper: PaperVenue, clock: FakeClock, *, timeout_seconds: float = 10
) -> AsyncIterator[Runtime]:
    """A Runtime as `pilot serve` assembles it, on `home` (its own store connection, gate, lease holder and
    ledger) and the paper exchange; closing it is a restart. Several on one home are several servers."""
    adapter = connect_adapter(paper, timeout_seconds=timeout_seconds)
    store = await open_store(Home(home).database_path, clock=clock)
    try:
        yield assemble_runtime(home, store, adapter, clock)
    finally:
        await store.close()
        await adapter.close()


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
