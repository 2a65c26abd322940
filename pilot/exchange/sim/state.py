"""The paper exchange's state on disk: positions, balances, orders, fills and prices, so a restart continues.

The file is one JSON document (decimals as strings), rewritten atomically (a temporary file, fsync, then
rename) after every request that changes state and after every price move made through the Python API.
Instruments, keys, fees and faults are not in it: they come from the scenario, which must still list
every symbol the state mentions (StateError otherwise; `pilot sim reset --state FILE` starts afresh).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pilot.exchange.sim.accounts import SimPosition
from pilot.exchange.sim.engine import OPEN, Engine, SimExecution, SimOrder
from pilot.exchange.sim.market import Quote

VERSION = 1


class StateError(ValueError):
    """A state file that cannot be used with this scenario (unreadable, another version, unknown symbols)."""


def save(engine: Engine, path: Path) -> None:
    """Write the engine's state to `path` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w") as handle:
        json.dump(snapshot(engine), handle, separators=(",", ":"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def load(engine: Engine, path: Path) -> None:
    """Replace the engine's state with the one saved at `path`."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise StateError(f"{path}: cannot read the paper exchange state ({error})") from None
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
        "positions": [_plain(p) for p in accounts.positions.values()],
        "orders": [_plain(o) for o in engine.orders.values()],
        "executions": [_plain_execution(e) for e in engine.executions],
        "quotes": {
            s: {"bid": str(q.bid), "ask": str(q.ask), "mark": str(q.mark)} for s, q in market.quotes().items()
        },
        "walks": {s: {"mid": str(mid), "rng": _rng_state(rng)} for s, (rng, mid) in market.walks().items()},
        "seq": max((e.seq for e in engine.executions), default=0),
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
    orders = [_build(SimOrder, item) for item in data["orders"]]
    engine.orders = {o.order_id: o for o in orders}
    engine.open_orders = {o.order_id: o for o in orders if o.status in OPEN}
    engine.links = {(o.category, o.order_link_id): o.order_id for o in orders if o.order_link_id}
    engine.executions = [_build_execution(item, engine.orders) for item in data["executions"]]
    engine.market.restore(
        {
            s: Quote(Decimal(q["bid"]), Decimal(q["ask"]), Decimal(q["mark"]))
            for s, q in data["quotes"].items()
        },
        {s: (_rng(w["rng"]), Decimal(w["mid"])) for s, w in data["walks"].items()},
    )
    engine.restart_seq(int(data["seq"]) + 1)


def _plain(item: Any) -> dict[str, Any]:
    return {f.name: _json_value(getattr(item, f.name)) for f in fields(item)}


def _plain_execution(execution: SimExecution) -> dict[str, Any]:
    data = _plain(execution)
    data["order"] = execution.order.order_id
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
    order = orders[data.pop("order")]
    values: dict[str, Any] = {
        f.name: (Decimal(data[f.name]) if f.type in ("Decimal", Decimal) else data[f.name])
        for f in fields(SimExecution)
        if f.name != "order"
    }
    return SimExecution(order=order, **values)


def _rng_state(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def _rng(state: list[Any]) -> random.Random:
    rng = random.Random()
    rng.setstate((state[0], tuple(state[1]), state[2]))
    return rng
