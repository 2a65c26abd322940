"""Which sizes of an order pass: an oracle written apart from pilot.core, from docs/, SCENARIOS.md and
Bybit's documentation. It imports nothing of pilot (not the rules, sizing or valuation), so a bug there
cannot hide here.

What passes, for one order at one size `q` (lot steps of the instrument), on the exchange's state now (its
quotes as the exchange serves them at that moment: prices move between an agent's steps):

* the instrument exists on the exchange (else nothing passes: an unknown symbol);
* trading state: `halted` passes nothing; `reducing` passes only orders that shrink a position;
* `allowedMarkets` bounds only orders that can grow a position;
* reduce-only (linear): there is a position on the other side, and `q` is no larger than it; a dust position
  (below the minimum order) may be closed by a reduce-only order of the minimum size, which Bybit caps at
  the position ("Perps & Futures: ... close the position" in create-order.mdx, and a reduce-only order is
  reduced to the position size); spot has no reduce-only orders (Bybit: "Valid for linear, inverse &
  option"), so a reduce-only spot order never passes;
* the grid: whole lot steps, at least `minOrderQty` (linear; spot's is deprecated and not checked), at
  most `maxOrderQty`, and `q x price >= minNotionalValue` except for a reduce-only order (Bybit's trading
  rules: "closing orders are exempt from notional value but still adhere to minimum size");
* the price band (SCENARIOS.md, Bybit's price-limit formula): a limit price outside the band does not pass;
  a market order is sent as a Limit IOC at the slippage price kept inside the band;
* `dailyOrderCap`, `maxOrderNotionalUsd`, `maxNotionalUsd`, `maxLeverage`, `minLiquidationDistancePct`
  bound only orders that can grow a position; they value the order at its worst fill (a buy at its limit,
  a sell at the higher of its limit and the bid) and count every open order on its side as filled;
* what the exchange accepts: initial margin for a linear order (the paper exchange's rule: opening size x
  price / leverage plus the taker fee, against the available balance), free quote coin for a spot buy,
  free base coin for a spot sell.

The loss rules (issue 15; issue 36 for spot, flips and what rests), for orders that can grow a position:
`tradingHours` (UTC windows, the world's clock at 12:00), `maxOpenPositions` (linear markets with a position
once this order and its side fill, this one included), `requireStopLoss` (a stop is given: a linear order,
or a spot buy), a `stop_loss` on the tick and below the order's price, the mark and the bid for a buy (above
its price, the mark and the ask for a sell: Bybit checks it against the last price, inside the touch), and
`maxLossPerTradeUsd` / `Pct`: the position the order leaves, at the stops that will then apply to it, loses
at most the smaller limit. On linear a stop sent with an order becomes the whole position's
(tests/worlds/at_stops.py), the order fills at its sent price (a buy's highest, a sell's lowest) and the
orders resting on its side fill in the way that loses most; some of the position left under no stop has no
bound, so it never passes under a limit (an order that turns the position round leaves the other side
without one unless it carries one). A limit order (not reduce-only) beside a position may rest and fill after
the position is gone, its stop say: whatever it does now, it is judged from flat too (requireStopLoss and
the loss limit), as Bybit keeps it resting. On spot the coin held is the position, valued at the bid (its
cost is not known), with the buy at its sent price and the spot buys resting; each spot stop order (a spot
TP/SL or conditional sell waiting below the bid, at market) sells its own quantity, a stop sent with a buy
sells what it bought, and the coin no stop sells falls to zero (at_stops.spot_loss). A spot sell is never
judged by them.

The pre-trade controls (issue 27), from docs/policy.md: the message throttles (Pilot's own
creates, amends and cancels in the last second and minute of Pilot's clock, every order refused when one
more would pass the cap); a limit order's price collar (a buy's price no farther above the mark, a sell's no
farther below, than `priceCollarPct` or `priceCollarTicks`, whichever is nearer) and resting orders (a limit
order rests; ordinary orders resting on its market and on the account count, against
`maxRestingOrdersPerMarket` and `maxRestingOrders`), which bind every order; and for growing orders only:
`validUntil` and `maxSessionMinutes` (the session begins with the client's first call), the drawdown from
the peak equity Pilot read (a latch: once reached, until the window passes), the cooldown after losing
trades (from the first judgement that saw them, for its minutes), turnover (the notional Pilot sent, plus
this order at its worst fill, against the caps), and the stop collar (a growing order's stop no farther
from the mark than the collar). The dead-man's switch turns trading `reducing` when it fires with
`reducing` (the kill switch).

An order shrinks a position when it is reduce-only, or on the other side of the position and, with the
open orders on its side, no larger than it (spot: a sell of at most the base coin held).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from tests.worlds.at_stops import Fill, Protected, loss_at_stops, spot_loss, worst_left
from tests.worlds.world import Instrument, Quote, World, plain

ZERO = Decimal(0)
HUNDRED = Decimal(100)
WORLD_START = datetime(
    2026, 11, 30, 12, 0, tzinfo=UTC
)  # Pilot's clock at a world's start (harness.open_world)
PILOT_LINK = "pilot-"  # the client order ids Pilot gives its orders (a plan id's hash follows)
DEFAULTS: dict[str, Any] = {
    "maxNotionalUsd": Decimal(25),
    "maxOrderNotionalUsd": Decimal(25),
    "maxLeverage": Decimal(3),
    "minLiquidationDistancePct": Decimal(20),
    "maxSlippagePct": Decimal("0.5"),
    "dailyOrderCap": 20,
    "tradingState": "active",
}
OVERRIDABLE = (
    "maxNotionalUsd",
    "maxOrderNotionalUsd",
    "maxLeverage",
    "minLiquidationDistancePct",
    "maxSlippagePct",
)


def floor_steps(value: Decimal, step: Decimal) -> int:
    return int((value / step).to_integral_value(rounding=ROUND_FLOOR))


def ceil_steps(value: Decimal, step: Decimal) -> int:
    return int((value / step).to_integral_value(rounding=ROUND_CEILING))


@dataclass(frozen=True, slots=True)
class Limits:
    max_notional: Decimal
    max_order_notional: Decimal
    max_leverage: Decimal
    min_liquidation_pct: Decimal
    slippage_pct: Decimal


@dataclass(frozen=True, slots=True)
class PolicyRules:
    """policy.json restated: the top-level limits, per-market overrides, state, caps and confirmation."""

    raw: Mapping[str, Any]

    def get(self, key: str) -> Any:
        return self.raw.get(key, DEFAULTS.get(key))

    def limits(self, symbol: str) -> Limits:
        override = (self.raw.get("markets") or {}).get(symbol, {})

        def pick(key: str) -> Decimal:
            return Decimal(override.get(key, self.get(key)))

        return Limits(*(pick(key) for key in OVERRIDABLE))

    @property
    def allowed(self) -> frozenset[str]:
        return frozenset(self.raw.get("allowedMarkets", ()))

    @property
    def state(self) -> str:
        return str(self.get("tradingState"))

    @property
    def daily_cap(self) -> int:
        return int(self.get("dailyOrderCap"))

    @property
    def above_notional(self) -> Decimal | None:
        above = (self.raw.get("confirm") or {}).get("aboveNotionalUsd")
        return None if above is None else Decimal(above)

    @property
    def confirm_actions(self) -> frozenset[str]:
        return frozenset((self.raw.get("confirm") or {}).get("actions", ()))

    def loss_limit(self, symbol: str, equity: Decimal) -> Decimal | None:
        override = (self.raw.get("markets") or {}).get(symbol, {})
        found = []
        usd = self.usd_loss_limit(symbol)
        pct = override.get("maxLossPerTradePct", self.raw.get("maxLossPerTradePct"))
        if usd is not None:
            found.append(usd)
        if pct is not None:
            found.append(max(equity, ZERO) * Decimal(pct) / HUNDRED)
        return min(found) if found else None

    def usd_loss_limit(self, symbol: str) -> Decimal | None:
        """maxLossPerTradeUsd for the market (its override, else the top level), or None."""
        override = (self.raw.get("markets") or {}).get(symbol, {})
        usd = override.get("maxLossPerTradeUsd", self.raw.get("maxLossPerTradeUsd"))
        return None if usd is None else Decimal(usd)

    def require_stop(self, symbol: str) -> bool:
        override = (self.raw.get("markets") or {}).get(symbol, {})
        return bool(override.get("requireStopLoss", self.raw.get("requireStopLoss", False)))

    def open_hours(self, minute: int) -> bool:
        windows = self.raw.get("tradingHours") or []
        if not windows:
            return True
        for window in windows:
            start = int(window["start"][:2]) * 60 + int(window["start"][3:])
            end = int(window["end"][:2]) * 60 + int(window["end"][3:])
            if (start < end and start <= minute < end) or (start > end and (minute >= start or minute < end)):
                return True
        return False

    def market_field(self, symbol: str, key: str) -> Any:
        """A field a market may override: its override, else the top level (else None)."""
        override = (self.raw.get("markets") or {}).get(symbol, {})
        return override.get(key, self.raw.get(key))

    def collar(self, symbol: str) -> tuple[Decimal | None, int | None]:
        pct, ticks = (
            self.market_field(symbol, "priceCollarPct"),
            self.market_field(symbol, "priceCollarTicks"),
        )
        return (Decimal(pct) if pct is not None else None), (int(ticks) if ticks is not None else None)

    def throttles(self) -> list[tuple[int, timedelta, str]]:
        """(cap, window, code) of each message throttle set."""
        found = []
        for key, window in (
            ("maxOrderMessagesPerSecond", timedelta(seconds=1)),
            ("maxOrderMessagesPerMinute", timedelta(minutes=1)),
        ):
            if self.raw.get(key) is not None:
                found.append((int(self.raw[key]), window, key))
        return found

    def drawdown_limit(self, peak: Decimal) -> Decimal | None:
        usd, pct = self.raw.get("maxDrawdownUsd"), self.raw.get("maxDrawdownPct")
        found = [Decimal(usd)] if usd is not None else []
        if pct is not None:
            found.append(max(peak, ZERO) * Decimal(pct) / HUNDRED)
        return min(found) if found else None

    @property
    def valid_until(self) -> datetime | None:
        until = self.raw.get("validUntil")
        return datetime.fromisoformat(until) if until else None

    def needs_human(self, tool: str, notional: Decimal, *, grows: bool = True) -> bool:
        """docs/policy.md, confirm: `actions` always ask; `aboveNotionalUsd` asks only for an order that can
        grow the worst-case exposure (one that only shrinks it never waits on it, as close_position never
        did)."""
        if tool in self.confirm_actions:
            return True
        above = self.above_notional
        return tool == "place_order" and grows and above is not None and notional > above


@dataclass(frozen=True, slots=True)
class Position:
    size: Decimal  # signed
    avg_price: Decimal
    leverage: Decimal
    stop_loss: Decimal | None = None  # the whole stop (tpslMode Full), as the position list shows it
    partial_stops: tuple[tuple[Decimal, Decimal], ...] = ()  # (trigger price, qty) of its partial stop-losses


@dataclass(frozen=True, slots=True)
class OpenOrder:
    category: str
    symbol: str
    side: str  # "buy" | "sell"
    leaves: Decimal
    price: Decimal
    reduce_only: bool
    stop_loss: Decimal | None = None  # the stop it carries: the position's whole stop once it fills
    order_id: str = ""
    kind: str = (
        ""  # "" an ordinary order; else Bybit's stopOrderType (StopLoss, PartialStopLoss, TakeProfit...)
    )
    trigger: Decimal | None = None  # a TP/SL or conditional order's trigger price
    qty: Decimal = ZERO  # the order's total quantity (leaves is what is left of it)
    take_profit: Decimal | None = None
    link: str = ""  # the client order id: Pilot's begin with PILOT_LINK
    order_type: str = ""  # Market or Limit: what a triggered order becomes

    @property
    def ordinary(self) -> bool:
        return not self.kind


@dataclass(frozen=True, slots=True)
class Account:
    """The exchange's state at one moment, as the paper exchange holds it."""

    positions: Mapping[str, Position]  # linear symbols
    wallet: Mapping[str, Decimal]
    open_orders: tuple[OpenOrder, ...]  # newest first, as the exchange lists them
    orders_today: int  # orders Pilot sent today (a send counts whatever the exchange answered)
    quotes: Mapping[str, Quote]  # every symbol's quote now, as the exchange serves it
    # What the pre-trade controls (issue 27) count, as the harness saw Pilot act: Pilot's clock now, the ages
    # of its creates, amends and cancels of the last minute (newest first), the notional it sent, how long
    # the client's session has lasted, the drawdown latch, when a cooldown ends, and the kill switch the
    # dead-man's switch turned on.
    now: datetime = WORLD_START
    messages: tuple[timedelta, ...] = ()
    turnover: Decimal = ZERO
    session_age: timedelta | None = None
    drawdown_latched: bool = False
    cooldown_until: datetime | None = None
    kill_switch: bool = False


@dataclass(frozen=True, slots=True)
class Order:
    """An order without its size: what plan_order is asked, less qty or notional."""

    symbol: str
    category: str
    side: str  # "buy" | "sell"
    order_type: str  # "market" | "limit"
    price: Decimal | None = None
    reduce_only: bool = False
    closing: bool = False  # planned by close_position, whose plan no notional threshold holds back
    stop_loss: Decimal | None = None
    ioc: bool = False  # sent Immediate-or-Cancel (a market order as a Limit IOC): it never rests

    @property
    def sign(self) -> int:
        return 1 if self.side == "buy" else -1

    def args(self, qty: Decimal) -> dict[str, Any]:
        """plan_order's arguments for this order at `qty`."""
        args: dict[str, Any] = {
            "symbol": self.symbol,
            "side": self.side,
            "qty": plain(qty),
            "order_type": self.order_type,
            "reduce_only": self.reduce_only,
            "category": self.category,
        }
        if self.order_type == "limit" and self.price is not None:
            args["price"] = plain(self.price)
        if self.stop_loss is not None and not self.reduce_only:
            args["stop_loss"] = plain(self.stop_loss)
        return args

    @staticmethod
    def of(args: Mapping[str, Any]) -> Order:
        price = args.get("price")
        return Order(
            symbol=str(args["symbol"]),
            category=str(args.get("category", "linear")),
            side=str(args["side"]),
            order_type=str(args.get("order_type", "market")),
            price=Decimal(price) if price is not None else None,
            reduce_only=bool(args.get("reduce_only", False)),
            stop_loss=Decimal(args["stop_loss"]) if args.get("stop_loss") is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Miss:
    """One reason a size does not pass: the kind of rule, its name, and the numbers."""

    kind: str  # unknown, state, market, reduce, grid, band, daily, cap, exchange
    name: str
    numbers: str

    def __str__(self) -> str:
        return f"{self.name}: {self.numbers}"


class Oracle:
    """What passes on one world's instruments, its policy, and the account as it is now."""

    def __init__(self, world: World, account: Account, *, reaches_human: bool = False) -> None:
        self.world = world
        self.policy = PolicyRules(world.policy)
        self.account = account
        # The worlds' client shows no forms: only the CLI channel reaches a human from it.
        self.reaches_human = reaches_human or bool((world.policy.get("confirm") or {}).get("cliChannel"))

    # --- facts ------------------------------------------------------------------------------------

    def instrument(self, order: Order) -> Instrument | None:
        return self.world.instrument(order.category, order.symbol)

    def quote(self, symbol: str) -> Quote:
        return self.account.quotes[symbol]

    def band(self, instrument: Instrument) -> tuple[Decimal, Decimal]:
        """(highest buy, lowest sell) the exchange accepts now (SCENARIOS.md, priceLimitRatioX / Y)."""
        mark, tick = self.quote(instrument.symbol).mark, instrument.tick
        x, y = instrument.band_x, instrument.band_y
        buy = min(mark * (1 + y), max(mark, mark * (1 + x)))
        sell = max(mark * (1 - y), min(mark, mark * (1 - x)))
        return floor_steps(buy, tick) * tick, max(ceil_steps(sell, tick) * tick, tick)

    def held(self, order: Order) -> Decimal:
        """The signed position the order acts on: linear, the position; spot, the base coin held."""
        instrument = self.instrument(order)
        if instrument is not None and instrument.spot:
            return self.account.wallet.get(instrument.base, ZERO)
        position = self.account.positions.get(order.symbol)
        return position.size if position is not None else ZERO

    def free_to_close(self, order: Order) -> Decimal:
        """What close_position would close: the linear position, or the spot coin held and not offered."""
        instrument = self.instrument(order)
        if instrument is None:
            return ZERO
        if instrument.spot:  # close_position first cancels the spot TP/SL orders holding the coin it sells
            free = self.account.wallet.get(instrument.base, ZERO) - self.locked(instrument.base)
            return free + self.held_by_stops(instrument)
        return self.held(order)

    def held_by_stops(self, instrument: Instrument) -> Decimal:
        """The coin the spot TP/SL orders waiting to sell it hold (create-order.mdx: occupied until they
        trigger)."""
        return sum(
            (
                o.leaves
                for o in self.account.open_orders
                if (o.category, o.symbol, o.side, o.kind) == ("spot", instrument.symbol, "sell", "tpslOrder")
            ),
            ZERO,
        )

    def leverage(self, symbol: str) -> Decimal:
        """The leverage set on a linear market (the paper exchange keeps it while flat)."""
        position = self.account.positions.get(symbol)
        return position.leverage if position is not None else Decimal(10)

    def pending(self, order: Order, side: str | None = None) -> Decimal:
        """Open orders on the order's side (of its category and symbol) that may still fill: not reduce-only."""
        side = side or order.side
        return sum(
            (
                o.leaves
                for o in self.account.open_orders
                if o.category == order.category
                and o.symbol == order.symbol
                and o.side == side
                and not o.reduce_only
            ),
            ZERO,
        )

    def without_resting(self, order: Order) -> Oracle:
        """The same world with the resting orders on the order's side (its symbol and category) gone."""
        kept = tuple(
            o
            for o in self.account.open_orders
            if not (o.category == order.category and o.symbol == order.symbol and o.side == order.side)
        )
        return Oracle(self.world, replace(self.account, open_orders=kept), reaches_human=self.reaches_human)

    def unthrottled(self) -> Oracle:
        """The same world once the messages of the throttles' windows have left them (a throttle holds an
        action back for a second or a minute at most; its own answer says when)."""
        return Oracle(self.world, replace(self.account, messages=()), reaches_human=self.reaches_human)

    def elsewhere(self, order: Order) -> Decimal:
        """The same coin in the other category (spot held for a linear order, the perpetual for a spot one),
        at its worst case with that market's resting orders: maxNotionalUsd caps the coin's gross exposure."""
        other = replace(order, category="spot" if order.category == "linear" else "linear")
        if self.instrument(other) is None and other.category == "linear":
            return ZERO
        if other.category == "spot":
            base = self.instrument(order).base if self.instrument(order) is not None else ""
            held = self.account.wallet.get(base, ZERO)
        else:
            held = self.held(other)
        buys, sells = self.pending(other, "buy"), self.pending(other, "sell")
        return max(abs(held + buys), abs(held - sells))

    def usd_price(self, coin: str) -> Decimal:
        if coin in ("USDT", "USDC", "USD"):
            return Decimal(1)
        quote = self.account.quotes.get(f"{coin}USDT")
        return quote.mid if quote is not None else ZERO

    def settle_equity(self) -> Decimal:
        """USDT wallet plus the unrealised PnL of every linear position at its mark."""
        upl = sum(
            (
                (self.quote(symbol).mark - p.avg_price) * p.size
                for symbol, p in self.account.positions.items()
            ),
            ZERO,
        )
        return self.account.wallet.get("USDT", ZERO) + upl

    def equity(self) -> Decimal:
        """The account's total equity in USD: the settle coin's equity and every other coin at its mid."""
        others = sum(
            (amount * self.usd_price(coin) for coin, amount in self.account.wallet.items() if coin != "USDT"),
            ZERO,
        )
        return self.settle_equity() + others

    def available_margin(self) -> Decimal:
        """Equity less the initial margin of positions (at mark) and of open linear orders (at their price)."""
        used = ZERO
        for symbol, p in self.account.positions.items():
            used += abs(p.size) * self.quote(symbol).mark / p.leverage
        for o in self.account.open_orders:
            if o.category == "linear" and not o.reduce_only:
                used += o.leaves * o.price / self.account.positions[o.symbol].leverage
        return self.settle_equity() - used

    def locked(self, coin: str) -> Decimal:
        """Spot balance held by open spot orders and the spot TP/SL orders waiting: the quote coin for buys,
        the base coin for sells."""
        total = ZERO
        for o in self.account.open_orders:
            instrument = self.world.instrument("spot", o.symbol)
            if o.category != "spot" or instrument is None or o.kind == "Stop":
                continue  # (a spot conditional order holds nothing until it triggers)
            if o.side == "buy" and instrument.quote == coin:
                total += o.leaves * (o.price or o.trigger or ZERO)
            elif o.side == "sell" and instrument.base == coin:
                total += o.leaves
        return total

    # --- prices -----------------------------------------------------------------------------------

    def limit_price(self, order: Order) -> Decimal | None:
        """A limit order's price on the tick, rounded on the side that costs less: buys down, sells up."""
        instrument = self.instrument(order)
        if order.price is None or instrument is None:
            return order.price
        tick = instrument.tick
        steps = floor_steps(order.price, tick) if order.side == "buy" else ceil_steps(order.price, tick)
        return max(steps * tick, tick)

    def slippage_price(self, order: Order) -> Decimal:
        """A market order's Limit IOC price at maxSlippagePct, before the band."""
        instrument = self.instrument(order)
        assert instrument is not None
        quote, tick = self.quote(order.symbol), instrument.tick
        slip = self.policy.limits(order.symbol).slippage_pct / HUNDRED
        if order.side == "buy":
            return ceil_steps(quote.ask * (1 + slip), tick) * tick
        return max(floor_steps(quote.bid * (1 - slip), tick) * tick, tick)

    def price(self, order: Order) -> Decimal:
        """The limit price sent: a limit order's own (on the tick), a market order's IOC price inside the band."""
        if order.order_type == "limit" and order.price is not None:
            price = self.limit_price(order)
            assert price is not None
            return price
        instrument = self.instrument(order)
        assert instrument is not None
        buy_limit, sell_limit = self.band(instrument)
        price = self.slippage_price(order)
        return min(price, buy_limit) if order.side == "buy" else max(price, sell_limit)

    def worst(self, order: Order) -> Decimal:
        """The worst-fill price: a buy pays at most its limit; a sell fills from the bid down to its limit."""
        price = self.price(order)
        return price if order.side == "buy" else max(price, self.quote(order.symbol).bid)

    def qty_for_notional(self, order: Order, notional: Decimal) -> Decimal:
        instrument = self.instrument(order)
        assert instrument is not None
        return floor_steps(notional / self.worst(order), instrument.step) * instrument.step

    # --- judging one size -------------------------------------------------------------------------

    def opposite(self, order: Order) -> bool:
        held = self.held(order)
        return held != 0 and (held > 0) != (order.side == "buy")

    def reducing(self, order: Order, qty: Decimal) -> bool:
        """Whether the order can only shrink the worst case: with every resting order on one side filled.

        A reduce-only order stops at zero, but resting orders on its side then act from there: it shrinks
        the worst case only when the position it leaves, plus them, is no larger than the worst case now.
        """
        held = self.held(order)
        if order.reduce_only:
            left = ZERO if qty >= abs(held) else held + order.sign * qty
            after = left + order.sign * self.pending(order)
            worst_now = max(abs(held + self.pending(order, "buy")), abs(held - self.pending(order, "sell")))
            return abs(after) <= worst_now
        return self.opposite(order) and qty + self.pending(order) <= abs(held)

    def shrinks(self, order: Order, qty: Decimal) -> bool:
        """Whether `qty` of the order only shrinks a position there is: against it, and reducing (on spot,
        where no order is reduce-only, a sell of at most the coin held and not already offered)."""
        instrument = self.instrument(order)
        if instrument is not None and instrument.spot:
            held = self.held(order)
            return order.side == "sell" and qty > 0 and qty + self.pending(order) <= held
        return self.opposite(order) and self.reducing(order, qty)

    def dust_close_qty(self, order: Order) -> Decimal | None:
        """The reduce-only size that closes a position below the minimum order (capped by the exchange)."""
        instrument = self.instrument(order)
        if instrument is None or instrument.spot or not order.reduce_only or not self.opposite(order):
            return None
        minimum = max(ceil_steps(instrument.min_qty, instrument.step), 1) * instrument.step
        return minimum if abs(self.held(order)) < minimum else None

    def misses(self, order: Order, qty: Decimal) -> list[Miss]:
        """Every reason `qty` of `order` does not pass (empty: it passes)."""
        instrument = self.instrument(order)
        if instrument is None:
            return [Miss("unknown", "symbol", f"no {order.category} instrument {order.symbol}")]
        out: list[Miss] = []
        limits, rules = self.policy.limits(order.symbol), self.policy
        held, pending = self.held(order), self.pending(order)
        price, worst = self.price(order), self.worst(order)
        reducing = self.reducing(order, qty)
        if self.state == "halted":
            out.append(Miss("state", "halted", "trading is halted"))
        elif self.state == "reducing" and not reducing:
            out.append(Miss("state", "reducing", "the order can grow the position"))
        out.extend(self._control_misses(order, instrument, qty, price, worst, reducing))
        if not reducing and order.symbol not in rules.allowed:
            out.append(Miss("market", "allowedMarkets", f"{order.symbol} not in {sorted(rules.allowed)}"))
        if order.reduce_only:
            if instrument.spot:
                out.append(Miss("exchange", "reduceOnlySpot", "spot takes no reduce-only orders"))
            elif not self.opposite(order):
                out.append(Miss("reduce", "nothingToReduce", f"position {plain(held)}"))
            elif qty > abs(held) and qty != self.dust_close_qty(order):
                out.append(Miss("reduce", "aboveThePosition", f"{plain(qty)} > {plain(abs(held))}"))
        if qty <= 0 or qty % instrument.step != 0:
            out.append(Miss("grid", "qtyStep", f"{plain(qty)} on step {plain(instrument.step)}"))
        if not instrument.spot and qty < instrument.min_qty:
            out.append(Miss("grid", "minOrderQty", f"{plain(qty)} < {plain(instrument.min_qty)}"))
        if qty > instrument.max_qty:
            out.append(Miss("grid", "maxOrderQty", f"{plain(qty)} > {plain(instrument.max_qty)}"))
        exempt = order.reduce_only and not instrument.spot
        if not exempt and qty * price < instrument.min_notional:
            out.append(
                Miss("grid", "minNotionalValue", f"{plain(qty * price)} < {plain(instrument.min_notional)}")
            )
        if order.order_type == "limit":
            buy_limit, sell_limit = self.band(instrument)
            if order.side == "buy" and price > buy_limit:
                out.append(Miss("band", "priceBand", f"buy at {plain(price)} > {plain(buy_limit)}"))
            if order.side == "sell" and price < sell_limit:
                out.append(Miss("band", "priceBand", f"sell at {plain(price)} < {plain(sell_limit)}"))
        if not reducing:
            out.extend(self._cap_misses(order, instrument, qty, limits, held, pending, worst))
            out.extend(self._loss_misses(order, instrument, qty, held, pending, price))
        elif self.stop(order) is not None and not instrument.spot:
            out.extend(self._stop_misses(order, instrument, price))
        if reducing and self.outlives(order):
            out.extend(self._outliving_misses(order, instrument, qty, price))
        out.extend(self._exchange_misses(order, instrument, qty, price, held))
        needs = rules.needs_human("place_order", qty * worst, grows=not reducing)
        if not order.closing and not self.reaches_human and needs:
            out.append(
                Miss("confirm", "aboveNotionalUsd", f"{plain(qty * worst)} needs a human, none reachable")
            )
        # docs/policy.md, confirm: close_position waits on no threshold, but on `actions` naming it, as every
        # tool does
        if order.closing and not self.reaches_human and rules.needs_human("close_position", qty * worst):
            out.append(Miss("confirm", "actions", "close_position needs a human, none reachable"))
        return out

    @property
    def state(self) -> str:
        """The trading state in force: policy.json's, made reducing by the kill switch the dead-man's switch
        turned on."""
        state = self.policy.state
        return "reducing" if state == "active" and self.account.kill_switch else state

    @property
    def tool_state(self) -> str:
        """The state set_leverage and set_trading_stop are judged in (they run no evaluate): also reducing past
        the drawdown limit and once the authority has expired."""
        state = self.state
        if state == "active" and (self.account.drawdown_latched or self.authority_expired()):
            return "reducing"
        return state

    def authority_expired(self) -> bool:
        account, rules = self.account, self.policy
        until, most = rules.valid_until, rules.raw.get("maxSessionMinutes")
        if until is not None and account.now >= until:
            return True
        age = account.session_age
        return most is not None and age is not None and age >= timedelta(minutes=int(most))

    def collar_edge(self, symbol: str, side: str, instrument: Instrument) -> Decimal | None:
        """The farthest price from the mark a collar lets a buy's price (side "buy") or a sell's lie: the nearer
        of the percentage and the ticks, on the tick towards the mark, one tick at least."""
        pct, ticks = self.policy.collar(symbol)
        mark, tick = self.quote(symbol).mark, instrument.tick
        away = ([mark * pct / HUNDRED] if pct is not None else []) + (
            [tick * ticks] if ticks is not None else []
        )
        if not away:
            return None
        if side == "buy":
            return max(floor_steps(mark + min(away), tick) * tick, tick)
        return max(ceil_steps(mark - min(away), tick) * tick, tick)

    def messages_in(self, window: timedelta) -> int:
        return sum(1 for age in self.account.messages if age < window)

    def _control_misses(
        self,
        order: Order,
        instrument: Instrument,
        qty: Decimal,
        price: Decimal,
        worst: Decimal,
        reducing: bool,
    ) -> list[Miss]:
        """The pre-trade controls (issue 27): the throttles, a limit order's collar and resting orders for
        every order; authority, drawdown, cooldown and turnover for the orders that can grow a position."""
        out = []
        rules, account = self.policy, self.account
        for cap, window, code in rules.throttles():
            if self.messages_in(window) >= cap:
                out.append(Miss("throttle", code, f"{self.messages_in(window)} sent, {cap} allowed"))
        rests = order.order_type == "limit" and not order.ioc
        if rests:
            edge = self.collar_edge(order.symbol, order.side, instrument)
            if edge is not None and (price > edge if order.side == "buy" else price < edge):
                out.append(
                    Miss("band", "priceCollar", f"{order.side} at {plain(price)} beyond {plain(edge)}")
                )
            out.extend(self._resting_misses(order))
        if reducing:
            return out
        if self.authority_expired():
            out.append(Miss("authority", "validUntil/maxSessionMinutes", f"at {account.now}"))
        if account.drawdown_latched:
            out.append(Miss("drawdown", "maxDrawdown", "the drawdown limit was reached"))
        if account.cooldown_until is not None and account.now < account.cooldown_until:
            out.append(Miss("cooldown", "cooldown", f"until {account.cooldown_until}"))
        total = account.turnover + qty * worst
        for key in ("maxTurnoverUsdPerDay", "maxTurnoverUsd24h"):
            cap = rules.raw.get(key)
            if cap is not None and total > Decimal(cap):
                out.append(Miss("cap", key, f"{plain(total)} > {plain(Decimal(cap))}"))
        return out

    def _resting_misses(self, order: Order) -> list[Miss]:
        """A limit order rests: against the ordinary orders resting on its market and on the account."""
        rules = self.policy
        ordinary = [o for o in self.account.open_orders if o.ordinary and o.leaves > 0]
        here = sum(1 for o in ordinary if (o.symbol, o.category) == (order.symbol, order.category))
        out = []
        per_market = rules.market_field(order.symbol, "maxRestingOrdersPerMarket")
        if per_market is not None and here >= int(per_market):
            out.append(Miss("resting", "maxRestingOrdersPerMarket", f"{here} rest, {per_market} allowed"))
        total = rules.raw.get("maxRestingOrders")
        if total is not None and len(ordinary) >= int(total):
            out.append(Miss("resting", "maxRestingOrders", f"{len(ordinary)} rest, {total} allowed"))
        return out

    def _cap_misses(
        self,
        order: Order,
        instrument: Instrument,
        qty: Decimal,
        limits: Limits,
        held: Decimal,
        pending: Decimal,
        worst: Decimal,
    ) -> list[Miss]:
        out = []
        if self.account.orders_today >= self.policy.daily_cap:
            out.append(
                Miss("daily", "dailyOrderCap", f"{self.account.orders_today} >= {self.policy.daily_cap}")
            )
        order_notional = qty * worst
        if order_notional > limits.max_order_notional:
            out.append(
                Miss(
                    "cap",
                    "maxOrderNotionalUsd",
                    f"{plain(order_notional)} > {plain(limits.max_order_notional)}",
                )
            )
        left = ZERO if order.reduce_only and qty >= abs(held) else held + order.sign * qty  # stops at zero
        after = left + order.sign * pending
        after_notional = abs(after) * worst
        coin_notional = (abs(after) + self.elsewhere(order)) * worst
        if coin_notional > limits.max_notional:
            out.append(
                Miss("cap", "maxNotionalUsd", f"{plain(coin_notional)} > {plain(limits.max_notional)}")
            )
        if instrument.spot:
            return out
        equity = self.equity()
        if equity <= 0 or after_notional > limits.max_leverage * equity:
            out.append(
                Miss(
                    "cap",
                    "maxLeverage",
                    f"{plain(after_notional)} > {plain(limits.max_leverage)} x {plain(equity)}",
                )
            )
        if limits.min_liquidation_pct > 0:
            mark = self.quote(order.symbol).mark
            distance = liquidation_distance(after, worst, equity, instrument.mmr, mark)
            if distance is not None and distance < limits.min_liquidation_pct:
                out.append(
                    Miss(
                        "cap",
                        "minLiquidationDistancePct",
                        f"{plain(distance.quantize(Decimal('0.0001')))} < {plain(limits.min_liquidation_pct)}",
                    )
                )
        return out

    def _loss_misses(
        self,
        order: Order,
        instrument: Instrument,
        qty: Decimal,
        held: Decimal,
        pending: Decimal,
        price: Decimal,
    ) -> list[Miss]:
        out = []
        rules = self.policy
        now = self.account.now
        if not rules.open_hours(now.hour * 60 + now.minute):
            out.append(Miss("hours", "tradingHours", f"{now:%H:%M} UTC is outside every window"))
        if instrument.spot and order.side == "sell":
            return out  # a spot sell only sells coin held: the loss rules leave it alone
        most = None if instrument.spot else rules.raw.get("maxOpenPositions")
        if most is not None:
            left = ZERO if order.reduce_only and qty >= abs(held) else held + order.sign * qty
            after = left + order.sign * pending
            others = {s for s, p in self.account.positions.items() if p.size != 0 and s != order.symbol}
            count = len(others) + (1 if after != 0 else 0)
            if count > int(most):
                out.append(Miss("positions", "maxOpenPositions", f"{count} > {most}"))
        stop = self.stop(order)
        if stop is None and rules.require_stop(order.symbol) and not order.reduce_only:
            out.append(Miss("protection", "requireStopLoss", "no stop_loss"))
        if stop is not None:
            misplaced = self._stop_misses(order, instrument, price)
            if misplaced:
                return out + misplaced
            edge = self.collar_edge(order.symbol, "sell" if order.side == "buy" else "buy", instrument)
            if edge is not None and (stop < edge if order.side == "buy" else stop > edge):
                out.append(
                    Miss("protection", "priceCollar.stopLoss", f"stop {plain(stop)} beyond {plain(edge)}")
                )
        return out + self._loss_miss(order, qty, price, grows=True)

    def _outliving_misses(
        self, order: Order, instrument: Instrument, qty: Decimal, price: Decimal
    ) -> list[Miss]:
        """An order that closes the position now but may rest on after it is gone (outlives): what it opens
        then needs a stop under requireStopLoss, and may lose at most the loss limit at it."""
        if self.stop(order) is None:
            if self.policy.require_stop(order.symbol):
                return [
                    Miss("protection", "requireStopLoss", "no stop_loss on an order that may open from flat")
                ]
        elif self._stop_misses(order, instrument, price):
            return []  # already counted
        return self._loss_miss(order, qty, price, grows=False)

    def _loss_miss(self, order: Order, qty: Decimal, price: Decimal, *, grows: bool) -> list[Miss]:
        """maxLossPerTradeUsd/Pct at the stops (docs/policy.md): on the position the order leaves (an order
        that grows it), and from flat for a limit order that may rest beside the position and fill once it
        is gone (outlives, rests); the worse is judged, and some of a perpetual position left under no stop
        has no bound. On spot: the coin held with the buy and the buys resting, what no stop sells at zero."""
        cap = self.policy.loss_limit(order.symbol, self.equity())
        if cap is None:
            return []
        instrument = self.instrument(order)
        if instrument is not None and instrument.spot:
            loss = self.spot_loss(order, qty, price)
            return (
                [Miss("cap", "maxLossPerTrade", f"spot {plain(loss)} > {plain(cap)}")] if loss > cap else []
            )
        cases = [self.left_at_stops(order, qty, price)] if grows else []
        if self.outlives(order) or self.rests(order):
            cases.append(self.left_at_stops(order, qty, price, from_flat=True))
        if any(uncovered > 0 for _, _, uncovered in cases):
            return [Miss("cap", "maxLossPerTrade", "unbounded: some of the position left under no stop")]
        left, loss, _ = max(cases, key=lambda case: case[1])
        if loss > cap:
            numbers = f"{plain(abs(left.size))} left at stop {left.stop}: {plain(loss)} > {plain(cap)}"
            return [Miss("cap", "maxLossPerTrade", numbers)]
        return []

    def rests(self, order: Order) -> bool:
        """Whether a linear order may rest beside the position and fill once it is gone (its stop hit, or
        closed): a limit order (not IOC, not reduce-only) on a market with a position."""
        instrument = self.instrument(order)
        if instrument is None or instrument.spot or order.reduce_only:
            return False
        return order.order_type == "limit" and not order.ioc and self.held(order) != 0

    def spot_legs(self, symbol: str) -> list[tuple[Decimal, Decimal]]:
        """The spot orders waiting to sell the coin held at a trigger below the bid, at market when
        triggered: the stops of the coin held (a Limit one may never fill; one above the bid takes profit)."""
        bid = self.quote(symbol).bid
        return [
            (o.trigger, o.leaves)
            for o in self.account.open_orders
            if (o.category, o.symbol, o.side) == ("spot", symbol, "sell")
            and o.kind in ("tpslOrder", "Stop")
            and o.trigger is not None
            and o.trigger < bid
            and o.order_type != "Limit"
        ]

    def spot_loss(self, order: Order, qty: Decimal, price: Decimal) -> Decimal:
        """A spot buy's loss at the stops: the coin held (at the bid), the buy (at `price`, with its stop) and
        the buys resting (at their prices, with theirs), sold by the stops, what none sells at zero."""
        instrument = self.instrument(order)
        assert instrument is not None
        held = self.account.wallet.get(instrument.base, ZERO)
        buys = [
            Fill(o.leaves, o.price or o.trigger or price, o.stop_loss)
            for o in self.account.open_orders
            if (o.category, o.symbol, o.side) == ("spot", order.symbol, "buy") and not o.reduce_only
        ]
        buys.append(Fill(qty, price, self.stop(order)))
        bid = self.quote(order.symbol).bid
        return spot_loss(held, bid, self.spot_legs(order.symbol), buys, instrument.step)[0]

    def spot_breach(self, symbol: str) -> str | None:
        """Whether the coin held of `symbol` can lose more than maxLossPerTradeUsd at its stop orders (the
        numbers if so): checked right after a buy of Pilot's filled."""
        cap = self.policy.usd_loss_limit(symbol)
        instrument = self.world.instrument("spot", symbol)
        if cap is None or instrument is None:
            return None
        held = self.account.wallet.get(instrument.base, ZERO)
        loss, uncovered = spot_loss(held, self.quote(symbol).bid, self.spot_legs(symbol), [], instrument.step)
        if loss <= cap:
            return None
        return f"{plain(held)} held, {plain(uncovered)} under no stop: loses {plain(loss)} > {plain(cap)}"

    def outlives(self, order: Order) -> bool:
        """Whether the order may fill after the position it now closes is gone (its stop, say): a linear
        limit order that rests (not IOC) and is not reduce-only, against the position. Bybit keeps it resting,
        and it then opens a position of its own."""
        instrument = self.instrument(order)
        if instrument is None or instrument.spot or order.reduce_only:
            return False
        return order.order_type == "limit" and not order.ioc and self.opposite(order)

    # --- stops ------------------------------------------------------------------------------------

    def protected(self, symbol: str) -> Protected:
        """The linear position of `symbol` with the stops the exchange holds on it now."""
        position = self.account.positions.get(symbol)
        if position is None or position.size == 0:
            return Protected(ZERO, ZERO)
        return Protected(position.size, position.avg_price, position.stop_loss, position.partial_stops)

    def resting_fills(self, order: Order) -> list[Fill]:
        """The orders resting on the order's side (its market) that may fill, as the exchange lists them."""
        return [
            Fill(o.leaves * order.sign, o.price, o.stop_loss)
            for o in self.account.open_orders
            if (o.category, o.symbol, o.side) == (order.category, order.symbol, order.side)
            and not o.reduce_only
        ]

    def left_at_stops(
        self, order: Order, qty: Decimal, price: Decimal, *, from_flat: bool = False
    ) -> tuple[Protected, Decimal, Decimal]:
        """The linear position `qty` of the order leaves at its worst, with its loss and uncovered quantity at
        the stops that will then apply to it (tests/worlds/at_stops.py); `from_flat`: once the position held
        now is gone."""
        this = Fill(qty * order.sign, price, self.stop(order))
        instrument = self.instrument(order)
        assert instrument is not None
        held = Protected(ZERO, ZERO) if from_flat else self.protected(order.symbol)
        return worst_left(held, self.resting_fills(order), this, instrument.step, self.world.order_stop)

    def stops_breach(self, symbol: str) -> str | None:
        """Whether the position of `symbol` can lose more than maxLossPerTradeUsd at the stops it has now:
        the numbers if so (some of it under no stop: unbounded)."""
        cap = self.policy.usd_loss_limit(symbol)
        position = self.protected(symbol)
        if cap is None or position.size == 0:
            return None
        loss, uncovered = loss_at_stops(position)
        if uncovered > 0:
            return f"{plain(position.size)} with {plain(uncovered)} under no stop: unbounded > {plain(cap)}"
        if loss <= cap:
            return None
        return (
            f"{plain(position.size)} from {plain(position.entry)} at stop {position.stop} and legs "
            f"{[(plain(p), plain(q)) for p, q in position.legs]}: loses {plain(loss)} > {plain(cap)}"
        )

    def _stop_misses(self, order: Order, instrument: Instrument, price: Decimal) -> list[Miss]:
        """A stop that is off the tick, or not below the price, the mark and the bid (a buy's)."""
        stop = self.stop(order)
        assert stop is not None
        quote, tick = self.quote(order.symbol), instrument.tick
        if order.side == "buy":
            beyond = stop < min(price, quote.mark, quote.bid)
        else:
            beyond = stop > max(price, quote.mark, quote.ask)
        if stop <= 0 or stop % tick != 0 or not beyond:
            return [Miss("protection", "stopLoss", f"stop {plain(stop)} against price {plain(price)}")]
        return []

    def stop(self, order: Order) -> Decimal | None:
        """The stop as it is sent: on the tick towards the price (a buy's up, a sell's down), one tick at least."""
        instrument = self.instrument(order)
        if order.stop_loss is None or instrument is None:
            return order.stop_loss
        tick = instrument.tick
        steps = (
            ceil_steps(order.stop_loss, tick) if order.side == "buy" else floor_steps(order.stop_loss, tick)
        )
        return max(steps * tick, tick)

    def _exchange_misses(
        self, order: Order, instrument: Instrument, qty: Decimal, price: Decimal, held: Decimal
    ) -> list[Miss]:
        if instrument.spot:
            if order.side == "buy":
                free = self.account.wallet.get(instrument.quote, ZERO) - self.locked(instrument.quote)
                if qty * price > free:
                    return [
                        Miss("exchange", "spotBalance", f"costs {plain(qty * price)} > {plain(free)} free")
                    ]
                return []
            free = self.account.wallet.get(instrument.base, ZERO) - self.locked(instrument.base)
            if qty > free:
                return [Miss("exchange", "spotBalance", f"sells {plain(qty)} > {plain(free)} free")]
            return []
        if order.reduce_only:
            return []
        position = self.account.positions.get(order.symbol)
        leverage = position.leverage if position is not None else min(Decimal(10), instrument.max_leverage)
        closable = abs(held) if self.opposite(order) else ZERO
        opening = max(qty - closable, ZERO)
        required = opening * price / leverage + qty * price * self.world.taker_fee
        available = self.available_margin()
        if required > available:
            return [Miss("exchange", "margin", f"needs {plain(required)} > {plain(available)} available")]
        return []

    def passes(self, order: Order, qty: Decimal) -> bool:
        return not self.misses(order, qty)

    def sent_price(self, order: Order, planned: Decimal) -> Decimal:
        """The price place_order sends a plan at: its price on these facts, never worse than the plan's (a
        buy pays at most the planned price, a sell takes at least it)."""
        fresh = self.price(order)
        return min(planned, fresh) if order.side == "buy" else max(planned, fresh)

    def place_misses(self, order: Order, qty: Decimal, planned: Decimal) -> list[Miss]:
        """Why place_order refuses a plan of `qty` of `order` (planned at `planned`) on these facts: the order
        judged again as it was planned (a market order at its price now), then a human asked for when its
        notional at the price it will be sent at needs one."""
        out = [miss for miss in self.misses(order, qty) if miss.kind != "confirm"]
        sent = self.sent_price(order, planned)
        worst = sent if order.side == "buy" else max(sent, self.quote(order.symbol).bid)
        needs = self.policy.needs_human("place_order", qty * worst, grows=not self.reducing(order, qty))
        if not order.closing and not self.reaches_human and needs:
            out.append(
                Miss("confirm", "aboveNotionalUsd", f"{plain(qty * worst)} needs a human, none reachable")
            )
        return out

    # --- searching sizes --------------------------------------------------------------------------

    def largest(
        self,
        order: Order,
        at_most: Decimal | None = None,
        within: Callable[[Decimal], bool] | None = None,
    ) -> Decimal | None:
        """The largest passing size of `order` (at most `at_most`, and satisfying `within`), or None.

        As a function of the size, what passes is at most two runs of lot steps: the sizes that only shrink
        the position (from the grid's lower bounds up to the position, every other rule an upper bound), and
        the sizes that grow it (from just above that up, every cap an upper bound), plus a dust close and the
        whole position's close. Each run is searched from its lowest valid size; test_oracle checks this
        against every size.
        """
        instrument = self.instrument(order)
        if instrument is None:
            return None
        step = instrument.step
        top = floor_steps(instrument.max_qty, step)
        if at_most is not None:
            top = min(top, floor_steps(at_most, step))

        def ok(k: int) -> bool:
            qty = k * step
            return self.passes(order, qty) and (within is None or within(qty))

        low = 1
        if not instrument.spot:
            low = max(low, ceil_steps(instrument.min_qty, step))
        if instrument.spot or not order.reduce_only:
            low = max(low, ceil_steps(instrument.min_notional / self.price(order), step))
        runs: list[tuple[int, int]] = []
        candidates: list[int] = []
        if order.reduce_only:
            whole = floor_steps(abs(self.held(order)), step)
            runs.append((low, min(top, whole)))
            # The whole position may pass where every part of it fails: a part leaves the rest of the
            # position to the loss rule (with the orders resting against it), the whole leaves nothing.
            candidates.extend(k for k in (whole, self._dust_steps(order, step)) if k is not None and k <= top)
        else:
            room = abs(self.held(order)) - self.pending(order) if self.opposite(order) else Decimal(-1)
            shrink_top = floor_steps(room, step) if room >= 0 else 0
            runs.append((low, min(top, shrink_top)))
            runs.append((max(low, shrink_top + 1), top))
        best = max((k for k in candidates if ok(k)), default=None)
        for first, last in runs:
            if first > last or not ok(first):
                continue
            while first < last:
                middle = (first + last + 1) // 2
                if ok(middle):
                    first = middle
                else:
                    last = middle - 1
            best = first if best is None else max(best, first)
        return None if best is None else best * step

    def _dust_steps(self, order: Order, step: Decimal) -> int | None:
        dust = self.dust_close_qty(order)
        return None if dust is None else floor_steps(dust, step)

    def family(self, order: Order) -> list[Order]:
        """The order as asked, and the variant that only shrinks the position (reduce-only; on spot, a plain
        sell): 'no size of that order passes' must hold for both."""
        instrument = self.instrument(order)
        if instrument is None:
            return [order]
        if instrument.spot:  # a reduce-only spot sell stands for a plain sell of what is held
            plain_sell = order.reduce_only and order.side == "sell"
            return [order, replace(order, reduce_only=False)] if plain_sell else [order]
        if not order.reduce_only and self.opposite(order):
            return [order, replace(order, reduce_only=True)]
        return [order]

    def witness(
        self, order: Order, within: Callable[[Order, Decimal], bool] | None = None
    ) -> tuple[Order, Decimal] | None:
        """A size of the order's family that passes (the largest of the first variant that has one)."""
        for variant in self.family(order):

            def inside(qty: Decimal, variant: Order = variant) -> bool:
                return within is None or within(variant, qty)

            qty = self.largest(variant, within=inside)
            if qty is not None:
                return variant, qty
        return None

    def close_order(self, symbol: str, category: str) -> Order | None:
        """What closing the position is: a reduce-only market order on the other side (spot: a plain sell)."""
        probe = Order(symbol, category, "sell", "market")
        held = self.held(probe)
        if held == 0 or self.instrument(probe) is None:
            return None
        if category == "spot":
            return Order(symbol, category, "sell", "market", closing=True) if held > 0 else None
        return Order(
            symbol, category, "sell" if held > 0 else "buy", "market", reduce_only=True, closing=True
        )

    # --- what a finding shows ---------------------------------------------------------------------

    def facts(self, order: Order) -> dict[str, Any]:
        """The numbers the verdict on `order` depends on."""
        instrument = self.instrument(order)
        if instrument is None:
            return {"instrument": None, "policy": self._policy_facts(order.symbol)}
        quote = self.quote(order.symbol)
        buy_limit, sell_limit = self.band(instrument)
        facts: dict[str, Any] = {
            "instrument": {
                "tick": plain(instrument.tick),
                "step": plain(instrument.step),
                "min_qty": plain(instrument.min_qty),
                "max_qty": plain(instrument.max_qty),
                "min_notional": plain(instrument.min_notional),
                "mmr": plain(instrument.mmr),
                "band": [plain(sell_limit), plain(buy_limit)],
            },
            "quote": {"bid": plain(quote.bid), "ask": plain(quote.ask), "mark": plain(quote.mark)},
            "position": plain(self.held(order)),
            "pending": {"buy": plain(self.pending(order, "buy")), "sell": plain(self.pending(order, "sell"))},
            "equity": plain(self.equity()),
            "orders_today": self.account.orders_today,
            "price": plain(self.price(order)),
            "worst_fill": plain(self.worst(order)),
            "policy": self._policy_facts(order.symbol),
        }
        if instrument.spot:
            facts["free"] = {
                instrument.base: plain(
                    self.account.wallet.get(instrument.base, ZERO) - self.locked(instrument.base)
                ),
                "USDT": plain(self.account.wallet.get("USDT", ZERO) - self.locked("USDT")),
            }
        else:
            facts["available_margin"] = plain(self.available_margin())
            position = self.account.positions.get(order.symbol)
            facts["leverage"] = plain(position.leverage) if position is not None else None
        return facts

    def _policy_facts(self, symbol: str) -> dict[str, Any]:
        limits = self.policy.limits(symbol)
        return {
            "allowed": symbol in self.policy.allowed,
            "tradingState": self.state,
            "dailyOrderCap": self.policy.daily_cap,
            "maxNotionalUsd": plain(limits.max_notional),
            "maxOrderNotionalUsd": plain(limits.max_order_notional),
            "maxLeverage": plain(limits.max_leverage),
            "minLiquidationDistancePct": plain(limits.min_liquidation_pct),
            "maxSlippagePct": plain(limits.slippage_pct),
            "confirm": {
                "aboveNotionalUsd": None
                if self.policy.above_notional is None
                else plain(self.policy.above_notional),
                "actions": sorted(self.policy.confirm_actions),
            },
        }


def liquidation_distance(
    after: Decimal, price: Decimal, equity: Decimal, mmr: Decimal, mark: Decimal
) -> Decimal | None:
    """Distance from mark to liquidation, in % of mark (docs/policy.md: L = (qP - E) / (q (1 - mmr sign q))).

    None when there is none (flat, or a liquidation price at or below zero); 0 when it is already past mark.
    """
    if after == 0 or mark <= 0:
        return None
    sign = 1 if after > 0 else -1
    denominator = after * (1 - mmr * sign)
    if denominator == 0:
        return None
    level = (after * price - equity) / denominator
    if level <= 0:
        return None
    if (after > 0 and level >= mark) or (after < 0 and level <= mark):
        return ZERO
    return abs(level - mark) / mark * HUNDRED
