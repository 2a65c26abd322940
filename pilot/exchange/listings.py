"""What the exchange lists: each market's instrument rules, or that it has no such market, kept for a while.

A "no such instrument" answer is kept exactly as long as a market's rules are (`ttl_s`): a coin whose
perpetual has no spot market of the same name (common on Bybit) would otherwise pay a round trip on every
judgement, asking again about the market it lacks. An entry is forgotten when its time runs out, and
sooner when the exchange shows that the listing changed:

* a market answer (ticker, order book, price band) for a market held as unlisted: it is listed now;
* an order on a market held as listed refused for its parameters: the instrument's filters (tick, lot,
  minimums) may have changed, so the next judgement reads them again.

Bounded: at most `bound` markets are kept (LISTINGS_BOUND by default, more than Bybit or OKX list in the
categories Pilot trades); keeping one more forgets the one kept longest ago.

Time is monotonic (`clock`), never the wall clock. Not thread-safe: the adapter uses it on its event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from pilot.core.facts import InstrumentRules


class Unlisted:
    """The exchange answered that it has no such market."""

    def __repr__(self) -> str:
        return "UNLISTED"


UNLISTED: Final = Unlisted()

Listing = InstrumentRules | Unlisted

LISTINGS_BOUND = 4096  # markets kept at once (Bybit lists about 700 linear and 600 spot markets)


class Listings:
    """Instrument rules and "no such market" answers by (category, symbol), each for `ttl_s` seconds, at
    most `bound` of them."""

    def __init__(
        self, ttl_s: float, clock: Callable[[], float] = time.monotonic, bound: int = LISTINGS_BOUND
    ) -> None:
        self.ttl_s = ttl_s
        self.bound = bound
        self._clock = clock
        self._kept: dict[tuple[str, str], tuple[float, Listing]] = {}

    def get(self, category: str, symbol: str) -> Listing | None:
        """The market's listing while it is fresh; None when it is not known (never read, or too old)."""
        kept = self._kept.get((category, symbol))
        if kept is None:
            return None
        if self._clock() - kept[0] >= self.ttl_s:
            del self._kept[(category, symbol)]
            return None
        return kept[1]

    def keep(self, category: str, symbol: str, listing: Listing) -> None:
        """Keep the market's listing from now; past the bound, the one kept longest ago is forgotten."""
        self._kept.pop((category, symbol), None)  # kept anew: the newest in the dict's order
        self._kept[(category, symbol)] = (self._clock(), listing)
        while len(self._kept) > self.bound:
            del self._kept[next(iter(self._kept))]

    def __len__(self) -> int:
        return len(self._kept)

    def listed(self, category: str, symbol: str) -> bool | None:
        """True or False while fresh; None when not known."""
        listing = self.get(category, symbol)
        return None if listing is None else listing is not UNLISTED

    def market_answered(self, category: str, symbol: str) -> None:
        """The exchange answered for this market: a "no such market" held for it is out of date."""
        kept = self._kept.get((category, symbol))
        if kept is not None and kept[1] is UNLISTED:
            del self._kept[(category, symbol)]

    def refused_for_parameters(self, category: str, symbol: str) -> None:
        """An order on this market was refused for its parameters: read the rules again next time."""
        self._kept.pop((category, symbol), None)
