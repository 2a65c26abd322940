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
caller can attach to the first instead. Resetting a state file in use is refused the same way. The lock is
pilot.paper.lock's, read there by a server that attaches without importing the exchange.
"""

from __future__ import annotations

from dataclasses import fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pilot.paper.accounts import SimPosition
from pilot.paper.engine import Engine, SimClosedPnl, SimExecution, SimOrder

# The lock's names are said here too, where the state's readers have always found them.
from pilot.paper.lock import StateError, StateInUse, StateLock, read_holder
from pilot.paper.market import Market, Quote

__all__ = ["VERSION", "StateError", "StateInUse", "StateLock", "read_holder", "restore_checked", "snapshot"]

VERSION = 1


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
