"""Benchmark a long session: work per round and memory, with every window the journal keeps at its fullest.

The use cases plan and place `--rounds` orders (5,000) in one process, streams on, on the paper exchange in
a child process (its work is not counted), under a policy whose message throttles are at the highest values
policy.json allows (1,000 a second, 60,000 a minute: every message of the run stays in the minute's window,
so a view that walks the window grows with the session), and the turnover caps on too (not the cooldown:
every round closes at a loss of its fees). `--daily-loss` sets the daily loss limit too, whose day's
realised PnL is read over REST from the day's closed trades on every judgement (issue 36b moves it to the
fills). Printed:

1. Work per round: Pilot's own time (the wall time minus the time an exchange request or the order stream
   was awaited) per plan + place, the median of the last 1,000 rounds over the first 1,000's. Target: <= 1.1.
2. Memory: this process's RSS sampled every 50 rounds; the spread (max - min) over the last third of the
   run (the issue's form: the last 1,000 of 3,000). Target: <= 5 MiB. Also each bounded cache's bound.

`--busy` runs a second process spinning on a core beside it (the issue's "under a second core's load").
Figures are ratios within one run, so the machine's load moves both ends alike; the load average is printed.

    .venv/bin/python benchmarks/bench_long_session.py [--rounds 5000] [--busy]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import bench_plan_place as base

from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order

POLICY = {
    **base.POLICY,
    "maxOrderMessagesPerSecond": 1000,
    "maxOrderMessagesPerMinute": 60_000,
    "maxTurnoverUsdPerDay": 1_000_000_000,
    "maxTurnoverUsd24h": 1_000_000_000,
}
DAILY_LOSS = {"dailyLossLimitUsd": 1_000_000}


TRACING = [False]
TRACE: list[Any] = []  # --trace: the allocations at a third of the run, then what grew since


def rss_mib() -> float:
    """This process's resident set, from /proc (Linux)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def spin(stop: Any) -> None:
    while not stop.is_set():
        sum(range(10_000))


async def session(
    address: tuple[str, str, str, str], rounds: int, policy: dict[str, Any]
) -> tuple[list[float], list[float]]:
    """Pilot's own seconds per plan + place of every round, and the RSS every 50 rounds."""
    own: list[float] = []
    rss: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        async with contextlib.AsyncExitStack() as stack:
            runtime, timed = await base.open_runtime(Path(folder), address, stack, streams=True)
            (Path(folder) / "policy.json").write_text(json.dumps(policy))
            plans, places = base.Measured(), base.Measured()
            for index in range(rounds):
                request = PlanRequest.parse(base.ORDERS[index % 2])
                planned = await base.measure(timed, lambda r=request: plan_order(runtime, r), plans)
                assert planned.status == "ok", planned
                placed = await base.measure(timed, lambda p=planned.plan_id: place_order(runtime, p), places)
                assert placed.status == "filled", placed
                own.append(plans.own[-1] + places.own[-1])
                if index % 50 == 49:
                    gc.collect()
                    rss.append(rss_mib())
                if TRACING[0] and index == rounds // 3:
                    tracemalloc.start(25)
                    TRACE.append(tracemalloc.take_snapshot())
            print_bounds(runtime)
            if TRACE:
                grown = tracemalloc.take_snapshot().compare_to(TRACE[0], "traceback")
                for stat in grown[:12]:
                    print(f"  grew: {stat.size_diff / 1024:.0f} KiB in {stat.count_diff} blocks at")
                    ours = [frame for frame in stat.traceback if "/pilot/" in frame.filename][-3:]
                    print("\n".join(f"      {frame.filename}:{frame.lineno}" for frame in ours))
    return own, rss


def print_bounds(runtime: Any) -> None:
    """Every cache a long session fills, its bound, and how full it is now."""
    from pilot.app.facts import stream_cache
    from pilot.app.runtime import activity, ledger
    from pilot.core.rules import registry
    from pilot.store import journal

    held = runtime.ledger
    print(
        f"  bound: journal rows verified and kept: {journal.VERIFIED_ROWS_KEPT} (journal.VERIFIED_ROWS_KEPT)"
    )
    print(f"  bound: final orders the stream cache keeps: {stream_cache.MAX_FINAL_ORDERS} (MAX_FINAL_ORDERS)")
    print(f"  bound: policies whose checks are kept: 64 (registry.checks_for; now {len(registry._CHOSEN)})")
    print(
        f"  bound: messages of the last {activity.MESSAGE_WINDOW} (at most maxOrderMessagesPerMinute); "
        f"now {held._activity.messages.view(*now_of(runtime)).__len__()}"
    )
    print(
        f"  bound: sends of the last {ledger.KEPT} for the day's count and turnover (at most twice "
        f"dailyOrderCap); now {len(held._sends.sends)} moments, {len(held._activity.sends)} turnover sends"
    )


def now_of(runtime: Any) -> tuple[Any, Any]:
    return runtime.now(), runtime.store.journal.clock.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5000)
    parser.add_argument("--daily-loss", action="store_true", help="the daily loss limit on too")
    parser.add_argument("--trace", action="store_true", help="print what grew over the last 2/3 (slow)")
    parser.add_argument("--busy", action="store_true", help="a second process busy on a core meanwhile")
    args = parser.parse_args()
    TRACING[0] = args.trace
    os.environ.setdefault("PILOT_JOURNAL_KEY_FILE", str(Path(tempfile.mkdtemp()) / "journal.key"))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench_long_session: {args.rounds} rounds on {os.cpu_count()} cores, load average {load}")
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=spin, args=(stop,), daemon=True) if args.busy else None
    if spinner is not None:
        spinner.start()
    address, shutdown = base.start_exchange(0)
    try:
        own, rss = asyncio.run(
            session(address, args.rounds, POLICY | (DAILY_LOSS if args.daily_loss else {}))
        )
    finally:
        shutdown()
        stop.set()
    report(own, rss)
    print(f"  load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def report(own: list[float], rss: list[float]) -> None:
    tail = max(len(own) // 5, 1)
    first, last = statistics.median(own[:tail]) * 1000, statistics.median(own[-tail:]) * 1000
    ratio = last / first
    print(
        f"1. own time per plan + place: first {tail} rounds median {first:.2f} ms, last {tail} {last:.2f} ms: "
        f"{ratio:.2f}x (target <= 1.1: {'ok' if ratio <= 1.1 else 'MISSED'})"
    )
    third = rss[-max(len(rss) // 3, 1) :]
    spread = max(third) - min(third)
    print(
        f"2. RSS: start {rss[0]:.1f} MiB, end {rss[-1]:.1f} MiB; over the last third {min(third):.1f}-"
        f"{max(third):.1f} MiB, spread {spread:.2f} MiB (target <= 5: {'ok' if spread <= 5 else 'MISSED'}); "
        f"every 500 rounds: {json.dumps([round(x, 1) for x in rss[9::10]])}"
    )


if __name__ == "__main__":
    sys.exit(main())
