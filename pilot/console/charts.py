"""The Charts page's figures, read from the journal alone (no exchange): what the facts said at each plan.

* position notional per market: |position size| x mark in each plan's snapshot, by market;
* equity: the snapshot's equity at each plan;
* per UTC day: orders sent, and refusals by rule (at plan_order and at place_order).

Chart.js (shipped in static/, MIT) draws them; the numbers are computed here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.runtime.runtime import Runtime

LIMIT = 2000  # the newest entries of each kind a chart reads


def _decimal(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value)) if value is not None else None
    except InvalidOperation:
        return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _millis(entry: Any) -> int:
    return int(entry.at.timestamp() * 1000)


def _rules(data: Mapping[str, Any]) -> list[str]:
    found = data.get("violations") or []
    return [str(v.get("rule")) for v in found if isinstance(v, Mapping) and v.get("rule")]


async def chart_data(runtime: Runtime) -> dict[str, Any]:
    journal = runtime.store.journal
    plans = list(reversed(await journal.entries(kind=entry_kinds.PLAN, limit=LIMIT, newest_first=True)))
    sent = await journal.entries(kind=entry_kinds.ORDER_SENT, limit=LIMIT, newest_first=True)
    refused_at_place = await journal.entries(kind=entry_kinds.PLACE_REFUSED, limit=LIMIT, newest_first=True)

    positions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    equity: list[dict[str, Any]] = []
    per_day: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in plans:
        data = entry.data if isinstance(entry.data, Mapping) else {}
        snapshot = _mapping(data.get("snapshot"))
        request = _mapping(data.get("request"))
        symbol = request.get("symbol")
        size, mark = _decimal(snapshot.get("position_size")), _decimal(snapshot.get("mark"))
        if isinstance(symbol, str) and size is not None and mark is not None:
            positions[symbol].append({"x": _millis(entry), "y": float(abs(size) * mark)})
        cash = _decimal(snapshot.get("equity_usd"))
        if cash is not None:
            equity.append({"x": _millis(entry), "y": float(cash)})
        if data.get("status") == "refused":
            per_day[entry.at.date().isoformat()].update(_rules(data) or ["refused"])
    for entry in refused_at_place:
        data = entry.data if isinstance(entry.data, Mapping) else {}
        per_day[entry.at.date().isoformat()].update(_rules(data) or ["refused at place_order"])
    for entry in sent:
        per_day[entry.at.date().isoformat()]["orders sent"] += 1

    days = sorted(per_day)
    series = sorted({name for counts in per_day.values() for name in counts} - {"orders sent"})
    return {
        "positions": [{"label": symbol, "data": points} for symbol, points in sorted(positions.items())],
        "equity": equity,
        "days": days,
        "per_day": [
            {"label": name, "data": [per_day[day][name] for day in days]}
            for name in ["orders sent", *series]
            if any(per_day[day][name] for day in days)
        ],
    }
