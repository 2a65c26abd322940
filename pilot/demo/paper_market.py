"""The demo's market: the paper exchange on a moving price that stands still until the story runs it.

`pilot serve` attaches to it (`--paper-url`), so the demo, which started it, can move its time on: the
paper exchange's default scenario (Bybit's real instrument filters, static BTCUSDT and SOLUSDT) with ETHUSDT
on a seeded random walk from the default's price (SCENARIOS.md, "Prices that move"). The market clock stands
still (speed 0) while the agent plans and places, so every answer is the one the story expects; then the
story advances it a few exchange minutes at a time, and the same seed gives the same path, the same trigger
and the same fill on every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.scenario import Scenario, load_moving_scenario

MINUTE_MS = 60_000
ETH_WALK_PCT_PER_HOUR = Decimal(2)  # a lively market: 2 % an hour, a step a second
ETH_WALK_SEED = 91  # a path that falls through 3000 within half an hour of exchange time
RUN_STEP_MS = 5 * MINUTE_MS  # how far the story moves the market at a time
RUN_AT_MOST_MS = 2 * 60 * MINUTE_MS


def demo_scenario() -> Scenario:
    """The default scenario with ETHUSDT on the demo's walk, standing still until advanced."""
    return load_moving_scenario(
        "default", walks={"ETHUSDT": ETH_WALK_PCT_PER_HOUR}, seed=ETH_WALK_SEED, speed=Decimal(0)
    )


def open_market() -> PaperExchange:
    """Start the demo's paper exchange on 127.0.0.1 (no background ticker: it moves only when advanced)."""
    return start_paper_exchange(demo_scenario(), ticker_ms=0)


@dataclass(frozen=True, slots=True)
class Moment:
    """Where the market stood after one advance: exchange minutes since it started to run, the quote, and
    the position's size then."""

    minutes: int
    bid: Decimal
    ask: Decimal
    size: Decimal


def run_until_flat(paper: PaperExchange, symbol: str) -> list[Moment]:
    """Advance the exchange RUN_STEP_MS at a time until the position in `symbol` is closed (its stop, or
    anything else the exchange does), at most RUN_AT_MOST_MS; the moments seen, the last one flat or not."""
    moments: list[Moment] = []
    for elapsed in range(RUN_STEP_MS, RUN_AT_MOST_MS + 1, RUN_STEP_MS):
        paper.advance(RUN_STEP_MS)
        quote, size = paper.quote(symbol), paper.position(symbol).size
        moments.append(Moment(elapsed // MINUTE_MS, quote.bid, quote.ask, size))
        if size == 0:
            break
    return moments
