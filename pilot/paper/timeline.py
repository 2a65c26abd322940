"""Exchange time passing: the market's scheduled events played in time order, and what every move causes.

`after_move` is the one thing done after any price change, whoever made it (a scheduled step, `tick()`,
`set_prices()`): the engine's `rematch` fills the resting orders the new quotes cross and triggers the
stops they reach, then the positions whose mark reached their liqPrice are liquidated (liquidation.py).
`play_until` plays everything due up to a market time: each path step and each funding settlement at its
own time (the market clock is pinned to it, so fills and funding rows carry it), the same way whether the
time came in one jump (`advance`) or in many small looks (each request, the background ticker). So the
same seeds and the same market times give the same prices, fills and funding, however they were reached.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilot.paper import funding, liquidation
from pilot.paper.clocks import ExchangeClock
from pilot.paper.engine import Engine
from pilot.paper.market import FUNDING

MAX_EVENTS_PER_LOOK = 50_000  # a look plays at most this many events; the rest wait for the next look


@dataclass(frozen=True, slots=True)
class Played:
    """What one look did: how many events it played and whether the account changed (a fill, a funding)."""

    events: int
    account_changed: bool


def after_move(engine: Engine, symbols: list[str]) -> None:
    """Everything a price change causes: fills of crossed resting orders, stops, then liquidations."""
    engine.note_prices(symbols)
    engine.rematch(symbols)
    liquidation.liquidate_due(engine)


def play_until(
    engine: Engine, clock: ExchangeClock, until_ms: int, limit: int | None = MAX_EVENTS_PER_LOOK
) -> Played:
    """Play the market's events due up to market time `until_ms`, in time order (at most `limit` of them;
    None: every one)."""
    market = engine.market
    before = _account_mark(engine)
    played = 0
    while limit is None or played < limit:
        event = market.next_event(until_ms)
        if event is None:
            market.moved_to(until_ms)
            break
        with clock.pinned(event.at_ms):
            market.play(event)
            if event.kind == FUNDING:
                funding.settle(engine, event.symbol, market.funding_rate(event.symbol), event.at_ms)
                liquidation.liquidate_due(engine)
            else:
                after_move(engine, [event.symbol])
        played += 1
    return Played(played, _account_mark(engine) != before)


def _account_mark(engine: Engine) -> tuple[int, int]:
    """Changes whenever an execution is booked (fills, funding, liquidations): how many, and the last's seq."""
    last = engine.executions[-1].seq if engine.executions else 0
    return len(engine.executions), last
