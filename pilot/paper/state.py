"""The paper exchange's state on disk: positions, balances, orders, fills and prices, so a restart continues.

The snapshot is one JSON document (decimals as strings), written atomically (a temporary file, fsync, then
rename); what changes after it is appended to a log beside it, one line per request that changes state and
per price move made through the Python API (pilot.paper.state_log, which also folds the log in).
Instruments, keys, fees and faults are not in it: they come from the scenario, which must still list
every symbol the state mentions (StateError otherwise; `pilot sim reset --state FILE` starts afresh).

One paper exchange at a time serves a state file. Two would each load it, trade apart and overwrite each
other's saves: the account would fork without a word. So a running exchange holds an exclusive lock on
FILE.lock (flock: the system releases it when the process ends, however it ends) and writes its process
id and URL there; a second one on the same file is refused with StateInUse, which names them so the
caller can attach to the first instead. Resetting a state file in use is refused the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from dataclasses import fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pilot.paper.accounts import SimPosition
from pilot.paper.engine import Engine, SimClosedPnl, SimExecution, SimOrder
from pilot.paper.market import Market, Quote

VERSION = 1


class StateError(ValueError):
    """A state file that cannot be used with this scenario (unreadable, another version, unknown symbols)."""


class StateInUse(StateError):
    """Another running paper exchange serves this state file (its process id and URL, when it wrote them)."""

    def __init__(self, path: Path, *, pid: int | None, url: str | None) -> None:
        holder = f"process {pid}" if pid else "another process"
        where = f", serving {url}" if url else ""
        super().__init__(f"{path} is in use by a running paper exchange ({holder}{where})")
        self.path = path
        self.pid = pid
        self.url = url


class StateLock:
    """The exclusive right to serve one state file, held from acquire() to release() (or the process's end)."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = Path(state_path)
        self.path = self.state_path.with_name(self.state_path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting.

        Raises:
            StateInUse: another paper exchange holds it.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StateInUse(self.state_path, pid=holder.get("pid"), url=holder.get("url")) from None
        self._fd = fd
        self.note(None)

    def note(self, url: str | None, keys: tuple[str, ...] = ()) -> None:
        """Say who holds the lock (this process, the URL it serves and the fingerprints of the keys it takes:
        `key_fingerprint`) for whoever is refused next or attaches."""
        if self._fd is None:
            return
        text = json.dumps({"pid": os.getpid(), "url": url, "keys": list(keys)}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text, 0)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let another paper exchange serve the file (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor releases the flock


def read_holder(state_path: Path) -> dict[str, Any]:
    """What the exchange holding `state_path`'s lock wrote there (pid, url, keys); empty if nothing or no
    file."""
    path = state_path.with_name(state_path.name + ".lock")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return {}
    try:
        return _holder(fd)
    finally:
        os.close(fd)


def _holder(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    pid, url, keys = data.get("pid"), data.get("url"), data.get("keys")
    return {
        "pid": pid if isinstance(pid, int) else None,
        "url": url if isinstance(url, str) else None,
        "keys": tuple(str(key) for key in keys) if isinstance(keys, list) else None,  # None: not said
    }


def key_fingerprint(api_key: str, api_secret: str) -> str:
    """What a running paper exchange says of a key it takes, so a server can tell before attaching whether
    its scenario's key is one of them (a paper key's digest: never the secret itself)."""
    return hashlib.sha256(f"{api_key}\n{api_secret}".encode()).hexdigest()[:16]


def restore_checked(engine: Engine, data: dict[str, Any], path: Path) -> None:
    """restore(), with any fault in the data said as a StateError naming `path`."""
    try:
        restore(engine, data)
    except (KeyError, TypeError, ValueError, InvalidOperation) as error:
        if isinstance(error, StateError):
            raise
        raise StateError(f"{path}: the paper exchange state is damaged ({error!r})") from None


def snapshot(engine: Engine) -> dict[str, Any]:
    accounts, market = engine.accounts, engine.market
    return {
        "version": VERSION,
        "wallet": {coin: str(amount) for coin, amount in accounts.wallet.items()},
        "positions": [plain(p) for p in accounts.positions.values()],
        "orders": [plain(o) for o in engine.orders.values()],
        "executions": [plain_execution(e) for e in engine.executions],
        "closed_pnl": [plain(row) for row in engine.closed_pnl],
        "quotes": quotes(market),
        "market": market.snapshot(),  # paths, their schedule, funding times, the market time reached
        "seq": max((e.seq for e in engine.executions), default=0),
    }


def quotes(market: Market) -> dict[str, dict[str, str]]:
    return {
        s: {"bid": str(q.bid), "ask": str(q.ask), "mark": str(q.mark)} for s, q in market.quotes().items()
    }


def restore(engine: Engine, data: dict[str, Any]) -> None:
    if data.get("version") != VERSION:
        raise StateError(f"state version {data.get('version')!r} is not {VERSION}")
    symbols = {symbol for _, symbol in engine.instruments}
    mentioned = {p["symbol"] for p in data["positions"]} | {o["symbol"] for o in data["orders"]}
    unknown = sorted(mentioned - symbols)
    if unknown:
        raise StateError(f"the state mentions {', '.join(unknown)}, which this scenario does not list")
    accounts = engine.accounts
    accounts.wallet = {coin: Decimal(amount) for coin, amount in data["wallet"].items()}
    for item in data["positions"]:
        position = _build(SimPosition, item)
        if position.symbol in accounts.positions:
            accounts.positions[position.symbol] = position
    engine.adopt_orders([_build(SimOrder, item) for item in data["orders"]])
    engine.executions = [_build_execution(item, engine.orders) for item in data["executions"]]
    engine.closed_pnl = [_build(SimClosedPnl, item) for item in data.get("closed_pnl", [])]
    engine.market.restore(
        {
            s: Quote(Decimal(q["bid"]), Decimal(q["ask"]), Decimal(q["mark"]))
            for s, q in data["quotes"].items()
        },
        data.get("market") or {"paths": data.get("walks", {})},  # "walks": a file saved before time moved
    )
    engine.restart_seq(int(data["seq"]) + 1)
    engine.stop_book.adopt_position_stops()  # a file from before TP/SL were orders kept them on the position


def plain(item: Any) -> dict[str, Any]:
    """A dataclass's fields as JSON values (decimals as strings)."""
    return {name: _json_value(getattr(item, name)) for name in _names(type(item))}


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(kind: type) -> tuple[str, ...]:
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(f.name for f in fields(kind))
    return names


def plain_execution(execution: SimExecution) -> dict[str, Any]:
    data = plain(execution)
    # a funding row's order is its own, in no order list (funding.py): it is saved with the row
    data["order"] = plain(execution.order) if execution.exec_type == "Funding" else execution.order.order_id
    return data


def _json_value(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def _build(kind: type, item: dict[str, Any]) -> Any:
    values = {}
    for f in fields(kind):
        if f.name not in item:
            continue
        raw = item[f.name]
        values[f.name] = Decimal(raw) if f.type in ("Decimal", Decimal) else raw
    return kind(**values)


def _build_execution(item: dict[str, Any], orders: dict[str, SimOrder]) -> SimExecution:
    data = dict(item)
    saved = data.pop("order")
    order = _build(SimOrder, saved) if isinstance(saved, dict) else orders[saved]
    values: dict[str, Any] = {
        f.name: (Decimal(data[f.name]) if f.type in ("Decimal", Decimal) else data[f.name])
        for f in fields(SimExecution)
        if f.name != "order" and f.name in data
    }
    return SimExecution(order=order, **values)
