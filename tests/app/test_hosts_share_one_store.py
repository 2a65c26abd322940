"""Several hosts, one risk budget: `pilot serve` processes on one store (SQLite or PostgreSQL) and one paper
exchange race for the last room under a cap and for the same plan.

On PostgreSQL each server stands in for a host: its own home (policy.json, anchor), the store's URL in its
store.json, the journal key every host of a store shares. On SQLite the store is a home's file, so the
servers are processes of one machine serving one home. Each round, every server plans a short that fits the
cap alone and all place at once (the last room: one fills, the rest are refused); then one server plans a
short the cap would take three times and every server places that same plan at once (one send: only the
plan's single use stands in the way). After every round the exchange's position is within the cap, each plan
was journaled as sent at most once and created on the exchange at most once; at the end the shared journal
verifies as one chain. The report line says how many rounds ran and how many breached.

Judgements made at once, whatever the scheduling: a judgement that starts after another host's send was
journaled sees it as pending exposure, so without help the race is run only when the hosts reach their
judgements within one exchange read of each other, which nothing holds them to. So the servers reach the
paper exchange through an `Interposer`, and in each last-room race their position reads (every judgement
makes one, after reading the journal) meet there: each waits for the other hosts' (or for `PATIENCE`), and
the exchange answers them all before any host gets its answer. Without one send turn across hosts, every
host then judges the same flat account and the cap breaks in every round; with it, one host judges while
the others wait for the turn, and its read goes on alone after `PATIENCE`. The report says how many hosts
met in each race.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from pilot.app.answers import entry_kinds
from pilot.app.runtime.runtime import Home
from pilot.paper import start_paper_exchange
from pilot.store import open_store
from tests.interposer import Interposer
from tests.scenarios import article_scenario, policy_with
from tests.store.contract.conftest import ENGINES, drop_schema, fresh_schema, server_url

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
HOSTS = 3
ROUNDS = int(os.environ.get("PILOT_HOSTS_ROUNDS", "3")) * int(os.environ.get("PILOT_SOAK_SCALE", "1"))
PRICE = Decimal("80220")
CAP_USD = 25
SHORT = "0.0002"  # $16.04: fits the $25 cap alone; two of them do not
SMALL = "0.00008"  # $6.42: three of them fit the cap, so only the plan's single use stops a second send
# How long a judgement's read waits at the exchange for the other hosts': far longer than three place_orders
# released together take to reach their judgements (16 ms apart at most, measured on 2 cores at a load of 5);
# with one send turn, each last-room race waits this long once (the turn's holder waits for hosts waiting for
# it). The exchange itself answers at once: the meeting, not latency, makes the judgements overlap.
PATIENCE = timedelta(seconds=0.25)
JUDGEMENT_READ = ("GET", "/v5/position/list")
POLICY = policy_with(
    allowedMarkets=["BTCUSDT"], maxNotionalUsd=CAP_USD, maxOrderNotionalUsd=CAP_USD, dailyOrderCap=1000
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=ENGINES)
def homes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Path]]:
    """The home each host's server runs on, all on one store: on SQLite, one home (its file is the store, so
    the hosts are processes of one machine); on PostgreSQL, a home per host on a fresh schema of the server."""
    if request.param == "sqlite":
        yield [write_home(tmp_path / "home")] * HOSTS
        return
    base = server_url()
    schema, url = fresh_schema(base)
    try:
        yield [write_home(tmp_path / f"host-{index}", url) for index in range(HOSTS)]
    finally:
        drop_schema(base, schema)


def write_home(home: Path, store_url: str | None = None) -> Path:
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(POLICY))
    if store_url is not None:
        (home / "store.json").write_text(json.dumps({"url": store_url}))
    return home


def serve(home: Path, paper_url: str, scenario: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "pilot",
            "serve",
            "--home",
            str(home),
            "--paper-url",
            paper_url,
            "--scenario",
            str(scenario),
            "--no-streams",  # facts read over REST: what the exchange says now, the owner's closes included
        ],
        cwd=str(REPO),
    )


@asynccontextmanager
async def connected(servers: list[StdioServerParameters]) -> AsyncIterator[list[Client]]:
    """A client of each server, the servers started at once: each client is entered and left in a task of its
    own (an MCP client's task group must be), held open until the block ends."""
    clients: dict[int, Client] = {}
    ready, done = anyio.Event(), anyio.Event()

    async def hold(index: int, server: StdioServerParameters) -> None:
        async with Client(server) as client:
            clients[index] = client
            if len(clients) == len(servers):
                ready.set()
            await done.wait()

    async with anyio.create_task_group() as group:
        for index, server in enumerate(servers):
            group.start_soon(hold, index, server)
        await ready.wait()
        try:
            yield [clients[index] for index in range(len(servers))]
        finally:
            done.set()


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content


def flat(paper: Any) -> None:
    """Close the round's position on the exchange, as the account's owner would between rounds."""
    size = paper.position("BTCUSDT").size
    if size:
        side = "Buy" if size < 0 else "Sell"
        paper.leave_order(
            "linear",
            {
                "symbol": "BTCUSDT",
                "side": side,
                "orderType": "Market",
                "qty": str(abs(size)),
                "reduceOnly": True,
            },
        )


@dataclass
class Tally:
    """What the rounds came to: each race's answers, the cap breaches, and how many hosts met per race."""

    last_room: list[list[str]] = field(default_factory=list)
    same_plan: list[list[str]] = field(default_factory=list)
    breaches: list[tuple[int, str, Decimal]] = field(default_factory=list)
    met: list[int] = field(default_factory=list)

    def check_cap(self, paper: Any, round_number: int, race: str) -> None:
        size = paper.position("BTCUSDT").size
        if abs(size) * PRICE > CAP_USD:
            self.breaches.append((round_number, race, size))


async def race_for_the_last_room(
    hosts: list[Client], front: Interposer, paper: Any, tally: Tally, round_number: int
) -> None:
    """Every host plans a short that fits alone, then all place at once, their judgements' reads met."""
    short = {"symbol": "BTCUSDT", "side": "sell", "qty": SHORT}
    plans = await asyncio.gather(*(call(host, "plan_order", short) for host in hosts))
    assert [plan["status"] for plan in plans] == ["ok"] * HOSTS, [p.get("violations") for p in plans]
    with front.meeting(*JUDGEMENT_READ, parties=HOSTS, patience=PATIENCE) as meeting:
        placed = await asyncio.gather(
            *(
                call(host, "place_order", {"plan_id": plan["plan_id"]})
                for host, plan in zip(hosts, plans, strict=True)
            )
        )
    tally.met.append(meeting.met)
    tally.last_room.append(sorted(answer["status"] for answer in placed))
    tally.check_cap(paper, round_number, "last room")
    flat(paper)


async def race_for_one_plan(hosts: list[Client], paper: Any, tally: Tally, round_number: int) -> None:
    """One host plans an order the cap would take thrice; every host places that plan at once."""
    small = {"symbol": "BTCUSDT", "side": "sell", "qty": SMALL}
    plan = await call(hosts[round_number % HOSTS], "plan_order", small)
    assert plan["status"] == "ok", plan.get("violations")
    answers = await asyncio.gather(
        *(call(host, "place_order", {"plan_id": plan["plan_id"]}) for host in hosts)
    )
    tally.same_plan.append(sorted(answer["status"] for answer in answers))
    tally.check_cap(paper, round_number, "same plan")
    flat(paper)


async def test_hosts_on_one_store_never_break_a_cap_together_nor_send_a_plan_twice(
    tmp_path: Path, homes: list[Path]
) -> None:
    scenario = article_scenario()
    scenario["prices"]["BTCUSDT"] = {"bid": str(PRICE), "ask": "80220.1", "mark": str(PRICE)}
    scenario["rateLimits"] = False
    scenario_file = tmp_path / "scenario.json"
    scenario_file.write_text(json.dumps(scenario))
    tally = Tally()
    with start_paper_exchange(scenario) as paper, Interposer(paper) as front:
        async with connected([serve(home, front.url, scenario_file) for home in homes]) as hosts:
            for round_number in range(ROUNDS):
                await race_for_the_last_room(hosts, front, paper, tally, round_number)
                await race_for_one_plan(hosts, paper, tally, round_number)
        creates = [
            order.order_link_id
            for order in paper.orders("BTCUSDT")
            if order.order_link_id.startswith("pilot-")
        ]

    location = Home(homes[0]).store()
    async with await open_store(location, home=homes[0]) as store:
        sent = await store.journal.entries(kind=entry_kinds.ORDER_SENT)
        chain = await store.journal.verify()
    sends_per_plan = {
        plan_id: [e.plan_id for e in sent].count(plan_id) for plan_id in {e.plan_id for e in sent}
    }
    print(
        f"\n{HOSTS} hosts on one {location.kind} store: {ROUNDS} rounds, {len(tally.breaches)} cap breaches "
        f"{tally.breaches}, hosts judging at once in each last-room race {tally.met}, {len(sent)} sends for "
        f"{len(sends_per_plan)} plans, chain of {chain.count} entries ok={chain.ok}"
    )
    assert all(met >= 1 for met in tally.met), tally.met  # every judgement read went through the meeting
    assert tally.breaches == []
    assert all(statuses.count("filled") == 1 for statuses in tally.last_room), tally.last_room
    assert all(statuses.count("filled") == 1 for statuses in tally.same_plan), tally.same_plan
    assert max(sends_per_plan.values()) == 1 and len(sent) == 2 * ROUNDS
    assert len(creates) == len(set(creates)) == 2 * ROUNDS
    assert chain.ok
