"""Shared hypothesis strategies: instruments, touches, positions, policies and whole Facts, and cases drawn
straight into the region a property examines (the caps around the order's own size, a stop built from the
size and the loss limit) instead of random cases filtered down to it.

Strategies that do not depend on a drawn value are built once, here at module level: hypothesis validates a
strategy the first time it draws from it, and a strategy built inside a composite is a new one every draw.
For the same reason each composite here is a thin wrapper of a plain `draw_*` function, and composites call
those functions rather than drawing from a freshly built composite.
Decimals are drawn as integers and scaled, which is what they are (cents, ticks, lot steps).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, time, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from functools import cache
from typing import TypeVar

from hypothesis import strategies as st

from pilot.core.facts import (
    CooldownState,
    DayPnl,
    DrawdownState,
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    PendingFill,
    PendingOrders,
    Position,
    RestingOrders,
    Side,
    StopLeg,
    Touch,
    TradingState,
    Turnover,
)
from pilot.core.policy import Cooldown, Policy, TradingWindow
from pilot.exchange.okx import payloads as okx_payloads
from pilot.exchange.okx.markets import Named
from tests.oracle import CENT, TAKER, collar_limit, position_after, stop_reference, worst_entry, worst_price

T = TypeVar("T")
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SYMBOLS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


@cache
def decimals(low: str, high: str, places: int) -> st.SearchStrategy[Decimal]:
    """Decimals from `low` to `high` with `places` decimal places: a scaled integer (one strategy per range)."""
    unit = Decimal(1).scaleb(-places)
    return st.integers(int(Decimal(low) / unit), int(Decimal(high) / unit)).map(lambda n: n * unit)


SYMBOL = st.sampled_from(SYMBOLS)
VENUE_SHAPES = st.sampled_from(["bybit", "bybit", "okx"])  # how a drawn instrument is listed
CONTRACT_VALUES = st.sampled_from(["0.0001", "0.001", "0.01", "0.1", "1", "10", "100"]).map(Decimal)
CONTRACT_LOTS = st.sampled_from(["0.001", "0.01", "0.1", "1"]).map(Decimal)
STEPS = st.sampled_from([Decimal("0.00001"), Decimal("0.001"), Decimal("0.01"), Decimal("0.1"), Decimal(1)])
TICKS = st.sampled_from([Decimal("0.01"), Decimal("0.1"), Decimal("0.5"), Decimal(1)])
MIN_STEPS = st.integers(1, 20)
MAX_STEPS = st.integers(10_000, 10_000_000)
LEVERAGES = st.sampled_from([10, 25, 50, 100])
BID_TICKS = st.integers(10, 2_000_000)
SPREAD_TICKS = st.integers(1, 5)
MARK_TICKS = st.integers(-3, 3)
POSITION_STEPS = st.integers(-2000, 2000) | st.just(0)
HELD_STEPS = st.integers(1, 2000)  # a position that is there: long or short, never flat
POSITION_LEVERAGE = st.integers(1, 10)
SIDES = st.sampled_from(list(Side))
ORDER_TYPES = st.sampled_from(list(OrderType))
STATES = st.sampled_from(list(TradingState))
LIMIT_TICKS = st.integers(-50, 50)
ORDER_STEPS = st.integers(1, 5000)
PENDING_STEPS = st.integers(0, 500)
ORDERS_TODAY = st.integers(0, 60)
SECONDS = st.integers(0, 86_000)
ELSEWHERE = st.just(0) | st.integers(0, 500)
MARKET_SETS = st.lists(st.sampled_from(SYMBOLS), unique=True)
# How far from a limit a case lies, in ticks, lots or cents: mostly right at it, sometimes far.
NEAR = st.integers(0, 3) | st.integers(0, 20) | st.integers(0, 3000)
NEAR_PLUS_ONE = NEAR.map(lambda n: n + 1)
# A cap around a case's own size: its size times 10^(k/100), from a hundredth to ten times (1 shrinks to it).
RATIOS = st.integers(-200, 100).map(lambda k: Decimal(10) ** (Decimal(k) / 100))
ROOMY = st.integers(0, 100).map(lambda k: Decimal(10) ** (Decimal(k) / 100))
# Each loss rule lies past its limit one time in eight, unless a property asks for it (shrinks to inside).
PAST = st.sampled_from([False] * 7 + [True])
POLICY_LEVERAGES = st.integers(1, 20)
ORDER_CAPS = st.integers(0, 50)
WINDOW_COUNTS = st.integers(1, 3)
WINDOW_COUNTS_OR_NONE = st.integers(0, 3)
MINUTES = st.integers(0, 1439)
SECONDS_OF_A_MINUTE = st.integers(0, 59)
DAYS = st.integers(0, 1)
MAYBE_OPEN_POSITIONS = st.none() | st.integers(1, 3)
A_FEW = st.integers(0, 2)


def draw_instruments(draw: st.DrawFn, symbol: str | None = None) -> InstrumentRules:
    """A linear instrument's rules, as a Bybit-like venue lists them or (one draw in three) as the OKX adapter
    presents a perpetual sized in contracts: its steps and limits ctVal x lotSz coins, no minimum value."""
    symbol = symbol or draw(SYMBOL)
    if draw(VENUE_SHAPES) == "okx":
        return draw_contract_instruments(draw, symbol)
    step = draw(STEPS)
    tick = draw(TICKS)
    return InstrumentRules(
        symbol=symbol,
        category="linear",
        tick_size=tick,
        qty_step=step,
        min_qty=step * draw(MIN_STEPS),
        max_qty=step * draw(MAX_STEPS),
        min_notional=draw(decimals("0", "10", 0)),
        max_leverage=Decimal(draw(LEVERAGES)),
        maintenance_margin_rate=draw(decimals("0.001", "0.05", 3)),
        base_coin=symbol.removesuffix("USDT"),
    )


def draw_contract_instruments(draw: st.DrawFn, symbol: str) -> InstrumentRules:
    """An OKX perpetual's rules in coins, through the OKX adapter's own conversion
    (pilot.exchange.okx.payloads.instrument_rules) of an instruments row drawn in contracts."""
    lot = draw(CONTRACT_LOTS)
    row = {
        "instType": "SWAP",
        "instId": symbol.removesuffix("USDT") + "-USDT-SWAP",
        "ctVal": str(draw(CONTRACT_VALUES)),
        "ctMult": "1",
        "ctValCcy": symbol.removesuffix("USDT"),
        "settleCcy": "USDT",
        "ctType": "linear",
        "lotSz": str(lot),
        "minSz": str(lot * draw(MIN_STEPS)),
        "maxLmtSz": str(lot * draw(MAX_STEPS)),
        "tickSz": str(draw(TICKS)),
        "lever": str(draw(LEVERAGES)),
    }
    mmr = draw(decimals("0.001", "0.05", 3))
    return okx_payloads.instrument_rules(Named("linear", symbol), row, mmr)


@st.composite
def instruments(draw: st.DrawFn, symbol: str | None = None) -> InstrumentRules:
    return draw_instruments(draw, symbol)


def draw_touches(draw: st.DrawFn, rules: InstrumentRules) -> Touch:
    bid = rules.tick_size * draw(BID_TICKS)
    ask = bid + rules.tick_size * draw(SPREAD_TICKS)
    mark = bid + rules.tick_size * draw(MARK_TICKS)
    return Touch(bid=bid, ask=ask, mark=max(mark, rules.tick_size), observed_at=NOW)


@st.composite
def touches(draw: st.DrawFn, rules: InstrumentRules) -> Touch:
    return draw_touches(draw, rules)


def draw_positions(draw: st.DrawFn, rules: InstrumentRules, touch: Touch) -> Position:
    return Position(
        symbol=rules.symbol,
        size=rules.qty_step * draw(POSITION_STEPS),
        entry_price=touch.mark,
        leverage=Decimal(draw(POSITION_LEVERAGE)),
    )


@st.composite
def positions(draw: st.DrawFn, rules: InstrumentRules, touch: Touch) -> Position:
    return draw_positions(draw, rules, touch)


@cache
def _markets(symbols: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(symbols), unique=True, min_size=1)


@cache
@cache
def maybe(strategy: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    """None or `strategy`'s: one strategy per strategy (built once, not on every draw)."""
    return st.none() | strategy


def draw_policies(draw: st.DrawFn, symbols: tuple[str, ...] = SYMBOLS) -> Policy:
    return Policy(
        allowed_markets=tuple(draw(_markets(symbols))),
        max_notional_usd=draw(decimals("1", "100000", 2)),
        max_order_notional_usd=draw(decimals("1", "100000", 2)),
        max_leverage=Decimal(draw(POLICY_LEVERAGES)),
        min_liquidation_distance_pct=draw(decimals("0", "80", 1)),
        daily_order_cap=draw(ORDER_CAPS),
        max_slippage_pct=draw(decimals("0.01", "3", 2)),
    )


@st.composite
def policies(draw: st.DrawFn, symbols: tuple[str, ...] = SYMBOLS) -> Policy:
    return draw_policies(draw, symbols)


def draw_orders(draw: st.DrawFn, rules: InstrumentRules, touch: Touch) -> OrderIntent:
    order_type = draw(ORDER_TYPES)
    side = draw(SIDES)
    limit = None
    if order_type is OrderType.LIMIT:
        limit = max(touch.bid + rules.tick_size * draw(LIMIT_TICKS), rules.tick_size)
    return OrderIntent(
        symbol=rules.symbol,
        side=side,
        qty=rules.qty_step * draw(ORDER_STEPS),
        order_type=order_type,
        limit_price=limit,
        reduce_only=draw(st.booleans()),
    )


@st.composite
def orders(draw: st.DrawFn, rules: InstrumentRules, touch: Touch) -> OrderIntent:
    return draw_orders(draw, rules, touch)


def draw_facts(
    draw: st.DrawFn,
    *,
    state: TradingState | None = None,
    reduce_only: bool | None = None,
    held: bool = False,
) -> Facts:
    """Whole facts; `held`: the position is long or short, never flat."""
    rules = draw_instruments(draw)
    touch = draw_touches(draw, rules)
    order = draw_orders(draw, rules, touch)
    if reduce_only is not None:
        order = OrderIntent(**{**_fields(order), "reduce_only": reduce_only})
    position = draw_positions(draw, rules, touch)
    if held:
        size = rules.qty_step * draw(HELD_STEPS) * (1 if draw(st.booleans()) else -1)
        position = Position(position.symbol, size, position.entry_price, position.leverage)
    return Facts(
        order=order,
        rules=rules,
        touch=touch,
        position=position,
        equity=draw(decimals("0", "1000000", 2)),
        orders_today=draw(ORDERS_TODAY),
        trading_state=state or draw(STATES),
        now=NOW + timedelta(seconds=draw(SECONDS)),
        pending=draw_pendings(draw, rules),
        elsewhere=rules.qty_step * draw(ELSEWHERE),
    )


@st.composite
def facts(
    draw: st.DrawFn,
    *,
    state: TradingState | None = None,
    reduce_only: bool | None = None,
    held: bool = False,
) -> Facts:
    return draw_facts(draw, state=state, reduce_only=reduce_only, held=held)


def draw_pendings(draw: st.DrawFn, rules: InstrumentRules) -> PendingOrders:
    """Open orders (or unknown sends) on each side; mostly none, as on a quiet account."""
    if draw(st.booleans()):
        return PendingOrders()
    return PendingOrders(
        buy_qty=rules.qty_step * draw(PENDING_STEPS),
        sell_qty=rules.qty_step * draw(PENDING_STEPS),
    )


@st.composite
def pendings(draw: st.DrawFn, rules: InstrumentRules) -> PendingOrders:
    return draw_pendings(draw, rules)


def _fields(order: OrderIntent) -> dict[str, object]:
    return {name: getattr(order, name) for name in OrderIntent.__slots__}


def _with(f: Facts, **changes: object) -> Facts:
    return Facts(**{**{name: getattr(f, name) for name in Facts.__slots__}, **changes})


def _cents(value: Decimal, rounding: str = ROUND_FLOOR) -> Decimal:
    return value.quantize(CENT, rounding=rounding)


def draw_sizing_cases(
    draw: st.DrawFn,
    *,
    state: TradingState | None = None,
    reduce_only: bool | None = None,
    fits: bool = False,
) -> tuple[Policy, Facts]:
    """A policy and facts whose caps lie inside the order's own size, so that passing, a cut to fit and
    "nothing fits" all happen often. Three times in four each cap is what is there before the order (the
    position with its pending orders, the coin elsewhere) plus the order's notional at the mark times a ratio
    from 0.01 to 10 (the order raised to the instrument's minimum, if it is below it): maxOrderNotionalUsd, maxNotionalUsd, maxLeverage through the equity, and
    minLiquidationDistancePct around the distance the whole order leaves. Otherwise the policy is drawn on
    its own, as policies() draws it. With `fits` the ratios are from 1 to 10 and the policy is always drawn
    around the order: the caps leave room for it (for the properties whose region is past them)."""
    f = draw_facts(draw, state=state, reduce_only=reduce_only)
    policy = draw_policies(draw)
    if not fits and not draw(MOSTLY):
        return policy, f
    ratios = ROOMY if fits else RATIOS
    mark, side = f.touch.mark, f.order.side
    order = max(f.order.qty * mark, f.rules.min_qty * mark, f.rules.min_notional)  # or what it is raised to
    held = abs(f.position.size + f.pending.on_side(side) * side.sign) * mark
    equity = _cents((held + order * draw(ratios)) / policy.max_leverage)
    distance = Decimal(100) * equity / (held + order) / draw(ratios)
    policy = policy.model_copy(
        update={
            "max_order_notional_usd": _cap(order * draw(ratios)),
            "max_notional_usd": _cap(held + f.elsewhere * mark + order * draw(ratios)),
            "min_liquidation_distance_pct": min(distance, Decimal(80)).quantize(Decimal("0.1")),
        }
    )
    return policy, _with(f, equity=equity)


@st.composite
def sizing_cases(
    draw: st.DrawFn,
    *,
    state: TradingState | None = None,
    reduce_only: bool | None = None,
    fits: bool = False,
) -> tuple[Policy, Facts]:
    return draw_sizing_cases(draw, state=state, reduce_only=reduce_only, fits=fits)


def _cap(value: Decimal) -> Decimal:
    """A USD limit policy.json accepts (more than zero, at most 10^9), to the cent."""
    return min(max(_cents(value), CENT), Decimal(10) ** 9)


def draw_trading_windows(draw: st.DrawFn) -> tuple[TradingWindow, ...]:
    """Zero to three UTC windows, some wrapping past midnight."""
    count = draw(WINDOW_COUNTS_OR_NONE)
    windows = []
    for _ in range(count):
        start, end = draw(MINUTES), draw(MINUTES)
        if start == end:
            continue
        windows.append(TradingWindow(start=_hhmm(start), end=_hhmm(end)))
    return tuple(windows)


@st.composite
def trading_windows(draw: st.DrawFn) -> tuple[TradingWindow, ...]:
    return draw_trading_windows(draw)


NO_HOURS_OR_SOME = st.just(()) | trading_windows()


def _hhmm(minute: int) -> str:
    return f"{minute // 60:02}:{minute % 60:02}"


@st.composite
def loss_policies(draw: st.DrawFn, symbols: tuple[str, ...] = SYMBOLS) -> Policy:
    """policies() with the loss rules of issue 15 drawn too: each left out about half the time."""
    policy = draw_policies(draw, symbols)
    return policy.model_copy(
        update={
            "max_loss_per_trade_usd": draw(maybe(decimals("0.5", "5000", 2))),
            "max_loss_per_trade_pct": draw(maybe(decimals("0.1", "20", 1))),
            "require_stop_loss": draw(st.booleans()),
            "daily_loss_limit_usd": draw(maybe(decimals("1", "10000", 2))),
            "daily_loss_limit_pct": draw(maybe(decimals("0.5", "20", 1))),
            "max_open_positions": draw(MAYBE_OPEN_POSITIONS),
            "trading_hours": draw(NO_HOURS_OR_SOME),
        }
    )


OFFSETS = st.integers(-3000, 3000) | st.integers(-20, 20)
MAYBE_OFFSET = st.none() | OFFSETS


@st.composite
def protected_facts(draw: st.DrawFn, *, state: TradingState | None = None) -> Facts:
    """facts() with a stop-loss and take-profit (on either side of the price, or none), the day's PnL and
    the markets with open positions drawn too."""
    f = draw_facts(draw, state=state, reduce_only=False)
    tick, bid = f.rules.tick_size, f.touch.bid

    def price_near() -> Decimal | None:
        offset = draw(MAYBE_OFFSET)
        return None if offset is None else max(bid + tick * offset, tick)

    order = OrderIntent(**{**_fields(f.order), "stop_loss": price_near(), "take_profit": price_near()})
    pnl = DayPnl(draw(decimals("-20000", "5000", 2)), draw(decimals("-20000", "5000", 2)))
    others = frozenset(draw(MARKET_SETS))
    return _with(f, order=order, day_pnl=pnl, open_markets=_open_markets(f, others))


def _open_markets(f: Facts, others: frozenset[str]) -> frozenset[str]:
    """The markets with a position: this order's exactly when its position is not flat."""
    return others | {f.rules.symbol} if f.position.size != 0 else others - {f.rules.symbol}


# --- the loss rules, each drawn on the side of its limit asked for -------------------------------------

LOSS_RULES = ("hours", "day", "positions", "stop", "loss", "target")


@st.composite
def loss_cases(
    draw: st.DrawFn, *, past: tuple[str, ...] = (), others_past: bool = True, fits: bool = False
) -> tuple[Policy, Facts]:
    """A policy and facts for the loss rules (issue 15) of an active account, each rule drawn at its limit:
    right at it or far from it, inside it or past it. The rules named in `past` lie past their limit; each
    other one does one time in eight (never with `others_past=False`), so every mix of refusals occurs.
    `fits`: the size caps leave room for the order (sizing_cases), for properties of passing orders.

    LOSS_RULES names them: tradingHours ("hours"), dailyLossLimitUsd/Pct ("day"), maxOpenPositions
    ("positions"), requireStopLoss and the stop's side and tick ("stop"), maxLossPerTradeUsd/Pct at the
    stop ("loss"), the take-profit's side ("target"). A rule inside its limit is often left out of the
    policy altogether. Sizes, caps and markets are drawn as sizing_cases() draws them.
    """
    policy, f = draw_sizing_cases(draw, state=TradingState.ACTIVE, reduce_only=False, fits=fits)
    broken = {rule for rule in LOSS_RULES if rule in past or (others_past and draw(PAST))}
    if "loss" in past:
        broken.discard("stop")  # a loss is judged only at a stop that can be sent
    windows, now = _hours_case(draw, "hours" in broken)
    policy = policy.model_copy(update={"trading_hours": windows})
    f = _with(f, now=now)
    usd, pct, pnl = _day_case(draw, "day" in broken, f.equity)
    most, markets = _positions_case(draw, "positions" in broken, f)
    policy = policy.model_copy(
        update={
            "daily_loss_limit_usd": usd,
            "daily_loss_limit_pct": pct,
            "max_open_positions": most,
        }
    )
    f = _with(f, day_pnl=pnl, open_markets=markets)
    loss_usd, loss_pct, require, stop = _stop_case(draw, broken, policy, f)
    policy = policy.model_copy(
        update={
            "max_loss_per_trade_usd": loss_usd,
            "max_loss_per_trade_pct": loss_pct,
            "require_stop_loss": require,
        }
    )
    target = _target_case(draw, "target" in broken, policy, f)
    order = OrderIntent(**{**_fields(f.order), "stop_loss": stop, "take_profit": target})
    return policy, _with(f, order=order)


def _hours_case(draw: st.DrawFn, past: bool) -> tuple[tuple[TradingWindow, ...], datetime]:
    """Trading windows and a time inside one of them (or no windows at all), or outside every one."""
    windows: tuple[TradingWindow, ...] = ()
    if past or draw(st.booleans()):
        spans = [(draw(MINUTES), draw(MINUTES)) for _ in range(draw(WINDOW_COUNTS))]
        windows = tuple(TradingWindow(start=_hhmm(a), end=_hhmm(b)) for a, b in spans if a != b)
    covered = _covered(windows)
    if past and len(covered) == 1440:
        windows, covered = (TradingWindow(start="03:00", end="03:01"),), {180}
    pool = sorted(set(range(1440)) - covered if past else covered or range(1440))
    minute = pool[draw(MINUTES) * len(pool) // 1440]
    day = datetime.combine(NOW.date() + timedelta(days=draw(DAYS)), time(0), tzinfo=UTC)
    return windows, day + timedelta(minutes=minute, seconds=draw(SECONDS_OF_A_MINUTE))


def _covered(windows: tuple[TradingWindow, ...]) -> set[int]:
    minutes: set[int] = set()
    for window in windows:
        start, end = window.start_minute, window.end_minute
        minutes |= set(range(start, end)) if start < end else set(range(start, 1440)) | set(range(end))
    return minutes


def _day_case(draw: st.DrawFn, past: bool, equity: Decimal) -> tuple[Decimal | None, Decimal | None, DayPnl]:
    """Daily loss limits and the day's PnL: a loss below the limit (or no limit), or at it and beyond.

    The loss L reaches the limit when L >= the dollar limit, or L >= (equity + L) x pct / 100, that is
    L >= equity x p / (1 - p) with p = pct / 100: the smallest loss in cents that reaches it is the threshold.
    """
    usd = draw(maybe(decimals("1", "10000", 2)))
    pct = draw(maybe(decimals("0.5", "20", 1)))
    if past and usd is None and pct is None:
        usd = draw(decimals("1", "10000", 2))
    thresholds = [usd] if usd is not None else []
    if pct is not None:
        share = pct / 100
        thresholds.append(_cents(max(equity, Decimal(0)) * share / (1 - share), ROUND_CEILING))
    if not thresholds:
        return usd, pct, DayPnl(draw(decimals("-20000", "5000", 2)), draw(decimals("-20000", "5000", 2)))
    margin = draw(NEAR) * CENT
    loss = min(thresholds) + margin if past else min(thresholds) - CENT - margin
    realised = draw(decimals("-20000", "5000", 2))
    return usd, pct, DayPnl(realised, -loss - realised)


def _positions_case(draw: st.DrawFn, past: bool, f: Facts) -> tuple[int | None, frozenset[str]]:
    """maxOpenPositions and the markets with a position: as many as it allows at most, or more."""
    markets = _open_markets(f, frozenset(draw(MARKET_SETS)))
    if past:
        markets = _open_markets(f, frozenset(SYMBOLS))
    count = len(markets - {f.order.symbol}) + (1 if position_after(f) != 0 else 0)
    if past:
        return max(count - 1 - draw(A_FEW), 1), markets
    if draw(st.booleans()):
        return None, markets
    return max(count, 1) + draw(A_FEW), markets


BAD_STOPS = st.sampled_from(["missing", "wrong side", "off tick"])
MOSTLY = st.sampled_from([True, True, True, False])
LOSS_SHARES = st.integers(-400, 0).map(lambda k: Decimal(10) ** (Decimal(k) / 100))


def _stop_case(
    draw: st.DrawFn, broken: set[str], policy: Policy, f: Facts
) -> tuple[Decimal | None, Decimal | None, bool, Decimal | None]:
    """The loss limits, requireStopLoss and the stop: the stop built from the order's size and the loss limit.

    A loss limit is three times in four drawn around this order (the loss of its size at a share of its price
    from 0.0001 to all of it); the stop that loses exactly the limit is then solved for, and the stop is put
    a few ticks (or many) inside it or past it. A stop "past" the stop rule is missing under requireStopLoss,
    on the wrong side of the price, or off the tick.
    """
    tick, qty, buy = f.rules.tick_size, f.order.qty, f.order.side is Side.BUY
    entry, reference = worst_entry(policy, f), stop_reference(policy, f)
    usd = draw(maybe(decimals("0.5", "5000", 2)))
    pct = draw(maybe(decimals("0.1", "20", 1)))
    if "loss" in broken or draw(MOSTLY):
        usd = _cap(qty * entry * draw(LOSS_SHARES))
    require = draw(st.booleans())
    if "stop" in broken:
        how = draw(BAD_STOPS)
        if how == "missing" and "loss" not in broken:
            return usd, pct, True, None
        side = 1 if buy else -1  # towards the price, from below for a buy
        stop = reference + side * tick * draw(NEAR)
        return usd, pct, require, stop + tick / 2 if how == "off tick" else max(stop, tick)
    if "loss" not in broken and not require and draw(st.booleans()):
        return usd, pct, require, None
    caps = [usd] if usd is not None else []
    if pct is not None:
        caps.append(max(f.equity, Decimal(0)) * pct / 100)
    nearest = reference / tick - 1 if buy else reference / tick + 1  # the stop's ticks nearest the price
    if not caps:
        return usd, pct, require, _stop_at(nearest - draw(NEAR) if buy else nearest + draw(NEAR), tick)
    cap = min(caps)
    # the boundary: qty x (|entry - stop| + fee x (entry + stop)) == cap, solved for the stop
    if buy:
        boundary = ((entry * (1 + TAKER) - cap / qty) / (1 - TAKER) / tick).to_integral_value(ROUND_CEILING)
        ticks = boundary - 1 - draw(NEAR) if "loss" in broken else boundary + draw(NEAR)
        return usd, pct, require, _stop_at(min(ticks, nearest), tick)
    boundary = ((cap / qty + entry * (1 - TAKER)) / (1 + TAKER) / tick).to_integral_value(ROUND_FLOOR)
    ticks = boundary + 1 + draw(NEAR) if "loss" in broken else boundary - draw(NEAR)
    return usd, pct, require, _stop_at(max(ticks, nearest), tick)


def _stop_at(ticks: Decimal, tick: Decimal) -> Decimal:
    return max(ticks, Decimal(1)) * tick


def _target_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> Decimal | None:
    """A take-profit beyond the worst entry (or none), or on the wrong side of it."""
    if not past and draw(st.booleans()):
        return None
    tick, entry = f.rules.tick_size, worst_entry(policy, f)
    towards = 1 if f.order.side is Side.BUY else -1  # the side a target must lie on
    ticks = entry / tick + (-towards * draw(NEAR) if past else towards * (1 + draw(NEAR)))
    return max(ticks, Decimal(1)) * tick


# --- the pre-trade controls of issue 27, each drawn on the side of its limit asked for -----------------

CONTROLS = ("collar", "messages", "resting", "drawdown", "cooldown", "turnover", "authority")
COLLAR_PCTS = st.sampled_from([Decimal("0.01"), Decimal("0.1"), Decimal(1), Decimal(5), Decimal(50)])
COLLAR_TICKS = st.integers(1, 5000)
MESSAGE_CAPS = st.integers(1, 30)
MINUTE_CAPS = MESSAGE_CAPS.map(lambda n: n * 4)
RESTING_CAPS = st.integers(1, 20)
AGES_MS = st.integers(0, 59_999)
HOURS_AHEAD = st.integers(1, 48)


@st.composite
def control_cases(
    draw: st.DrawFn, *, past: tuple[str, ...] = (), others_past: bool = True, fits: bool = True
) -> tuple[Policy, Facts]:
    """A policy and facts for the pre-trade controls (issue 27) of an active account, each at its limit:
    inside it (or left out of the policy) or past it. CONTROLS names them: the price collar on a limit order
    ("collar"), the message throttles ("messages"), resting orders ("resting"), the drawdown ("drawdown"), the
    cooldown after losses ("cooldown"), turnover ("turnover"), validUntil and maxSessionMinutes
    ("authority"). Those in `past` lie past their limit; each other one does one time in eight unless
    `others_past` is False. Sizes and caps are drawn as sizing_cases() draws them (`fits`: room for it)."""
    policy, f = draw_sizing_cases(draw, state=TradingState.ACTIVE, fits=fits)
    broken = {rule for rule in CONTROLS if rule in past or (others_past and draw(PAST))}
    policy, f = _collar_case(draw, "collar" in broken, policy, f)
    policy, f = _messages_case(draw, "messages" in broken, policy, f)
    policy, f = _resting_case(draw, "resting" in broken, policy, f)
    policy, f = _drawdown_case(draw, "drawdown" in broken, policy, f)
    policy, f = _cooldown_case(draw, "cooldown" in broken, policy, f)
    policy, f = _turnover_case(draw, "turnover" in broken, policy, f)
    return _authority_case(draw, "authority" in broken, policy, f)


def _collar_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """A collar (percent, ticks or both) and a limit order a few ticks inside its edge, or beyond it."""
    if not past and draw(st.booleans()):
        return policy, f
    pct, ticks = draw(maybe(COLLAR_PCTS)), draw(maybe(COLLAR_TICKS))
    if pct is None and ticks is None:
        pct = draw(COLLAR_PCTS)
    policy = policy.model_copy(update={"price_collar_pct": pct, "price_collar_ticks": ticks})
    buy, tick = f.order.side is Side.BUY, f.rules.tick_size
    edge = collar_limit(policy, f, buy)
    assert edge is not None
    away = draw(NEAR) + (1 if past else 0)
    outward = 1 if buy else -1
    price = edge + outward * away * tick if past else edge - outward * away * tick
    order = OrderIntent(
        **{**_fields(f.order), "order_type": OrderType.LIMIT, "limit_price": max(price, tick)}
    )
    return policy, _with(f, order=order)


def _messages_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """Throttles per second and/or minute, and the ages of the messages of the last minute: one fewer in a
    window than its cap (or fewer), or as many as it allows and more."""
    if not past and draw(st.booleans()):
        return policy, f
    second, minute = draw(maybe(MESSAGE_CAPS)), draw(maybe(MINUTE_CAPS))
    if second is None and minute is None:
        second = draw(MESSAGE_CAPS)
    which = draw(st.sampled_from([w for w, cap in (("second", second), ("minute", minute)) if cap]))
    cap = second if which == "second" else minute
    assert cap is not None
    window_ms = 1000 if which == "second" else 60_000
    inside = cap + draw(A_FEW) if past else max(cap - 1 - draw(A_FEW), 0)
    young = _ages(draw, inside, 0, window_ms - 1)
    old = _ages(draw, draw(A_FEW), window_ms, 59_999) if window_ms < 60_000 else []
    ages = tuple(timedelta(milliseconds=ms) for ms in sorted(young + old))
    if not past:  # the other window keeps within its own cap too
        other = minute if which == "second" else second
        if other is not None and len(ages) >= other:
            ages = ages[: other - 1] if other > 1 else ()
    policy = policy.model_copy(
        update={"max_order_messages_per_second": second, "max_order_messages_per_minute": minute}
    )
    return policy, _with(f, messages=ages)


def _ages(draw: st.DrawFn, count: int, low: int, high: int) -> list[int]:
    """`count` message ages in milliseconds from `low` to `high`: the first two drawn as hypothesis draws
    (so it finds the window's edges and shrinks them), the rest from a generator it seeds, since a throttle
    up to 120 a minute drew 120 integers one by one for every case (a fifth of test_controls' time)."""
    edges = [draw(st.integers(low, high)) for _ in range(min(count, 2))]
    rest = draw(st.randoms(use_true_random=True)) if count > 2 else None
    return edges + [rest.randint(low, high) for _ in range(count - 2)] if rest is not None else edges


def _resting_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """Resting-order caps and the counts on the market and the account: below them, or at them (with a
    limit order, which would rest)."""
    if not past and draw(st.booleans()):
        return policy, f
    per_market, total = draw(maybe(RESTING_CAPS)), draw(maybe(RESTING_CAPS))
    if per_market is None and total is None:
        per_market = draw(RESTING_CAPS)
    market = per_market + draw(A_FEW) if past and per_market else draw(st.integers(0, (per_market or 21) - 1))
    ceiling = total if total is not None else 40
    count = ceiling + draw(A_FEW) if past and total and not per_market else draw(st.integers(0, ceiling - 1))
    policy = policy.model_copy(
        update={"max_resting_orders_per_market": per_market, "max_resting_orders": total}
    )
    order = f.order
    if past:
        price = order.limit_price or max(f.touch.bid, f.rules.tick_size)
        order = OrderIntent(**{**_fields(order), "order_type": OrderType.LIMIT, "limit_price": price})
    return policy, _with(f, order=order, resting=RestingOrders(market, max(count, market)))


def _drawdown_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """Drawdown limits and the window's peak: a drawdown a cent short of the limit, or at it and beyond (or a
    latch from earlier in the window)."""
    if not past and draw(st.booleans()):
        return policy, f
    usd, pct = draw(maybe(decimals("1", "10000", 2))), draw(maybe(decimals("0.5", "50", 1)))
    if usd is None and pct is None:
        usd = draw(decimals("1", "10000", 2))
    equity = f.equity
    # dd >= usd, or dd >= (equity + dd) x p: dd >= equity x p / (1 - p)
    thresholds = [usd] if usd is not None else []
    if pct is not None:
        share = pct / 100
        thresholds.append(_cents(max(equity, Decimal(0)) * share / (1 - share), ROUND_CEILING))
    limit = min(thresholds)
    until = f.now + timedelta(hours=draw(HOURS_AHEAD))
    latched = past and draw(st.sampled_from([False, False, True]))
    dd = (
        max(limit + draw(NEAR) * CENT, CENT)  # a drawdown at all: at its peak there is none (limit 0 or not)
        if past and not latched
        else max(limit - CENT - draw(NEAR) * CENT, Decimal(0))
    )
    state = DrawdownState(equity + dd, latched, until, limit if latched else None)
    policy = policy.model_copy(update={"max_drawdown_usd": usd, "max_drawdown_pct": pct})
    return policy, _with(f, drawdown=state)


def _cooldown_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """A cooldown rule and its state: one under way (ending later), or none (or one that has ended)."""
    if not past and draw(st.booleans()):
        return policy, f
    rule = Cooldown(afterLosses=draw(st.integers(1, 5)), minutes=draw(st.integers(1, 600)))
    if past:
        state = CooldownState(rule.after_losses + draw(A_FEW), f.now + timedelta(seconds=draw(SECONDS) + 1))
    elif draw(st.booleans()):
        state = CooldownState(draw(st.integers(0, 10)), f.now - timedelta(seconds=draw(SECONDS)))
    else:
        state = CooldownState(draw(st.integers(0, rule.after_losses - 1)))
    return policy.model_copy(update={"cooldown": rule}), _with(f, cooldown=state)


def _turnover_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """Turnover caps and what was sent: room for the order and a little more, or less than it takes."""
    if not past and draw(st.booleans()):
        return policy, f
    notional = f.order.qty * worst_price(policy, f)
    day, rolling = draw(st.booleans()), draw(st.booleans())
    if not day and not rolling:
        day = True
    sent = draw(decimals("0", "100000", 2))
    room = notional * draw(RATIOS if past else ROOMY)
    cap = _cap(sent + room)
    if past and cap >= sent + notional:
        cap = _cap(sent + notional - CENT) if sent + notional > CENT else cap
    frees = f.now + timedelta(seconds=draw(SECONDS) + 1)
    policy = policy.model_copy(
        update={
            "max_turnover_usd_per_day": cap if day else None,
            "max_turnover_usd_24h": cap if rolling else None,
        }
    )
    return policy, _with(f, turnover=Turnover(sent, sent, frees))


def _authority_case(draw: st.DrawFn, past: bool, policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """validUntil and maxSessionMinutes: ahead of now and of the session's age, or behind them."""
    if not past and draw(st.booleans()):
        return policy, f
    until = (
        f.now + timedelta(seconds=(-1 if past else 1) * draw(SECONDS)) + timedelta(seconds=0 if past else 1)
    )
    most = draw(st.integers(1, 600))
    age = timedelta(minutes=most) + timedelta(seconds=draw(SECONDS)) * (1 if past else -1)
    which = draw(st.sampled_from(["until", "session", "both"]))
    update: dict[str, object] = {}
    if which in ("until", "both"):
        update["valid_until"] = until
    if which in ("session", "both") or not update:
        update["max_session_minutes"] = most
    if past and which == "both" and draw(st.booleans()):
        update["valid_until"] = f.now + timedelta(days=1)  # one of the two past is enough
    return policy.model_copy(update=update), _with(f, session_age=age if age > timedelta(0) else timedelta(0))


# --- one loss model for spot and linear (issue 36) --------------------------------------------------------

SPOT_HELD_STEPS = st.just(0) | st.integers(1, 5000)
LEG_SHARES = st.integers(1, 100)  # a stop order's share of the coin held, in percent
LEG_TICKS = st.integers(1, 400) | st.integers(1, 20)  # how far below the bid a stop order waits
RESTING_STEPS = st.integers(1, 500)
LOSS_CAP_RATIOS = st.integers(-100, 100).map(lambda k: Decimal(10) ** (Decimal(k) / 100))  # 0.1 to 10


def draw_spot_facts(draw: st.DrawFn) -> Facts:
    """A spot market: the coin held (entry unknown, as the balance shows it) with up to two stop orders selling
    part of it below the bid, a buy (or now and then a sell) with or without a stop, and buys resting, each
    with or without a stop of its own."""
    linear = draw_facts(draw, state=TradingState.ACTIVE, reduce_only=False)
    rules = InstrumentRules(
        symbol=linear.rules.symbol,
        category="spot",
        tick_size=linear.rules.tick_size,
        qty_step=linear.rules.qty_step,
        min_qty=linear.rules.qty_step,
        max_qty=linear.rules.max_qty,
        min_notional=linear.rules.min_notional,
        max_leverage=Decimal(1),
        maintenance_margin_rate=Decimal(0),
        base_coin=linear.rules.base_coin,
    )
    touch, tick, step = linear.touch, rules.tick_size, rules.qty_step
    held = step * draw(SPOT_HELD_STEPS)
    legs = []
    for _ in range(draw(A_FEW) if held > 0 else 0):
        price = touch.bid - tick * draw(LEG_TICKS)
        qty = max((held * draw(LEG_SHARES) / 100 / step).to_integral_value(ROUND_FLOOR) * step, step)
        if price > 0:
            legs.append(StopLeg(price, min(qty, held), f"leg-{len(legs)}"))
    position = Position(rules.symbol, held, Decimal(0), Decimal(1), partial_stops=tuple(legs))
    side = Side.BUY if draw(MOSTLY) else Side.SELL
    order = OrderIntent(**{**_fields(linear.order), "side": side, "category": "spot"})
    fills = []
    for _ in range(draw(A_FEW)):
        price = touch.bid - tick * draw(LEG_TICKS)
        stop = price - tick * draw(LEG_TICKS) if draw(st.booleans()) else None
        if price > 0 and (stop is None or stop > 0):
            fills.append(PendingFill(Side.BUY, step * draw(RESTING_STEPS), price, stop, f"p{len(fills)}"))
    pending = PendingOrders(buy_qty=sum((p.qty for p in fills), Decimal(0)), fills=tuple(fills))
    return _with(linear, order=order, rules=rules, position=position, pending=pending, elsewhere=Decimal(0))


def draw_stopped_linear_facts(draw: st.DrawFn, *, flip: bool = False) -> Facts:
    """A linear market with the position's own stop now and then (the whole stop, beyond its entry on the
    losing side), an order that adds, shrinks or turns it round (always, with `flip`), with or without a stop,
    and orders resting with or without stops of their own."""
    f = draw_facts(draw, state=TradingState.ACTIVE, reduce_only=False, held=flip or draw(st.booleans()))
    tick, size = f.rules.tick_size, f.position.size
    stop = None
    if size != 0 and draw(st.booleans()):
        away = tick * draw(LEG_TICKS)
        stop = f.position.entry_price - away if size > 0 else f.position.entry_price + away
        stop = stop if stop > 0 else None
    position = Position(f.position.symbol, size, f.position.entry_price, f.position.leverage, stop_loss=stop)
    order = f.order
    if size != 0 and (flip or draw(st.booleans())):  # against the position, past it: a flip
        past = abs(size) + f.rules.qty_step * draw(st.integers(1, 2000))
        order = OrderIntent(**{**_fields(order), "side": Side.SELL if size > 0 else Side.BUY, "qty": past})
    fills = []
    for side in (Side.BUY, Side.SELL):
        qty = f.pending.on_side(side)
        if qty > 0 and draw(st.booleans()):
            price = f.touch.bid + tick * draw(LIMIT_TICKS)
            away = tick * draw(LEG_TICKS) * (-1 if side is Side.BUY else 1)
            stop = price + away if draw(st.booleans()) and price + away > 0 else None
            fills.append(PendingFill(side, qty, max(price, tick), stop, f"p-{side.value}"))
    pending = replace(f.pending, fills=tuple(fills))
    return _with(f, position=position, order=order, pending=pending)


@st.composite
def loss_model_cases(
    draw: st.DrawFn, *, spot: bool | None = None, flip: bool = False
) -> tuple[Policy, Facts]:
    """A policy with a loss limit (and requireStopLoss now and then) and spot or linear facts whose order
    carries a stop (nearer or farther than the limit allows) or none, the limit drawn around the order's own
    loss at that stop (oracle: judged_loss), so that refusals, cuts and passes all happen often. The size
    caps leave room; the market is allowed. `flip`: a linear position and an order that turns it round."""
    on_spot = not flip and (spot if spot is not None else draw(st.booleans()))
    f = draw_spot_facts(draw) if on_spot else draw_stopped_linear_facts(draw, flip=flip)
    policy = draw_policies(draw).model_copy(
        update={
            "allowed_markets": (f.order.symbol,),
            "max_notional_usd": Decimal(10) ** 9,
            "max_order_notional_usd": Decimal(10) ** 9,
            "max_leverage": Decimal(20),
            "min_liquidation_distance_pct": Decimal(0),
            "daily_order_cap": 50,
        }
    )
    f = _with(f, equity=Decimal(10) ** 9, orders_today=0)
    if draw(st.booleans()):
        reference = stop_reference(policy, f)
        away = f.rules.tick_size * draw(NEAR_PLUS_ONE)
        stop = reference - away if f.order.side is Side.BUY else reference + away
        if stop > 0 and (f.order.category != "spot" or f.order.side is Side.BUY):
            f = _with(f, order=OrderIntent(**{**_fields(f.order), "stop_loss": stop}))
    scale = f.order.qty * f.touch.mark * Decimal("0.05") + f.rules.tick_size
    cap = _cap(scale * draw(LOSS_CAP_RATIOS))
    policy = policy.model_copy(
        update={
            "max_loss_per_trade_usd": cap,
            "require_stop_loss": draw(st.sampled_from([False, False, True])),
        }
    )
    return policy, f
