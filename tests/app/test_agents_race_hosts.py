"""Agents' budgets raced across servers (issue 39): two agents, each served by a `pilot serve` on each of two
hosts, on one store (SQLite: the hosts are processes of one machine on one home; PostgreSQL: a home per
host on one schema, as tests/app/test_hosts_share_one_store.py sets them up), one paper exchange.

The account may hold $40 of BTC; agent `a` $25 of it, agent `b` $35. Each round, two races, each released
at once with the judgements' position reads met at the exchange (an `Interposer`'s meeting, as in the hosts'
race), so that both hosts judge the same account:

- the agent's last room: `a` on both hosts shorts $16 from flat: one fills, the other is refused for `a`'s
  own budget (`agent:a`; the account's $40 had room for both);
- the account's last room: `a` holds $16, then `b` on both hosts shorts $16: one fills, the other is refused
  for the account's budget (`b`'s own $35 had room for both).

After every race the exchange's position is within the account's cap and the racing agent's share within
its own; the owner closes the position between races. The report line says how many hosts met in each race.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from pilot.cli import main
from pilot.paper import start_paper_exchange
from tests.interposer import Interposer
from tests.scenarios import article_scenario, policy_with
from tests.store.contract.conftest import ENGINES, drop_schema, fresh_schema, server_url

from .test_hosts_share_one_store import JUDGEMENT_READ, PATIENCE, PRICE, call, connected, flat, serve

pytestmark = pytest.mark.anyio
HOSTS = 2
ROUNDS = int(os.environ.get("PILOT_HOSTS_ROUNDS", "3")) * int(os.environ.get("PILOT_SOAK_SCALE", "1"))
ACCOUNT_CAP, CAPS = Decimal(40), {"a": Decimal(25), "b": Decimal(35)}
SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0002"}  # $16.04
A_HOLDS = Decimal(SHORT["qty"]) * PRICE  # what `a` holds while `b` races for the account's last room
POLICY = policy_with(
    allowedMarkets=["BTCUSDT"],
    maxNotionalUsd=int(ACCOUNT_CAP),
    maxOrderNotionalUsd=int(ACCOUNT_CAP),
    dailyOrderCap=1000,
    agents={name: {"maxNotionalUsd": int(cap)} for name, cap in CAPS.items()},
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=ENGINES)
def homes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Path]]:
    """Each host's home on one store, and each agent's credential (issued once: the store holds them)."""
    if request.param == "sqlite":
        yield with_agents([write_home(tmp_path / "home")] * HOSTS, tmp_path)
        return
    base = server_url()
    schema, url = fresh_schema(base)
    try:
        yield with_agents([write_home(tmp_path / f"host-{n}", url) for n in range(HOSTS)], tmp_path)
    finally:
        drop_schema(base, schema)


def write_home(home: Path, store_url: str | None = None) -> Path:
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(POLICY))
    if store_url is not None:
        (home / "store.json").write_text(json.dumps({"url": store_url}))
    return home


def with_agents(homes: list[Path], folder: Path) -> list[Path]:
    if not (homes[0] / "store.json").exists():  # a home's own SQLite journal (it keeps policy.json)
        assert CliRunner().invoke(main, ["init", "--home", str(homes[0])]).exit_code == 0
    for name in CAPS:
        args = ["agent", "add", name, "--role", "trade", "--token-file", str(folder / name)]
        result = CliRunner().invoke(main, [*args, "--home", str(homes[0])])
        assert result.exit_code == 0, result.output
    return homes


def as_agent(server: StdioServerParameters, credential: Path) -> StdioServerParameters:
    """The server a client's config starts for an agent: its credential file in the env."""
    return server.model_copy(update={"env": {"PILOT_AGENT_TOKEN_FILE": str(credential)}})


async def race(hosts: list[Client], front: Interposer) -> tuple[list[dict[str, Any]], int]:
    """Each host plans the short, then all place at once, their judgements' position reads met."""
    plans = await asyncio.gather(*(call(host, "plan_order", SHORT) for host in hosts))
    assert [plan["status"] for plan in plans] == ["ok"] * len(hosts), plans
    with front.meeting(*JUDGEMENT_READ, parties=len(hosts), patience=PATIENCE) as meeting:
        placed = await asyncio.gather(
            *(
                call(host, "place_order", {"plan_id": plan["plan_id"]})
                for host, plan in zip(hosts, plans, strict=True)
            )
        )
    return list(placed), meeting.met


def whose(answers: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Per answer: its status, then the budget of each maxNotionalUsd violation it carries."""
    return sorted(
        (
            a["status"],
            *(v.get("budget", "") for v in a.get("violations") or () if v["rule"] == "maxNotionalUsd"),
        )
        for a in answers
    )


def held_usd(paper: Any) -> Decimal:
    return abs(paper.position("BTCUSDT").size) * PRICE


async def test_agents_racing_across_hosts_never_pass_their_budget_nor_the_accounts(
    tmp_path: Path, homes: list[Path]
) -> None:
    scenario = article_scenario()
    scenario["prices"]["BTCUSDT"] = {"bid": str(PRICE), "ask": "80220.1", "mark": str(PRICE)}
    scenario["rateLimits"] = False
    scenario_file = tmp_path / "scenario.json"
    scenario_file.write_text(json.dumps(scenario))
    agent_room, account_room, met, breaches = [], [], [], []
    with start_paper_exchange(scenario) as paper, Interposer(paper) as front:
        servers = [
            as_agent(serve(home, front.url, scenario_file), tmp_path / name)
            for name in CAPS
            for home in homes
        ]
        async with connected(servers) as clients:
            a, b = clients[:HOSTS], clients[HOSTS:]
            for round_number in range(ROUNDS):
                answers, hosts_met = await race(a, front)
                agent_room.append(whose(answers))
                met.append(hosts_met)
                if held_usd(paper) > CAPS["a"]:
                    breaches.append((round_number, "a", held_usd(paper)))
                flat(paper)
                alone = await call(a[round_number % HOSTS], "plan_order", SHORT)
                placed = await call(a[round_number % HOSTS], "place_order", {"plan_id": alone["plan_id"]})
                assert placed["status"] == "filled", placed
                answers, hosts_met = await race(b, front)
                account_room.append(whose(answers))
                met.append(hosts_met)
                if held_usd(paper) > ACCOUNT_CAP or held_usd(paper) - A_HOLDS > CAPS["b"]:
                    breaches.append((round_number, "account", held_usd(paper)))
                flat(paper)
    print(
        f"\n{HOSTS} hosts x {len(CAPS)} agents on one store: {ROUNDS} rounds, {len(breaches)} breaches "
        f"{breaches}, hosts judging at once in each race {met}"
    )
    assert breaches == []
    assert all(hosts >= 1 for hosts in met), met
    assert agent_room == [[("filled",), ("refused", "agent:a")]] * ROUNDS, agent_room
    assert account_room == [[("filled",), ("refused", "account")]] * ROUNDS, account_room
