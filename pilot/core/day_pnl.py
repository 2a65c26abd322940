"""The day's profit and loss on every product, written once: what the daily loss limit counts, what the
cooldown calls a closed trade, and what get_policy, the console and the receipts show.

The day is the UTC day: from 00:00 UTC. Amounts in a quote or settle coin (USDT, USDC) count as dollars, as
every cap in Pilot does. Trading fees count in full on both products; funding is not counted (Bybit's
closed-PnL rows leave it out: it is paid on a position held, not on a trade).

Derivatives (linear USDT and USDC contracts): what Bybit reports. Realised is the closed-PnL rows updated
since 00:00 UTC (each is what one order closed, after its opening and closing fees); unrealised is the open
positions' unrealised PnL now, from their entry price.

Spot: Bybit writes no closed PnL for spot and keeps no cost for a coin held, so Pilot keeps one from the
account's spot fills since 00:00 UTC (/v5/execution/list, category spot: every fill of the account, the
agent's or not). Each spot market traded today is a book that starts the day empty (`SpotBook`):

* a buy puts coin in at what it cost: its price times its quantity (a fee taken in the coin bought, as Bybit
  takes a buy's, leaves less coin for that cost; a fee in the quote coin adds to it);
* a sell takes coin out at the book's average cost: its realised PnL is what it fetched, less its fee, less
  that cost;
* coin sold beyond what the day's buys left in the book was held before the day began. Pilot has no cost
  for it (the exchange keeps none; it would take the account's whole history of fills), so it is taken at
  the price it sold for: neither a gain nor a loss, its fee a loss;
* unrealised is the book's coin still held (never more than the wallet holds) at the coin's price now (the
  wallet's USD value of the coin), less its average cost.

Why fills at their cost, not the account's equity since 00:00 UTC: equity moves with coin held before the
day, with deposits and transfers, and with no trade at all; the drawdown limit (maxDrawdownUsd/Pct, over
the UTC day unless drawdownWindowHours says otherwise) binds the equity already. The daily loss limit binds
what trading lost: realised, and what the positions and the day's coin would lose if closed now. Where the
exchange keeps a cost (a derivatives position's entry price) it is the basis; where it keeps none (spot),
the day's own fills are.

One closed trade (the cooldown counts the losing ones): on derivatives, a closed-PnL row (what one order
closed); on spot, a sell order that took coin bought today out of its book, with the PnL of the coin it took
(both sides' fees included). A sell of coin held before the day closes no trade.

`spot_day` is the plain definition: the day's fills, each once, folded in time order. `DayFills` is what
the app keeps between judgements so that each reads only the fills since the last (tests/core hold the two
alike).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from pilot.core.facts import ClosedTrade, DayPnl, Side

ZERO = Decimal(0)
# What the day's PnL counts, in one sentence: get_policy and the console show it beside the figures.
COUNTED = (
    "since 00:00 UTC, on every product: realised (derivatives: closed PnL; spot: each sell against the "
    "average cost of the coin bought today, coin held from before at its sale price) plus unrealised now "
    "(open positions; the day's coin still held), trading fees included, funding not"
)
# How far back of the newest fill already read the next read starts: a fill the exchange lists a little
# after a later one is still found.
OVERLAP = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class SpotFill:
    """One spot fill of the account (a /v5/execution/list row): `fee` in the coin it was taken in, which is
    the coin traded (`fee_in_coin`, as Bybit takes a buy's fee) or the quote coin."""

    exec_id: str
    order_id: str
    symbol: str
    side: Side
    qty: Decimal
    price: Decimal
    fee: Decimal
    fee_in_coin: bool
    at: datetime  # by the exchange's clock

    @property
    def key(self) -> tuple[datetime, str]:
        """Its place in the day: by time, and by its id between fills of the same millisecond."""
        return self.at, self.exec_id


@dataclass(slots=True)
class Holding:
    """One spot market's coin bought today and still in its book, and what it cost (USD)."""

    qty: Decimal = ZERO
    cost: Decimal = ZERO

    @property
    def average(self) -> Decimal:
        return self.cost / self.qty if self.qty > 0 else ZERO


@dataclass(slots=True)
class _Closing:
    """A sell order's closing of coin bought today, as its fills are folded: a closed trade."""

    pnl: Decimal
    at: datetime


@dataclass(slots=True)
class SpotBook:
    """The day's spot books folded from its fills in time order: each market's holding, the realised PnL,
    and the closed trades (by sell order)."""

    holdings: dict[str, Holding] = field(default_factory=dict)
    realised: Decimal = ZERO
    closings: dict[str, _Closing] = field(default_factory=dict)
    last: tuple[datetime, str] | None = None  # the newest fill folded in

    def fold(self, fill: SpotFill) -> None:
        """Take one fill in; fills come in time order (their `key`)."""
        holding = self.holdings.setdefault(fill.symbol, Holding())
        fee_value = fill.fee * fill.price if fill.fee_in_coin else fill.fee
        if fill.side is Side.BUY:
            holding.qty += fill.qty - fill.fee if fill.fee_in_coin else fill.qty
            holding.cost += fill.qty * fill.price + (ZERO if fill.fee_in_coin else fill.fee)
        else:
            self._sell(holding, fill, fee_value)
        self.last = fill.key

    def _sell(self, holding: Holding, fill: SpotFill, fee_value: Decimal) -> None:
        """Coin out at the holding's average cost; coin beyond it (held before the day) at its sale price."""
        given = fill.qty + fill.fee if fill.fee_in_coin else fill.qty  # the coin that leaves
        if given <= 0:
            return
        matched = min(given, holding.qty)
        # what the sale fetched after its fee, shared over the coin that left
        fetched = fill.qty * fill.price - fee_value if not fill.fee_in_coin else fill.qty * fill.price
        unmatched = given - matched
        self.realised += fetched * unmatched / given - unmatched * fill.price
        if matched <= 0:
            return
        cost = holding.average * matched
        pnl = fetched * matched / given - cost
        holding.qty -= matched
        holding.cost = holding.cost - cost if holding.qty > 0 else ZERO
        self.realised += pnl
        closing = self.closings.get(fill.order_id)
        if closing is None:
            self.closings[fill.order_id] = _Closing(pnl, fill.at)
        else:
            closing.pnl += pnl
            closing.at = max(closing.at, fill.at)

    def trades(self) -> tuple[ClosedTrade, ...]:
        """The closed trades, newest first (as the cooldown reads them)."""
        found = [ClosedTrade(c.at, c.pnl, order_id) for order_id, c in self.closings.items()]
        return tuple(sorted(found, key=lambda trade: (trade.at, trade.order_id), reverse=True))

    def unrealised(self, held: Mapping[str, Decimal], prices: Mapping[str, Decimal]) -> Decimal | None:
        """What the coin bought today and still held would gain or lose at its price now: `held` is what the
        wallet holds of each market's coin, `prices` its USD price. None when a price it needs is missing."""
        total = ZERO
        for symbol, holding in self.holdings.items():
            qty = min(holding.qty, max(held.get(symbol, ZERO), ZERO))
            if qty <= 0:
                continue
            price = prices.get(symbol)
            if price is None:
                return None
            total += qty * (price - holding.average)
        return total


def spot_day(fills: Iterable[SpotFill], start: datetime | None = None) -> SpotBook:
    """The day's spot books, plainly: every fill at or after `start` once (by its id), in time order."""
    unique = {fill.exec_id: fill for fill in fills if start is None or fill.at >= start}
    book = SpotBook()
    for fill in sorted(unique.values(), key=lambda one: one.key):
        book.fold(fill)
    return book


class DayFills:
    """The day's spot fills as they are read, batch after batch (each read starts at `since`), folded as
    they come: a batch of fills newer than every fill folded is folded on; one that holds an older fill
    makes the book be folded again from all of them. Fills before `start` are not the day's."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.fills: dict[str, SpotFill] = {}
        self.book = SpotBook()

    @property
    def since(self) -> datetime:
        """Where the next read starts: OVERLAP before the newest fill read, never before the day."""
        last = self.book.last
        return max(self.start, last[0] - OVERLAP) if last is not None else self.start

    def add(self, batch: Iterable[SpotFill]) -> SpotBook:
        """Take a read's fills in (those already read are left out); the book after them."""
        fresh = {f.exec_id: f for f in batch if f.at >= self.start and f.exec_id not in self.fills}
        new = sorted(fresh.values(), key=lambda f: f.key)
        if not new:
            return self.book
        for fill in new:
            self.fills[fill.exec_id] = fill
        last = self.book.last
        if last is not None and new[0].key < last:
            self.book = spot_day(self.fills.values())
            return self.book
        for fill in new:
            self.book.fold(fill)
        return self.book


def day_pnl(derivatives: DayPnl, spot: SpotBook, unrealised: Decimal) -> DayPnl:
    """The day's PnL on every product: the derivatives' as Bybit reports it, the spot books' realised PnL,
    and the unrealised PnL of the day's coin still held (SpotBook.unrealised)."""
    return DayPnl(
        derivatives.realised + spot.realised,
        derivatives.unrealised + unrealised,
        spot_realised=spot.realised,
        spot_unrealised=unrealised,
    )
