"""The day's PnL and closed trades as the exchange gives them (pilot.core.day_pnl defines both): the
derivatives' closed PnL and positions, and the account's spot fills of the day; the closed PnL and the
fills read on from where this process's last read ended (`Runtime.day_closed`, `Runtime.day_fills`), so a
judgement reads only the rows since."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from pilot.app.runtime.day_closed import DayClosed
from pilot.app.runtime.runtime import Runtime
from pilot.core.day_pnl import ZERO, DayFills, SpotBook, SpotFill, day_pnl, spot_day
from pilot.core.facts import ClosedTrade, DayPnl, InstrumentRules, Side
from pilot.exchange.models import AccountBalance, ExchangePosition, Execution


@dataclass(frozen=True, slots=True)
class SpotDays:
    """The day's spot books counted from each of today's starts (earliest first: pilot.app.road.clock.Today
    .starts), and the rules of the markets in them (each market's coin)."""

    books: tuple[SpotBook, ...]
    rules: Mapping[str, InstrumentRules]

    def trades(self) -> tuple[ClosedTrade, ...]:
        """The day's closed spot trades, newest first."""
        return self.books[0].trades()

    def unrealised(self, book: SpotBook, balance: AccountBalance | None) -> Decimal | None:
        """The book's coin still held, at the wallet's USD price of the coin, less its cost. None when the
        balance is needed and could not be read."""
        if not any(holding.qty > 0 for holding in book.holdings.values()):
            return ZERO
        if balance is None:
            return None
        coins = {coin.coin: coin for coin in balance.coins}
        held: dict[str, Decimal] = {}
        prices: dict[str, Decimal] = {}
        for symbol in book.holdings:
            coin = coins.get(self.rules[symbol].base)
            if coin is not None and coin.wallet_balance > 0:
                held[symbol], prices[symbol] = coin.wallet_balance, coin.usd_value / coin.wallet_balance
        return book.unrealised(held, prices)


@dataclass(frozen=True, slots=True)
class DayRead:
    """What the day's PnL is worked out from; a read that failed is None (the PnL then is too)."""

    starts: tuple[datetime, ...]
    positions: list[ExchangePosition] | None
    closed: DayClosed | None
    spot: SpotDays | None

    def pnl(self, balance: AccountBalance | None) -> DayPnl | None:
        """The day's PnL on every product (pilot.core.day_pnl), from each of today's starts the worse."""
        if self.positions is None or self.closed is None or self.spot is None:
            return None
        unrealised = sum((p.unrealised_pnl for p in self.positions), ZERO)
        worst: DayPnl | None = None
        for index, start in enumerate(self.starts):
            realised = self.closed.realised_since(self.closed.start if index == 0 else start)
            book = self.spot.books[index]
            held = self.spot.unrealised(book, balance)
            if held is None:
                return None
            one = day_pnl(DayPnl(realised, unrealised), book, held)
            worst = one if worst is None or one.total < worst.total else worst
        return worst


async def closed_day(runtime: Runtime, start: datetime) -> DayClosed:
    """The day's closed PnL (linear) from `start`, reading only the rows since this process's last read of
    the day (pilot.app.runtime.day_closed; the first read of a day reads from its start).

    Raises:
        ExchangeError: the read failed (the rows held are kept; the next read starts where they end).
    """
    days = runtime.day_closed
    for gone in [day for day in days if day != start]:
        del days[gone]  # a day gone by
    day = days.setdefault(start, DayClosed(start))
    day.add(await runtime.exchange.get_closed_pnl_since("linear", day.since))
    return day


async def spot_days(runtime: Runtime, starts: tuple[datetime, ...]) -> SpotDays:
    """The day's spot books from each start, reading only the fills since this process's last read of the
    day (the first read of a day reads from its start).

    Raises:
        ExchangeError: a read failed (the fills read so far are kept; the next read starts where they end).
    """
    days = runtime.day_fills
    for start in [start for start in days if start != starts[0]]:
        del days[start]  # a day gone by
    day = days.setdefault(starts[0], DayFills(starts[0]))
    rows = [row for row in await runtime.exchange.get_executions_since("spot", day.since) if row.is_fill]
    rules = await _rules(runtime, {row.symbol for row in rows} | set(day.book.holdings))
    book = day.add(spot_fill(row, rules[row.symbol]) for row in rows)
    later = tuple(spot_day(day.fills.values(), start) for start in starts[1:])
    return SpotDays((book, *later), rules)


def spot_fill(row: Execution, rules: InstrumentRules) -> SpotFill:
    """A spot fill as the day's books take it: its fee in the coin traded or in the quote coin (a row that
    names no fee coin: a buy's in the coin, a sell's in the quote coin, as Bybit takes them)."""
    side = Side.BUY if row.side == "Buy" else Side.SELL
    in_coin = row.fee_coin == rules.base if row.fee_coin else side is Side.BUY
    return SpotFill(
        row.exec_id,
        row.order_id,
        row.symbol,
        side,
        row.exec_qty,
        row.exec_price,
        row.exec_fee,
        in_coin,
        row.exec_time,
    )


async def _rules(runtime: Runtime, symbols: Iterable[str]) -> dict[str, InstrumentRules]:
    """The spot markets' rules (kept by the adapter: a read only the first time a market is seen)."""
    wanted = sorted(symbols)
    found = await asyncio.gather(*(runtime.exchange.get_instrument("spot", symbol) for symbol in wanted))
    return dict(zip(wanted, found, strict=True))
