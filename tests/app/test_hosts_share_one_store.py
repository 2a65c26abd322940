"""Several hosts, one risk budget: `pilot serve` processes with homes of their own, on one PostgreSQL store and
one paper exchange, race for the last room under a cap and for the same plan.

Each server stands in for a host: its own home (policy.json, anchor), the store's URL in its store.json, the
journal key every host of a store shares. Each round, every server plans a short that fits the cap alone
and all place at once (the last room: one fills, the rest are refused); then one server plans and every
server places that same plan at once (one send). After every round the exchange's position is within the
cap, each plan was journaled as sent at most once and created on the exchange at most once; at the end the
shared journal verifies as one chain. The report line says how many rounds ran and how many breached.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from pilot.app.answers import entry_kinds
from pilot.exchange.sim import start_paper_exchange
from pilot.store import StoreLocation, open_store
from tests.scenarios import article_scenario
from tests.store.contract.conftest import drop_schema, fresh_schema, server_url

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
HOSTS = 3
ROUNDS = int(os.environ.get("PILOT_HOSTS_ROUNDS", "3")) * int(os.environ.get("PILOT_SOAK_SCALE", "1"))
PRICE = Decimal("80220")
CAP_USD = 25
SHORT = "0.0002"  # $16.04: fits the $25 cap alone; two of them do not
POLICY = {
    "allowedMarkets": ["BTCUSDT"],
    "maxNotionalUsd": CAP_USD,
    "maxOrderNotionalUsd": CAP_USD,
    "maxLeverage": 3,
    "minLiquidationDistancePct": 20,
    "dailyOrderCap": 1000,
    "maxSlippagePct": 0.5,
    "planTtlSeconds": 60,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def shared_store() -> Iterator[StoreLocation]:
    base = server_url()
    schema, url = fresh_schema(base)
    yield StoreLocation.parse(url)
    drop_schema(base, schema)


def host_home(root: Path, index: int, store: StoreLocation) -> Path:
    home = root / f"host-{index}"
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(POLICY))
    (home / "store.json").write_text(json.dumps({"url": store.url}))
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


async def test_hosts_on_one_store_never_break_a_cap_together_nor_send_a_plan_twice(
    tmp_path: Path, shared_store: StoreLocation
) -> None:
    scenario = article_scenario()
    scenario["prices"]["BTCUSDT"] = {"bid": str(PRICE), "ask": "80220.1", "mark": str(PRICE)}
    scenario["latencyMs"] = {"*": 50}
    scenario["rateLimits"] = False
    scenario_file = tmp_path / "scenario.json"
    scenario_file.write_text(json.dumps(scenario))
    homes = [host_home(tmp_path, index, shared_store) for index in range(HOSTS)]
    breaches, last_room, same_plan = [], [], []
    with start_paper_exchange(scenario) as paper:
        async with AsyncExitStack() as stack:
            hosts = [
                await stack.enter_async_context(Client(serve(h, paper.url, scenario_file))) for h in homes
            ]
            short = {"symbol": "BTCUSDT", "side": "sell", "qty": SHORT}
            for round_number in range(ROUNDS):
                plans = await asyncio.gather(*(call(host, "plan_order", short) for host in hosts))
                assert [plan["status"] for plan in plans] == ["ok"] * HOSTS, [
                    p.get("violations") for p in plans
                ]
                placed = await asyncio.gather(
                    *(
                        call(host, "place_order", {"plan_id": plan["plan_id"]})
                        for host, plan in zip(hosts, plans, strict=True)
                    )
                )
                last_room.append(sorted(answer["status"] for answer in placed))
                if abs(paper.position("BTCUSDT").size) * PRICE > CAP_USD:
                    breaches.append((round_number, "last room", paper.position("BTCUSDT").size))
                flat(paper)

                plan = await call(hosts[round_number % HOSTS], "plan_order", short)
                assert plan["status"] == "ok", plan.get("violations")
                answers = await asyncio.gather(
                    *(call(host, "place_order", {"plan_id": plan["plan_id"]}) for host in hosts)
                )
                same_plan.append(sorted(answer["status"] for answer in answers))
                if abs(paper.position("BTCUSDT").size) * PRICE > CAP_USD:
                    breaches.append((round_number, "same plan", paper.position("BTCUSDT").size))
                flat(paper)
        creates = [
            order.order_link_id
            for order in paper.orders("BTCUSDT")
            if order.order_link_id.startswith("pilot-")
        ]

    async with await open_store(shared_store, home=homes[0]) as store:
        sent = await store.journal.entries(kind=entry_kinds.ORDER_SENT)
        chain = await store.journal.verify()
    sends_per_plan = {
        plan_id: [e.plan_id for e in sent].count(plan_id) for plan_id in {e.plan_id for e in sent}
    }
    print(
        f"\n{HOSTS} hosts on one PostgreSQL store: {ROUNDS} rounds, {len(breaches)} cap breaches, "
        f"{len(sent)} sends for {len(sends_per_plan)} plans, chain of {chain.count} entries ok={chain.ok}"
    )
    assert breaches == []
    assert all(statuses.count("filled") == 1 for statuses in last_room), last_room
    assert all(statuses.count("filled") == 1 for statuses in same_plan), same_plan
    assert max(sends_per_plan.values()) == 1 and len(sent) == 2 * ROUNDS
    assert len(creates) == len(set(creates)) == 2 * ROUNDS
    assert chain.ok
