"""Moving a home's store from its SQLite file to a PostgreSQL database, so other hosts can share its budget."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pilot.app.human.desk import HumanError, NoJournal
from pilot.app.human.exchange_keys import KEYS_DATABASE
from pilot.app.runtime.runtime import Home
from pilot.core.errors import ErrorCode
from pilot.store import STORE_MOVED, ChainReport, StoreLocation, open_store
from pilot.store.keystore import open_keystore
from pilot.store.transfer import move_store


class MoveRefused(HumanError):
    """The home's store cannot be moved as asked (already moved, a password in the URL, ...)."""

    code = ErrorCode.STORE_MOVE_REFUSED


@dataclass(frozen=True, slots=True)
class MoveOutcome:
    """What arrived: rows per table, the chain as a fresh open checks it, and the entry that records the move."""

    home: Path
    target: str  # without a password
    copied: dict[str, int]
    chain: ChainReport
    moved_seq: int


async def move_home(home: Path, target: StoreLocation, *, now: datetime) -> MoveOutcome:
    """Copy the home's journal, plans, confirmations, idempotency keys, tokens and exchange keys from its
    SQLite files into the empty PostgreSQL store `target`, check the chain there as any host opening it
    would, journal the move there, and make `target` the home's store (store.json). The SQLite files stay
    as they were, a record; nothing should run on the home while it moves.

    Raises:
        MoveRefused: the home is already on a server, or the URL holds a password.
        NoJournal: the home has no journal to move.
        StoreError: the target cannot be used, is not empty, or the chain did not arrive intact (nothing
            moved then).
    """
    paths = Home(home)
    current = paths.store()
    if current.url is not None:
        raise MoveRefused(
            f"the home's store is already {current}", "nothing to move; `pilot doctor` checks it"
        )
    if target.url is None or target.has_password:
        raise MoveRefused(
            "the URL holds a password, and the home's store.json would keep it",
            "give it without one and keep the password in ~/.pgpass (or PGPASSWORD) on each host",
        )
    if not paths.database_path.exists():
        raise NoJournal(home)
    source = await open_store(paths.database_path, home=home)
    try:
        keys = []
        if (home / KEYS_DATABASE).exists():
            keystore = await open_keystore(home / KEYS_DATABASE)
            try:
                keys = await keystore.rows()
            finally:
                await keystore.close()
        destination = await open_store(target, home=home)
        try:
            report = await move_store(source, destination, keys)
        finally:
            await destination.close()
    finally:
        await source.close()
    return await _arrived(paths, target, report.copied, now)


async def _arrived(paths: Home, target: StoreLocation, copied: dict[str, int], now: datetime) -> MoveOutcome:
    """Open the moved store afresh, verify its chain, journal the move, and point the home at it."""
    store = await open_store(target, home=paths.path)
    try:
        chain = await store.journal.verify()
        if not chain.ok:
            raise MoveRefused(
                f"the moved journal does not verify ({chain.reason} at seq {chain.first_broken_seq})",
                "the home stays on its SQLite file; run `pilot journal verify` on it, then try again",
            )
        # The home moves before the entry anchors the journal past the SQLite file's last entry, so the home
        # never names a store its anchor has left behind.
        paths.record_store(target)
        entry = await store.journal.append(
            STORE_MOVED,
            {"from": "journal/pilot.db", "to": str(target), "copied": copied, "verified": chain.count},
            now=now,
            actor="human",
        )
    finally:
        await store.close()
    return MoveOutcome(paths.path, str(target), copied, chain, entry.seq)
