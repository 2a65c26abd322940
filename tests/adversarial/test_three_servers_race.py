"""Three server processes on one home, released at once by a barrier, plan and place against one paper
exchange (every request 20 ms slow, so the races are wide): appends, claims, leases, the ledger and the
send turn all race across real processes.

After each race: the caps hold on what the exchange holds; each plan was sent at most once (its client
order id is on the exchange at most once) and every send is journaled; the journal is one unbroken sealed
chain; each server's ledger says what the journal read whole says.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.orders.plan import plan_order
from pilot.core.facts import Side
from pilot.paper import start_paper_exchange
from pilot.store import iso_utc
from tests.app.conftest import FakeClock, write_policy
from tests.scenarios import article_scenario
from tests.store.support import run_in_processes

from .one_home import NOON, Venue, check_each_send_once, market, open_test_runtime, placer, trader

SERVERS = 3
EIGHT_DOLLARS = "0.0001"  # of BTC at 80220: three fit the $25 cap, four do not


@pytest.fixture
def paper() -> Any:
    world = article_scenario()
    world["rateLimits"] = False
    world["latencyMs"] = {"*": 20}
    with start_paper_exchange(world) as exchange:
        yield exchange


@pytest.mark.parametrize("bound", ["position_cap", "daily_cap"])
def test_three_servers_trading_at_once_keep_the_caps_the_chain_and_their_ledgers(
    tmp_path: Path, paper: Any, bound: str
) -> None:
    if bound == "position_cap":
        write_policy(tmp_path, dailyOrderCap=1000)  # $25: three $8 buys fit, a fourth does not
        expected_sends = 3
    else:
        write_policy(tmp_path, dailyOrderCap=4, maxNotionalUsd=1000)
        expected_sends = 4
    now = iso_utc(NOON)
    orders = [("buy", EIGHT_DOLLARS)] * 3
    results = run_in_processes(trader, [(str(tmp_path), Venue.of(paper), now, orders)] * SERVERS)
    got = Counter(status for result in results for _, status, _ in result["got"])
    sent = check_each_send_once(paper, tmp_path)
    assert len(sent) == expected_sends == paper.request_count("/v5/order/create"), got
    assert got["filled"] == expected_sends and got["refused"] == SERVERS * 3 - expected_sends, got
    assert abs(paper.position("BTCUSDT").size) * Decimal("80220.1") <= 25 or bound == "daily_cap"
    for result in results:
        assert result["ledger"] == result["journal"]


def test_three_servers_placing_the_same_plans_at_once_send_each_exactly_once(
    tmp_path: Path, paper: Any
) -> None:
    write_policy(tmp_path, dailyOrderCap=1000, maxNotionalUsd=1000)
    now = NOON

    async def plan_all() -> list[str]:
        async with open_test_runtime(tmp_path, Venue.of(paper), FakeClock(now)) as runtime:
            plans = [await plan_order(runtime, market(Side.BUY, "0.00002")) for _ in range(8)]
        return [p.plan_id for p in plans if p.plan_id is not None]

    plan_ids = asyncio.run(plan_all())
    assert len(plan_ids) == 8
    rng = random.Random(len(plan_ids))
    orders = [rng.sample(plan_ids, len(plan_ids)) for _ in range(SERVERS)]
    results = run_in_processes(placer, [(str(tmp_path), Venue.of(paper), iso_utc(now), o) for o in orders])
    for plan_id in plan_ids:
        assert sorted(result[plan_id] for result in results) == ["filled", "refused", "refused"], plan_id
    sent = check_each_send_once(paper, tmp_path)
    assert sorted(e.plan_id for e in sent) == sorted(plan_ids)
    assert paper.request_count("/v5/order/create") == 8
