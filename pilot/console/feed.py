"""The Live page's data: journal entries as rows, paged newest first, filtered by market, kind and rule.

Reads only, through the Runtime's journal. A row is a small summary of one entry; its receipt card (the same
`ReceiptCard` as `pilot journal --card`) is built when the row is opened.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.answers.receipts import ReceiptCard, card_id, event_key
from pilot.app.answers.sent_requests import sent_request
from pilot.app.human.desk import JournalEntry, receipt_cards
from pilot.app.runtime.runtime import Runtime

PAGE = 50
SCAN = 2000  # entries a filtered page reads at most
_BATCH = 200


@dataclass(frozen=True, slots=True)
class Filters:
    market: str = ""
    kind: str = ""
    rule: str = ""

    @staticmethod
    def of(query: Mapping[str, str]) -> Filters:
        def one(name: str) -> str:
            return (query.get(name) or "").strip()[:40]

        return Filters(market=one("market").upper(), kind=one("kind"), rule=one("rule"))

    def any(self) -> bool:
        return bool(self.market or self.kind or self.rule)

    def query(self) -> dict[str, str]:
        return {
            name: value
            for name, value in (("market", self.market), ("kind", self.kind), ("rule", self.rule))
            if value
        }


@dataclass(frozen=True, slots=True)
class Row:
    seq: int
    at: str
    kind: str
    actor: str
    plan_id: str | None
    card: str | None  # the receipt card this entry belongs to (a plan id, or seq-N for a refused plan)
    symbols: tuple[str, ...]
    rules: tuple[str, ...]
    status: str
    summary: str
    event: str | None = None  # rows that tell one event share it (receipts.event_key): shown once
    also: tuple[int, ...] = ()  # the later rows that only restate this one


def once_per_event(rows: list[Row]) -> list[Row]:
    """Newest-first rows with each event shown once: as its first row, naming the later rows that restate it
    (a parking is written by the queue, the approval step and the agent's pending answer)."""
    shown: dict[str, int] = {}
    kept: list[Row] = []
    for row in reversed(rows):
        if row.event is not None and row.event in shown:
            first = shown[row.event]
            kept[first] = replace(kept[first], also=(*kept[first].also, row.seq))
            continue
        if row.event is not None:
            shown[row.event] = len(kept)
        kept.append(row)
    return kept[::-1]


def _walk(value: object, key: str, depth: int = 0) -> Iterator[str | int]:
    """Every value stored under `key` anywhere in a journal entry's data (bounded depth)."""
    if depth > 6:
        return
    if isinstance(value, Mapping):
        for name, inner in value.items():
            if name == key and isinstance(inner, str | int):
                yield inner
            else:
                yield from _walk(inner, key, depth + 1)
    elif isinstance(value, list | tuple):
        for inner in value[:50]:
            yield from _walk(inner, key, depth + 1)


def _unique(values: Iterator[str | int]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        seen.setdefault(str(value), None)
    return tuple(seen)


def row_of(entry: JournalEntry) -> Row:
    data: Mapping[str, Any] = entry.data if isinstance(entry.data, Mapping) else {}
    status = data.get("status") or data.get("verdict") or data.get("event") or ""
    if entry.kind == entry_kinds.KILL_SWITCH:
        status = "on" if data.get("on") else "off"
    card = entry.plan_id or (f"seq-{entry.seq}" if entry.kind == entry_kinds.PLAN else None)
    return Row(
        seq=entry.seq,
        at=entry.at.isoformat(timespec="seconds"),
        kind=entry.kind,
        actor=entry.actor,
        plan_id=entry.plan_id,
        card=card,
        symbols=_unique(_walk(data, "symbol")),
        rules=_unique(_walk(data, "rule")),
        status=str(status),
        summary=_summary(entry.kind, data),
        event=event_key(entry),
    )


def _summary(kind: str, data: Mapping[str, Any]) -> str:
    """One line for the row: the order or the reason, as recorded (escaped by the template, never trusted)."""
    if kind == entry_kinds.KILL_SWITCH:
        return (
            f"by {data.get('by')}"
            + (f" via {data['via']}" if data.get("via") else "")
            + (f": {data['reason']}" if data.get("reason") else "")
        )
    order = data.get("request") if kind == entry_kinds.PLAN else data.get("order") or data.get("request")
    if isinstance(order, Mapping):
        shown = sent_request(order)
        if kind == entry_kinds.ORDER_SENT:  # every send is a limit order (a market one is IOC): not repeated
            shown.pop("order_type", None)
        parts = [
            shown.get(name) for name in ("side", "qty", "symbol", "order_type", "price", "order_link_id")
        ]
        text = " ".join(str(part) for part in parts if part not in (None, ""))
        if text:
            return text[:200]
    for name in ("text", "detail", "summary", "reason"):
        value = data.get(name)
        if isinstance(value, str) and value:
            return value[:200]
    return ""


def matches(row: Row, filters: Filters) -> bool:
    if filters.kind and not row.kind.startswith(filters.kind):
        return False
    if filters.market and filters.market not in row.symbols:
        return False
    return not (filters.rule and filters.rule not in row.rules)


async def page(runtime: Runtime, filters: Filters, before: int | None = None) -> tuple[list[Row], int | None]:
    """Up to PAGE rows matching `filters`, newest first, older than seq `before`; and the `before` of the
    next page (None when there is none).

    A filtered page reads at most SCAN entries: when few match, it stops there with fewer rows, and the next
    page goes on from where it stopped, so no page takes long however large the journal is.
    """
    journal = runtime.store.journal
    rows: list[Row] = []
    until = None
    floor = before  # only entries below this seq
    if before is not None:
        anchor = await journal.get(before)
        if anchor is None:
            return [], None
        until = anchor.at + timedelta(microseconds=1)
    scanned = 0
    while len(rows) <= PAGE:
        batch = await journal.entries(
            kind_prefix=filters.kind or None, until=until, limit=_BATCH, newest_first=True
        )
        fresh = [entry for entry in batch if floor is None or entry.seq < floor]
        rows.extend(row for row in map(row_of, fresh) if matches(row, filters))
        scanned += len(fresh)
        if len(batch) < _BATCH or not fresh:
            break
        floor = fresh[-1].seq
        until = fresh[-1].at + timedelta(microseconds=1)
        if scanned >= SCAN and len(rows) <= PAGE:
            return once_per_event(rows), floor
    if len(rows) > PAGE:
        return once_per_event(rows[:PAGE]), rows[PAGE - 1].seq
    return once_per_event(rows), None


async def newest_seq(runtime: Runtime) -> int:
    newest = await runtime.store.journal.entries(limit=1, newest_first=True)
    return newest[0].seq if newest else 0


async def since(runtime: Runtime, after: int, limit: int = 200) -> list[Row]:
    """Rows of the entries after seq `after`, oldest first (at most `limit`, the newest of them)."""
    top = await newest_seq(runtime)
    rows = []
    for seq in range(max(after + 1, top - limit + 1), top + 1):
        entry = await runtime.store.journal.get(seq)
        if entry is not None:
            rows.append(row_of(entry))
    return rows


async def card_for(runtime: Runtime, card: str) -> ReceiptCard:
    """The receipt card named by a plan id or seq-N (UnknownId, AmbiguousId from pilot.app.human.desk)."""
    [found] = await receipt_cards(runtime, card=card)
    return found


async def entry_json(runtime: Runtime, seq: int) -> str | None:
    entry = await runtime.store.journal.get(seq)
    if entry is None:
        return None
    return json.dumps(entry.data, indent=2, sort_keys=True, default=str)


__all__ = ["PAGE", "Filters", "Row", "card_for", "card_id", "entry_json", "newest_seq", "page", "since"]
