"""Price paths: where a symbol's mid goes next, one step at a time (a seeded random walk, or a replayed tape).

A path only knows its steps; when they happen is the market's schedule (market.py): every `step_ms` of
exchange time for a path that has one, and on `PaperExchange.tick()` for every path. Each path's state is
a few plain values (`state()` / `restore()`), so a restarted exchange continues the same path.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any, Protocol

from pilot.paper.scenario import TapeSpec, WalkSpec


class PricePath(Protocol):
    @property
    def step_ms(self) -> Decimal | None:
        """Exchange time between two steps; None: it moves only on tick()."""

    @property
    def spread_ticks(self) -> int: ...

    @property
    def mid(self) -> Decimal: ...

    def step(self) -> None: ...

    def state(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...


class WalkPath:
    """A geometric random walk: each step multiplies the mid by exp(N(0, sigma)), drawn from its own seed."""

    def __init__(self, spec: WalkSpec) -> None:
        self.step_ms = Decimal(spec.step_ms) if spec.step_ms is not None else None
        self.spread_ticks = spec.spread_ticks
        self.sigma = float(spec.step_volatility_pct) / 100
        self._rng = random.Random(spec.seed)
        self._mid = spec.start
        self.steps = 0

    @property
    def mid(self) -> Decimal:
        return self._mid

    def step(self) -> None:
        shock = self._rng.gauss(0.0, self.sigma)
        self._mid = Decimal(str(float(self._mid) * math.exp(shock)))
        self.steps += 1

    def rebase(self, mid: Decimal) -> None:
        """Go on from `mid` (a quote set by hand), with the same draws to come."""
        self._mid = mid

    def state(self) -> dict[str, Any]:
        version, internal, gauss = self._rng.getstate()
        return {"mid": str(self._mid), "rng": [version, list(internal), gauss], "steps": self.steps}

    def restore(self, state: dict[str, Any]) -> None:
        version, internal, gauss = state["rng"]
        self._rng.setstate((version, tuple(internal), gauss))
        self._mid = Decimal(state["mid"])
        self.steps = int(state.get("steps", 0))


class TapePath:
    """A recorded tape replayed point by point (four points a bar, tape.py), scaled, held or looped at its end."""

    def __init__(self, spec: TapeSpec) -> None:
        self.step_ms = spec.step_ms
        self.spread_ticks = spec.spread_ticks
        self.points = spec.points
        self.loop = spec.loop
        self.index = 0

    @property
    def mid(self) -> Decimal:
        if self.index < len(self.points):
            return self.points[self.index]
        return self.points[self.index % len(self.points)] if self.loop else self.points[-1]

    def step(self) -> None:
        self.index += 1

    def state(self) -> dict[str, Any]:
        return {"index": self.index}

    def restore(self, state: dict[str, Any]) -> None:
        self.index = int(state["index"])


def path_for(walk: WalkSpec | None, tape: TapeSpec | None) -> PricePath | None:
    """The path a scenario price names, or None for a static quote."""
    if walk is not None:
        return WalkPath(walk)
    if tape is not None:
        return TapePath(tape)
    return None
