"""`pilot agent revoke` against an agent's send in flight: once the revoke is journaled, no growing order of
that agent leaves any process of the home, whatever was being judged when it was thrown; a send journaled
before it stands, as one journaled before the kill switch does (tests/adversarial/test_kill_switch_in_flight.py).

Two servers on one home (separate store connections, gates and lease holders, as two `pilot serve` processes).
Server B serves the agent through a real MCP client session (its credential looked up on every call, as over
stdio); server A is where the human's revoke runs. The first world holds B inside its judgement (its ticker
read held at the exchange) while A revokes; the second revokes at a random instant of B's send, many times, a
new agent each try, and counts the tries in which a growing order of the revoked agent was journaled after its
revoke.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.app.human.agent_desk import add_agent, revoke_agent
from pilot.app.runtime.runtime import Runtime
from pilot.server import build_server
from pilot.store import open_store
from tests.app.conftest import call, total_requests

from .conftest import CREATE, write_policy
from .one_home import Venue, open_test_runtime, until
from .test_kill_switch_in_flight import READS_PER_PLACE, ROOMY, TICKER, TRIES, paper, progress

__all__ = ["paper"]  # the fixture, shared with the kill switch's worlds

pytestmark = pytest.mark.anyio
BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001"}
STOPPED = {"tradingState", "agentRevoked"}  # the revoke is the agent's switch on for good, and its credential
# ... or the revoke ended the plan before the send claimed it (refused: its first use sent nothing)
NOT_SENT = STOPPED | {"planAlreadyUsed"}


@asynccontextmanager
async def agent_session(runtime: Runtime) -> AsyncIterator[Client]:
    """A client of `runtime`'s server whose credential is `runtime.credential` when each call arrives."""
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        yield client


async def late_growing_sends(runtime: Runtime, agent: str, revoked_seq: int) -> list[int]:
    """The seqs of agent `agent`'s growing order.sent entries journaled after its revoke."""
    sent = await runtime.store.journal.entries(kind=entry_kinds.ORDER_SENT, after=revoked_seq)
    return [
        e.seq
        for e in sent
        if e.actor == f"agent:{agent}" and not sent_request(e.data["request"]).get("reduce_only")
    ]


async def plans_sent(home: Path) -> set[str | None]:
    """The plans of every order.sent entry in the home's journal."""
    async with await open_store(home / "journal" / "pilot.db") as store:
        return {e.plan_id for e in await store.journal.entries(kind=entry_kinds.ORDER_SENT)}


def rules(answer: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in answer.get("violations") or ()}


async def test_a_revoke_while_another_server_judges_the_agents_send_stops_that_send(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path, **ROOMY)
    venue = Venue.of(paper)
    async with open_test_runtime(tmp_path, venue, clock) as a, open_test_runtime(tmp_path, venue, clock) as b:
        b.credential = await add_agent(a, "trader", "trade")
        async with agent_session(b) as client:
            plan = await call(client, "plan_order", BUY)
            tickers = paper.request_count(TICKER)
            paper.add_fault(TICKER, "latency", delay_ms=1500)
            placing = asyncio.ensure_future(call(client, "place_order", {"plan_id": plan["plan_id"]}))
            await until(lambda: paper.request_count(TICKER) > tickers and paper.working == 1)
            revoked = await revoke_agent(a, "trader")
            placed = await placing
        late = await late_growing_sends(a, "trader", revoked.seq)
    assert placed["status"] == "refused" and rules(placed) & STOPPED, placed
    assert late == []
    assert paper.request_count(CREATE) == 0


async def test_a_revoke_at_a_random_instant_of_the_agents_send_never_follows_a_growing_order(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    """TRIES times, a new agent each: it plans on B and places; the human revokes it on A once the exchange
    has had a drawn number of B's requests (none, some of its reads, all of them, the create). A try breaches
    when a growing order.sent of that agent is journaled after its revoke; a send that was not made must be
    refused for the revoke (its switch, its credential, or its plan ended by the revoke) with nothing sent
    for its plan, and a send made before it stands (filled), as the kill switch judges one."""
    write_policy(tmp_path, **ROOMY)
    venue, rng = Venue.of(paper), random.Random(39)
    breaches, answers = [], []
    async with (
        open_test_runtime(tmp_path, venue, clock) as a,
        open_test_runtime(tmp_path, venue, clock) as b,
        agent_session(b) as client,
    ):
        for attempt in range(TRIES):
            name = f"agent{attempt}"
            b.credential = await add_agent(a, name, "trade")
            plan = await call(client, "plan_order", BUY)
            assert plan["status"] == "ok", plan
            paper.add_fault(TICKER, "latency", delay_ms=30)
            before = total_requests(paper)
            placing = asyncio.ensure_future(call(client, "place_order", {"plan_id": plan["plan_id"]}))
            reached = rng.randint(0, READS_PER_PLACE + 1)  # the instant the human revokes: the draw
            await until(progress(paper, before + reached, placing))
            revoked = await revoke_agent(a, name)
            answers.append(await placing)
            if await late_growing_sends(a, name, revoked.seq):
                breaches.append(attempt)
    sent = sum(answer["status"] == "filled" for answer in answers)
    print(f"\nrevoke at a random instant: {TRIES} tries, {sent} sent before it, {len(breaches)} breaches")
    assert breaches == [], f"{len(breaches)} of {TRIES} tries sent a growing order after the revoke"
    unsent = [a for a in answers if a["status"] != "filled"]
    assert all(a["status"] == "refused" and rules(a) and rules(a) <= NOT_SENT for a in unsent), unsent
    assert not {a.get("plan_id") for a in unsent} & await plans_sent(tmp_path), unsent
    assert 0 < sent < TRIES, f"the draw never raced: {sent} of {TRIES} sent before the revoke"
