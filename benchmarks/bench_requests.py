"""Exchange requests per order: plan_order + place_order over REST and with streams, counted at the paper exchange.

The paper exchange runs in this process (its request counters are read by path); the use cases plan and
place `--rounds` orders after two to warm (instrument rules, listings). Printed, as ratios against the
issue's targets: the requests of a plan, of a place, and of the order (plan + place), by path, as medians,
against at most half of the 15 a REST order took (7.5); over REST, the sequential round trips place_order's
requests make (requests in flight together count once) against three (fresh facts, the create, the
read-back). Then over REST with a daily loss limit on a day that has already closed `--closed` trades: the
closed-PnL requests per judgement, against the pages a whole-day read of them takes (it read the whole day on
every judgement before issue 41; now it reads on from the newest row held).

    .venv/bin/python benchmarks/bench_requests.py [--rounds 20] [--closed 500]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import bench_plan_place as base

from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.core.day_pnl import OVERLAP
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.handlers import ROUTES

BEFORE = 15  # requests per REST order when issue 41 was filed (counted at a proxy)
TARGET = BEFORE / 2
TRIPS = 3  # place_order over REST: fresh facts, the create, the read-back, one after the other
CLOSED_PNL = "/v5/position/closed-pnl"
PAGE = 100  # closed-PnL rows a page (the adapter asks for Bybit's largest)


def counts(paper: Any) -> Counter[str]:
    return Counter({path: n for path in ROUTES if (n := paper.request_count(path))})


def sequential(intervals: list[tuple[float, float]]) -> int:
    """How many times a request was sent with none in flight: the round trips a caller waited through."""
    trips, end = 0, float("-inf")
    for start, stop in sorted(intervals):
        if start >= end:
            trips += 1
        end = max(end, stop)
    return trips


async def run(streams: bool, rounds: int) -> None:
    with start_paper_exchange(base.bench_scenario(0)) as paper:
        plans, places, trips = await rounds_on(paper, streams, rounds, base.POLICY)
    mode = "streams" if streams else "rest"
    plan, place = (statistics.median(sum(c.values()) for c in cs) for cs in (plans, places))
    total = plan + place
    waits = (
        f"; place_order's sequential round trips {statistics.median(trips):g} "
        f"({statistics.median(trips) / TRIPS:.2f}x the {TRIPS} of fresh facts, create, read-back)"
        if not streams
        else ""
    )
    print(
        f"[{mode:7}] requests per order {total:g} (plan {plan:g}, place {place:g}): {total / TARGET:.2f}x "
        f"the target of at most {TARGET:g} ({total / BEFORE:.2f}x the {BEFORE} before){waits}"
    )
    print(f"          plan  by path: {dict(sorted(plans[-1].items()))}")
    print(f"          place by path: {dict(sorted(places[-1].items()))}")


async def rounds_on(
    paper: PaperExchange, streams: bool, rounds: int, policy: dict[str, Any]
) -> tuple[list[Counter[str]], list[Counter[str]], list[int]]:
    """Plan and place `rounds` orders (after two to warm): each one's plan and place requests by path, and
    place_order's sequential round trips."""
    address = (paper.url, paper.api_key, paper.api_secret, paper.ws_url)
    plans: list[Counter[str]] = []
    places: list[Counter[str]] = []
    trips: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        async with contextlib.AsyncExitStack() as stack:
            runtime, timed = await base.open_runtime(Path(folder), address, stack, streams=streams)
            (Path(folder) / "policy.json").write_text(json.dumps(policy))
            for index in range(rounds + 2):
                before = counts(paper)
                planned = await plan_order(runtime, PlanRequest.parse(base.ORDERS[index % 2]))
                assert planned.plan_id is not None, planned
                between = counts(paper)
                timed.reset()
                placed = await place_order(runtime, planned.plan_id)
                assert placed.status == "filled", placed
                if index >= 2:
                    plans.append(between - before)
                    places.append(counts(paper) - between)
                    trips.append(sequential(timed.intervals))
    return plans, places, trips


async def daily_loss(rounds: int, closed: int) -> None:
    """Over REST with a daily loss limit, on a day with `closed` closed trades already (left by another client
    of the key, then the exchange's time moved past OVERLAP): closed-PnL requests per judgement."""
    with start_paper_exchange(base.bench_scenario(0)) as paper:
        for side in ("Sell", "Buy") * closed:
            order = {"symbol": "BTCUSDT", "side": side, "orderType": "Market", "qty": "0.001"}
            paper.leave_order("linear", order)
        paper.advance(int((OVERLAP + timedelta(minutes=1)).total_seconds() * 1000))
        policy = {**base.POLICY, "dailyLossLimitUsd": 1000}
        plans, places, _ = await rounds_on(paper, False, rounds, policy)
    per_judgement = statistics.median(c[CLOSED_PNL] for c in (*plans, *places))
    whole_day = (closed + rounds) // PAGE + 2  # full pages, the last rows, and the empty page after them
    total = statistics.median(sum(p.values()) + sum(q.values()) for p, q in zip(plans, places, strict=True))
    print(
        f"[rest, daily loss limit, {closed} trades closed earlier today] closed-PnL requests per judgement "
        f"{per_judgement:g} (a whole-day read: {whole_day}, as every judgement read before); requests per "
        f"order {total:g} (the day's spot fills and positions too)"
    )
    print(f"          plan  by path: {dict(sorted(plans[-1].items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--closed", type=int, default=500, help="trades closed earlier today (daily loss run)"
    )
    args = parser.parse_args()
    os.environ.setdefault("PILOT_JOURNAL_KEY_FILE", str(Path(tempfile.mkdtemp()) / "journal.key"))
    print(f"bench_requests on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for streams in (False, True):
        asyncio.run(run(streams, args.rounds))
    asyncio.run(daily_loss(args.rounds, args.closed))


if __name__ == "__main__":
    sys.exit(main())
