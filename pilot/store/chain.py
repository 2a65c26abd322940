"""The chain: what an entry's hash and seal cover, and one pass that checks every link, seal and anchor.

Each entry's `hash` is the SHA-256 of its canonical text, which includes the previous entry's hash, so
the entries form one chain. Its `seal` is an HMAC of the same text under the journal key (kept outside the
home, pilot.keys.seal): whoever can write the database but not read the key can neither append an entry
nor rewrite and rehash the chain without `Journal.verify` finding it. A deleted tail leaves a shorter
chain that is still valid; only an anchor (the seq and seal of an entry, kept elsewhere) shows it is gone.

Entries written before sealing existed (schema v1) carry no seal. They are accepted only as the start of
the journal and only if the first sealed entry is the `store.sealed` entry that adopted them, whose seal
covers their last hash: from then on they cannot change unnoticed, but what was done to them before the
upgrade is beyond any seal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pilot.store.canonical import canonical_json, sha256_hex
from pilot.store.monotonic import Instant
from pilot.store.sealing import Sealer, same_digest

GENESIS_HASH = "0" * 64

# Kinds the store writes itself, with actor "pilot".
STORE_SEALED = "store.sealed"  # entries written before sealing, adopted at the first open that sealed
STORE_REPAIRED = "store.repaired"  # guards found missing or altered at open, and restored
STORE_PLAN_REJECTED = "store.plan_rejected"  # a plan whose seal does not verify was presented
STORE_MOVED = "store.moved"  # the home's store was moved here (pilot.store.transfer), its chain checked
STORE_ACTOR = "pilot"


@dataclass(frozen=True)
class Anchor:
    """An entry's seq and seal, written down outside Pilot, so a later verify can prove it is still there."""

    seq: int
    seal: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.seal}"

    @classmethod
    def parse(cls, text: str) -> Anchor:
        """Read `SEQ:SEAL` as printed by `pilot journal anchor`.

        Raises:
            ValueError: not a positive seq, a colon and 64 lowercase hex digits.
        """
        seq, _, seal = text.strip().partition(":")
        if not (seq.isascii() and seq.isdigit() and int(seq) > 0 and is_seal(seal)):
            raise ValueError(
                "an anchor is SEQ:SEAL as `pilot journal anchor` prints it (e.g. 57:3f2a…, 64 hex)"
            )
        return cls(int(seq), seal)


def is_seal(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


@dataclass(frozen=True)
class ChainReport:
    """The result of `Journal.verify`.

    `reason` is a stable code: "seq_gap", "prev_hash_mismatch", "hash_mismatch", "unreadable_data",
    "seal_mismatch" (written without the journal key), "unsealed_entry" (no seal where one is due),
    "anchor_mismatch" (the anchored entry is not the one anchored) or "tail_missing" (the journal ends
    before the anchored seq). `count` is how many entries before `first_broken_seq` are intact;
    `unsealed` how many entries predate sealing; `anchored` whether an anchor was checked (one given, or
    the journal's own: pilot.store.anchor) and matched.
    """

    count: int
    ok: bool
    first_broken_seq: int | None = None
    reason: str | None = None
    unsealed: int = 0
    anchored: bool = False


def _stamp(at: str, clock: Instant | None) -> dict[str, Any]:
    """The entry's time: its wall time, and the store clock's reading when it has one (entries written
    before the store kept one have none, and their text is as it was)."""
    return {"at": at} if clock is None else {"at": at, "clock": clock.as_json()}


def entry_text(
    seq: int,
    at: str,
    kind: str,
    actor: str,
    plan_id: str | None,
    data: Any,
    prev_hash: str,
    clock: Instant | None = None,
) -> str:
    """The canonical text of an entry that its hash and seal cover; `at` is the stored ISO text."""
    fields = {"seq": seq, **_stamp(at, clock), "kind": kind, "actor": actor, "plan_id": plan_id}
    return canonical_json({**fields, "data": data, "prev_hash": prev_hash})


def entry_text_of(
    seq: int,
    at: str,
    kind: str,
    actor: str,
    plan_id: str | None,
    data_json: str,
    prev_hash: str,
    clock: Instant | None = None,
) -> str:
    """`entry_text` for data given as its canonical JSON (as it is stored): the same text, without
    serialising the data again. Canonical JSON sorts keys: actor, at, clock, data, kind, plan_id, prev_hash,
    seq."""
    before = canonical_json({"actor": actor, **_stamp(at, clock)})
    after = canonical_json({"kind": kind, "plan_id": plan_id, "prev_hash": prev_hash, "seq": seq})
    return f'{before[:-1]},"data":{data_json},{after[1:]}'


def row_clock(row: Mapping[str, Any]) -> Instant | None:
    """The store clock's reading a row carries, if any (a row of schema v3 or older has none)."""
    keys = row.keys()
    if "boot" not in keys or row["boot"] is None:
        return None
    micros = row["micros"]
    if not isinstance(micros, int) or not isinstance(row["boot"], str):
        raise ValueError("a clock reading that is not one")
    return Instant(row["boot"], micros)


def row_text(row: Mapping[str, Any]) -> tuple[str, Any] | None:
    """A stored row's canonical text and parsed data, or None when its fields cannot be read as an entry."""
    try:
        data = json.loads(row["data"])
        text = entry_text(
            row["seq"],
            row["at"],
            row["kind"],
            row["actor"],
            row["plan_id"],
            data,
            row["prev_hash"],
            row_clock(row),
        )
    except (TypeError, ValueError):
        return None
    return text, data


def entry_hash(
    seq: int,
    at: str,
    kind: str,
    actor: str,
    plan_id: str | None,
    data: Any,
    prev_hash: str,
    clock: Instant | None = None,
) -> str:
    """Hash the fields of an entry; `at` is the stored ISO text and `data` the parsed JSON."""
    return sha256_hex(entry_text(seq, at, kind, actor, plan_id, data, prev_hash, clock))


class ChainWalk:
    """The state of one pass over the journal, entry by entry, checking it against any number of anchors."""

    def __init__(self, sealer: Sealer, anchors: tuple[Anchor, ...] = ()) -> None:
        self._sealer = sealer
        self._anchors: dict[int, list[Anchor]] = {}
        for anchor in anchors:
            self._anchors.setdefault(anchor.seq, []).append(anchor)
        self._last_anchored = max(self._anchors, default=0)
        self.count, self.unsealed, self.sealing = 0, 0, False
        self.expected_seq, self.prev_hash = 1, GENESIS_HASH

    def step(self, row: Mapping[str, Any]) -> ChainReport | None:
        """Check one row; a report if it breaks the chain, else None."""
        seq = row["seq"]
        problem = _check_row(row, self.expected_seq, self.prev_hash)
        if isinstance(problem, str):
            return self._broken(seq, problem)
        text, data = problem
        if row["seal"] is None:
            if self.sealing:
                return self._broken(seq, "unsealed_entry")
            self.unsealed += 1
        elif not self._sealer.entry_matches(text, row["seal"]):
            return self._broken(seq, "seal_mismatch")
        elif not self.sealing:
            self.sealing = True
            if self.unsealed and not _adopts(row["kind"], data, self.unsealed):
                return self._broken(1, "unsealed_entry", count=0)
        if any(not same_digest(anchor.seal, row["seal"]) for anchor in self._anchors.get(seq, ())):
            return self._broken(seq, "anchor_mismatch")
        self.count, self.expected_seq, self.prev_hash = self.count + 1, seq + 1, row["hash"]
        return None

    def finish(self) -> ChainReport:
        """The report once every row passed: an unsealed journal or a missing anchored seq still break it."""
        if self.unsealed and not self.sealing:
            return self._broken(1, "unsealed_entry", count=0)
        if self._anchors and self._last_anchored >= self.expected_seq:
            return self._broken(self.expected_seq, "tail_missing")
        return ChainReport(self.count, True, unsealed=self.unsealed, anchored=bool(self._anchors))

    def _broken(self, seq: int, reason: str, count: int | None = None) -> ChainReport:
        intact = self.count if count is None else count
        return ChainReport(intact, False, first_broken_seq=seq, reason=reason, unsealed=self.unsealed)


def _adopts(kind: str, data: Any, unsealed: int) -> bool:
    """Whether the first sealed entry is the one that adopted exactly the unsealed entries before it."""
    return kind == STORE_SEALED and isinstance(data, dict) and data.get("unsealed_before") == unsealed


def _check_row(row: Mapping[str, Any], expected_seq: int, prev_hash: str) -> str | tuple[str, Any]:
    """A problem code, or the row's canonical text and parsed data when its seq, link and hash hold."""
    if row["seq"] != expected_seq:
        return "seq_gap"
    if row["prev_hash"] != prev_hash:
        return "prev_hash_mismatch"
    read = row_text(row)
    if read is None:
        return "unreadable_data"
    return read if sha256_hex(read[0]) == row["hash"] else "hash_mismatch"
