"""Refusal as interface in every case (issue 12): random worlds through a real MCP client on the paper exchange.

One paper exchange, one Runtime and one in-memory MCP client per world; many orders per world, drawn from
its state as it evolves (plans that pass are sometimes placed). The world's prices follow seeded walks:
between two orders, and between a plan and its place_order, a drawn amount of exchange time passes, so
resting orders fill and stops trigger while the agent acts. Every answer is checked as
tests/worlds/harness.py describes. A failure lists every finding of the world with its reproduction.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.worlds.conftest import CASES_PER_WORLD, OKX_WORLD_SETTINGS, REPORT, WORLD_SETTINGS
from tests.worlds.harness import WorldRun, open_world
from tests.worlds.strategies import cases, gaps, worlds
from tests.worlds.world import World


async def explore(world: World, data: st.DataObject) -> WorldRun:
    """Play the world: its orders drawn from its state as it evolves, the market moving in between."""
    with tempfile.TemporaryDirectory() as home:
        async with open_world(world, Path(home)) as run:
            for _ in range(data.draw(st.integers(*CASES_PER_WORLD), label="orders")):
                await run.run(data.draw(cases(world, run.oracle()), label="order"))
                await run.advance(data.draw(gaps(world), label="exchange ms to the next order"), "a case")
            return run


@WORLD_SETTINGS
@given(world=worlds(), data=st.data())
def test_every_refusal_leads_somewhere_true_in_random_worlds(world: World, data: st.DataObject) -> None:
    check(world, data)


@OKX_WORLD_SETTINGS
@given(world=worlds("okx"), data=st.data())
def test_every_refusal_leads_somewhere_true_in_random_worlds_on_okx(
    world: World, data: st.DataObject
) -> None:
    """The same worlds reached through OKX's wire (the OKX front over the paper exchange): sizes in contracts,
    markets spelt BTC-USDT, a stop sent with an order covering what filled, as the oracle restates it."""
    check(world, data)


def check(world: World, data: st.DataObject) -> None:
    """Explore the world and fail with every finding (or, surveying, write them to the report)."""
    run = asyncio.run(explore(world, data))
    if REPORT:
        with Path(REPORT).open("a") as out:
            record = {
                "world": world.describe(),
                "stats": dict(run.stats),
                "findings": [
                    {"kind": f.kind, "failing": f.failing, "detail": f.detail} for f in run.findings
                ],
            }
            out.write(json.dumps(record, default=str) + "\n")
        return
    failing = [f for f in run.findings if f.failing]
    kinds = Counter(f.kind for f in failing)
    first = {}
    for finding in failing:
        first.setdefault(finding.kind, finding)
    assert not failing, "\n".join(
        [
            f"{sum(kinds.values())} findings in this world: {dict(kinds)}",
            "world: " + json.dumps(world.describe()),
        ]
        + [finding.line() for finding in first.values()]
    )
