"""Prices of the paper exchange: static or seeded random-walk quotes, and the synthetic book around them."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from pilot.exchange.sim.scenario import InstrumentSpec, PriceSpec, Scenario

LEVEL_NOTIONAL = Decimal(50_000)  # default depth per level, in the quote coin


@dataclass(frozen=True, slots=True)
class Quote:
    bid: Decimal
    ask: Decimal
    mark: Decimal

    @property
    def mid(self) -> Decimal:
        return (self.bid + self.ask) / 2


def floor_to(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_FLOOR) * step


class Market:
    """Quotes per symbol (shared by the linear and spot instrument of that symbol) and their walks."""

    def __init__(self, scenario: Scenario) -> None:
        self._specs = dict(scenario.prices)
        self._tick: dict[str, Decimal] = {}
        for instrument in scenario.instruments:
            current = self._tick.get(instrument.symbol)
            self._tick[instrument.symbol] = (
                min(current, instrument.tick_size) if current else instrument.tick_size
            )
        self._quotes: dict[str, Quote] = {}
        self._walks: dict[str, tuple[random.Random, Decimal]] = {}
        for symbol, spec in self._specs.items():
            if spec.walk is not None:
                self._walks[symbol] = (random.Random(spec.walk.seed), spec.walk.start)
                self._quotes[symbol] = self._walk_quote(symbol, spec.walk.start)
            else:
                assert spec.bid is not None and spec.ask is not None
                self._quotes[symbol] = Quote(spec.bid, spec.ask, spec.mark or (spec.bid + spec.ask) / 2)

    def quote(self, symbol: str) -> Quote:
        return self._quotes[symbol]

    def quotes(self) -> dict[str, Quote]:
        return dict(self._quotes)

    def walks(self) -> dict[str, tuple[random.Random, Decimal]]:
        return dict(self._walks)

    def restore(self, quotes: dict[str, Quote], walks: dict[str, tuple[random.Random, Decimal]]) -> None:
        """Take saved quotes and walk positions for the symbols this scenario prices; ignore the others."""
        self._quotes.update({s: q for s, q in quotes.items() if s in self._quotes})
        self._walks.update({s: w for s, w in walks.items() if s in self._walks})

    def set_prices(self, symbol: str, bid: Decimal | None, ask: Decimal | None, mark: Decimal | None) -> None:
        """Replace the quote of a symbol; a missing value keeps the old one (mark follows the mid if unset)."""
        old = self._quotes[symbol]
        new_bid = old.bid if bid is None else bid
        new_ask = old.ask if ask is None else ask
        if new_ask <= new_bid:
            raise ValueError(f"ask {new_ask} must be above bid {new_bid}")
        self._quotes[symbol] = Quote(new_bid, new_ask, (new_bid + new_ask) / 2 if mark is None else mark)

    def step_walks(self) -> list[str]:
        """Advance every random walk one step; return the symbols whose quote changed."""
        changed = []
        for symbol, (rng, mid) in self._walks.items():
            walk = self._specs[symbol].walk
            assert walk is not None
            shock = rng.gauss(0.0, float(walk.volatility_pct) / 100)
            new_mid = Decimal(str(float(mid) * math.exp(shock)))
            self._walks[symbol] = (rng, new_mid)
            self._quotes[symbol] = self._walk_quote(symbol, new_mid)
            changed.append(symbol)
        return changed

    def _walk_quote(self, symbol: str, mid: Decimal) -> Quote:
        walk = self._specs[symbol].walk
        assert walk is not None
        tick = self._tick[symbol]
        half = tick * walk.spread_ticks / 2
        bid = max(floor_to(mid - half, tick), tick)
        ask = bid + tick * walk.spread_ticks
        return Quote(bid, ask, (bid + ask) / 2)

    def book(
        self, instrument: InstrumentSpec, levels: int | None = None
    ) -> tuple[list[tuple[Decimal, Decimal]], ...]:
        """The synthetic book: `levels` bids (best first) and asks (best first) around the quote."""
        spec: PriceSpec = self._specs[instrument.symbol]
        quote = self._quotes[instrument.symbol]
        count = min(levels or spec.depth_levels, spec.depth_levels)
        step = instrument.tick_size * spec.depth_step_ticks
        size = spec.depth_size or floor_to(LEVEL_NOTIONAL / quote.mid, instrument.qty_step)
        size = max(size, instrument.min_order_qty)
        bids = [(quote.bid - step * i, size) for i in range(count) if quote.bid - step * i > 0]
        asks = [(quote.ask + step * i, size) for i in range(count)]
        return bids, asks
