"""The ledger (the journal's state for judgements, read on incrementally) always says what a full read says.

A hypothesis state machine appends sends, outcomes, lookups, kill switch and loss limit entries through two
store connections on one database (this server and a second process), forges rows without the journal key,
cuts the journal's tail behind its triggers, lets time pass, and steps the wall clock forward and back.
After every step the ledger of the first connection must equal an oracle written apart from it: every
genuine entry read afresh and the rules restated (a send of the last day of real time is unsettled unless a
later entry settles it; a send counts today when its own wall clock carried on by the real time since is
still in its day, or when the wall clock now carried back by that time dates it today; the
newest kill switch and loss limit entries).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pilot.app.answers.sent_requests import sent_request
from pilot.app.runtime.ledger import Ledger
from pilot.store import (
    GENESIS_HASH,
    Instant,
    Journal,
    JournalEntry,
    Store,
    canonical_json,
    iso_utc,
    open_store,
)
from pilot.store.chain import entry_hash
from pilot.store.schema import TRIGGERS
from tests.clocks import FakeClock

T0 = datetime(2026, 3, 1, 23, 0, tzinfo=UTC)  # an hour before midnight: days turn over often
EXAMPLES = {"thorough": 400, "dev": 10}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 60)
STATUSES = ("filled", "partially_filled", "cancelled", "rejected", "open", "outcome_unknown", "accepted")
SETTLING = {"filled", "partially_filled", "cancelled", "rejected", "open"}


def real_age(here: Instant, entry: JournalEntry) -> timedelta:
    assert entry.clock is not None and entry.clock.boot == here.boot
    return timedelta(microseconds=here.micros - entry.clock.micros)


def counts_today(entry: JournalEntry, now: datetime, here: Instant) -> bool:
    age = real_age(here, entry)
    midnight = datetime.combine(now.date(), time(0), tzinfo=UTC)
    return (entry.at + age).date() == entry.at.date() or now - age >= midnight


async def oracle(journal: Journal, now: datetime, here: Instant) -> tuple[Any, ...]:
    """What the whole journal says at `now` (wall) and `here` (the store's clock), restated from every
    genuine entry."""
    entries = await journal.entries()
    newest = {
        kind: max((e.seq for e in entries if e.kind == kind), default=None)
        for kind in ("killswitch", "loss_limit")
    }
    settled_at: dict[str, list[int]] = {}
    for e in entries:
        if e.kind == "order.resolved" or (e.kind == "order.outcome" and e.data.get("status") in SETTLING):
            settled_at.setdefault(str(e.data.get("order_link_id")), []).append(e.seq)
    unsettled = [
        sent_request(e.data["request"])["order_link_id"]
        for e in entries
        if e.kind == "order.sent"
        and real_age(here, e) <= timedelta(days=1)
        and not any(
            seq > e.seq for seq in settled_at.get(sent_request(e.data["request"])["order_link_id"], [])
        )
    ]
    today = sum(1 for e in entries if e.kind == "order.sent" and counts_today(e, now, here))
    return newest["killswitch"], newest["loss_limit"], today, unsettled


class LedgerMatchesTheJournal(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = Path(tempfile.mkdtemp(prefix="pilot-ledger-"))
        self.path = self.folder / "journal" / "pilot.db"
        self.clock = FakeClock(T0)  # both connections run on one machine: one store clock
        self.stores: list[Store] = [
            self.run(open_store(self.path, now=T0, clock=self.clock)) for _ in range(2)
        ]
        self.ledger = Ledger(self.stores[0].journal)
        self.links: list[str] = []

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    def teardown(self) -> None:
        for store in self.stores:
            self.run(store.close())
        self.loop.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def append(self, writer: int, kind: str, data: dict[str, Any]) -> None:
        self.run(self.stores[writer].journal.append(kind, data, now=self.now, actor="pilot"))

    @rule(writer=st.integers(0, 1), side=st.sampled_from(["Buy", "Sell"]), reduce_only=st.booleans())
    def send(self, writer: int, side: str, reduce_only: bool) -> None:
        link = f"pilot-{len(self.links)}-{secrets.token_hex(3)}"
        self.links.append(link)
        request = {
            "orderLinkId": link,
            "category": "linear",
            "symbol": "BTCUSDT",
            "side": side,
            "qty": "0.001",
            "reduceOnly": reduce_only,
        }
        self.append(writer, "order.sent", {"request": request, "origin": "place_order"})

    @precondition(lambda self: self.links)
    @rule(writer=st.integers(0, 1), pick=st.integers(0, 10_000), status=st.sampled_from(STATUSES))
    def outcome(self, writer: int, pick: int, status: str) -> None:
        link = self.links[pick % len(self.links)]
        self.append(writer, "order.outcome", {"status": status, "order_link_id": link})

    @precondition(lambda self: self.links)
    @rule(writer=st.integers(0, 1), pick=st.integers(0, 10_000))
    def resolved(self, writer: int, pick: int) -> None:
        link = self.links[pick % len(self.links)]
        self.append(writer, "order.resolved", {"status": "filled", "order_link_id": link})

    @rule(writer=st.integers(0, 1), on=st.booleans())
    def kill_switch(self, writer: int, on: bool) -> None:
        self.append(writer, "killswitch", {"on": on, "by": "agent" if on else "human"})

    @rule(writer=st.integers(0, 1), on=st.booleans())
    def loss_limit(self, writer: int, on: bool) -> None:
        self.append(writer, "loss_limit", {"on": on, "day": self.now.date().isoformat()})

    @rule(
        kind=st.sampled_from(["order.sent", "order.outcome", "order.resolved", "killswitch"]),
        pick=st.integers(0, 10_000),
    )
    def forge(self, kind: str, pick: int) -> None:
        """A row written without the journal key: its seal is wrong; it must count for nothing."""
        link = self.links[pick % len(self.links)] if self.links else "pilot-forged"
        data: dict[str, Any] = {
            "order.sent": {
                "request": {
                    "orderLinkId": "pilot-forged",
                    "category": "linear",
                    "symbol": "X",
                    "side": "Buy",
                    "qty": "1",
                }
            },
            "order.outcome": {"status": "filled", "order_link_id": link},
            "order.resolved": {"status": "filled", "order_link_id": link},
            "killswitch": {"on": False, "by": "human"},
        }[kind]
        with sqlite3.connect(self.path) as conn:
            last = conn.execute("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
            at = iso_utc(self.now)
            text = canonical_json(data)
            digest = entry_hash(seq, at, kind, "human", None, data, prev)
            conn.execute(
                "INSERT INTO journal (seq, at, kind, actor, plan_id, data, prev_hash, hash, seal)"
                " VALUES (?, ?, ?, 'human', NULL, ?, ?, ?, ?)",
                (seq, at, kind, text, prev, digest, "0" * 64),
            )
        conn.close()

    @rule(rows=st.integers(1, 4), refill=st.integers(0, 5))
    def cut_tail(self, rows: int, refill: int) -> None:
        """Someone with the file deletes the newest rows behind the triggers (the ledger read past them),
        and then new entries may take their seqs before the ledger reads again."""
        with sqlite3.connect(self.path) as conn:
            conn.execute("DROP TRIGGER journal_no_delete")
            conn.execute(
                "DELETE FROM journal WHERE seq > (SELECT COALESCE(MAX(seq), 0) FROM journal) - ?", (rows,)
            )
            conn.execute(TRIGGERS["journal_no_delete"])
        conn.close()
        for index in range(refill):
            self.kill_switch(1, on=index % 2 == 0)

    @rule(seconds=st.integers(1, 2 * 86_400))
    def later(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule(seconds=st.integers(1, 3 * 86_400))
    def clock_set_back(self, seconds: int) -> None:
        self.clock.step(-seconds)

    @rule(seconds=st.integers(1, 2 * 86_400))
    def clock_stepped_forward(self, seconds: int) -> None:
        self.clock.step(seconds)

    @invariant()
    def ledger_says_what_the_journal_says(self) -> None:
        state = self.run(self.ledger.state(self.now))
        seen = (
            state.kill_switch.seq if state.kill_switch else None,
            state.loss_limit.seq if state.loss_limit else None,
            state.sent_today,
            [send.order_link_id for send in state.unsettled],
        )
        assert seen == self.run(oracle(self.stores[1].journal, self.now, self.clock.read()))


LedgerMatchesTheJournal.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=30, deadline=None
)
test_ledger_matches_the_journal = LedgerMatchesTheJournal.TestCase
