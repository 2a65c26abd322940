"""The paper exchange's state on disk in constant time per write: a snapshot, and a log of what changed since.

`FILE` holds a whole snapshot (pilot.paper.state: one JSON document, written atomically) and
`FILE.log` the changes made since it, one JSON line per write, appended and synced to disk: the orders that
changed or are new, the orders forgotten, the new fills, the tail of closed PnL, and the small rest whole
(wallet, positions, quotes, the market's paths and time). A write costs what it changed, not what the
account has accumulated, so a long session stays as fast as its first minute.

The log is folded into a new snapshot (compacted) at start, at a clean stop, and whenever it has grown
larger than the snapshot (so the work of compacting, spread over the writes it follows, is constant per
write, and a restart replays at most about a snapshot's worth). A compaction writes the new snapshot with
the next generation before it starts the new log; the log's first line names the generation it follows, so a
log left behind by a crash between the two is known as already folded in and ignored. A last line cut short
by a crash is ignored too (its write never returned); any other unreadable line is a damaged state.

What changed since the last write is found without reading every order (pilot.paper.changes); the
engine names the orders it forgets.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pilot.paper import state as state_file
from pilot.paper.changes import OrderChanges
from pilot.paper.engine import Engine, SimClosedPnl
from pilot.paper.lock import StateError

COMPACT_AT_LEAST_BYTES = 256 * 1024  # a log is never folded in before it reaches this size


def log_path(path: Path) -> Path:
    return path.with_name(path.name + ".log")


class StateLog:
    """Writes one paper exchange's state: `compact` (a whole snapshot) and `record` (what changed)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.log = log_path(self.path)
        self.generation = 0
        self._fd: int | None = None
        self._log_bytes = 0
        self._snapshot_bytes = 0
        self._orders = OrderChanges()  # what the files hold of the orders and fills
        self._last_row: SimClosedPnl | None = None  # the newest closed-PnL row they hold (it may grow)

    # ---- reading --------------------------------------------------------------------------------

    def load(self, engine: Engine) -> None:
        """Replace the engine's state with the snapshot and the changes logged after it."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as error:
            raise StateError(f"{self.path}: cannot read the paper exchange state ({error})") from None
        if not isinstance(data, dict):
            raise StateError(f"{self.path}: the paper exchange state is damaged (not an object)")
        self.generation = int(data.pop("generation", 0) or 0)
        try:
            for change in self._logged_changes():
                replay(data, change)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise StateError(f"{self.log}: the paper exchange state's log is damaged ({error!r})") from None
        state_file.restore_checked(engine, data, self.path)

    def _logged_changes(self) -> list[dict[str, Any]]:
        try:
            lines = self.log.read_bytes().split(b"\n")
        except FileNotFoundError:
            return []
        except OSError as error:
            raise StateError(f"{self.log}: cannot read the paper exchange state's log ({error})") from None
        if lines and lines[-1] == b"":
            lines.pop()
        changes = []
        for index, line in enumerate(lines):
            try:
                change = json.loads(line)
            except ValueError:
                if index == len(lines) - 1:
                    break  # cut short by a crash: that write never returned
                raise
            if index == 0:
                if change.get("generation") != self.generation:
                    return []  # a log already folded into this snapshot (a crash mid-compaction)
                continue
            changes.append(change)
        return changes

    # ---- writing --------------------------------------------------------------------------------

    def compact(self, engine: Engine) -> None:
        """Write a whole snapshot (the next generation), then start an empty log after it."""
        self.generation += 1
        data = state_file.snapshot(engine)
        data["generation"] = self.generation
        self._snapshot_bytes = _write_atomically(self.path, json.dumps(data, separators=(",", ":")))
        self._close_log()
        header = json.dumps({"generation": self.generation}) + "\n"
        self._log_bytes = _write_atomically(self.log, header)
        self._fd = os.open(self.log, os.O_WRONLY | os.O_APPEND)
        self._orders = OrderChanges(engine)
        engine.forgotten = []
        self._last_row = engine.closed_pnl[-1] if engine.closed_pnl else None

    def record(self, engine: Engine) -> None:
        """Append what changed since the last write (compacting when the log outgrew the snapshot)."""
        if self._fd is None:
            self.compact(engine)
            return
        line = (json.dumps(self._changes(engine), separators=(",", ":")) + "\n").encode()
        os.write(self._fd, line)
        os.fsync(self._fd)
        self._log_bytes += len(line)
        if self._log_bytes > max(self._snapshot_bytes, COMPACT_AT_LEAST_BYTES):
            self.compact(engine)

    def close(self) -> None:
        self._close_log()

    def _close_log(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _changes(self, engine: Engine) -> dict[str, Any]:
        accounts, market, orders = engine.accounts, engine.market, engine.orders
        forgotten, engine.forgotten = engine.forgotten or [], []
        looked = self._orders.look(engine, forgotten)
        return {
            "wallet": {coin: str(amount) for coin, amount in accounts.wallet.items()},
            "positions": [state_file.plain(p) for p in accounts.positions.values()],
            "orders": [state_file.plain(orders[i]) for i in looked.changed],
            "forgotten": forgotten,
            "executions": [state_file.plain_execution(e) for e in looked.fills],
            "first_seq": engine.executions[0].seq if engine.executions else None,
            "closed_pnl": self._closed_pnl(engine.closed_pnl),
            "quotes": state_file.quotes(market),
            "market": market.snapshot(),
            "seq": engine.executions[-1].seq if engine.executions else 0,
        }

    def _closed_pnl(self, rows: list[SimClosedPnl]) -> dict[str, Any]:
        """The rows from the newest one the files hold (it may have grown) on, and how many there are."""
        start = None
        if self._last_row is not None:
            for index in range(len(rows) - 1, -1, -1):
                if rows[index] is self._last_row:
                    start = index
                    break
        self._last_row = rows[-1] if rows else None
        if start is None:  # nothing held before, or it is gone: the whole list
            return {"rows": [state_file.plain(r) for r in rows], "whole": True, "count": len(rows)}
        return {"rows": [state_file.plain(r) for r in rows[start:]], "whole": False, "count": len(rows)}


def replay(data: dict[str, Any], change: dict[str, Any]) -> None:
    """Apply one logged change to a snapshot's data (as pilot.paper.state.snapshot writes it)."""
    for key in ("wallet", "positions", "quotes", "market", "seq"):
        data[key] = change[key]
    orders = {o["order_id"]: o for o in data["orders"]}
    for order in change["orders"]:
        orders[order["order_id"]] = order
    forgotten = set(change["forgotten"])
    for order_id in forgotten:
        orders.pop(order_id, None)
    data["orders"] = list(orders.values())
    executions = data["executions"] + change["executions"]
    first = change["first_seq"]
    data["executions"] = [
        e
        for e in executions
        if first is not None
        and e["seq"] >= first
        and (e.get("exec_type") == "Funding" or e["order"] not in forgotten)
    ]
    pnl = change["closed_pnl"]
    rows = [] if pnl["whole"] else data.get("closed_pnl", [])[:-1]
    rows = rows + pnl["rows"]
    data["closed_pnl"] = rows[len(rows) - pnl["count"] :] if pnl["count"] else []


def _write_atomically(path: Path, text: str) -> int:
    """Write `text` to `path` through a synced temporary file and a rename; the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    encoded = text.encode()
    with open(temporary, "wb") as handle:
        handle.write(encoded)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return len(encoded)
