"""Moving a home's store to another (SQLite to PostgreSQL): every row as it stands, and the chain checked there.

Rows are copied as stored, so every hash, seal and clock reading stays what it was: the journal on arrival is
the same chain under the same journal key, and the home's anchor (pilot.store.anchor) still names an entry
it holds. The copy is one transaction on the target, which checks the whole chain it now holds (each link,
hash and seal, and the anchor) before it commits: a journal that does not arrive whole and genuine is not
there at all. Plans keep their status and seals; one still open was made on the old store's clock and can no
longer be claimed (plan it again).

Leases and agents' heartbeats (pilot.store.agents) stay behind: they describe the processes serving the old
store (a holder, its pid or database session, readings of the old store's clock) and those stop for the move.
On the new store such a row would name a session it never had and a clock it does not keep; without them the
dead-man's switch counts the silence from the first server's start there, and what it did before (its
`dead_man` entries, the cancels) arrives with the journal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pilot.store.chain import Anchor, ChainReport, ChainWalk
from pilot.store.database import Row, Tx
from pilot.store.errors import StoreError
from pilot.store.journal import START, Mark
from pilot.store.store import Store

# What a move carries, in order: the journal first (the rest refers to it).
TABLES = ("journal", "plans", "confirmations", "idempotency", "tokens")
BATCH = 200


@dataclass(frozen=True, slots=True)
class MoveReport:
    """How many rows of each table arrived, the exchange keys too, and the chain as checked on arrival."""

    copied: dict[str, int]
    chain: ChainReport
    head: Mark


async def move_store(source: Store, target: Store, keys: Sequence[Row] = ()) -> MoveReport:
    """Copy every row of `source` (and the exchange keys `keys`, as stored) into the empty `target`, in one
    transaction that checks the chain it holds before it commits.

    Raises:
        StoreError: the target already holds records, the source has entries from before sealing (which
            a PostgreSQL journal refuses), or the chain did not arrive intact (nothing is then copied).
    """
    if source.opened.legacy_entries:
        raise StoreError(
            f"the journal begins with {source.opened.legacy_entries} entries written before sealing, which "
            "a PostgreSQL store refuses: keep this home on SQLite, or start the new store afresh"
        )
    copied: dict[str, int] = {}
    head = await source.journal.mark()
    anchor = source.journal.anchored()
    async with target.database.write() as tx:
        await _refuse_unless_empty(tx)
        for table in TABLES:
            async with source.database.read() as read:
                rows = await read.all(f"SELECT * FROM {table}")
            copied[table] = await _insert(tx, table, rows)
        copied["exchange_keys"] = await _insert(tx, "exchange_keys", list(keys))
        chain = await _walk(tx, target, anchor)
        arrived = await tx.one("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1")
        landed = Mark(arrived["seq"], arrived["hash"]) if arrived else START
        if not chain.ok or landed != head:
            raise StoreError(
                f"the journal did not arrive intact ({chain.reason or 'its head differs'} at seq "
                f"{chain.first_broken_seq}); nothing was moved"
            )
    return MoveReport(copied, chain, head)


async def _refuse_unless_empty(tx: Tx) -> None:
    for table in (*TABLES, "exchange_keys"):
        row = await tx.one(f"SELECT COUNT(*) AS n FROM {table}")
        if row and row["n"]:
            raise StoreError(
                f"the target store already holds {row['n']} {table} rows: a home moves only into an empty "
                "store (another home's, or a move done before, is there)"
            )


async def _insert(tx: Tx, table: str, rows: list[Row]) -> int:
    """Insert `rows` as they are, a batch at a time (one statement of many rows each)."""
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        columns = list(batch[0])
        one = "(" + ", ".join("?" * len(columns)) + ")"
        values = [row[column] for row in batch for column in columns]
        await tx.run(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([one] * len(batch))}", values
        )
    return len(rows)


async def _walk(tx: Tx, target: Store, anchor: Anchor | None) -> ChainReport:
    walk = ChainWalk(target.journal.sealer, (anchor,) if anchor is not None else ())
    async for row in tx.stream("SELECT * FROM journal ORDER BY seq"):
        broken = walk.step(row)
        if broken:
            return broken
    return walk.finish()
