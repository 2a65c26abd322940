"""The Charts page's figures: positions as they changed, equity at each plan, and each day's orders and refusals.

* position notional per market (linear), signed size x price (a short below zero), at every moment it is known
  to change: each plan's
  snapshot (the position the plan saw, at mark), each of Pilot's fills (the position after it, at the fill's
  price: the journal's order outcome), and, when the console reads an exchange, each fill the exchange lists
  (stops that triggered and liquidations too), walked back from the position now;
* equity: the snapshot's equity at each plan, on an axis at least EQUITY_SPAN of it wide (a few cents of fees
  on a thousand dollars must not fill the chart as a crash would), with the change it shows in words;
* per UTC day: orders sent, and refusals by rule (at plan_order and at place_order).

Chart.js (shipped in static/, MIT) draws them; the numbers are computed here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.facts.reads import position_path
from pilot.app.human.desk import JournalEntry
from pilot.app.runtime.runtime import Runtime

LIMIT = 2000  # the newest entries of each kind a chart reads
EQUITY_SPAN = Decimal("0.01")  # the equity axis spans at least this share of the equity (and at least $1)


def _decimal(value: object) -> Decimal | None:
    try:
        return Decimal(str(value)) if value is not None else None
    except InvalidOperation:
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _millis(entry: JournalEntry) -> int:
    return int(entry.at.timestamp() * 1000)


def _rules(data: Mapping[str, Any]) -> list[str]:
    found = data.get("violations") or []
    return [str(v.get("rule")) for v in found if isinstance(v, Mapping) and v.get("rule")]


async def chart_data(runtime: Runtime, reader: Runtime | None = None) -> dict[str, Any]:
    journal = runtime.store.journal
    plans = list(reversed(await journal.entries(kind=entry_kinds.PLAN, limit=LIMIT, newest_first=True)))
    outcomes = list(
        reversed(await journal.entries(kind=entry_kinds.ORDER_OUTCOME, limit=LIMIT, newest_first=True))
    )
    sent = await journal.entries(kind=entry_kinds.ORDER_SENT, limit=LIMIT, newest_first=True)
    refused_at_place = await journal.entries(kind=entry_kinds.PLACE_REFUSED, limit=LIMIT, newest_first=True)

    positions = _journal_positions(plans, outcomes)
    if reader is not None:
        for symbol, points in (await _exchange_positions(reader)).items():
            positions[symbol] = sorted([*positions[symbol], *points], key=lambda point: point["x"])
    equity: list[tuple[int, Decimal]] = []
    per_day: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in plans:
        data = entry.data if isinstance(entry.data, Mapping) else {}
        snapshot = _mapping(data.get("snapshot"))
        cash = _decimal(snapshot.get("equity_usd"))
        if cash is not None:
            equity.append((_millis(entry), cash))
        if data.get("status") == "refused":
            per_day[entry.at.date().isoformat()].update(_rules(data) or ["refused"])
    for entry in refused_at_place:
        data = entry.data if isinstance(entry.data, Mapping) else {}
        per_day[entry.at.date().isoformat()].update(_rules(data) or ["refused at place_order"])
    for entry in sent:
        per_day[entry.at.date().isoformat()]["orders sent"] += 1

    days = sorted(per_day)
    positions = {symbol: points for symbol, points in positions.items() if points}
    series = sorted({name for counts in per_day.values() for name in counts} - {"orders sent"})
    return {
        "positions": [{"label": symbol, "data": points} for symbol, points in sorted(positions.items())],
        "equity": [{"x": at, "y": float(cash)} for at, cash in equity],
        "equity_axis": equity_axis([cash for _at, cash in equity]),
        "days": days,
        "per_day": [
            {"label": name, "data": [per_day[day][name] for day in days]}
            for name in ["orders sent", *series]
            if any(per_day[day][name] for day in days)
        ],
    }


def equity_axis(values: list[Decimal]) -> dict[str, Any] | None:
    """The equity axis's bounds (at least EQUITY_SPAN of the equity wide, and $1, centred on what it shows)
    and the change from the first point to the last, in dollars and percent; None without points."""
    if not values:
        return None
    low, high = min(values), max(values)
    span = max(high - low, abs(high) * EQUITY_SPAN, Decimal(1))
    middle = (low + high) / 2
    change = values[-1] - values[0]
    percent = change / values[0] * 100 if values[0] else Decimal(0)
    return {
        "min": float(middle - span / 2),
        "max": float(middle + span / 2),
        "first": f"{values[0]:.2f}",
        "last": f"{values[-1]:.2f}",
        "change": f"{change:.2f}",
        "change_text": f"{'+' if change >= 0 else '−'}${abs(change):.2f} ({percent:+.3f} %)",
    }


def _journal_positions(
    plans: list[JournalEntry], outcomes: list[JournalEntry]
) -> dict[str, list[dict[str, Any]]]:
    """Each linear market's position as the journal knows it, oldest first: what each plan saw, then each of
    Pilot's fills added to the position last known (a fill moves it before the next plan sees it)."""
    events = sorted([*plans, *outcomes], key=lambda entry: entry.seq)
    known: dict[str, Decimal] = {}
    series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in events:
        data = entry.data if isinstance(entry.data, Mapping) else {}
        if entry.kind == entry_kinds.PLAN:
            snapshot, request = _mapping(data.get("snapshot")), _mapping(data.get("request"))
            symbol = request.get("symbol")
            size, mark = _decimal(snapshot.get("position_size")), _decimal(snapshot.get("mark"))
            if isinstance(symbol, str) and size is not None and mark is not None:
                known[symbol] = size
                series[symbol].append({"x": _millis(entry), "y": float(size * mark)})
            continue
        sent, fill = _mapping(data.get("sent")), _mapping(data.get("fill"))
        symbol, filled, price = (
            sent.get("symbol"),
            _decimal(fill.get("filled_qty")),
            _decimal(fill.get("avg_price")),
        )
        if sent.get("category") != "linear" or not isinstance(symbol, str) or not filled or price is None:
            continue
        after = known.get(symbol, Decimal(0)) + (filled if sent.get("side") == "Buy" else -filled)
        known[symbol] = after
        series[symbol].append({"x": _millis(entry), "y": float(after * price)})
    return series


async def _exchange_positions(reader: Runtime) -> dict[str, list[dict[str, Any]]]:
    return {
        symbol: [{"x": int(at.timestamp() * 1000), "y": float(size * price)} for at, size, price in path]
        for symbol, path in (await position_path(reader)).items()
    }
