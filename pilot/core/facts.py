"""What a decision is made from: frozen, Decimal-valued facts gathered by the app layer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pilot.core.venues import BYBIT, VenueProfile

if TYPE_CHECKING:  # pilot.core.holds builds on TradingState, defined here
    from pilot.core.holds import Hold


class Side(StrEnum):
    BUY = "buy"
    SELL = "sell"

    @property
    def sign(self) -> int:
        return 1 if self is BUY else -1


# Enum members read as module names on the hot path: on Python 3.11 reading `Side.BUY` runs the enum
# metaclass's attribute hook (about 0.1 us a read), and evaluate reads dozens.
BUY, SELL = Side.BUY, Side.SELL


class OrderType(StrEnum):
    MARKET = "market"
    LIMIT = "limit"


LIMIT = OrderType.LIMIT


class Effect(StrEnum):
    """What an action does to the account's risk, as a trading state judges it."""

    CANCEL = "cancel"  # takes an order off the book
    REDUCE = "reduce"  # only shrinks the worst-case exposure: a reducing order, a lower leverage
    GROW = "grow"  # anything else


class TradingState(StrEnum):
    """As in NautilusTrader: ACTIVE trades, REDUCING only shrinks positions, HALTED only cancels."""

    ACTIVE = "active"
    REDUCING = "reducing"
    HALTED = "halted"

    def permits(self, effect: Effect) -> bool:
        """Whether an action of this effect may go ahead: the one statement of what each state allows."""
        if effect is Effect.CANCEL:
            return True
        if self is TradingState.HALTED:
            return False
        return self is TradingState.ACTIVE or effect is Effect.REDUCE

    @property
    def strictness(self) -> int:
        return {"active": 0, "reducing": 1, "halted": 2}[self.value]

    @staticmethod
    def strictest(*states: TradingState) -> TradingState:
        return max(states, key=lambda state: state.strictness)


ACTIVE = TradingState.ACTIVE


@dataclass(frozen=True, slots=True)
class InstrumentRules:
    """The exchange's rules for one instrument (Bybit instruments-info, with the maintenance margin rate)."""

    symbol: str
    category: str
    tick_size: Decimal
    qty_step: Decimal
    min_qty: Decimal
    max_qty: Decimal
    min_notional: Decimal
    max_leverage: Decimal
    maintenance_margin_rate: Decimal
    base_coin: str = ""
    quote_coin: str = "USDT"
    # How far from the mark every price is inside the exchange's price band, whatever its index and premium
    # do (a fraction: 0.01 is 1 %); None when the venue's band promises no such margin or it is not known.
    band_margin: Decimal | None = None

    @property
    def base(self) -> str:
        """The base asset's name, e.g. BTC for BTCUSDT."""
        if self.base_coin:
            return self.base_coin
        return self.symbol.removesuffix(self.quote_coin) or self.symbol


@dataclass(frozen=True, slots=True)
class Touch:
    """The top of the book and the mark price, with when they were observed (UTC)."""

    bid: Decimal
    ask: Decimal
    mark: Decimal
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class StopLeg:
    """A partial stop-loss resting on the exchange: it closes `qty` at `price`, beside the whole stop."""

    price: Decimal
    qty: Decimal
    order_id: str = ""


@dataclass(frozen=True, slots=True)
class Position:
    """A one-way position: size is signed (positive long, negative short, zero flat).

    `stop_loss` is the position's whole stop (it closes all of the position, whatever its size then);
    `partial_stops` are the partial stop-loss orders resting on it, each for its own size.
    """

    symbol: str
    size: Decimal
    entry_price: Decimal
    leverage: Decimal
    stop_loss: Decimal | None = None
    partial_stops: tuple[StopLeg, ...] = ()

    @staticmethod
    def flat(symbol: str, leverage: Decimal = Decimal(1)) -> Position:
        return Position(symbol=symbol, size=Decimal(0), entry_price=Decimal(0), leverage=leverage)


@dataclass(frozen=True, slots=True)
class OrderIntent:
    """The order being judged, as the agent asked for it (qty already a Decimal)."""

    symbol: str
    side: Side
    qty: Decimal
    order_type: OrderType
    limit_price: Decimal | None = None
    reduce_only: bool = False
    category: str = "linear"
    # Sent with the order (what the stop then covers is the venue's: Facts.venue); None: not set.
    stop_loss: Decimal | None = None
    take_profit: Decimal | None = None

    @property
    def signed_qty(self) -> Decimal:
        return self.qty * self.side.sign

    def field_values(self) -> dict[str, Any]:
        """Every field by name: OrderIntent(**{**values, "qty": q}) is replace() without its per-call cost."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class PendingFill:
    """One order that may still fill (not reduce-only): its side, quantity left, the worst price it can fill
    at (a resting limit's own price; None: not known, valued like the order judged), and the stop-loss it
    carries (what it becomes once the order fills is the venue's: pilot.core.venues)."""

    side: Side
    qty: Decimal
    price: Decimal | None = None
    stop_loss: Decimal | None = None
    order_id: str = ""
    unknown: bool = False  # a send whose outcome is not known yet: no cancel can take it off the book


@dataclass(frozen=True, slots=True)
class PendingOrders:
    """Quantity that may still fill on this symbol (resting orders, and sends whose outcome is unknown).

    Caps assume the worst: every pending order on the new order's side fills too. `fills` are those orders
    one by one where they are known (their sum on a side is at most its quantity; the rest is valued like
    the order judged, without a stop of its own).
    """

    buy_qty: Decimal = Decimal(0)
    sell_qty: Decimal = Decimal(0)
    fills: tuple[PendingFill, ...] = ()

    def on_side(self, side: Side) -> Decimal:
        return self.buy_qty if side is BUY else self.sell_qty

    def cancellable(self, side: Side) -> Decimal:
        """What a cancel can take off the book on `side`: the resting orders known one by one."""
        return sum((f.qty for f in self.fills if f.side is side and not f.unknown), Decimal(0))


NO_PENDING = PendingOrders()


@dataclass(frozen=True, slots=True)
class PriceBand:
    """The prices the exchange accepts for a limit order now: no buy above buy_limit, no sell below sell_limit."""

    buy_limit: Decimal
    sell_limit: Decimal


@dataclass(frozen=True, slots=True)
class Funds:
    """What the exchange lets this account spend on an order now (Bybit refuses an order beyond it).

    `available_usd` is the unified account's available balance (margin for linear orders); `free_quote` and
    `free_base` are the spot coins not locked by open orders (a spot buy spends the quote coin, a sell the
    base coin).
    """

    available_usd: Decimal
    free_quote: Decimal
    free_base: Decimal


@dataclass(frozen=True, slots=True)
class DayPnl:
    """The account's profit and loss for the UTC day so far, in USD, on every product (pilot.core.day_pnl
    defines it): realised since 00:00 UTC plus unrealised now; `spot_realised` and `spot_unrealised` say how
    much of each came from spot. Negative is a loss."""

    realised: Decimal
    unrealised: Decimal
    spot_realised: Decimal = Decimal(0)
    spot_unrealised: Decimal = Decimal(0)

    @property
    def total(self) -> Decimal:
        return self.realised + self.unrealised


NO_DAY_PNL = DayPnl(Decimal(0), Decimal(0))


@dataclass(frozen=True, slots=True)
class RestingOrders:
    """Ordinary orders resting on the book now (not TP/SL or conditional ones), with the sends whose outcome
    is not known yet: on the order's market, and on the whole account (None: not read, only needed when
    maxRestingOrders is set)."""

    market: int
    total: int | None = None


NO_RESTING = RestingOrders(0, 0)


@dataclass(frozen=True, slots=True)
class DrawdownState:
    """The equity's peak over the drawdown window as Pilot read it (None: none read yet in the window), and
    the latch: `latched` once the limit was reached in the window, lapsing by itself at `until` (a human may
    lift it sooner); `reached_at_usd` the drawdown when it was reached."""

    peak: Decimal | None
    latched: bool = False
    until: datetime | None = None
    reached_at_usd: Decimal | None = None


NO_DRAWDOWN = DrawdownState(None)


@dataclass(frozen=True, slots=True)
class ClosedTrade:
    """One closed trade (pilot.core.day_pnl says what one is on each product): when, by the exchange's clock,
    its realised PnL after fees, and the order that closed it."""

    at: datetime
    pnl: Decimal
    order_id: str = ""


@dataclass(frozen=True, slots=True)
class CooldownState:
    """The losing trades the cooldown counts (the newest in a row, or within its window), and when the
    cooldown under way ends (None: none is under way)."""

    losses: int
    until: datetime | None = None


NO_COOLDOWN = CooldownState(0)


@dataclass(frozen=True, slots=True)
class Turnover:
    """The notional of the orders this home sent, in USD: since 00:00 UTC, and in the last 24 hours (a resting
    order in full, an IOC order what it filled, a send whose outcome is unknown in full, an amend what it
    added); `rolling_frees_at` is when the oldest of the last 24 hours' leaves that window."""

    day_usd: Decimal
    rolling_usd: Decimal
    rolling_frees_at: datetime | None = None


NO_TURNOVER = Turnover(Decimal(0), Decimal(0))


@dataclass(frozen=True, slots=True)
class Held:
    """What one agent's own sends put in one market (base units): `settled`, the signed net of those whose
    outcome says what filled; `buying` and `selling`, those still open or of unknown outcome on each side,
    which may fill yet (or did, unseen)."""

    settled: Decimal = Decimal(0)
    buying: Decimal = Decimal(0)
    selling: Decimal = Decimal(0)

    def toward(self, side: Side) -> Decimal:
        """The signed net at its worst for an order on `side`: its open sends on that side filled, those
        on the other side not."""
        return self.settled + self.buying if side is Side.BUY else self.settled - self.selling


NOTHING_HELD = Held()


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """The agent that acts (`pilot agent add`), and what its own budget counts: its orders sent today (UTC),
    the notional it sent (as Turnover counts the home's), and what its own sends of the last two days put
    in each market, by (category, symbol) (pilot.app.runtime.agent_holdings). Its share of a market is that,
    bounded by the account's exposure there (pilot.core.agent_budgets.share_after)."""

    name: str
    orders_today: int = 0
    turnover: Turnover = NO_TURNOVER
    held: Mapping[tuple[str, str], Held] = field(default_factory=dict)

    def held_in(self, category: str, symbol: str) -> Held:
        """What its own sends put in `symbol` of `category`."""
        return self.held.get((category, symbol), NOTHING_HELD)


UNLIMITED = Decimal("Infinity")
# For facts built without an account to read (the core's own tests): nothing is refused for funds.
NO_FUNDS_LIMIT = Funds(UNLIMITED, UNLIMITED, UNLIMITED)


@dataclass(frozen=True, slots=True)
class Facts:
    """Everything evaluate() may look at. A None fact is missing: risk-increasing orders then fail closed.

    `now` is the decision time supplied by the caller (the core never reads a clock); it says when a daily cap
    resets, whether tradingHours are open, and which UTC day the day's PnL covers.

    `elsewhere` is the same coin's worst-case quantity in the other category (a spot holding for a linear
    order, the perpetual's position for a spot one, each with its pending orders), in absolute base units:
    maxNotionalUsd caps a coin's gross exposure across linear and spot, so a hedge does not offset.

    `listed` is False when the exchange says it has no such instrument (then `rules` is None for good, not
    for a failed read). `band` is the exchange's price band (None: not known, not checked). `funds` is what
    the account may spend (None: could not be read; growing orders fail closed). `can_reach_human` is False
    when the caller has no way to ask a human (a client without forms and no CLI channel): then an order
    that would need one is sized under confirm.aboveNotionalUsd instead of planned into a dead end.
    """

    order: OrderIntent
    rules: InstrumentRules | None
    touch: Touch | None
    position: Position | None
    equity: Decimal | None
    orders_today: int | None
    trading_state: TradingState
    now: datetime
    pending: PendingOrders | None = NO_PENDING
    elsewhere: Decimal | None = Decimal(0)
    listed: bool = True
    band: PriceBand | None = None
    funds: Funds | None = NO_FUNDS_LIMIT
    can_reach_human: bool = True
    # The day's PnL (None: could not be read; growing orders fail closed while a daily loss limit is set).
    day_pnl: DayPnl | None = NO_DAY_PNL
    # Symbols with a non-zero linear position now (None: could not be read; maxOpenPositions fails closed).
    open_markets: frozenset[str] | None = frozenset()
    # When a read failed and the exchange said until when reading again will fail too (an IP ban's end, a
    # rate limit's reset): a missing fact's retry_after is then no earlier. None: it said nothing.
    unavailable_until: datetime | None = None
    # How long ago each create, amend and cancel this home sent in the last minute was, newest first.
    messages: Sequence[timedelta] = ()
    # Ordinary orders resting now (None: not read; a rule that needs it fails closed).
    resting: RestingOrders | None = NO_RESTING
    # The equity's peak and the drawdown latch (None: not read while a drawdown rule is set).
    drawdown: DrawdownState | None = NO_DRAWDOWN
    # The losing trades and the cooldown under way (None: the closed trades could not be read).
    cooldown: CooldownState | None = NO_COOLDOWN
    # The notional this home sent today and in the last 24 hours.
    turnover: Turnover | None = NO_TURNOVER
    # How long the MCP session the call came in has lasted (None: no session, as for an action a human
    # approved outside the client).
    session_age: timedelta | None = None
    # How the venue applies stops: what a stop sent with the order becomes once it fills (pilot.core.venues).
    venue: VenueProfile = BYBIT
    # What holds trading below active (policy.json, the kill switch, the loss limit's latch): who, when, why.
    holds: tuple[Hold, ...] = ()
    # The named agent acting (None: no agent declared, or a client without a credential), for its budget.
    agent: AgentFacts | None = None
    # In an agent's own judgement: the signed net its sends put in this market before the order, at its
    # worst for the order's side (Held.toward), so maxNotionalUsd counts the agent's share, not the account's
    # whole exposure. None: the account's judgement (pilot.core.evaluate).
    agent_held: Decimal | None = None
