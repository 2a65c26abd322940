"""Injected faults: which call of which endpoint misbehaves, and how. Also counts every request received."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

from pilot.paper.scenario import FAULT_KINDS, FaultSpec


@dataclass(slots=True)
class _Armed:
    spec: FaultSpec
    seen: int = 0


class FaultBook:
    """Faults armed per endpoint. A fault fires on the `nth` call after it was armed (default: the next
    call) and is then spent, or on every call when `every` is set. The first matching fault wins.
    """

    def __init__(self, specs: tuple[FaultSpec, ...] = ()) -> None:
        self._lock = threading.Lock()
        self._armed: list[_Armed] = [_Armed(spec) for spec in specs]
        self._counts: Counter[str] = Counter()

    def add(self, spec: FaultSpec) -> None:
        if spec.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {spec.kind!r}; known kinds: {', '.join(FAULT_KINDS)}")
        with self._lock:
            self._armed.append(_Armed(spec))

    def clear(self) -> None:
        with self._lock:
            self._armed.clear()

    def request_count(self, path: str) -> int:
        with self._lock:
            return self._counts[path]

    def receive(self, path: str) -> FaultSpec | None:
        """Count one request to `path` and return the fault it triggers, if any."""
        with self._lock:
            self._counts[path] += 1
            chosen = None
            for armed in self._armed:
                if armed.spec.path != path:
                    continue
                armed.seen += 1
                if chosen is None and (armed.spec.every or armed.seen == (armed.spec.nth or 1)):
                    chosen = armed
            if chosen is not None and not chosen.spec.every:
                self._armed.remove(chosen)
            self._armed = [a for a in self._armed if a.spec.every or a.seen < (a.spec.nth or 1)]
            return chosen.spec if chosen else None
