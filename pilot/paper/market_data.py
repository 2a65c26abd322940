"""Public market data beyond the quote, from the paper exchange's own history (history.py): klines and mark-price
klines, recent trades, funding-rate history, open interest and the tickers' 24-hour figures.

Shapes as Bybit's pages give them (market/kline.mdx, mark-kline.mdx, recent-trade.mdx, history-fund-rate.mdx,
open-interest.mdx). What the numbers are on paper: prices are the moves the market made (a kline older than
the exchange's start is flat at its first price), volume and trades are the paper account's own fills (the
only trades on this venue), the funding history is the instrument's rate on its funding grid, and open
interest is the account's own position (the synthetic book holds none).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pilot.paper import handlers, views
from pilot.paper.handlers import KLINE_MS, Context, Params, category_of, paginate
from pilot.paper.history import Bar, Point
from pilot.paper.market import floor_to
from pilot.paper.scenario import InstrumentSpec
from pilot.paper.validation import SimReject

DAY_MS, HOUR_MS, MINUTE_MS = 86_400_000, 3_600_000, 60_000
OI_INTERVALS = {"5min": 300_000, "15min": 900_000, "30min": 1_800_000, "1h": HOUR_MS, "4h": 4 * HOUR_MS}
OI_INTERVALS["1d"] = DAY_MS
ZERO = Decimal(0)


def _int(params: Params, name: str, default: int | None = None) -> int | None:
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SimReject(10001, f"params error: {name} invalid") from None


def _limit(params: Params, default: int, maximum: int) -> int:
    limit = _int(params, "limit", default) or default
    return min(max(limit, 1), maximum)


def _starts(params: Params, width: int, now_ms: int, limit: int) -> list[int]:
    """Bar start times, newest first: the bars from `start` to `end` (default: now), at most `limit`."""
    end = _int(params, "end", now_ms) or now_ms
    start = _int(params, "start")
    last = end - end % width
    first = start - start % width if start is not None else last - (limit - 1) * width
    count = min(limit, max((last - first) // width + 1, 0))
    return [last - i * width for i in range(count)]


def last_of(spec: InstrumentSpec) -> Callable[[Point], Decimal]:
    """A point's last price on an instrument: the mid floored to its tick, as everywhere on paper."""
    return lambda point: floor_to(point.mid, spec.tick_size)


def _mark(point: Point) -> Decimal:
    return point.mark


def _bars(ctx: Context, params: Params, category: str, mark: bool) -> tuple[InstrumentSpec, list[Bar]]:
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    width = KLINE_MS.get(str(params.get("interval")))
    if width is None:
        raise SimReject(10001, "params error: interval invalid")
    starts = _starts(params, width, ctx.now_ms, _limit(params, 200, 1000))
    history = ctx.engine.history
    history.catch_up(ctx.engine.executions)
    return spec, history.bars(category, spec.symbol, _mark if mark else last_of(spec), width, starts)


def kline(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/market/kline: [startTime, open, high, low, close, volume, turnover], newest first."""
    category = category_of(params, allowed=("linear", "inverse", "spot"), default="linear")
    spec, bars = _bars(ctx, params, category, mark=False)
    tick = spec.tick_size
    rows = [
        [str(b.start_ms), *(views.step(p, tick) for p in (b.open, b.high, b.low, b.close)), *_amounts(b)]
        for b in bars
    ]
    return {"category": category, "symbol": spec.symbol, "list": rows}


def _amounts(bar: Bar) -> tuple[str, str]:
    return views.num(bar.volume), views.num(bar.turnover)


def mark_price_kline(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/market/mark-price-kline: [startTime, open, high, low, close] of the mark, newest first."""
    category = category_of(params, allowed=("linear", "inverse", "option"), default="linear")
    spec, bars = _bars(ctx, params, category, mark=True)
    tick = spec.tick_size
    rows = [[str(b.start_ms), *(views.step(p, tick) for p in (b.open, b.high, b.low, b.close))] for b in bars]
    return {"category": category, "symbol": spec.symbol, "list": rows}


def recent_trade(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/market/recent-trade: the newest trades first (spot: at most 60, default 60; others 1000 / 500)."""
    category = category_of(params)
    if category == "option":
        return {"category": category, "list": []}
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    limit = _limit(params, 60, 60) if category == "spot" else _limit(params, 500, 1000)
    ctx.engine.history.catch_up(ctx.engine.executions)
    trades = ctx.engine.history.trades(category, spec.symbol)[-limit:]
    rows = [
        {
            "execId": t.exec_id,
            "symbol": spec.symbol,
            "price": views.step(t.price, spec.tick_size),
            "size": views.step(t.qty, spec.qty_step),
            "side": t.side,
            "time": str(t.at_ms),
            "isBlockTrade": False,
            "isRPITrade": False,
            "seq": str(t.seq),
        }
        for t in reversed(trades)
    ]
    return {"category": category, "list": rows}


def funding_history(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/market/funding/history: the rate at each funding time on the instrument's grid, newest first
    (history-fund-rate.mdx: startTime alone is an error; endTime alone gives the records up to it)."""
    category = category_of(params, allowed=("linear", "inverse"))
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    start, end = _int(params, "startTime"), _int(params, "endTime")
    if start is not None and end is None:
        raise SimReject(10001, "params error: endTime is required when startTime is given")
    market = ctx.engine.market
    interval = market.funding_interval_ms(spec.symbol)
    newest = min(end if end is not None else ctx.now_ms, ctx.now_ms)
    newest -= newest % interval
    limit = _limit(params, 200, 200)
    times = [newest - i * interval for i in range(limit)]
    rate = views.num(market.funding_rate(spec.symbol))
    rows = [
        {"symbol": spec.symbol, "fundingRate": rate, "fundingRateTimestamp": str(at)}
        for at in times
        if start is None or at >= start
    ]
    return {"category": category, "list": rows}


def open_interest(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/market/open-interest: the account's own position in each interval (the only one on paper)."""
    category = category_of(params, allowed=("linear", "inverse"))
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    width = OI_INTERVALS.get(str(params.get("intervalTime") or ""))
    if width is None:
        raise SimReject(10001, "params error: intervalTime invalid")
    held = views.step(open_interest_of(ctx, spec), spec.qty_step)
    end = _int(params, "endTime", ctx.now_ms) or ctx.now_ms
    start = _int(params, "startTime")
    times = _starts({"end": end, "start": start}, width, ctx.now_ms, 200)
    rows = [{"openInterest": held, "singleOpenInterest": held, "timestamp": str(at)} for at in times]
    page, cursor = paginate(rows, params, 50, 200)
    return {"category": category, "symbol": spec.symbol, "list": page, "nextPageCursor": cursor}


def open_interest_of(ctx: Context, spec: InstrumentSpec) -> Decimal:
    if spec.category != "linear":
        return ZERO
    position = ctx.engine.accounts.positions.get(spec.symbol)
    return abs(position.size) if position is not None else ZERO


def _day_and_hour(ctx: Context, spec: InstrumentSpec, last: Decimal) -> tuple[Bar, Bar]:
    """The last day's and hour's bars, ending with this very moment (a trade now counts in the day's
    volume). Worked out again when a market minute has passed or a trade came (every ticker look, the
    streams' included, reads them): within the minute, the current price widens the high and low."""
    history = ctx.engine.history
    history.catch_up(ctx.engine.executions)
    key, stamp = (spec.category, spec.symbol), (ctx.now_ms // MINUTE_MS, history.last_seq)
    kept = history.day_bars.get(key)
    if kept is not None and kept[0] == stamp:
        return kept[1], kept[2]
    price = last_of(spec)
    since_day, since_hour = ctx.now_ms - DAY_MS + 1, ctx.now_ms - HOUR_MS + 1
    (day,) = history.bars(spec.category, spec.symbol, price, DAY_MS, [since_day]) or [
        Bar(0, last, last, last, last, ZERO, ZERO)
    ]
    (hour,) = history.bars(spec.category, spec.symbol, price, HOUR_MS, [since_hour]) or [day]
    history.day_bars[key] = (stamp, day, hour)
    return day, hour


def day_figures(ctx: Context, spec: InstrumentSpec, last: Decimal) -> dict[str, str]:
    """A ticker's 24-hour figures from the history: open, high, low, volume, turnover, the change, 1 h ago."""
    day, hour = _day_and_hour(ctx, spec, last)
    change = (last - day.open) / day.open if day.open else ZERO
    tick = spec.tick_size
    return {
        "prevPrice24h": views.step(day.open, tick),
        "price24hPcnt": views.num(change.quantize(Decimal("0.000001"), rounding=ROUND_HALF_EVEN)),
        "highPrice24h": views.step(max(day.high, last), tick),
        "lowPrice24h": views.step(min(day.low, last), tick),
        "turnover24h": views.num(day.turnover),
        "volume24h": views.num(day.volume),
        "prevPrice1h": views.step(hour.open, tick),
    }


def tickers(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/market/tickers: the quote's ticker (handlers.tickers) with the day's figures from the history and
    the open interest of the account's own position."""
    answer = handlers.tickers(ctx, params)
    category = answer["category"]
    for row in answer["list"]:
        spec = ctx.engine.instruments[(category, row["symbol"])]
        row |= day_figures(ctx, spec, Decimal(row["lastPrice"]))
        if category == "spot":
            del row["prevPrice1h"]  # market/tickers.mdx: a spot ticker has no prevPrice1h
        else:
            held = open_interest_of(ctx, spec)
            row["openInterest"] = views.num(held)
            row["openInterestValue"] = views.num(held * Decimal(row["markPrice"]))
    return answer
