"""Hypothesis strategies for random worlds and the orders an agent sends in them.

A world has one to three symbols, each linear, spot or both, with Bybit-like filters (tick, lot step,
minimum and maximum order, minimum notional, leverage, maintenance margin, price band) and a price on a
seeded random walk (from a quiet market to a wild one); positions long, short, dust (below the minimum order)
or oversized (above the maximum order); spot coins held; resting orders left by another client; and a random
valid policy.json whose caps are drawn relative to the instruments' minimum orders, so that cuts, minimums
and "nothing fits" all happen often. An agent's orders are drawn from the market as it is when they are
sent (its quote now), each with the exchange time that passes before its plan is placed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from tests.worlds.oracle import WORLD_START, Oracle, Order, ceil_steps, floor_steps
from tests.worlds.tools import ToolCase, tool_cases
from tests.worlds.world import STEP_MS, Holding, Instrument, Quote, Resting, Walk, World, plain

BASES = ("BTC", "ETH", "SOL", "XRP", "DOGE", "LINK", "PEPE")
UNKNOWN_SYMBOLS = ("BTCUSD", "FOOUSDT", "ETHUSDC")
TICKS = tuple(
    Decimal(t)
    for t in ("0.0000001", "0.000001", "0.0001", "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1")
)
# A walk's volatility, in % a step (a step a second of exchange time): from a quiet market to a wild one.
VOLATILITIES = (Decimal("0.01"), Decimal("0.05"), Decimal("0.2"), Decimal(1))
# Exchange time the harness lets pass between two cases, and between a plan and its place_order (ms).
GAPS = (0, 0, 0, STEP_MS, 3 * STEP_MS, 10 * STEP_MS, 60 * STEP_MS)
PAUSES = (0, 0, STEP_MS, 5 * STEP_MS, 30 * STEP_MS)
BANDS = (
    (Decimal("0.05"), Decimal("0.05")),
    (Decimal("0.01"), Decimal("0.02")),
    (Decimal("0.005"), Decimal("0.01")),
)


def gaps(world: World) -> st.SearchStrategy[int]:
    """The exchange time between two cases: GAPS, and for a dead-man's switch a silence just past its
    `afterSeconds` too (one of every four gaps), so that it fires while orders rest."""
    rule = world.policy.get("deadManSwitch") or {}
    after = rule.get("afterSeconds")
    if after is None:
        return st.sampled_from(GAPS)
    return st.sampled_from([*GAPS, *[(int(after) + 1) * STEP_MS] * 2])


def significant(value: Decimal, digits: int = 2) -> Decimal:
    """`value` rounded to `digits` significant digits (so it survives as a JSON number)."""
    if value <= 0:
        return value
    exponent = value.adjusted() - digits + 1
    rounded = value.quantize(Decimal(1).scaleb(exponent))
    return rounded if rounded > 0 else Decimal(1).scaleb(exponent)


def log_int(low: int, high: int) -> st.SearchStrategy[int]:
    """An integer in [low, high], spread over its orders of magnitude."""
    if high <= low:
        return st.just(low)
    return st.integers(0, 60).map(lambda i: low + round((high - low) * (i / 60) ** 4))


@dataclass(frozen=True, slots=True)
class Market:
    symbol: str
    tick: Decimal
    quote: Quote
    step: Decimal
    min_steps: int
    max_steps: int
    walk: Walk


@st.composite
def markets(draw: st.DrawFn, base: str, venue: str = "bybit") -> Market:
    tick = draw(st.sampled_from(TICKS))
    ticks = draw(log_int(2_000, 2_000_000))  # a 0.5 % price band spans ten ticks or more
    bid = tick * ticks
    spread = draw(st.sampled_from([2, 2, 4, 6]))  # even: the walk's mark, its mid, sits on the tick
    ask = bid + tick * spread
    walk = Walk(draw(st.sampled_from(VOLATILITIES)), draw(st.integers(1, 2**31)), spread)
    # one lot step is worth between about $0.0001 and $20
    exponent = bid.adjusted()
    step = Decimal(1).scaleb(draw(st.integers(-4 - exponent, 1 - exponent)))
    min_steps = draw(st.sampled_from([1, 1, 1, 2, 5, 10, 100]))
    # the largest order is worth from $50 (so positions above it happen) to $10M (Bybit's BTCUSDT: 100+ BTC)
    largest = Decimal(draw(st.sampled_from([50, 1000, 100_000, 10_000_000])))
    max_steps = max(min_steps * 2, int(largest / (step * bid)))
    symbol = base + ("-USDT" if venue == "okx" else "USDT")  # the venue's spelling (OKX: BTC-USDT)
    return Market(symbol, tick, Quote(bid, ask, (bid + ask) / 2), step, min_steps, max_steps, walk)


def min_notional(draw: st.DrawFn, market: Market, venue: str = "bybit") -> Decimal:
    """Bybit's minimum order value, or 0 where the largest order could not meet a tenth of it (OKX sets
    none)."""
    if venue == "okx":
        return Decimal(0)
    value = Decimal(draw(st.sampled_from([0, 1, 1, 5, 10])))
    return value if market.step * market.max_steps * market.quote.bid >= 10 * value else Decimal(0)


def instrument(draw: st.DrawFn, market: Market, category: str, venue: str = "bybit") -> Instrument:
    band = draw(st.sampled_from(BANDS))
    return Instrument(
        symbol=market.symbol,
        category=category,
        tick=market.tick,
        step=market.step,
        min_qty=market.step * (market.min_steps if category == "linear" else 1),
        max_qty=market.step * market.max_steps,
        min_notional=min_notional(draw, market, venue),
        max_leverage=Decimal(draw(st.sampled_from([10, 25, 50, 100]))),
        mmr=draw(st.sampled_from([Decimal("0.005"), Decimal("0.01"), Decimal("0.025"), Decimal("0.05")])),
        band_x=band[0],
        band_y=band[1],
    )


@st.composite
def holdings(draw: st.DrawFn, linear: Instrument, market: Market) -> Holding | None:
    kind = draw(
        st.sampled_from(["flat"] * 7 + ["normal"] * 6 + ["dust"] * 3 + ["minimum"] * 2 + ["oversized"] * 3)
    )
    if kind == "flat":
        return None
    min_steps = market.min_steps
    if kind == "dust" and min_steps > 1:
        steps = draw(st.integers(1, min_steps - 1))
    elif kind == "minimum":
        steps = min_steps
    elif kind == "oversized":
        steps = market.max_steps + draw(log_int(1, market.max_steps))
    else:
        steps = draw(log_int(min_steps, min_steps * 300))
    mark = market.quote.mark
    drift = Decimal(draw(st.integers(-50, 50))) / 1000
    avg = max(floor_steps(mark * (1 + drift), market.tick) * market.tick, market.tick)
    leverage = Decimal(draw(st.integers(1, int(min(linear.max_leverage, 20)))))
    side = draw(st.sampled_from(["Buy", "Sell"]))
    stop = None
    if draw(st.integers(0, 2)) == 0:  # a stop a human set before Pilot started: near or far
        share = draw(st.sampled_from([Decimal("0.002"), Decimal("0.01"), Decimal("0.05"), Decimal("0.2")]))
        ticks = floor_steps(mark * share, market.tick) + 1
        stop = mark - ticks * market.tick if side == "Buy" else mark + ticks * market.tick
        stop = stop if stop > 0 else None
    return Holding(market.symbol, side, market.step * steps, avg, leverage, stop)


@st.composite
def resting_orders(draw: st.DrawFn, chosen: Instrument, quote: Quote, min_steps: int) -> Resting:
    side = draw(st.sampled_from(["Buy", "Sell"]))
    away = draw(st.integers(1, 40)) * chosen.tick
    price = quote.bid - away if side == "Buy" else quote.ask + away
    steps = draw(log_int(min_steps, min_steps * 50))
    reduce_only = chosen.category == "linear" and draw(st.integers(0, 4)) == 0
    price = max(price, chosen.tick)
    if chosen.spot and side == "Sell" and draw(st.integers(0, 2)) == 0:
        # a human's spot stop: a TP/SL order selling coin held when the price falls to its trigger
        trigger = max(quote.bid - away * draw(st.integers(1, 10)), chosen.tick)
        return Resting(chosen.category, chosen.symbol, side, chosen.step * steps, trigger, trigger=trigger)
    stop = None
    if chosen.category == "linear" and not reduce_only and draw(st.integers(0, 2)) == 0:
        ticks = (
            floor_steps(price * draw(st.sampled_from([Decimal("0.003"), Decimal("0.03")])), chosen.tick) + 1
        )
        stop = price - ticks * chosen.tick if side == "Buy" else price + ticks * chosen.tick
        stop = stop if stop > 0 else None
    return Resting(chosen.category, chosen.symbol, side, chosen.step * steps, price, reduce_only, stop)


def relative(draw: st.DrawFn, unit: Decimal) -> Decimal:
    """A cap drawn relative to `unit` dollars: from half of it to a thousand times it."""
    factor = draw(
        st.sampled_from(
            [Decimal("0.5"), Decimal("0.9"), Decimal(1), Decimal(2), Decimal(5), Decimal(20), Decimal(1000)]
        )
    )
    jitter = Decimal(draw(st.integers(80, 130))) / 100
    return min(max(significant(unit * factor * jitter), Decimal("0.01")), Decimal(10) ** 9)


@st.composite
def policies(
    draw: st.DrawFn, instruments: tuple[Instrument, ...], quotes: dict[str, Quote], balance: Decimal
) -> dict[str, Any]:
    def unit_of(i: Instrument) -> Decimal:
        return max(i.min_qty * quotes[i.symbol].ask, i.min_notional, Decimal("0.01"))

    unit = unit_of(draw(st.sampled_from(instruments)))
    leverage, distance = [1, 2, 3, 5, 10, 20], [0, 5, 20, 50]
    if draw(st.integers(0, 3)) == 0:  # loose caps as large as the account: the exchange's margin binds first
        unit = max(balance, Decimal(1)) * draw(st.sampled_from([2, 8, 15]))
        leverage, distance = [20, 50, 100], [0, 0, 5]
    symbols = list(dict.fromkeys(i.symbol for i in instruments))
    allowed = [s for s in symbols if draw(st.integers(0, 4)) > 0]
    if draw(st.integers(0, 3)) == 0:
        allowed.append(draw(st.sampled_from(UNKNOWN_SYMBOLS)))
    policy: dict[str, Any] = {
        "allowedMarkets": allowed,
        "maxNotionalUsd": relative(draw, unit),
        "maxOrderNotionalUsd": relative(draw, unit),
        "maxLeverage": Decimal(draw(st.sampled_from(leverage))),
        "minLiquidationDistancePct": Decimal(draw(st.sampled_from(distance))),
        "dailyOrderCap": draw(st.sampled_from([0, 1, 3, 20, 1000])),
        "maxSlippagePct": draw(st.sampled_from([Decimal("0.1"), Decimal("0.5"), Decimal(1), Decimal(3)])),
        "planTtlSeconds": 300,
        "tradingState": draw(st.sampled_from(["active"] * 7 + ["reducing"] * 2 + ["halted"])),
    }
    if draw(st.integers(0, 3)) == 0:  # a desk that trades: orders pass, positions and their stops build up
        policy.update(allowedMarkets=symbols, dailyOrderCap=1000, tradingState="active")
    markets: dict[str, Any] = {}
    for i in instruments:
        # An override for a market outside allowedMarkets is an invalid policy.json (issue 14).
        if i.symbol in markets or i.symbol not in allowed or draw(st.integers(0, 3)) > 0:
            continue
        override: dict[str, Any] = {}
        if draw(st.booleans()):
            override["maxNotionalUsd"] = relative(draw, unit_of(i))
        if draw(st.booleans()):
            override["maxOrderNotionalUsd"] = relative(draw, unit_of(i))
        if draw(st.booleans()):
            override["maxLeverage"] = Decimal(draw(st.sampled_from([1, 2, 10])))
        if draw(st.booleans()):
            override["maxSlippagePct"] = draw(st.sampled_from([Decimal("0.2"), Decimal(2)]))
        if draw(st.integers(0, 3)) == 0:  # the loss rules per market too, spot and linear (issue 36)
            factor = draw(st.sampled_from([Decimal("0.01"), Decimal("0.2"), Decimal(5)]))
            override["maxLossPerTradeUsd"] = max(significant(unit_of(i) * factor), Decimal("0.01"))
        if draw(st.integers(0, 5)) == 0:
            override["requireStopLoss"] = draw(st.booleans())
        if override:
            markets[i.symbol] = override
    if markets:
        policy["markets"] = markets
    confirm: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        confirm["aboveNotionalUsd"] = relative(draw, unit)
    if draw(st.integers(0, 5)) == 0:
        tools = ["place_order", "place_order", "close_position", "cancel_order", "set_leverage"]
        confirm["actions"] = [draw(st.sampled_from(tools))]
    if confirm:
        policy["confirm"] = confirm
    policy.update(loss_rules(draw, unit))
    drawn = controls(draw, unit, balance)
    policy.update(drawn)
    if any(key in drawn for key in (*THROTTLES, *RESTING_RULES)) and draw(st.booleans()):
        # a desk that sends: what the throttles, resting orders and the dead-man's switch count builds up
        policy.update(allowedMarkets=symbols, dailyOrderCap=1000, tradingState="active")
        most = Decimal(10) ** 9
        policy.update(
            maxNotionalUsd=min(relative(draw, unit) * 20, most),
            maxOrderNotionalUsd=min(relative(draw, unit) * 5, most),
        )
    for override in (policy.get("markets") or {}).values():  # the collar per market too
        if draw(st.integers(0, 5)) == 0:
            override["priceCollarTicks"] = draw(st.sampled_from([2, 10, 100]))
        if draw(st.integers(0, 7)) == 0:
            override["maxRestingOrdersPerMarket"] = draw(st.sampled_from([1, 3]))
    return policy


def controls(draw: st.DrawFn, unit: Decimal, balance: Decimal) -> dict[str, Any]:
    """Issue 27's controls, each left out most of the time: the price collar, message throttles, resting
    orders, drawdown (relative to the account), the cooldown after losses, turnover (relative to the
    minimum order's value), validUntil and maxSessionMinutes around the worlds' clock, the dead-man's switch,
    self-trade prevention."""
    rules: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            rules["priceCollarPct"] = draw(
                st.sampled_from([Decimal("0.05"), Decimal("0.2"), Decimal(1), Decimal(5)])
            )
        if draw(st.booleans()) or not rules:
            rules["priceCollarTicks"] = draw(st.sampled_from([1, 3, 20, 500]))
    if draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            rules["maxOrderMessagesPerSecond"] = draw(st.sampled_from([1, 2, 4]))
        if draw(st.booleans()) or "maxOrderMessagesPerSecond" not in rules:
            rules["maxOrderMessagesPerMinute"] = draw(st.sampled_from([2, 5, 20]))
    if draw(st.integers(0, 3)) == 0:
        rules["maxRestingOrdersPerMarket"] = draw(st.sampled_from([1, 2]))
        if draw(st.booleans()):
            rules["maxRestingOrders"] = draw(st.sampled_from([1, 3]))
    if draw(st.integers(0, 4)) == 0:
        share = draw(st.sampled_from([Decimal("0.0005"), Decimal("0.003"), Decimal("0.03")]))
        rules["maxDrawdownUsd"] = max(significant(max(balance, Decimal(1)) * share), Decimal("0.01"))
        if draw(st.booleans()):
            rules["maxDrawdownPct"] = draw(st.sampled_from([Decimal("0.05"), Decimal("0.5"), Decimal(5)]))
        if draw(st.booleans()):
            rules["drawdownWindowHours"] = draw(st.sampled_from([1, 24]))
    if draw(st.integers(0, 5)) == 0:
        cooldown: dict[str, Any] = {
            "afterLosses": draw(st.integers(1, 2)),
            "minutes": draw(st.sampled_from([1, 5, 60])),
        }
        if draw(st.booleans()):
            cooldown["withinMinutes"] = draw(st.sampled_from([1, 10]))
        rules["cooldown"] = cooldown
    if draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from(["maxTurnoverUsdPerDay", "maxTurnoverUsd24h"]))
        rules[key] = max(
            significant(unit * draw(st.sampled_from([Decimal(1), Decimal(3), Decimal(10)]))), Decimal("0.01")
        )
    if draw(st.integers(0, 5)) == 0:
        minutes = draw(st.sampled_from([-60, 1, 3, 60]))
        rules["validUntil"] = (WORLD_START + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
    if draw(st.integers(0, 5)) == 0:
        rules["maxSessionMinutes"] = draw(st.sampled_from([1, 3, 30]))
    if draw(st.integers(0, 3)) == 0:
        rules["deadManSwitch"] = {
            "afterSeconds": draw(st.sampled_from([10, 30, 60])),
            "reducing": draw(st.booleans()),
        }
    if draw(st.integers(0, 3)) == 0:
        rules["selfTradePrevention"] = draw(st.sampled_from(["CancelMaker", "CancelTaker", "CancelBoth"]))
    return rules


# UTC windows around the worlds' clock (12:00): open, closed, and open across midnight.
WINDOWS = (
    [{"start": "08:00", "end": "20:00"}],
    [{"start": "13:00", "end": "14:00"}],
    [{"start": "22:00", "end": "12:30"}],
    [{"start": "12:01", "end": "11:59"}],
    [{"start": "01:00", "end": "02:00"}, {"start": "11:00", "end": "12:01"}],
)


def loss_rules(draw: st.DrawFn, unit: Decimal) -> dict[str, Any]:
    """Issue 15's rules, each left out most of the time: loss per trade at the stop (relative to the minimum
    order's value), requireStopLoss, maxOpenPositions and tradingHours."""
    rules: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        factor = draw(st.sampled_from([Decimal("0.002"), Decimal("0.01"), Decimal("0.05"), Decimal(1)]))
        rules["maxLossPerTradeUsd"] = max(significant(unit * factor), Decimal("0.01"))
    if draw(st.integers(0, 4)) == 0:
        rules["maxLossPerTradePct"] = draw(st.sampled_from([Decimal("0.1"), Decimal(1), Decimal(5)]))
    if draw(st.integers(0, 5)) == 0:
        rules["requireStopLoss"] = True
    if draw(st.integers(0, 4)) == 0:
        rules["maxOpenPositions"] = draw(st.sampled_from([1, 2]))
    if draw(st.integers(0, 5)) == 0:
        rules["tradingHours"] = draw(st.sampled_from(WINDOWS))
    return rules


def stop_for(draw: st.DrawFn, chosen: Instrument, quote: Quote, side: str) -> Decimal | None:
    """A stop-loss near the price, a few ticks or a share of the price away: on its side (mostly), on the
    wrong side, or off the tick; or none (half the time: the moving market triggers the stops of the orders
    that carry one). A spot buy's stop sells what it bought (issue 36)."""
    if (chosen.spot and side == "sell") or draw(st.booleans()):
        return None  # (a spot sell only sells coin held: it takes no stop)
    tick = chosen.tick
    if draw(st.booleans()):
        away = tick * draw(log_int(1, 3000))
    else:
        share = draw(st.sampled_from([Decimal("0.001"), Decimal("0.003"), Decimal("0.01"), Decimal("0.03")]))
        away = max(floor_steps(quote.bid * share, tick), 1) * tick
    kind = draw(st.sampled_from(["right"] * 5 + ["wrong", "off_tick"]))
    if kind == "wrong":
        away = -away
    stop = quote.bid - away if side == "buy" else quote.ask + away
    if kind == "off_tick":
        stop += tick / 3
    return max(stop, tick).quantize(Decimal("1e-12"))


@st.composite
def worlds(draw: st.DrawFn, venue: str = "bybit") -> World:
    """A world on `venue`: "bybit" (the paper exchange's own wire) or "okx" (the OKX front over it: its
    markets spelt BTC-USDT, sized in contracts on the wire, no minimum order value)."""
    bases = draw(st.lists(st.sampled_from(BASES), min_size=1, max_size=3, unique=True))
    instruments: list[Instrument] = []
    quotes: dict[str, Quote] = {}
    positions: list[Holding] = []
    balances: dict[str, Decimal] = {"USDT": Decimal(draw(st.sampled_from([0, 20, 200, 1000, 1000, 100_000])))}
    by_symbol: dict[str, Market] = {}
    for base in bases:
        market = draw(markets(base, venue))
        by_symbol[market.symbol] = market
        quotes[market.symbol] = market.quote
        categories = draw(st.sampled_from([("linear",)] * 4 + [("spot",)] * 2 + [("linear", "spot")]))
        for category in categories:
            made = instrument(draw, market, category, venue)
            instruments.append(made)
            if category == "linear":
                held = draw(holdings(made, market))
                if held is not None:
                    positions.append(held)
            else:
                steps = draw(
                    st.sampled_from(
                        [0, 0, 1, market.min_steps, 10 * market.min_steps, 1000 * market.min_steps]
                    )
                )
                if steps:
                    balances[base] = market.step * steps
    # the account could have opened its positions: margin at their leverage and any loss are in the wallet
    needed = sum(
        (
            h.size * h.avg_price / h.leverage
            + max((h.avg_price - quotes[h.symbol].mark) * h.signed, Decimal(0))
            for h in positions
        ),
        Decimal(0),
    )
    if needed:
        headroom = draw(st.sampled_from([Decimal("1.2"), Decimal(2), Decimal(50)]))
        balances["USDT"] = max(
            balances["USDT"], (needed * headroom).to_integral_value(rounding="ROUND_CEILING")
        )
    resting = []
    for _ in range(draw(st.integers(0, 3))):
        chosen = draw(st.sampled_from(instruments))
        resting.append(
            draw(resting_orders(chosen, quotes[chosen.symbol], by_symbol[chosen.symbol].min_steps))
        )
    policy = draw(policies(tuple(instruments), quotes, balances["USDT"]))
    walks = {symbol: market.walk for symbol, market in by_symbol.items()}
    return World(
        tuple(instruments),
        quotes,
        policy,
        tuple(positions),
        balances,
        tuple(resting),
        walks=walks,
        venue=venue,
    )


# --- the orders an agent sends --------------------------------------------------------------------


RESTING_RULES = ("maxRestingOrdersPerMarket", "maxRestingOrders", "deadManSwitch")
THROTTLES = ("maxOrderMessagesPerSecond", "maxOrderMessagesPerMinute")


@dataclass(frozen=True, slots=True)
class PlanCase:
    """plan_order with these arguments; `place` says whether to place a plan that passes, and `pause_ms` how
    much exchange time passes between the plan and its place_order (prices move meanwhile)."""

    args: dict[str, Any]
    place: bool
    pause_ms: int = 0


@dataclass(frozen=True, slots=True)
class CloseCase:
    symbol: str
    category: str
    qty: str | None


Case = PlanCase | CloseCase


def sizes(draw: st.DrawFn, oracle: Oracle, order: Order, chosen: Instrument) -> Decimal:
    """A size near where the answer changes: the minimum, the position, the largest that passes, or anywhere."""
    step = chosen.step
    min_steps = max(ceil_steps(chosen.min_qty, step), 1)
    held = abs(oracle.held(order))
    options = ["small", "anywhere", "off_step"]
    if held:
        options += ["position", "position"]
        if order.side == ("sell" if oracle.held(order) > 0 else "buy") and not chosen.spot:
            options += ["flip"]  # past the position: it turns round (issue 36)
    largest = oracle.largest(order)
    if largest is not None:
        options += ["largest", "largest"]
    affordable = what_the_account_affords(oracle, order, chosen)
    if affordable > 0:
        options += ["affordable"]
    kind = draw(st.sampled_from(options))
    if kind == "affordable":
        return max(floor_steps(affordable, step) * step + step * draw(st.integers(-1, 3)), step)
    if kind == "small":
        return step * draw(st.integers(1, 3 * min_steps))
    if kind == "position":
        return max(held + step * draw(st.integers(-2, 2)), step)
    if kind == "flip":  # the other side: as large again, or by the minimum order
        return held * 2 if draw(st.booleans()) else held + step * min_steps
    if kind == "largest":
        assert largest is not None
        return max(largest + step * draw(st.integers(-1, 3)), step)
    top = floor_steps(chosen.max_qty, step)
    qty = step * draw(log_int(1, top + top // 5))
    if kind == "off_step":
        qty += step / 2
    return qty


def what_the_account_affords(oracle: Oracle, order: Order, chosen: Instrument) -> Decimal:
    """The size the exchange's balance allows: margin at the position's leverage, or the free spot coin."""
    price = oracle.price(order)
    if chosen.spot:
        if order.side == "sell":
            return oracle.account.wallet.get(chosen.base, Decimal(0)) - oracle.locked(chosen.base)
        return (oracle.account.wallet.get("USDT", Decimal(0)) - oracle.locked("USDT")) / price
    position = oracle.account.positions.get(chosen.symbol)
    leverage = position.leverage if position is not None else Decimal(10)
    return max(oracle.available_margin(), Decimal(0)) * leverage / price


def limit_price(draw: st.DrawFn, chosen: Instrument, quote: Quote, side: str) -> Decimal:
    tick = chosen.tick
    base = quote.bid if side == "buy" else quote.ask
    price = base + tick * draw(st.integers(-30, 30))
    shape = draw(st.sampled_from(["on_tick"] * 6 + ["off_tick", "outside_band"]))
    if shape == "off_tick":
        price += tick / 3
    elif shape == "outside_band":
        price = price * (Decimal("1.08") if side == "buy" else Decimal("0.92"))
    return max(price, tick).quantize(Decimal("1e-12"))


@st.composite
def cases(draw: st.DrawFn, world: World, oracle: Oracle) -> Case | ToolCase:
    kind = draw(st.sampled_from(["plan"] * 8 + ["close"] * 2 + ["unknown"] + ["tool"] * 8))
    if kind == "tool":
        drawn = draw(tool_cases(world, oracle))
        if drawn is not None:
            return drawn
        kind = "plan"
    if kind == "close":
        chosen = draw(st.sampled_from(world.instruments))
        qty = None
        if draw(st.integers(0, 3)) == 0:
            qty = plain(chosen.step * draw(log_int(1, floor_steps(chosen.max_qty, chosen.step))))
        return CloseCase(chosen.symbol, chosen.category, qty)
    if kind == "unknown":
        symbol = draw(
            st.sampled_from(
                [*UNKNOWN_SYMBOLS, *(b + "USDT" for b in BASES if b + "USDT" not in world.quotes)]
            )
        )
        args = {
            "symbol": symbol,
            "side": draw(st.sampled_from(["buy", "sell"])),
            "qty": "1",
            "category": "linear",
        }
        return PlanCase(args, place=False)
    chosen = draw(st.sampled_from(world.instruments))
    quote = oracle.quote(chosen.symbol)
    probe = Order(chosen.symbol, chosen.category, "buy", "market")
    held = oracle.held(probe)
    side = draw(st.sampled_from(["buy", "sell"]))
    if held and draw(st.booleans()):
        side = "sell" if held > 0 else "buy"
    order_type = draw(st.sampled_from(["market"] * 3 + ["limit"] * 2))
    price = limit_price(draw, chosen, quote, side) if order_type == "limit" else None
    resting = any(key in world.policy for key in RESTING_RULES) and draw(st.integers(0, 2)) == 0
    if resting:  # an order that rests, for the rules about resting orders (issue 27), placed
        order_type = (
            "limit"  # on the side where it waits, from a few ticks to 5 % away (a walk moves 1 % a step)
        )
        share = draw(st.sampled_from([Decimal(0), Decimal("0.005"), Decimal("0.02"), Decimal("0.05")]))
        away = chosen.tick * (draw(st.integers(1, 20)) + floor_steps(quote.bid * share, chosen.tick))
        price = max(quote.bid - away if side == "buy" else quote.ask + away, chosen.tick)
    opposite = held != 0 and (held > 0) == (side == "sell")
    reduce_only = draw(st.integers(0, 9)) < (4 if opposite else 1)
    stop = None if reduce_only else stop_for(draw, chosen, quote, side)
    order = Order(chosen.symbol, chosen.category, side, order_type, price, reduce_only, stop_loss=stop)
    args = order.args(Decimal(1))
    if draw(st.integers(0, 4)) == 0:
        qty = sizes(draw, oracle, order, chosen) if oracle.instrument(order) else Decimal(1)
        notional = significant(qty * quote.ask, 3)
        del args["qty"]
        args["notional_usd"] = plain(max(notional, Decimal("0.01")))
    else:
        args["qty"] = plain(sizes(draw, oracle, order, chosen))
    place = draw(st.integers(0, 3)) > (0 if stop is not None else 1)  # mostly place an order with a stop
    if resting or any(key in world.policy for key in THROTTLES):
        place = place or draw(st.booleans())  # sends, for the throttles to count
    return PlanCase(args, place=place, pause_ms=draw(st.sampled_from(PAUSES)))
