"""The journal's head, anchored outside the home, so that a journal rolled back shows without anyone's help.

The seals prove what Pilot wrote, not that nothing was taken away: a tail cut off, the database swapped for an
older genuine copy of itself, or every row deleted still leaves a valid chain. So after every durable append
the store writes the newest entry's seq, hash and seal to a file beside the journal key, outside the home
(`anchors/` in the journal key's folder, one file per home, named from the home's real path). The file only
moves forward: it is replaced by a later entry, and only while the journal still holds the entry it names.
Every open checks that the journal still holds the anchored entry (`Rollback` when it does not), and so do
`Journal.verify` and the running server's upkeep; the app turns trading reducing when one is found and
anchors the journal again at its new head, with the finding journaled (pilot.app.human.kill_switch).

Who can write the home but not the journal key's folder (an agent whose file tools reach the home only, a
backup restored by mistake, a sync tool) can undo nothing unseen. Who can write both, as any process of the
same OS user can, can put back an older anchor with an older database: that stays outside what Pilot can see
(docs/threat-model.md). A store on a server would keep its anchor where the home's writers cannot reach.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ANCHORS = "anchors"


@dataclass(frozen=True, slots=True)
class HeadAnchor:
    """The entry a journal was anchored at: its seq, hash and seal."""

    seq: int
    hash: str
    seal: str

    def as_json(self) -> dict[str, object]:
        return {"seq": self.seq, "hash": self.hash, "seal": self.seal}


@dataclass(frozen=True, slots=True)
class Rollback:
    """The journal no longer holds its anchored entry: `reason` is "tail_missing" (it ends before it, or is
    empty) or "anchor_mismatch" (another entry has its seq); `head` is the journal's last seq now."""

    anchored: HeadAnchor
    head: int
    reason: str

    def as_json(self) -> dict[str, object]:
        return {"anchored": self.anchored.as_json(), "head": self.head, "reason": self.reason}

    def __str__(self) -> str:
        if self.reason == "anchor_mismatch":
            what = f"its entry {self.anchored.seq} is not the one anchored"
        elif self.head == 0:
            what = "it is empty"
        else:
            what = f"it ends at entry {self.head}"
        return f"the journal was anchored at entry {self.anchored.seq}, but {what}"


def anchor_path(key_path: Path, home: Path) -> Path:
    """Where `home`'s anchor lives: beside the journal key at `key_path`, named from the home's real path."""
    name = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:32]
    return key_path.parent / ANCHORS / f"{name}.json"


class AnchorFile:
    """One home's anchor file: a few dozen bytes, read and written in place (no thread hop); a write holds an
    exclusive lock on a file beside it, so processes that advance it at once take turns."""

    def __init__(self, path: Path, home: Path) -> None:
        self.path = path
        self._home = str(home.resolve())

    def read(self) -> HeadAnchor | None:
        """The anchored entry, or None when there is no anchor (or it cannot be read as one)."""
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
            return HeadAnchor(int(record["seq"]), str(record["hash"]), str(record["seal"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def advance(self, head: HeadAnchor) -> None:
        """Write `head` unless the file already names it or a later entry (another process anchored since).
        The caller has checked that the journal holds the entry the file named."""
        with self._locked():
            current = self.read()
            if current is None or current.seq < head.seq:
                self._write(head)

    def replace(self, head: HeadAnchor | None) -> None:
        """Anchor at `head` whatever the file named (after a rollback was found and journaled); None: the
        journal is empty, so the file goes."""
        with self._locked():
            if head is None:
                self.path.unlink(missing_ok=True)
            else:
                self._write(head)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _write(self, head: HeadAnchor) -> None:
        """Write atomically (a new file renamed over the old), after the entry it names was synced to disk,
        so an anchor is never ahead of what survives a power cut. Not synced itself (it would double the
        cost of every send): a power cut may leave it older than the journal, which only weakens it."""
        partial = self.path.with_suffix(".tmp")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(descriptor, json.dumps({"home": self._home, **head.as_json()}).encode())
        finally:
            os.close(descriptor)
        os.replace(partial, self.path)
