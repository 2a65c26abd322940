"""What one named agent's own sends put in each market: the facts of its share under its own maxNotionalUsd
(pilot.core.agent_budgets.share_after), folded by the ledger in journal order and kept as long as its sends
(the ledger's KEPT: two days).

A send counts at its whole quantity on its side while its outcome is open or unknown: it rests, or it may
have filled unseen (a resting order's later fills are not journaled). An outcome that says what filled
settles it at that (an IOC order's answer, a fill read back, an order found cancelled); one that says
nothing filled (rejected, never executed) settles it at nothing. A resting order cancelled later still
counts on its side until it leaves the window: at its worst, as caps count pending orders, and never past
the account's own exposure (the share's bound).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.app.answers.sent_requests import sent_request
from pilot.app.runtime.activity import IOC_FINAL, NOTHING_FILLED
from pilot.core.facts import Held
from pilot.store import Instant, JournalEntry, age

Key = tuple[str, str]  # (category, symbol)


@dataclass(slots=True)
class _Taken:
    """One send: its market, signed quantity, whether it was IOC, when, and what filled once settled."""

    key: Key
    signed: Decimal
    ioc: bool
    at: datetime
    stamp: Instant | None
    settled: Decimal | None = None  # signed; None while open or unknown


class Holdings:
    """One agent's sends of the window by client order id, with running totals per market."""

    def __init__(self) -> None:
        self._taken: dict[str, _Taken] = {}
        self._totals: dict[Key, list[Decimal]] = {}  # settled, buying, selling

    def send(self, entry: JournalEntry) -> None:
        """An order.sent entry of this agent's: open on its side until an outcome settles it."""
        request = sent_request(entry.data.get("request"))
        qty = _decimal(request.get("qty"))
        if qty is None or qty <= 0:
            return
        signed = qty if request.get("side") == "Buy" else -qty
        key = (str(request.get("category")), str(request.get("symbol")))
        taken = _Taken(key, signed, request.get("time_in_force") == "IOC", entry.at, entry.clock)
        self._drop(str(request.get("order_link_id")))
        self._taken[str(request.get("order_link_id"))] = taken
        self._count(taken, 1)

    def outcome(self, data: Mapping[str, Any]) -> None:
        """An order.outcome or order.resolved entry (of any agent's send: only this agent's are known here)."""
        taken = self._taken.get(str(data.get("order_link_id")))
        if taken is None:
            return
        filled = _filled(data, taken)
        if filled is None:
            return
        self._count(taken, -1)
        taken.settled = filled if taken.signed > 0 else -filled
        self._count(taken, 1)

    def keep(self, wanted: Callable[[datetime, Instant | None], bool]) -> None:
        """Forget the sends `wanted(at, stamp)` no longer keeps (older than the window)."""
        for link in [link for link, taken in self._taken.items() if not wanted(taken.at, taken.stamp)]:
            self._drop(link)

    def view(self) -> dict[Key, Held]:
        return {key: Held(*totals) for key, totals in self._totals.items() if any(totals)}

    def _drop(self, link: str) -> None:
        taken = self._taken.pop(link, None)
        if taken is not None:
            self._count(taken, -1)

    def _count(self, taken: _Taken, sign: int) -> None:
        totals = self._totals.setdefault(taken.key, [Decimal(0), Decimal(0), Decimal(0)])
        if taken.settled is not None:
            totals[0] += sign * taken.settled
        elif taken.signed > 0:
            totals[1] += sign * taken.signed
        else:
            totals[2] -= sign * taken.signed


def _filled(data: Mapping[str, Any], taken: _Taken) -> Decimal | None:
    """What an outcome says filled (unsigned), or None when it leaves the send open (resting, unknown)."""
    status = data.get("status")
    if status in NOTHING_FILLED:
        return Decimal(0)
    if status != "filled" and status != "cancelled" and not (taken.ioc and status in IOC_FINAL):
        return None
    fill = data.get("fill")
    said = _decimal(fill.get("filled_qty") if isinstance(fill, dict) else data.get("filled_qty"))
    if said is None:  # a final status without its quantity: all of it when filled, else still open
        return abs(taken.signed) if status == "filled" else None
    return min(said, abs(taken.signed))


def _decimal(value: object) -> Decimal | None:
    try:
        return Decimal(str(value)) if value not in (None, "") else None
    except (ArithmeticError, InvalidOperation):
        return None


def kept_within(
    window: timedelta, now: datetime, here: Instant
) -> Callable[[datetime, Instant | None], bool]:
    """Whether a send at (`at`, `stamp`) is within `window` of now: on the store's clock when it can tell."""

    def wanted(at: datetime, stamp: Instant | None) -> bool:
        since = age(here, stamp)
        return (since if since is not None else now - at) <= window

    return wanted
