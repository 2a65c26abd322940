"""Pilot servers on one home, in this process or in spawned OS processes, for the attacks on the journal,
the ledger and the store: what they share, how they are started, and an oracle for the ledger.

Everything here is the real code: a Runtime on a real store in a temp home and the real Bybit adapter talking
to the paper exchange on 127.0.0.1. Worker functions run in processes started with the `spawn` context
(`tests.store.support.run_in_processes`), so they take only picklable arguments: paths, the exchange's url
and key as a `Venue`, times as ISO text.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.app.human.kill_switch import activate_kill_switch
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.ledger import JournalState
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import OrderType, Side
from pilot.store import ChainReport, Journal, JournalEntry, open_store, parse_iso
from tests.app.conftest import open_test_runtime
from tests.clocks import FakeClock

DEADLINE_SECONDS = 60
NOON = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)  # today, far from midnight
SETTLING = {
    "filled",
    "partially_filled",
    "cancelled",
    "rejected",
    "open",
}  # pilot.app.runtime.ledger, restated


@dataclass(frozen=True)
class Venue:
    """Where the paper exchange listens and the key to use: what a spawned process needs to reach it (a
    `PaperVenue` for open_test_runtime, as the running exchange is)."""

    url: str
    api_key: str
    api_secret: str

    @staticmethod
    def of(paper: Any) -> Venue:
        return Venue(paper.url, paper.api_key, paper.api_secret)


def market(side: Side, qty: str, symbol: str = "BTCUSDT") -> PlanRequest:
    return PlanRequest(symbol, side, OrderType.MARKET, Decimal(qty), None, None, False, "linear")


def rules_of(answer: Any) -> set[str]:
    return {v.rule for v in answer.violations or ()}


async def latch_the_loss_limit(runtime: Runtime) -> None:
    """A judgement of `runtime` found the day's loss past the limit and journaled the latch, as
    pilot.app.runtime.loss_limit does."""
    await runtime.store.journal.append(
        entry_kinds.LOSS_LIMIT,
        {"on": True, "by": "pilot", "day": runtime.now().date().isoformat(), "trading_state": "reducing"},
        now=runtime.now(),
        actor="pilot",
    )


# --- the ledger against the journal read whole ---------------------------------------------------------


def seen(state: JournalState) -> tuple[Any, ...]:
    """What a judgement takes from the ledger: kill switch and loss limit entries, today's sends, unsettled."""
    return (
        state.kill_switch.seq if state.kill_switch else None,
        state.loss_limit.seq if state.loss_limit else None,
        state.sent_today,
        sorted(send.order_link_id for send in state.unsettled),
    )


async def restated(journal: Journal, now: datetime) -> tuple[Any, ...]:
    """The same, from every genuine entry read afresh, with the rules written out again (not the ledger's
    code): a send of the last day of real time (the store's clock) is unsettled unless a later entry settles
    it; a send counts today when its own wall clock carried on by the real time since is still in its day,
    or when the wall clock now carried back by that time dates it today."""
    entries, here = await journal.entries(), journal.clock.read()
    newest = {
        kind: max((e.seq for e in entries if e.kind == kind), default=None)
        for kind in ("killswitch", "loss_limit")
    }
    settled: dict[str, list[int]] = {}
    for e in entries:
        if e.kind == "order.resolved" or (e.kind == "order.outcome" and e.data.get("status") in SETTLING):
            settled.setdefault(str(e.data.get("order_link_id")), []).append(e.seq)
    midnight = datetime.combine(now.astimezone(UTC).date(), time(0), tzinfo=UTC)

    def age(e: JournalEntry) -> timedelta:
        assert e.clock is not None and e.clock.boot == here.boot
        return timedelta(microseconds=max(here.micros - e.clock.micros, 0))

    def today(e: JournalEntry) -> bool:
        own = (e.at + age(e)).date() == e.at.date()
        return own or now - age(e) >= midnight

    sends = [e for e in entries if e.kind == "order.sent"]
    unsettled = sorted(
        sent_request(e.data["request"])["order_link_id"]
        for e in sends
        if age(e) <= timedelta(days=1)
        and not any(seq > e.seq for seq in settled.get(sent_request(e.data["request"])["order_link_id"], []))
    )
    return newest["killswitch"], newest["loss_limit"], sum(1 for e in sends if today(e)), unsettled


# --- what the exchange and the journal hold after a race -----------------------------------------------


def journal_of(home: Path) -> tuple[ChainReport, list[JournalEntry]]:
    """The chain checked whole, and every order.sent entry, read through a store connection of its own."""

    async def read() -> tuple[ChainReport, list[JournalEntry]]:
        async with await open_store(home / "journal" / "pilot.db") as store:
            return await store.journal.verify(), await store.journal.entries(kind=entry_kinds.ORDER_SENT)

    return asyncio.run(read())


def check_each_send_once(paper: Any, home: Path) -> list[JournalEntry]:
    """The chain is unbroken; every order on the exchange was journaled before it was sent, and no plan's
    client order id reached the exchange twice. Returns the order.sent entries."""
    report, sent = journal_of(home)
    assert report.ok, report
    links = [order.order_link_id for order in paper.orders("BTCUSDT")]
    assert len(links) == len(set(links)), "a plan was sent twice"
    assert sorted(links) == sorted(sent_request(e.data["request"])["order_link_id"] for e in sent)
    assert len({e.plan_id for e in sent}) == len(sent)
    return sent


# --- waiting for another thread or process (bounded polling, never a sleep to line things up) ----------


async def until(condition: Callable[[], bool], seconds: float = DEADLINE_SECONDS) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.005)


# --- workers for spawned processes: target(barrier, results, *args) -------------------------------------


def trader(
    barrier: Any, results: Any, home: str, venue: Venue, now: str, orders: list[tuple[str, str]]
) -> None:
    """A server that plans and places `orders` ((side, qty)) once every server is ready, then, once every
    server is done, says what it got and what its ledger says beside the journal read whole."""

    async def run() -> dict[str, Any]:
        clock = FakeClock(parse_iso(now))
        async with open_test_runtime(Path(home), venue, clock) as runtime:
            await runtime.ledger.state(clock.now())  # warm, as a running server's is
            barrier.wait(timeout=DEADLINE_SECONDS)
            got = []
            for side, qty in orders:
                plan = await plan_order(runtime, market(Side(side), qty))
                if plan.plan_id is None:
                    got.append(("plan", plan.status, sorted(rules_of(plan))))
                    continue
                placed = await place_order(runtime, plan.plan_id)
                got.append(("place", placed.status, sorted(rules_of(placed))))
            barrier.wait(timeout=DEADLINE_SECONDS)  # every server is done: the journal stands still
            state = await runtime.ledger.state(clock.now())
            return {
                "got": got,
                "ledger": seen(state),
                "journal": await restated(runtime.store.journal, clock.now()),
            }

    results.put(asyncio.run(run()))


def placer(barrier: Any, results: Any, home: str, venue: Venue, now: str, plan_ids: list[str]) -> None:
    """A server that places every plan in `plan_ids`, in the order given, once every server is ready."""

    async def run() -> dict[str, str]:
        clock = FakeClock(parse_iso(now))
        async with open_test_runtime(Path(home), venue, clock) as runtime:
            barrier.wait(timeout=DEADLINE_SECONDS)
            return {plan_id: (await place_order(runtime, plan_id)).status for plan_id in plan_ids}

    results.put(asyncio.run(run()))


def kill_switch_hammer(home: str, venue: Venue, now: str, started: Any, stop: Any) -> None:
    """An agent that keeps turning the kill switch on (it is allowed to, as often as it likes) until told."""

    async def run() -> None:
        clock = FakeClock(parse_iso(now))
        async with open_test_runtime(Path(home), venue, clock) as runtime:
            while not stop.is_set():
                await activate_kill_switch(runtime, "stop everything")
                started.set()

    asyncio.run(run())


def journal_hammer(db_path: str, writer: str, now: str, started: Any) -> None:
    """Append entries as fast as the store takes them, for ever (until the process is killed)."""

    async def run() -> None:
        async with await open_store(Path(db_path)) as store:
            index = 0
            while True:
                await store.journal.append(
                    "test.append", {"writer": writer, "index": index}, now=parse_iso(now)
                )
                index += 1
                started.set()

    asyncio.run(run())


def agent_turns_the_kill_switch_on(barrier: Any, results: Any, home: str, venue: Venue, now: str) -> None:
    """Another server's agent turns the kill switch on once."""

    async def run() -> int:
        async with open_test_runtime(Path(home), venue, FakeClock(parse_iso(now))) as runtime:
            barrier.wait(timeout=DEADLINE_SECONDS)
            answer = await activate_kill_switch(runtime, "another server's agent stops everything")
            return answer.journal_seq[0] if answer.journal_seq else -1

    results.put(asyncio.run(run()))


def held_sender(home: str, venue: Venue, now: str, qty: str, planned: Any, go: Any) -> None:
    """A server that plans a buy of `qty`, says so, and places it when told (the test kills it mid-send)."""

    async def run() -> None:
        async with open_test_runtime(Path(home), venue, FakeClock(parse_iso(now))) as runtime:
            plan = await plan_order(runtime, market(Side.BUY, qty))
            assert plan.plan_id is not None, plan
            planned.set()
            go.wait(timeout=DEADLINE_SECONDS)
            await place_order(runtime, plan.plan_id)

    asyncio.run(run())


def lock_storm(db_path: str, hold_seconds: float, gap_seconds: float, started: Any, stop: Any) -> None:
    """Another program on the database file: it takes the write lock (BEGIN IMMEDIATE, writing a row), keeps
    it `hold_seconds`, lets go for `gap_seconds`, again and again until told to stop. The waits are the storm
    itself (how long the lock is held), not a way of lining anything up."""
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=DEADLINE_SECONDS)
    try:
        while not stop.is_set():
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO leases (name, holder, acquired_at, expires_at) VALUES ('storm', 'storm', '', '')"
                " ON CONFLICT (name) DO UPDATE SET acquired_at = excluded.acquired_at"
            )
            started.set()
            stop.wait(hold_seconds)
            conn.execute("COMMIT")
            stop.wait(gap_seconds)
    finally:
        conn.close()


def resting_agent(home: str, venue: Venue, now: str, price: str, rested: Any) -> None:
    """A server whose agent (a real MCP client, one session open) leaves a buy resting, says so, and waits to
    be killed: it never closes its session."""

    async def run() -> None:
        from mcp import Client

        from pilot.server import build_server

        async with (
            open_test_runtime(Path(home), venue, FakeClock(parse_iso(now))) as runtime,
            Client(build_server(runtime), raise_exceptions=True) as client,
        ):
            asked = {
                "symbol": "BTCUSDT",
                "side": "buy",
                "qty": "0.0002",
                "order_type": "limit",
                "price": price,
            }
            plan = (await client.call_tool("plan_order", asked)).structured_content
            placed = (await client.call_tool("place_order", {"plan_id": plan["plan_id"]})).structured_content
            assert placed["status"] == "open", placed
            rested.set()
            await asyncio.sleep(DEADLINE_SECONDS)  # killed before this ends

    asyncio.run(run())
