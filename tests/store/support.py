"""The fixed clock of the store tests, and workers that run in spawned OS processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pilot.store import open_store, parse_iso

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TIMEOUT_SECONDS = 60


def run_in_processes(target: Callable[..., Any], args_per_process: list[tuple[Any, ...]]) -> list[Any]:
    """Run `target(barrier, results, *args)` in one spawned process per args tuple; return their results."""
    _make_this_module_importable_in_children()
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(args_per_process))
    results = context.Queue()
    processes = [context.Process(target=target, args=(barrier, results, *args)) for args in args_per_process]
    for process in processes:
        process.start()
    try:
        return _collect(results, processes)
    finally:
        for process in processes:
            process.join(timeout=TIMEOUT_SECONDS)


def _collect(results: Any, processes: list[Any]) -> list[Any]:
    collected: list[Any] = []
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while len(collected) < len(processes):
        try:
            collected.append(results.get(timeout=0.5))
        except queue.Empty:
            if any(process.exitcode not in (None, 0) for process in processes):
                raise RuntimeError("a worker process failed; see its stderr") from None
            if time.monotonic() > deadline:
                raise TimeoutError("worker processes did not finish") from None
    return collected


def _make_this_module_importable_in_children() -> None:
    """Spawned children unpickle workers by module name; put the folder that name resolves from on sys.path."""
    root = str(Path(__file__).resolve().parents[len(__name__.split(".")) - 1])
    if root not in sys.path:
        sys.path.append(root)


def claim_plan(barrier: Any, results: Any, db_path: str, plan_id: str, now: str) -> None:
    async def claim() -> str:
        async with await open_store(Path(db_path)) as store:
            barrier.wait(timeout=TIMEOUT_SECONDS)
            return (await store.plans.claim(plan_id, now=parse_iso(now))).status

    results.put(asyncio.run(claim()))


def append_entries(barrier: Any, results: Any, db_path: str, writer: str, count: int, now: str) -> None:
    async def append() -> int:
        async with await open_store(Path(db_path)) as store:
            barrier.wait(timeout=TIMEOUT_SECONDS)
            for index in range(count):
                await store.journal.append("test.append", {"index": index}, now=parse_iso(now), actor=writer)
        return count

    results.put(asyncio.run(append()))
