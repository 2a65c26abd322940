"""Prices on the safe side: worst-fill valuation, tick and lot rounding, and the liquidation estimate."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal

from pilot.core.facts import BUY, LIMIT, InstrumentRules, OrderIntent, PriceBand, Side, Touch

HUNDRED = Decimal(100)
ZERO = Decimal(0)
ONE = Decimal(1)  # beside a Decimal, a Decimal: an int is converted on every operation (the hot path's)
# Bybit's standard taker fee rate (non-VIP, linear): what an order costs out of the balance, and what a stop
# costs on the way in and on the way out.
TAKER_FEE = Decimal("0.00055")


def floor_to_step(value: Decimal, step: Decimal) -> Decimal:
    """Round a quantity down to a whole number of lot steps (never up: a size must not grow)."""
    if step <= ZERO:
        return value
    return (value / step).to_integral_value(rounding=ROUND_FLOOR) * step


def ceil_to_step(value: Decimal, step: Decimal) -> Decimal:
    """Round up to a whole number of steps."""
    if step <= ZERO:
        return value
    return (value / step).to_integral_value(rounding=ROUND_CEILING) * step


def round_price_safe(price: Decimal, tick: Decimal, side: Side) -> Decimal:
    """Round a limit price to the tick on the side that can only cost less: buys down, sells up."""
    return floor_to_step(price, tick) if side is BUY else ceil_to_step(price, tick)


def price_on_tick(price: Decimal, tick: Decimal, side: Side) -> Decimal:
    """A limit price the exchange accepts: rounded on the safe side, and at least one tick."""
    if tick <= 0:
        return price
    return max(round_price_safe(price, tick, side), tick)


def send_price(
    order: OrderIntent,
    touch: Touch,
    rules: InstrumentRules,
    max_slippage_pct: Decimal,
    band: PriceBand | None = None,
) -> Decimal:
    """The limit price that will be sent: a limit order's own price, or a market order's Limit IOC price.

    A market buy may pay at most ask x (1 + slippage), rounded up to the tick; a market sell may receive no
    less than bid x (1 - slippage), rounded down to the tick. Both bound the fill at the worst price the
    policy allows, so what is checked is what is sent. Inside the exchange's price band when it is known:
    a buy no higher than its buy limit, a sell no lower than its sell limit (rounded into the band).
    """
    if order.order_type is LIMIT and order.limit_price is not None:
        return order.limit_price
    factor = max_slippage_pct / HUNDRED
    if order.side is BUY:
        price = ceil_to_step(touch.ask * (ONE + factor), rules.tick_size)
    else:
        price = max(floor_to_step(touch.bid * (ONE - factor), rules.tick_size), rules.tick_size)
    return inside_band(price, order.side, band, rules.tick_size)


def inside_band(price: Decimal, side: Side, band: PriceBand | None, tick: Decimal) -> Decimal:
    """A limit price moved into the band if it lies outside: a buy down to the buy limit, a sell up."""
    if band is None:
        return price
    if side is BUY:
        return min(price, floor_to_step(band.buy_limit, tick))
    return max(price, ceil_to_step(band.sell_limit, tick))


def band_inside(
    order: OrderIntent, touch: Touch, rules: InstrumentRules, max_slippage_pct: Decimal
) -> PriceBand | None:
    """The part of the exchange's price band known from the mark alone, when the order's price lies in it.

    `rules.band_margin` says every price within mark x (1 +/- margin) is inside the band, its edges here on
    the tick towards the mark. An order priced inside that is never moved or refused by the band, so this
    inner band gives every judgement what the band itself would (the limit's check, a market order's IOC
    price, a suggestion's price) and the band need not be read. None: the margin is not known, or the price
    lies beyond it (read the band).
    """
    margin = rules.band_margin
    if margin is None or touch.mark <= ZERO:
        return None
    tick = rules.tick_size
    inner = PriceBand(
        buy_limit=floor_to_step(touch.mark * (ONE + margin), tick),
        sell_limit=max(ceil_to_step(touch.mark * (ONE - margin), tick), tick),
    )
    price = send_price(order, touch, rules, max_slippage_pct)
    return inner if inside_band(price, order.side, inner, tick) == price else None


def collar_edge(
    mark: Decimal, side: Side, tick: Decimal, pct: Decimal | None, ticks: int | None
) -> Decimal | None:
    """The farthest limit price from mark the price collar allows on the side where a mistake costs money:
    above mark for a buy, below it for a sell; the nearer of `pct` percent and `ticks` ticks, on the tick
    towards mark (and at least one tick). None: no collar."""
    away = mark * pct / HUNDRED if pct is not None else None
    if ticks is not None:
        in_ticks = tick * ticks
        away = in_ticks if away is None or in_ticks < away else away
    if away is None:
        return None
    if tick <= 0:
        return mark + away if side is BUY else max(mark - away, ZERO)
    if side is BUY:
        return max(floor_to_step(mark + away, tick), tick)
    return max(ceil_to_step(mark - away, tick), tick)


def inside_collar(price: Decimal, side: Side, edge: Decimal | None) -> Decimal:
    """A limit price moved to the collar's edge if it lies beyond it: a buy down to it, a sell up."""
    if edge is None:
        return price
    return min(price, edge) if side is BUY else max(price, edge)


def worst_fill_price(
    order: OrderIntent,
    touch: Touch,
    rules: InstrumentRules,
    max_slippage_pct: Decimal,
    band: PriceBand | None = None,
) -> Decimal:
    """The price at which the order's notional is valued: the highest price it can fill at.

    A buy pays at most its (IOC) limit. A sell fills from the top bid down to its limit, so it is valued at
    the higher of its limit and the best bid; a market sell at the best bid.
    """
    return worst_fill_for(order.side, send_price(order, touch, rules, max_slippage_pct, band), touch.bid)


def worst_fill_for(side: Side, sent_price: Decimal, bid: Decimal) -> Decimal:
    """worst_fill_price() from the price already worked out for sending (the hot path computes it once)."""
    return sent_price if side is BUY else max(sent_price, bid)


def liquidation_price(size: Decimal, price: Decimal, equity: Decimal, mmr: Decimal) -> Decimal | None:
    """Estimate the liquidation price of a one-way linear position under cross margin.

    Liquidation happens when account equity plus the position's unrealised PnL falls to its maintenance
    margin: ``E + q (L - P) = mmr |q| L``. Solving for L gives ``L = (q P - E) / (q (1 - mmr sign(q)))``.

    Assumptions: the whole account equity ``E`` backs this one position (other positions' margin and
    fees are ignored); the resulting position is treated as opened at ``P`` (its existing unrealised PnL
    is already inside ``E``); the maintenance margin rate is flat (no risk-limit tiers).

    Returns None when there is no liquidation price: a flat position, or a long so well funded that L
    would be at or below zero.
    """
    if size == 0:
        return None
    sign = 1 if size > 0 else -1
    denominator = size * (1 - mmr * sign)
    if denominator == 0:
        return None
    level = (size * price - equity) / denominator
    if level <= 0:
        return None
    return level


# How far inside its minimum a liquidation distance must be for `liquidation_clear` to pass it without the
# division (percentage points): far above the rounding of 28-digit arithmetic, far below any policy's step.
CLEAR_MARGIN_PCT = Decimal("0.000001")


def liquidation_clear(
    size: Decimal, price: Decimal, equity: Decimal, mmr: Decimal, mark: Decimal, minimum_pct: Decimal
) -> bool:
    """True when liquidation_distance_pct(...) is certainly at least `minimum_pct`: the same inequality with
    the divisions multiplied out (a long's level at most mark x (1 - minimum), a short's at least mark x
    (1 + minimum)), passed only with CLEAR_MARGIN_PCT to spare. False says nothing: work the distance out.
    The hot path's test; the distance itself is worked out only for an order near its limit."""
    if size == ZERO or mark <= ZERO or not ZERO <= mmr < ONE:
        return False
    at_least = minimum_pct + CLEAR_MARGIN_PCT
    if size > ZERO:
        return (size * price - equity) * HUNDRED <= size * (ONE - mmr) * mark * (HUNDRED - at_least)
    return (equity - size * price) * HUNDRED >= -size * (ONE + mmr) * mark * (HUNDRED + at_least)


def liquidation_distance_pct(
    size: Decimal, price: Decimal, equity: Decimal, mmr: Decimal, mark: Decimal
) -> Decimal | None:
    """Distance from mark to the estimated liquidation price, in percent of mark (None: never liquidated)."""
    level = liquidation_price(size, price, equity, mmr)
    if level is None or mark <= 0:
        return None
    if (size > 0 and level >= mark) or (size < 0 and level <= mark):
        return ZERO
    return abs(level - mark) / mark * HUNDRED


@dataclass(frozen=True, slots=True)
class Liquidation:
    """The estimated liquidation of a position: its price (on the tick) and its distance from the mark."""

    price: Decimal
    distance_pct: Decimal

    @property
    def within_reach(self) -> bool:
        """Whether the price can get there without more than doubling: a short's liquidation twice the mark
        away or more is none a trader would call near (a long's is always within reach)."""
        return self.distance_pct < HUNDRED

    def words(self) -> str:
        """The liquidation for a person: the price and how far, or that it is out of reach."""
        price = format(self.price.normalize(), "f")
        if not self.within_reach:
            return f"no liquidation within reach (about {price}, over twice the mark)"
        distance = self.distance_pct.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        return f"liquidation about {price} ({distance}% from the mark)"


def liquidation(
    size: Decimal, price: Decimal, equity: Decimal, mmr: Decimal, mark: Decimal, tick: Decimal
) -> Liquidation | None:
    """The estimated liquidation of the position (liquidation_price) with its distance from the mark, the
    price rounded to the tick; None when there is none."""
    level = liquidation_price(size, price, equity, mmr)
    distance = liquidation_distance_pct(size, price, equity, mmr, mark)
    if level is None or distance is None:
        return None
    on_tick = (level / tick).to_integral_value(rounding=ROUND_HALF_UP) * tick if tick > 0 else level
    return Liquidation(on_tick, distance)
