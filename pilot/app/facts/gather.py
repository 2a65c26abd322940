"""Gathering facts: every read runs concurrently; a read that fails leaves its fact missing (fail closed)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import TypeVar

from pilot.app.answers.responses import Snapshot
from pilot.app.facts.day_reads import DayRead, SpotDays, closed_day, spot_days
from pilot.app.facts.peaks import equity_read, watches_drawdown
from pilot.app.facts.pending import PendingRead, read_pending, spot_stops
from pilot.app.facts.stream_cache import from_ms, to_ms
from pilot.app.facts.streaming_reader import FACT_SOURCES
from pilot.app.road.clock import Today
from pilot.app.runtime.latches import cooldown_state, drawdown_state, next_midnight, start_cooldown
from pilot.app.runtime.ledger import JournalState, Send
from pilot.app.runtime.loss_limit import (
    NO_LATCH,
    DayLatch,
    counted,
    latch_if_reached,
    latch_of,
    latch_on_loss,
)
from pilot.app.runtime.runtime import PolicyView, Runtime, acting_agent, loss_limit_hold
from pilot.app.runtime.sessions import session_age
from pilot.core.agent_budgets import for_agent
from pilot.core.facts import (
    NO_DAY_PNL,
    NO_PENDING,
    UNLIMITED,
    AgentFacts,
    ClosedTrade,
    DayPnl,
    Facts,
    Funds,
    InstrumentRules,
    OrderIntent,
    OrderType,
    PendingOrders,
    Position,
    PriceBand,
    RestingOrders,
    Side,
    StopLeg,
    Touch,
    TradingState,
)
from pilot.core.freshness import as_of_ms
from pilot.core.holds import Hold, HoldSource, TradingStatus
from pilot.core.policy import Policy
from pilot.core.risk import worst_case
from pilot.core.rules.loss import day_loss_reached
from pilot.core.valuation import band_inside
from pilot.core.venues import VenueProfile
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError, ExchangeRejected, UnsupportedPositionMode
from pilot.exchange.models import AccountBalance

T = TypeVar("T")

# The times until which failed reads said reading again will fail too (an IP ban's end, a rate limit's
# reset), noted by each read of one gathering: the facts' `unavailable_until` is the latest.
_RETRY_AT: ContextVar[list[datetime] | None] = ContextVar("retry_at", default=None)


def _note(error: ExchangeError) -> None:
    noted = _RETRY_AT.get()
    if noted is not None and error.retry_at is not None:
        noted.append(error.retry_at)


def _unavailable_until() -> datetime | None:
    return max(_RETRY_AT.get() or (), default=None)


@dataclass(frozen=True, slots=True)
class _Account:
    balance: AccountBalance | None
    orders_today: int
    trading: TradingStatus
    day_pnl: DayPnl | None = NO_DAY_PNL
    open_markets: frozenset[str] | None = frozenset()
    latch: DayLatch = NO_LATCH
    spot: SpotDays | None = None  # the day's spot books (None: not read, or the read failed)


@dataclass(frozen=True, slots=True)
class _Market:
    rules: InstrumentRules | None
    touch: Touch | None
    position: Position | None
    pending: PendingOrders | None
    # The same coin in the other category: the perpetual's position for a spot order (a linear order's
    # counterpart, the spot holding, comes with the balance), and that market's pending orders.
    other_position: Position | None
    other_pending: PendingOrders | None
    hedged: UnsupportedPositionMode | None = None
    listed: bool = True
    band: PriceBand | None = None
    resting: int | None = None  # ordinary orders resting on this market, with unknown sends (None: unread)
    spot_legs: tuple[StopLeg, ...] = ()  # spot orders waiting to sell the coin held at a trigger


@dataclass(frozen=True, slots=True)
class _Extra:
    """What only the pre-trade controls read from the exchange, and only while policy.json sets them: every
    order resting on the account (maxRestingOrders), and the newest closed trades (cooldown)."""

    resting_total: int | None = None
    trades: tuple[ClosedTrade, ...] | None = None


OTHER_CATEGORY = {"linear": "spot", "spot": "linear"}


@dataclass(frozen=True, slots=True)
class Gathered:
    """The facts for one order, and why its symbol cannot be traded at all when it is held in hedge mode.

    In hedge mode the position is missing from `facts` (as for a failed read), but reading again will not
    help: `hedged` says so, and the caller answers with the position-mode refusal instead of a retry.
    """

    facts: Facts
    hedged: UnsupportedPositionMode | None = None
    mark: int = 0  # the journal's place the facts hold to: a send judged on them is journaled on it


async def gather_facts(runtime: Runtime, view: PolicyView, order: OrderIntent) -> Facts:
    """Read everything evaluate() needs for `order`, concurrently. Exchange failures become missing facts."""
    return (await gather(runtime, view, order)).facts


async def gather(runtime: Runtime, view: PolicyView, order: OrderIntent) -> Gathered:
    """gather_facts, saying also whether the symbol is held in hedge mode."""
    FACT_SOURCES.set({})  # a stream-fed reader notes where each fact came from (pilot.app.facts.stream_cache)
    _RETRY_AT.set([])
    now = runtime.now()
    journal = await runtime.ledger.state(now)
    slippage = view.policy.limits_for(order.symbol).max_slippage_pct
    account, market, extra = await asyncio.gather(
        _account(runtime, view, now, journal),
        _market(runtime, order.category, order.symbol, now, list(journal.unsettled), (order, slippage)),
        _extra(runtime, view.policy, journal),
    )
    facts = _facts(order, account, market, now, runtime.venue)
    extra = replace(extra, trades=_every_trade(extra.trades, account.spot))
    facts = await _controls(runtime, view.policy, facts, journal, market, extra)
    facts = with_agent(facts, journal)
    if await latch_if_reached(runtime.store.journal, view.policy, facts, account.latch) is not None:
        holds = (*facts.holds, loss_limit_hold(now, now))
        facts = replace(facts, trading_state=TradingStatus(holds).state, holds=holds)
    return Gathered(facts, market.hedged, journal.mark)


async def gather_market_facts(
    runtime: Runtime, view: PolicyView, category: str, symbols: Sequence[str]
) -> dict[str, Gathered]:
    """Facts for each symbol at once (the account read once), each for a market buy of nothing."""
    _RETRY_AT.set([])
    now = runtime.now()
    journal = await runtime.ledger.state(now)
    unsettled = list(journal.unsettled)
    account, markets, extra = await asyncio.gather(
        _account(runtime, view, now, journal),
        asyncio.gather(*(_market(runtime, category, symbol, now, unsettled) for symbol in symbols)),
        _extra(runtime, view.policy, journal),
    )
    gathered = {}
    for symbol, market in zip(symbols, markets, strict=True):
        order = OrderIntent(symbol, Side.BUY, Decimal(0), OrderType.MARKET, category=category)
        facts = _facts(order, account, market, now, runtime.venue)
        # the pre-trade controls as a plan would see them, journaling nothing: a read only reads
        facts = await _controls(runtime, view.policy, facts, journal, market, extra, record=False)
        gathered[symbol] = Gathered(with_agent(facts, journal), market.hedged)
    return gathered


def with_agent(facts: Facts, journal: JournalState) -> Facts:
    """The facts naming the acting agent and what its budget counts (unchanged when no agent is named)."""
    agent = _agent_facts(journal)
    return replace(facts, agent=agent) if agent is not None else facts


def _agent_facts(journal: JournalState) -> AgentFacts | None:
    agent = acting_agent()
    return journal.agent(agent.name) if agent is not None else None


async def _account(runtime: Runtime, view: PolicyView, now: datetime, journal: JournalState) -> _Account:
    policy = view.policy
    balance, state, (day, open_markets) = await asyncio.gather(
        _maybe(runtime.exchange.get_balance()),
        runtime.trading_status(policy, journal, judged=True, valid=view.valid),
        _day(runtime, policy, journal.today),
    )
    latch = latch_of(journal.loss_limit, journal.today)
    pnl: DayPnl | None = NO_DAY_PNL
    if daily_limit_set(policy):
        found = day.pnl(balance)
        pnl = counted(found, latch) if found is not None else None
    return _Account(balance, journal.sent_today, state, pnl, open_markets, latch, day.spot)


async def status_now(runtime: Runtime, view: PolicyView) -> TradingStatus:
    """The trading status for an action that widens what can be lost without an order (a stop moved away or
    removed): the day's loss read first and latched when at or past its limit, as a judgement of an order
    latches it, so a latch that upkeep alone would never set holds here too; a day's loss that cannot be read
    holds trading reducing for this action (HoldSource.DAY_LOSS_UNREAD), as a growing order fails closed."""
    status = await runtime.trading_status(view.policy, valid=view.valid)
    if not daily_limit_set(view.policy):
        return status
    now = runtime.now()
    account = await _account(runtime, view, now, await runtime.ledger.state(now))
    equity = account.balance.total_equity_usd if account.balance is not None else None
    await latch_on_loss(runtime.store.journal, view.policy, (now, equity, account.day_pnl), account.latch)
    if account.day_pnl is None:  # fail closed: a stop moved away waits; a closer one never does
        unread = Hold(HoldSource.DAY_LOSS_UNREAD, TradingState.REDUCING, by="pilot")
        return TradingStatus((*status.holds, unread))
    status = await runtime.trading_status(view.policy, valid=view.valid)
    own = agent_day_loss_hold(view.policy, now, equity, account.day_pnl)
    return status if own is None else TradingStatus((*status.holds, own))


def agent_day_loss_hold(policy: Policy, now: datetime, equity: Decimal | None, pnl: DayPnl) -> Hold | None:
    """The acting agent's own daily loss limit reached, as a hold on it alone until 00:00 UTC (None: no agent
    acting, no limit of its own, or not reached). The account's latch is the account's: an agent's limit
    reached holds that agent, never the others, as its judgement of an order refuses that agent alone."""
    agent = acting_agent()
    budget = policy.agents.get(agent.name) if agent is not None else None
    if agent is None or budget is None or budget.daily_loss_limit_usd is None:
        return None
    if not day_loss_reached(for_agent(policy, budget), equity, pnl):
        return None
    return Hold(
        HoldSource.AGENT_DAY_LOSS,
        TradingState.REDUCING,
        by="pilot",
        at=now,
        until=next_midnight(now),
        agent=agent.name,
    )


def daily_limit_set(policy: Policy) -> bool:
    """Whether a daily loss limit needs the day's PnL: the account's, or an agent's budget's (judged on the
    account's loss: without the PnL read it would judge a loss of nothing)."""
    account = policy.daily_loss_limit_usd is not None or policy.daily_loss_limit_pct is not None
    return account or any(budget.daily_loss_limit_usd is not None for budget in policy.agents.values())


async def _day(runtime: Runtime, policy: Policy, today: Today) -> tuple[DayRead, frozenset[str] | None]:
    """What the day's PnL is worked out from (pilot.app.facts.day_reads), and the markets with a position,
    read only when a rule needs them: the daily loss limit the PnL, the cooldown the day's spot trades,
    maxOpenPositions the positions. A failed read leaves its part None (growing orders fail closed under
    the rule that needs it). When the wall clock stepped across midnight, today starts at two different
    00:00s (pilot.app.road.clock.Today): the PnL is counted from each and the worse is taken."""
    daily, starts = daily_limit_set(policy), today.starts()
    spot = daily or policy.cooldown is not None
    if not spot and policy.max_open_positions is None:
        return DayRead(starts, None, None, None), frozenset()
    positions, closed, spot_read = await asyncio.gather(
        _maybe(runtime.exchange.get_positions("linear")),
        _maybe(closed_day(runtime, starts[0])) if daily else _none(),
        _maybe(spot_days(runtime, starts)) if spot else _none(),
    )
    markets = frozenset(p.symbol for p in positions if p.size != 0) if positions is not None else None
    return DayRead(starts, positions, closed, spot_read), markets


async def _market(
    runtime: Runtime,
    category: str,
    symbol: str,
    now: datetime,
    unsettled: list[Send],
    priced: tuple[OrderIntent, Decimal] | None = None,
) -> _Market:
    """The market's facts; with `priced` (the order and its slippage), the band only where the order's
    price could meet it (`_band`)."""
    other = OTHER_CATEGORY[category]
    rules_read = asyncio.ensure_future(_instrument(runtime, category, symbol))
    touch_read = asyncio.ensure_future(_touch(runtime, category, symbol))
    reads = asyncio.gather(
        rules_read,
        touch_read,
        _position(runtime, symbol),  # the perpetual's: the order's own for linear, the other one for spot
        read_pending(runtime, category, symbol, now, unsettled),
        _instrument(runtime, other, symbol),
        _other_pending(runtime, other, symbol, now, unsettled),
    )
    (rules, touch, position, read, other_listed, other_read), limits = await asyncio.gather(
        reads, _band(runtime, category, symbol, (rules_read, touch_read), priced)
    )
    pending = read.pending if read is not None else None
    resting = _resting(read)
    other_pending = other_read.pending if other_read is not None else None
    linear = read if category == "linear" else other_read
    if isinstance(position, Position) and linear is not None and linear.partial_stops:
        position = replace(position, partial_stops=linear.partial_stops)
    if other_listed is UNLISTED:  # no such market in the other category: nothing of the coin there
        other_pending = NO_PENDING
        if category == "spot":
            position = Position.flat(symbol)
    elif other_listed is None:
        other_pending = None
    listed = rules is not UNLISTED
    known = rules if isinstance(rules, InstrumentRules) else None
    if category == "spot":  # the perpetual of the same coin is the spot order's other category
        if isinstance(position, UnsupportedPositionMode):  # spot has no position mode: legs count gross
            position, other_pending = _legs_held(position, other_pending)
        legs = read.partial_stops if read is not None else ()
        return _Market(
            known, touch, None, pending, position, other_pending, None, listed, limits, resting, legs
        )
    if isinstance(position, UnsupportedPositionMode):  # hedge mode: no position to trade against
        return _Market(known, touch, None, pending, None, other_pending, position, listed, limits, resting)
    return _Market(known, touch, position, pending, None, other_pending, None, listed, limits, resting)


async def _band(
    runtime: Runtime,
    category: str,
    symbol: str,
    reads: tuple[Awaitable[InstrumentRules | object | None], Awaitable[Touch | None]],
    priced: tuple[OrderIntent, Decimal] | None,
) -> PriceBand | None:
    """The exchange's price band; for an order priced where the band cannot reach it, the band's part the
    mark alone vouches for (pilot.core.valuation.band_inside: every judgement is the same with it), and no
    request. A streamed answer says it came as the mark did."""
    if priced is not None:
        rules, touch = await reads[0], await reads[1]
        if isinstance(rules, InstrumentRules) and touch is not None:
            inner = band_inside(priced[0], touch, rules, priced[1])
            if inner is not None:
                sources = FACT_SOURCES.get()
                if sources is not None and "touch" in sources:
                    sources["price_band"] = sources["touch"]
                return inner
    band = await _maybe(runtime.exchange.get_price_band(category, symbol))
    return PriceBand(band.buy_limit, band.sell_limit) if band is not None else None


async def _touch(runtime: Runtime, category: str, symbol: str) -> Touch | None:
    """The top of the book and mark, as of the older of the exchange's stamp and Pilot's clock when they
    arrived (the rule a streamed fact follows, pilot.core.freshness.as_of_ms): an exchange whose clock runs
    ahead (a paper market moved on, as the demo moves it) never stamps a fact later than Pilot read it."""
    touch = await _maybe(runtime.exchange.get_touch(category, symbol))
    if touch is None:
        return None
    as_of = as_of_ms(to_ms(touch.observed_at), to_ms(runtime.now()))
    return replace(touch, observed_at=from_ms(as_of))


def _resting(read: PendingRead | None) -> int | None:
    """Ordinary orders resting on the market, and sends whose outcome is not known yet (they may rest)."""
    if read is None:
        return None
    unknown = sum(1 for fill in read.pending.fills if fill.unknown)
    return sum(1 for order in read.open_orders if order.is_ordinary) + unknown


async def _extra(runtime: Runtime, policy: Policy, journal: JournalState) -> _Extra:
    """The reads only the pre-trade controls need, each only while policy.json sets its rule; a failed
    read leaves its fact missing (growing orders fail closed under that rule)."""
    total, trades = await asyncio.gather(
        _resting_total(runtime, journal) if policy.max_resting_orders is not None else _none(),
        _closed_trades(runtime) if policy.cooldown is not None else _none(),
    )
    return _Extra(total, trades)


async def _resting_total(runtime: Runtime, journal: JournalState) -> int | None:
    """Every ordinary order resting on the account (linear and spot), with the sends not yet settled."""
    lists = await asyncio.gather(
        *(_maybe(runtime.exchange.get_open_orders(category)) for category in ("linear", "spot"))
    )
    if any(found is None for found in lists):
        return None
    listed = {order.order_link_id for found in lists for order in found or () if order.is_ordinary}
    unknown = sum(1 for send in journal.unsettled if send.order_link_id not in listed)
    return len(listed) + unknown


CLOSED_TRADES_READ = 100  # the newest closed trades a cooldown looks at (cooldown.afterLosses: at most 100)


async def _closed_trades(runtime: Runtime) -> tuple[ClosedTrade, ...] | None:
    """The account's newest closed derivatives trades (linear closed PnL), newest first."""
    page = await _maybe(runtime.exchange.get_closed_pnl_page("linear", None, None, CLOSED_TRADES_READ))
    if page is None:
        return None
    return tuple(ClosedTrade(row.updated_at, row.closed_pnl, row.order_id) for row in page.rows)


def _every_trade(
    derivatives: tuple[ClosedTrade, ...] | None, spot: SpotDays | None
) -> tuple[ClosedTrade, ...] | None:
    """The closed trades on every product, newest first (pilot.core.day_pnl says what one is on each);
    None when either could not be read."""
    if derivatives is None or spot is None:
        return None
    return tuple(sorted((*derivatives, *spot.trades()), key=lambda trade: trade.at, reverse=True))


async def _controls(
    runtime: Runtime,
    policy: Policy,
    facts: Facts,
    journal: JournalState,
    market: _Market,
    extra: _Extra,
    *,
    record: bool = True,
) -> Facts:
    """The facts of the pre-trade controls (pilot.core.controls): the messages and turnover of this home,
    the orders resting, the session's age, the drawdown and the cooldown; journaling (`record`) the equity
    read as every equity Pilot reads (pilot.app.facts.peaks) and a cooldown begun, as the daily loss
    limit's latch is journaled. Without `record` the rules judge the same equity against the journal's
    peak, and the caller journals it once (get_policy reads several markets on one account read)."""
    now, store = facts.now, runtime.store.journal
    activity = journal.activity
    resting = RestingOrders(market.resting, extra.resting_total) if market.resting is not None else None
    facts = replace(
        facts,
        messages=activity.messages,
        turnover=activity.turnover,
        resting=resting,
        session_age=session_age(journal.today.here),
    )
    if watches_drawdown(policy):  # the equity read here counts as every equity Pilot reads does
        equity = facts.equity
        state = drawdown_state(policy, journal, now) if equity is not None else None
        if equity is not None and record:
            state = await equity_read(runtime, policy, equity, journal)
        facts = replace(facts, drawdown=state)
    if policy.cooldown is not None:
        if extra.trades is None:
            return replace(facts, cooldown=None)
        cooling, due = cooldown_state(policy, journal, extra.trades, now)
        if due is not None and record:
            await start_cooldown(store, policy, cooling, due, now)
        facts = replace(facts, cooldown=cooling)
    return facts


async def _other_pending(
    runtime: Runtime, category: str, symbol: str, now: datetime, unsettled: list[Send]
) -> PendingRead | None:
    """The other category's pending orders, unread when the exchange is known to list no such market there."""
    if runtime.exchange.listed(category, symbol) is False:
        return None  # `_market` answers NO_PENDING for an unlisted market
    return await read_pending(runtime, category, symbol, now, unsettled)


def _legs_held(
    hedged: UnsupportedPositionMode, pending: PendingOrders | None
) -> tuple[Position, PendingOrders | None]:
    """A perpetual held in hedge mode, as the spot order's other category sees it: the coin's exposure there.

    Both legs count in full (a hedge does not offset, as between spot and linear), and so does every pending
    order on either side, since in hedge mode a buy can grow the long leg and a sell the short one. Given
    as a long position with every pending order a buy, so the worst case `_facts` takes is that sum.
    """
    position = Position(hedged.symbol, hedged.gross_size, Decimal(0), Decimal(1))
    if pending is None:
        return position, None
    return position, PendingOrders(buy_qty=pending.buy_qty + pending.sell_qty, sell_qty=Decimal(0))


UNLISTED = object()  # the exchange answered that it has no such instrument


async def _instrument(runtime: Runtime, category: str, symbol: str) -> InstrumentRules | object | None:
    """The instrument's rules; UNLISTED when the exchange says there is none; None when it could not say."""
    try:
        return await runtime.exchange.get_instrument(category, symbol)
    except ExchangeRejected as refused:
        _note(refused)
        return UNLISTED if refused.unlisted else None
    except ExchangeError as error:
        _note(error)
        return None


async def _position(runtime: Runtime, symbol: str) -> Position | UnsupportedPositionMode | None:
    """The linear position; the hedge-mode refusal as a value (it is no failed read); None if unread."""
    try:
        return await runtime.exchange.get_position("linear", symbol)
    except UnsupportedPositionMode as hedged:
        return hedged
    except ExchangeError as error:
        _note(error)
        return None


def _facts(
    order: OrderIntent, account: _Account, market: _Market, now: datetime, venue: VenueProfile
) -> Facts:
    position = market.position
    if order.category == "spot":
        position = _spot_position(order.symbol, market.rules, account.balance)
        if position is not None and market.touch is not None:  # the stops selling it: below the bid
            position = replace(position, partial_stops=spot_stops(market.spot_legs, market.touch.bid))
        held = market.other_position.size if market.other_position is not None else None
    else:
        spot = _spot_position(order.symbol, market.rules, account.balance)
        held = spot.size if spot is not None else None
    elsewhere = None
    if held is not None and market.other_pending is not None:
        elsewhere = worst_case(held, market.other_pending)
    return Facts(
        order=order,
        rules=market.rules,
        touch=market.touch,
        position=position,
        equity=account.balance.total_equity_usd if account.balance is not None else None,
        orders_today=account.orders_today,
        trading_state=account.trading.state,
        holds=account.trading.holds,
        now=now,
        pending=market.pending,
        elsewhere=elsewhere,
        listed=market.listed,
        band=market.band,
        funds=_funds(market.rules, account.balance),
        day_pnl=account.day_pnl,
        open_markets=account.open_markets,
        unavailable_until=_unavailable_until(),
        venue=venue,
    )


def _funds(rules: InstrumentRules | None, balance: AccountBalance | None) -> Funds | None:
    """What the account may spend: None when the balance could not be read (growing orders fail closed).

    An available balance the exchange does not report (some account modes) is not checked: the exchange
    itself refuses an order it cannot fund, as a definite rejection.
    """
    if balance is None:
        return None
    available = balance.available_usd if balance.available_usd is not None else UNLIMITED
    if rules is None:
        return Funds(available, UNLIMITED, UNLIMITED)
    return Funds(available, balance.free(rules.quote_coin), balance.free(rules.base))


def snapshot(view: PolicyView, facts: Facts) -> Snapshot:
    """What a decision was derived from: policy version, market data and its time, position, rules."""
    touch, rules = facts.touch, facts.rules
    return Snapshot(
        policy_version=view.version,
        trading_state=facts.trading_state.value,
        venue=facts.venue.name,
        market_data_at=touch.observed_at.isoformat() if touch else None,
        bid=plain(touch.bid) if touch else None,
        ask=plain(touch.ask) if touch else None,
        mark=plain(touch.mark) if touch else None,
        position_size=plain(facts.position.size) if facts.position else None,
        equity_usd=plain(facts.equity) if facts.equity is not None else None,
        orders_today=facts.orders_today,
        pending_qty={"buy": plain(facts.pending.buy_qty), "sell": plain(facts.pending.sell_qty)}
        if facts.pending is not None
        else None,
        elsewhere_qty=plain(facts.elsewhere) if facts.elsewhere is not None else None,
        instrument=rules_dict(rules) if rules else None,
        fact_sources=dict(sorted(sources.items())) if (sources := FACT_SOURCES.get()) else None,
    )


def rules_dict(rules: InstrumentRules) -> dict[str, str]:
    """An instrument's rules as Bybit names them, amounts as decimal strings."""
    return {
        "tickSize": plain(rules.tick_size),
        "qtyStep": plain(rules.qty_step),
        "minOrderQty": plain(rules.min_qty),
        "maxOrderQty": plain(rules.max_qty),
        "minNotionalValue": plain(rules.min_notional),
        "maxLeverage": plain(rules.max_leverage),
        "maintenanceMarginRate": plain(rules.maintenance_margin_rate),
    }


def _spot_position(
    symbol: str, rules: InstrumentRules | None, balance: AccountBalance | None
) -> Position | None:
    """On spot, the 'position' is the base coin held (its cost is not known here: entry_price 0, and the loss
    rules value it at the price now)."""
    if rules is None or balance is None:
        return None
    held = next((coin.wallet_balance for coin in balance.coins if coin.coin == rules.base), Decimal(0))
    return Position(symbol=symbol, size=held, entry_price=Decimal(0), leverage=Decimal(1))


async def _maybe(call: Awaitable[T]) -> T | None:
    try:
        return await call
    except ExchangeError as error:
        _note(error)
        return None


async def _none() -> None:
    return None
