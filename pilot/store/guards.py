"""What every open checks before the store is used: the journal key, the append-only guards, and entries
written before sealing. What it finds missing it restores and journals, so the evidence of it stays.

All of it runs in the transaction that brings the schema up to date (each engine's `connect`), so two
processes opening one database at once never see a half-prepared one. Which guards there are, and how they
are checked and restored, is the engine's (`restore_guards` in pilot.store.sqlite and pilot.store.postgres).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pilot.keys.errors import KeysError
from pilot.keys.seal import JournalKey, load_journal_key, mismatch
from pilot.store.canonical import iso_utc
from pilot.store.chain import STORE_ACTOR, STORE_REPAIRED, STORE_SEALED, row_text
from pilot.store.database import Tx
from pilot.store.errors import JournalKeyUnusable
from pilot.store.journal import append_entry
from pilot.store.monotonic import Instant
from pilot.store.sealing import Sealer

SEALING_VERSION = 2  # the schema version that brought seals and the journal_key record


@dataclass(frozen=True, slots=True)
class OpenReport:
    """What this open found and did: the key it seals with, guards it restored, entries it adopted."""

    key_path: Path
    key_id: str
    key_created: bool
    restored: tuple[str, ...] = ()  # trigger names, and "journal_key" for a removed key record
    adopted: int = 0  # entries written before sealing, adopted by a store.sealed entry at this open
    legacy_entries: int = 0  # seqs 1..n were written before sealing (whenever they were adopted)


GuardCheck = Callable[[Tx], Awaitable[dict[str, str]]]


async def prepare(
    tx: Tx, from_version: int, *, home: Path, now: datetime, stamp: Instant, restore: GuardCheck
) -> tuple[Sealer, OpenReport]:
    """Load the journal key, check it is the journal's, restore missing guards, adopt unsealed entries.

    Raises:
        JournalKeyUnusable: the key file is missing while entries depend on it, unsafe, inside the home,
            or not the key this journal records.
    """
    recorded = await tx.one("SELECT key_id FROM journal_key")
    head = await tx.one("SELECT seq, seal FROM journal ORDER BY seq DESC LIMIT 1")
    depends = recorded is not None or (head is not None and head["seal"] is not None)
    key = _load_key(home, may_create=not depends)
    sealer = Sealer(key.secret)
    if recorded is not None and recorded["key_id"] != sealer.key_id:
        error = mismatch(key, str(recorded["key_id"]), sealer.key_id)
        raise JournalKeyUnusable(error.problem, error.fix)
    found = await restore(tx)
    if recorded is None:
        await tx.run(
            "INSERT INTO journal_key (id, key_id, recorded_at) VALUES (1, ?, ?)",
            (sealer.key_id, iso_utc(now)),
        )
        if from_version >= SEALING_VERSION:  # the record was there, and someone removed it
            found["journal_key"] = "missing"
    adopted = 0
    if head is not None and head["seal"] is None and from_version < SEALING_VERSION:
        adopted = head["seq"]
        await _adopt(tx, sealer, adopted, now, stamp)
    if found:
        await _journal_repairs(tx, sealer, found, now, stamp)
    legacy = await _legacy_entries(tx, sealer)
    return sealer, OpenReport(key.path, sealer.key_id, key.created, tuple(found), adopted, legacy)


def _load_key(home: Path, *, may_create: bool) -> JournalKey:
    try:
        return load_journal_key(home, may_create=may_create)
    except KeysError as error:
        raise JournalKeyUnusable(error.problem, error.fix) from None


async def _legacy_entries(tx: Tx, sealer: Sealer) -> int:
    """How many entries predate sealing, as the first genuine store.sealed entry says (0 if none)."""
    for row in await tx.all("SELECT * FROM journal WHERE kind = ? ORDER BY seq", (STORE_SEALED,)):
        read = row_text(row)
        if read is None or not sealer.entry_matches(read[0], row["seal"]):
            continue
        data = read[1]
        count = data.get("unsealed_before") if isinstance(data, dict) else None
        if isinstance(count, int) and count == row["seq"] - 1:
            return count
    return 0


async def _adopt(tx: Tx, sealer: Sealer, unsealed: int, now: datetime, stamp: Instant) -> None:
    reason = (
        f"{unsealed} entries written before sealing are adopted as they stand: this entry's seal covers "
        "their last hash, so from here on none of them can change unnoticed"
    )
    data = {"unsealed_before": unsealed, "key_id": sealer.key_id, "reason": reason}
    await append_entry(tx, sealer, STORE_SEALED, data, now=now, stamp=stamp, actor=STORE_ACTOR)


async def _journal_repairs(
    tx: Tx, sealer: Sealer, found: dict[str, str], now: datetime, stamp: Instant
) -> None:
    names = ", ".join(f"{name} ({state})" for name, state in found.items())
    reason = f"guards changed outside Pilot were restored at open: {names}"
    await append_entry(
        tx,
        sealer,
        STORE_REPAIRED,
        {"restored": found, "reason": reason},
        now=now,
        stamp=stamp,
        actor=STORE_ACTOR,
    )
