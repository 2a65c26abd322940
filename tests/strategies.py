"""Shared hypothesis strategies: instruments, touches, positions, policies and whole Facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import strategies as st

from pilot.core.facts import (
    DayPnl,
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    PendingOrders,
    Position,
    Side,
    Touch,
    TradingState,
)
from pilot.core.policy import Policy, TradingWindow

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SYMBOLS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


def decimals(low: str, high: str, places: int) -> st.SearchStrategy[Decimal]:
    return st.decimals(Decimal(low), Decimal(high), places=places, allow_nan=False, allow_infinity=False)


@st.composite
def instruments(draw: st.DrawFn, symbol: str | None = None) -> InstrumentRules:
    symbol = symbol or draw(st.sampled_from(SYMBOLS))
    step = draw(
        st.sampled_from([Decimal("0.00001"), Decimal("0.001"), Decimal("0.01"), Decimal("0.1"), Decimal(1)])
    )
    tick = draw(st.sampled_from([Decimal("0.01"), Decimal("0.1"), Decimal("0.5"), Decimal(1)]))
    return InstrumentRules(
        symbol=symbol,
        category="linear",
        tick_size=tick,
        qty_step=step,
        min_qty=step * draw(st.integers(1, 20)),
        max_qty=step * draw(st.integers(10_000, 10_000_000)),
        min_notional=draw(decimals("0", "10", 0)),
        max_leverage=Decimal(draw(st.sampled_from([10, 25, 50, 100]))),
        maintenance_margin_rate=draw(decimals("0.001", "0.05", 3)),
        base_coin=symbol.removesuffix("USDT"),
    )


@st.composite
def touches(draw: st.DrawFn, rules: InstrumentRules) -> Touch:
    ticks = draw(st.integers(10, 2_000_000))
    bid = rules.tick_size * ticks
    ask = bid + rules.tick_size * draw(st.integers(1, 5))
    mark = bid + rules.tick_size * draw(st.integers(-3, 3))
    return Touch(bid=bid, ask=ask, mark=max(mark, rules.tick_size), observed_at=NOW)


@st.composite
def positions(draw: st.DrawFn, rules: InstrumentRules, touch: Touch) -> Position:
    steps = draw(st.integers(-2000, 2000) | st.just(0))
    return Position(
        symbol=rules.symbol,
        size=rules.qty_step * steps,
        entry_price=touch.mark,
        leverage=Decimal(draw(st.integers(1, 10))),
    )


@st.composite
def policies(draw: st.DrawFn, symbols: tuple[str, ...] = SYMBOLS) -> Policy:
    return Policy(
        allowed_markets=tuple(draw(st.lists(st.sampled_from(symbols), unique=True, min_size=1))),
        max_notional_usd=draw(decimals("1", "100000", 2)),
        max_order_notional_usd=draw(decimals("1", "100000", 2)),
        max_leverage=Decimal(draw(st.integers(1, 20))),
        min_liquidation_distance_pct=draw(decimals("0", "80", 1)),
        daily_order_cap=draw(st.integers(0, 50)),
        max_slippage_pct=draw(decimals("0.01", "3", 2)),
    )


@st.composite
def orders(draw: st.DrawFn, rules: InstrumentRules, touch: Touch) -> OrderIntent:
    order_type = draw(st.sampled_from(list(OrderType)))
    side = draw(st.sampled_from(list(Side)))
    limit = None
    if order_type is OrderType.LIMIT:
        limit = max(touch.bid + rules.tick_size * draw(st.integers(-50, 50)), rules.tick_size)
    return OrderIntent(
        symbol=rules.symbol,
        side=side,
        qty=rules.qty_step * draw(st.integers(1, 5000)),
        order_type=order_type,
        limit_price=limit,
        reduce_only=draw(st.booleans()),
    )


@st.composite
def facts(draw: st.DrawFn, *, state: TradingState | None = None, reduce_only: bool | None = None) -> Facts:
    rules = draw(instruments())
    touch = draw(touches(rules))
    order = draw(orders(rules, touch))
    if reduce_only is not None:
        order = OrderIntent(**{**_fields(order), "reduce_only": reduce_only})
    return Facts(
        order=order,
        rules=rules,
        touch=touch,
        position=draw(positions(rules, touch)),
        equity=draw(decimals("0", "1000000", 2)),
        orders_today=draw(st.integers(0, 60)),
        trading_state=state or draw(st.sampled_from(list(TradingState))),
        now=NOW + timedelta(seconds=draw(st.integers(0, 86_000))),
        pending=draw(pendings(rules)),
        elsewhere=draw(st.just(Decimal(0)) | st.builds(lambda k: rules.qty_step * k, st.integers(0, 500))),
    )


@st.composite
def pendings(draw: st.DrawFn, rules: InstrumentRules) -> PendingOrders:
    """Open orders (or unknown sends) on each side; mostly none, as on a quiet account."""
    if draw(st.booleans()):
        return PendingOrders()
    return PendingOrders(
        buy_qty=rules.qty_step * draw(st.integers(0, 500)),
        sell_qty=rules.qty_step * draw(st.integers(0, 500)),
    )


def _fields(order: OrderIntent) -> dict[str, object]:
    return {name: getattr(order, name) for name in OrderIntent.__slots__}


@st.composite
def trading_windows(draw: st.DrawFn) -> tuple[TradingWindow, ...]:
    """Zero to three UTC windows, some wrapping past midnight."""
    count = draw(st.integers(0, 3))
    windows = []
    for _ in range(count):
        start, end = draw(st.integers(0, 1439)), draw(st.integers(0, 1439))
        if start == end:
            continue
        windows.append(
            TradingWindow(start=f"{start // 60:02}:{start % 60:02}", end=f"{end // 60:02}:{end % 60:02}")
        )
    return tuple(windows)


@st.composite
def loss_policies(draw: st.DrawFn, symbols: tuple[str, ...] = SYMBOLS) -> Policy:
    """policies() with the loss rules of issue 15 drawn too: each left out about half the time."""
    policy = draw(policies(symbols))
    return policy.model_copy(
        update={
            "max_loss_per_trade_usd": draw(st.none() | decimals("0.5", "5000", 2)),
            "max_loss_per_trade_pct": draw(st.none() | decimals("0.1", "20", 1)),
            "require_stop_loss": draw(st.booleans()),
            "daily_loss_limit_usd": draw(st.none() | decimals("1", "10000", 2)),
            "daily_loss_limit_pct": draw(st.none() | decimals("0.5", "20", 1)),
            "max_open_positions": draw(st.none() | st.integers(1, 3)),
            "trading_hours": draw(st.just(()) | trading_windows()),
        }
    )


@st.composite
def protected_facts(draw: st.DrawFn, *, state: TradingState | None = None) -> Facts:
    """facts() with a stop-loss and take-profit (on either side of the price, or none), the day's PnL and
    the markets with open positions drawn too."""
    f = draw(facts(state=state, reduce_only=False))
    tick, bid = f.rules.tick_size, f.touch.bid

    def price_near() -> st.SearchStrategy[Decimal | None]:
        offsets = st.integers(-3000, 3000) | st.integers(-20, 20)
        return st.none() | offsets.map(lambda k: max(bid + tick * k, tick))

    order = OrderIntent(
        **{**_fields(f.order), "stop_loss": draw(price_near()), "take_profit": draw(price_near())}
    )
    pnl = DayPnl(draw(decimals("-20000", "5000", 2)), draw(decimals("-20000", "5000", 2)))
    others = frozenset(draw(st.lists(st.sampled_from(SYMBOLS), unique=True)))
    if f.position.size != 0:
        others |= {f.rules.symbol}
    else:
        others -= {f.rules.symbol}
    return Facts(
        **{
            **{name: getattr(f, name) for name in Facts.__slots__},
            "order": order,
            "day_pnl": pnl,
            "open_markets": others,
        }
    )
