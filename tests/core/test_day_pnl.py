"""The day's PnL on spot (pilot.core.day_pnl), held to what it promises, against oracles written apart:

* a day whose sells only sell coin bought that day loses, realised plus unrealised, exactly its cash: what
  the sells fetched less what the buys cost, fees included, plus what the coin still held is worth now;
* coin held before the day sells at no gain and no loss: its fee is all it costs, and it closes no trade;
* the closed trades (the cooldown's) add up to the realised PnL of the coin bought today;
* the fast path the app keeps between reads (DayFills: fills arriving in batches, again and out of order)
  ends where the plain definition does (spot_day over every fill once).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from pilot.core.day_pnl import DayFills, SpotBook, SpotFill, day_pnl, spot_day
from pilot.core.facts import DayPnl, Side
from tests.strategies import decimals

START = datetime(2026, 11, 30, tzinfo=UTC)
TOLERANCE = Decimal("1e-12")  # Decimal's division rounds at 28 digits: an average cost is one
MARKETS = ("BTCUSDT", "ETHUSDT")
PRICES = decimals("10", "100000", 1)
RATES = st.sampled_from([Decimal(0), Decimal("0.0002"), Decimal("0.00055"), Decimal("0.001")])
SHARES = st.sampled_from([Decimal("0.1"), Decimal("0.25"), Decimal("0.5"), Decimal(1)])


def _fill(
    n: int, symbol: str, side: Side, qty: Decimal, price: Decimal, fee: Decimal, in_coin: bool
) -> SpotFill:
    at = START + timedelta(seconds=n // 2)  # two fills a second: the same millisecond happens
    return SpotFill(f"e{n:04d}", f"o{n // 3}", symbol, side, qty, price, fee, in_coin, at)


@st.composite
def covered_days(draw: st.DrawFn) -> list[SpotFill]:
    """Fills whose sells only sell coin bought earlier that day (their fee in coin included)."""
    held = dict.fromkeys(MARKETS, Decimal(0))
    fills = []
    for n in range(draw(st.integers(1, 14))):
        symbol = draw(st.sampled_from(MARKETS))
        price, rate = draw(PRICES), draw(RATES)
        if held[symbol] <= 0 or draw(st.booleans()):
            qty = draw(decimals("0.001", "3", 3))
            in_coin = draw(st.booleans())
            fee = qty * rate if in_coin else qty * price * rate
            held[symbol] += qty - fee if in_coin else qty
            fills.append(_fill(n, symbol, Side.BUY, qty, price, fee, in_coin))
            continue
        given = held[symbol] * draw(SHARES)
        in_coin = draw(st.booleans())
        qty = given / (1 + rate) if in_coin else given  # a fee in coin leaves with it
        fee = qty * rate if in_coin else qty * price * rate
        held[symbol] -= qty + fee if in_coin else qty
        fills.append(_fill(n, symbol, Side.SELL, qty, price, fee, in_coin))
    return fills


def cash_and_coin(fills: list[SpotFill]) -> tuple[Decimal, dict[str, Decimal]]:
    """The oracle: the dollars the day's fills paid and fetched, and the coin they left, by market."""
    cash, coin = Decimal(0), dict.fromkeys(MARKETS, Decimal(0))
    for fill in fills:
        sign = 1 if fill.side is Side.BUY else -1
        cash -= sign * fill.qty * fill.price + (0 if fill.fee_in_coin else fill.fee)
        coin[fill.symbol] += sign * fill.qty - (fill.fee if fill.fee_in_coin else 0)
    return cash, coin


@given(covered_days(), st.tuples(PRICES, PRICES))
def test_a_day_of_its_own_coin_loses_what_its_cash_and_coin_say(fills, now):
    prices = dict(zip(MARKETS, now, strict=True))
    book = spot_day(fills)
    plenty = dict.fromkeys(MARKETS, Decimal(10**9))
    unrealised = book.unrealised(plenty, prices)
    cash, coin = cash_and_coin(fills)
    worth = sum((coin[market] * prices[market] for market in MARKETS), Decimal(0))
    assert unrealised is not None
    assert abs(book.realised + unrealised - (cash + worth)) < TOLERANCE
    # every realised dollar here was a trade's: the trades add up to it
    assert abs(sum((t.pnl for t in book.trades()), Decimal(0)) - book.realised) < TOLERANCE


@given(covered_days(), st.tuples(PRICES, PRICES))
def test_the_day_s_pnl_adds_the_spot_books_to_the_derivatives(fills, now):
    book = spot_day(fills)
    unrealised = book.unrealised(dict.fromkeys(MARKETS, Decimal(10**9)), dict(zip(MARKETS, now, strict=True)))
    assert unrealised is not None
    pnl = day_pnl(DayPnl(Decimal("-3.5"), Decimal("1.25")), book, unrealised)
    assert pnl.realised == Decimal("-3.5") + book.realised and pnl.spot_realised == book.realised
    assert pnl.unrealised == Decimal("1.25") + unrealised and pnl.spot_unrealised == unrealised


@given(st.lists(st.tuples(decimals("0.001", "2", 3), PRICES, RATES, st.booleans()), min_size=1, max_size=8))
def test_coin_held_before_the_day_sells_at_no_gain_and_no_loss_but_its_fee(sells):
    fills = [
        _fill(n, "BTCUSDT", Side.SELL, qty, price, qty * rate if coin else qty * price * rate, coin)
        for n, (qty, price, rate, coin) in enumerate(sells)
    ]
    book = spot_day(fills)
    # a fee taken in coin is more coin gone, at the price it sold for
    fees = sum(((f.fee * f.price if f.fee_in_coin else f.fee) for f in fills), Decimal(0))
    assert abs(book.realised + fees) < TOLERANCE
    assert book.trades() == ()


def test_a_worked_day_buy_sell_part_and_sell_more_than_the_day_bought():
    """1 BTC bought at 100 (fee 0.001 BTC: 0.999 held for $100), 0.5 sold at 90 (fee $0.045), then 1 sold at
    110 (fee $0.11): 0.499 of it was the day's, 0.501 held before."""
    buy = _fill(0, "BTCUSDT", Side.BUY, Decimal(1), Decimal(100), Decimal("0.001"), True)
    first = _fill(2, "BTCUSDT", Side.SELL, Decimal("0.5"), Decimal(90), Decimal("0.045"), False)
    second = _fill(4, "BTCUSDT", Side.SELL, Decimal(1), Decimal(110), Decimal("0.11"), False)
    book = spot_day([second, buy, first])
    average = Decimal(100) / Decimal("0.999")
    one = Decimal(45) - Decimal("0.045") - average * Decimal("0.5")  # about -5.07
    two = (Decimal(110) - Decimal("0.11")) * Decimal("0.499") - average * Decimal("0.499")  # about +4.88
    rest = -Decimal("0.11") * Decimal("0.501")  # the coin held before: its share of the fee
    assert abs(book.realised - (one + two + rest)) < TOLERANCE
    assert [t.order_id for t in book.trades()] == ["o1", "o0"]  # newest first: the second sell, the first
    assert book.trades()[1].pnl < 0 < book.trades()[0].pnl
    assert book.holdings["BTCUSDT"].qty == 0


def _same(one: SpotBook, other: SpotBook) -> bool:
    holdings = {s: (h.qty, h.cost) for s, h in one.holdings.items()}
    return (
        holdings == {s: (h.qty, h.cost) for s, h in other.holdings.items()}
        and one.realised == other.realised
        and one.trades() == other.trades()
        and one.last == other.last
    )


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[list[SpotFill], list[list[SpotFill]]]:
    """A day's fills (sells past the day's coin too), and the reads that bring them: batches that overlap,
    repeat fills already read, and bring a fill late, after newer ones."""
    fills = draw(covered_days())
    extra = draw(st.lists(st.tuples(decimals("0.001", "1", 3), PRICES), max_size=3))
    fills += [
        _fill(100 + n, "ETHUSDT", Side.SELL, qty, price, qty * price / 1000, False)
        for n, (qty, price) in enumerate(extra)
    ]
    batches = []
    for _ in range(draw(st.integers(1, 6))):
        batches.append(draw(st.lists(st.sampled_from(fills), max_size=len(fills) + 2)))
    batches.append(draw(st.permutations(fills)))  # by the last read every fill has come
    return fills, batches


@given(arrivals())
def test_the_fills_read_in_batches_fold_into_the_plain_day(case):
    fills, batches = case
    day = DayFills(START)
    read: dict[str, SpotFill] = {}
    for batch in batches:
        book = day.add(batch)
        read.update((fill.exec_id, fill) for fill in batch)
        assert _same(book, spot_day(read.values()))  # after every read, the day so far
    assert _same(day.book, spot_day(fills))
    assert day.since >= START


def test_a_fill_before_the_day_is_not_the_day_s():
    before = SpotFill(
        "x",
        "o",
        "BTCUSDT",
        Side.BUY,
        Decimal(1),
        Decimal(100),
        Decimal(0),
        False,
        START - timedelta(seconds=1),
    )
    day = DayFills(START)
    assert day.add([before]).holdings == {} and day.since == START
    assert spot_day([before], START).holdings == {}
