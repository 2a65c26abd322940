"""Exchange requests per order: plan_order + place_order over REST and with streams, counted at the paper exchange.

The paper exchange runs in this process (its request counters are read directly, by path); the use cases
plan and place `--rounds` orders after two to warm (instrument rules, listings). Printed: the requests of a
plan, of a place, and of the order (plan + place), by path, as medians, against the issue's target (at most
half of the 15 a REST order took: 7.5), and over REST the number of sequential round trips place_order's
requests make (requests in flight together count once).

    .venv/bin/python benchmarks/bench_requests.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import bench_plan_place as base

from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.paper import start_paper_exchange

BEFORE = 15  # requests per REST order when issue 41 was filed (counted at a proxy)


def counts(paper: Any) -> Counter[str]:
    return Counter(paper._faults._counts)


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
        address = (paper.url, paper.api_key, paper.api_secret, paper.ws_url)
        with tempfile.TemporaryDirectory() as folder:
            async with contextlib.AsyncExitStack() as stack:
                runtime, timed = await base.open_runtime(Path(folder), address, stack, streams=streams)
                plans: list[Counter[str]] = []
                places: list[Counter[str]] = []
                trips: list[int] = []
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
    mode = "streams" if streams else "rest"
    plan, place = (statistics.median(sum(c.values()) for c in cs) for cs in (plans, places))
    total = plan + place
    waits = f"; place_order's sequential round trips {statistics.median(trips):g}" if not streams else ""
    print(
        f"[{mode:7}] requests per order {total:g} (plan {plan:g}, place {place:g}): {total / (BEFORE / 2):.2f}x "
        f"the target of at most {BEFORE / 2:g} (before: {BEFORE}){waits}"
    )
    print(f"          plan  by path: {dict(sorted(plans[-1].items()))}")
    print(f"          place by path: {dict(sorted(places[-1].items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("PILOT_JOURNAL_KEY_FILE", str(Path(tempfile.mkdtemp()) / "journal.key"))
    print(f"bench_requests on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for streams in (False, True):
        asyncio.run(run(streams, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
