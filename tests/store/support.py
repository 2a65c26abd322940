"""The fixed clock of the store tests, workers that run in spawned OS processes, and raw-SQL tampering."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import queue
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pilot.store import GENESIS_HASH, Instant, canonical_json, iso_utc, open_store, parse_iso
from pilot.store.chain import entry_hash
from pilot.store.schema import MIGRATIONS

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


# --- an attacker with the database file but not the journal key -------------------------------------


@contextmanager
def raw(db_path: Path) -> Iterator[sqlite3.Connection]:
    """The database as anyone who can write the file sees it: plain sqlite3, committed and closed on exit."""
    conn = sqlite3.connect(db_path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def drop_triggers(conn: sqlite3.Connection, *names: str) -> None:
    for name in names:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")


def rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every journal row as (seq, at, kind, actor, plan_id, data, prev_hash, hash, seal)."""
    return conn.execute(
        "SELECT seq, at, kind, actor, plan_id, data, prev_hash, hash, seal FROM journal ORDER BY seq"
    ).fetchall()


def clock_of(conn: sqlite3.Connection, seq: int) -> Instant | None:
    """The store clock's reading a row carries (part of what its hash covers), if it has one."""
    boot, micros = conn.execute("SELECT boot, micros FROM journal WHERE seq = ?", (seq,)).fetchone()
    return Instant(boot, micros) if boot is not None else None


def forge_entry(
    conn: sqlite3.Connection, kind: str, data: dict[str, Any], *, actor: str, seal: str | None
) -> int:
    """Append a row whose seq, link and SHA-256 hash are exactly what Pilot would write; `seal` as given."""
    last = conn.execute("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
    at = iso_utc(T0)
    digest = entry_hash(seq, at, kind, actor, None, json.loads(canonical_json(data)), prev_hash)
    conn.execute(
        "INSERT INTO journal (seq, at, kind, actor, plan_id, data, prev_hash, hash, seal)"
        " VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?)",
        (seq, at, kind, actor, canonical_json(data), prev_hash, digest, seal),
    )
    return seq


def rehash_from(conn: sqlite3.Connection, first_seq: int) -> None:
    """Recompute every SHA-256 hash and link from `first_seq` on, as someone without the key can."""
    prev_hash = GENESIS_HASH
    for seq, at, kind, actor, plan_id, data, _prev, stored_hash, _seal in rows(conn):
        if seq < first_seq:
            prev_hash = stored_hash
            continue
        stamp = clock_of(conn, seq)
        digest = entry_hash(seq, at, kind, actor, plan_id, json.loads(data), prev_hash, stamp)
        conn.execute("UPDATE journal SET prev_hash = ?, hash = ? WHERE seq = ?", (prev_hash, digest, seq))
        prev_hash = digest


def make_v1_database(db_path: Path, entries: list[tuple[str, dict[str, Any]]], open_plan_id: str) -> None:
    """A database as Pilot wrote it before sealing: schema v1, unsealed entries, one open plan."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with raw(db_path) as conn:
        conn.executescript(MIGRATIONS[0])
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        prev_hash = GENESIS_HASH
        for seq, (kind, data) in enumerate(entries, start=1):
            at, text = iso_utc(T0), canonical_json(data)
            digest = entry_hash(seq, at, kind, "agent", None, json.loads(text), prev_hash)
            conn.execute(
                "INSERT INTO journal VALUES (?, ?, ?, 'agent', NULL, ?, ?, ?)",
                (seq, at, kind, text, prev_hash, digest),
            )
            prev_hash = digest
        conn.execute(
            "INSERT INTO plans (plan_id, created_at, expires_at, status, payload_json)"
            " VALUES (?, ?, ?, 'open', '{}')",
            (open_plan_id, iso_utc(T0), iso_utc(T0.replace(year=2100))),
        )
