"""policy.json as a whole: the human's limits, each field declared once with everything Pilot says of it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from pilot.core.facts import TradingState
from pilot.core.policy.about import About, Shown
from pilot.core.policy.budgets import AgentBudget, check_agent_names
from pilot.core.policy.parts import (
    BILLION,
    MAX_SLIPPAGE_CEILING,
    SYMBOL_PATTERN,
    SYMBOL_SHAPE,
    ConfirmRule,
    Cooldown,
    DeadManSwitch,
    EffectiveLimits,
    Frozen,
    MarketOverrides,
    SelfTradePrevention,
    TradingWindow,
    quoted,
)

# What `pilot init` writes (the repository's policy.json), sized for Bybit's real minimum orders (0.001 BTC is
# about $80, 0.01 ETH $31, 0.1 SOL $10): $100 per market and per order, so each market's smallest order fits;
# BTCUSDT alone gets $150, room for one 0.001 BTC lot with headroom for the price to rise, never two; a human
# confirms any order above $50 (so every BTC order); no CLI channel; a limit price or a stop no farther than
# 10 % from the mark, at most 5 order messages a second and 60 a minute, 5 orders resting per market and 10
# in all, and Bybit's self-match prevention on every create. README.md, "The default policy", says why.
_INIT_MARKETS = ["BTCUSDT", "ETHUSDT", "SOLUSDT"]
_INIT_OVERRIDES = {"BTCUSDT": {"maxNotionalUsd": 150, "maxOrderNotionalUsd": 150}}


class Policy(Frozen):
    """The whole policy.json, in the order `pilot init` writes it. Defaults are the safe example values.

    Every field declares its About (pilot.core.policy.about); pilot.core.policy.fields derives the examples,
    `pilot init`'s file, `get_policy`'s groups and the reference's table from them.
    """

    allowed_markets: Annotated[
        tuple[str, ...],
        About(
            '["BTCUSDT", "ETHUSDT"]',
            "growing a position on any other symbol",
            "`DOGEUSDT is not on the allowed list (BTCUSDT, ETHUSDT)`",
            init=_INIT_MARKETS,
            shown=Shown.TOP,
        ),
    ] = Field(default=(), alias="allowedMarkets")
    # $100: one minimum lot of Bybit's ETH and SOL perpetuals fits several times, and one of BTC's ($80 at
    # 0.001 BTC) once; a smaller cap would refuse every BTCUSDT order on the real venue.
    max_notional_usd: Annotated[
        Decimal,
        About(
            "25",
            "a position this order leaves above it: the coin's gross exposure in that market, linear and spot together, with resting orders and unsettled sends counted as filled, valued at the worst fill",
            "`the position this order leaves would be $160.44 notional, above the $150 cap per market`",
            shown=Shown.MARKET,
            per_market=True,
        ),
    ] = Field(default=Decimal(100), alias="maxNotionalUsd", gt=0, le=BILLION)
    max_order_notional_usd: Annotated[
        Decimal,
        About(
            "25",
            "one order above it at its worst fill",
            "`this order would be $160.44 notional at its worst fill, above the $150 cap per order`",
            shown=Shown.MARKET,
            per_market=True,
        ),
    ] = Field(default=Decimal(100), alias="maxOrderNotionalUsd", gt=0, le=BILLION)
    max_leverage: Annotated[
        Decimal,
        About(
            "3",
            "a position this order leaves above this multiple of equity; `set_leverage` above it",
            "`the position this order leaves would be 4.10x the account equity of $1000, above the 3x limit`",
            shown=Shown.MARKET,
            per_market=True,
        ),
    ] = Field(default=Decimal(3), alias="maxLeverage", ge=1, le=100)
    min_liquidation_distance_pct: Annotated[
        Decimal,
        About(
            "20",
            "an estimated liquidation closer to mark than this",
            "`liquidation would sit 12.34% from mark, closer than the 20% minimum`",
            shown=Shown.MARKET,
            per_market=True,
        ),
    ] = Field(default=Decimal(20), alias="minLiquidationDistancePct", ge=0, le=1000)
    daily_order_cap: Annotated[
        int,
        About(
            "20",
            "a growing order once this many orders were sent today (UTC); the refusal carries `retry_after` (00:00 UTC)",
            "`20 orders already sent today (UTC), the cap is 20`",
            shown=Shown.TOP,
        ),
    ] = Field(default=20, alias="dailyOrderCap", ge=0, le=100_000)
    max_slippage_pct: Annotated[
        Decimal,
        About(
            "0.5",
            "sets the worst price of market orders (sent as Limit IOC at ask × (1 + p) or bid × (1 − p))",
            "(a pricing rule, not a refusal)",
            shown=Shown.MARKET,
            per_market=True,
        ),
    ] = Field(default=Decimal("0.5"), alias="maxSlippagePct", gt=0, le=MAX_SLIPPAGE_CEILING)
    plan_ttl_seconds: Annotated[
        int,
        About(
            "60",
            "placing a plan older than this (`planExpired`, with a re-plan action)",
            "`the plan expired at …`",
            shown=Shown.TOP,
        ),
    ] = Field(default=60, alias="planTtlSeconds", ge=5, le=300)
    # How old a fact kept from the exchange's streams may be and still be judged on (pilot.core.freshness);
    # older, or a stream out of sync, and the fact is read over REST. Not a refusal: it picks the source.
    max_fact_age_ms: Annotated[
        int,
        About(
            "300 (milliseconds; 0 judges every fact as read over REST)",
            "(picks the source of facts, not a refusal) a fact kept from the exchange's streams is judged on only when its stream is in sync and the fact is younger than this (0: never); otherwise it is read over REST ([Facts kept fresh by streams](how-it-works.md#facts-kept-fresh-by-streams))",
            shown=Shown.TOP,
        ),
    ] = Field(default=300, alias="maxFactAgeMs", ge=0, le=5000)
    confirm: Annotated[
        ConfirmRule, About('{"aboveNotionalUsd": 100, "actions": ["set_leverage"], "cliChannel": false}')
    ] = Field(default_factory=ConfirmRule)
    trading_state: Annotated[
        TradingState,
        About(
            '"active" (or "reducing", "halted")',
            "`reducing`: anything that grows a position; `halted`: everything but cancels",
            "`trading is reducing: only orders that shrink a position are allowed`",
            shown=Shown.STATE,
            key="policy_trading_state",
        ),
    ] = Field(default=TradingState.ACTIVE, alias="tradingState")
    # Loss rules (issue 15): the loss one trade may take at its stop, the day's loss, open markets, hours.
    max_loss_per_trade_usd: Annotated[
        Decimal | None,
        About(
            "10 (or null for no limit)",
            "the position an action leaves would lose more than this at the stops it will then have, from its entry, taker fees both ways. **Linear**: a stop sent with an order becomes the stop of the whole position once it fills (tpslMode Full), so a 0.01 ETH buy with a far stop is judged on all the ETH it will protect; orders pending on the same side are assumed to fill too, the widest stop among them applying; partial stops close their own size. A position with any of it under no stop has no bound (`unbounded`): refused however an order would leave it (opening or adding without a stop, a flip, a limit order that may rest and fill once the position is gone, judged from flat too). **Spot**: the position is the coin held (valued at the bid: what it cost is not known) with the buy and the buys resting; a stop sent with a buy sells what that buy brought (the fee is paid in the coin: its dust has no stop), each spot stop order sells its own quantity, and the coin no stop sells can lose its whole value, so a buy whose whole value is within the limit needs no stop; a sell is never judged. Moving a stop away, cancelling a stop order and `cancel_all_orders` with `include_stops` are judged the same way. The answer gives the order with a stop that fits, the size that fits, or keeps the stop",
            "`the 0.21 ETHUSDT position this order leaves would lose $84.67 if its stop at 2700 is hit (...), above the $5 a trade may lose`",
            shown=Shown.LOSS_RULES,
            per_market=True,
        ),
    ] = Field(default=None, alias="maxLossPerTradeUsd", gt=0, le=BILLION)
    max_loss_per_trade_pct: Annotated[
        Decimal | None,
        About(
            "1 (percent of equity, or null)",
            "as above, with the limit this percentage of account equity (the smaller of the two applies)",
            "as above",
            shown=Shown.LOSS_RULES,
            per_market=True,
        ),
    ] = Field(default=None, alias="maxLossPerTradePct", gt=0, le=100)
    require_stop_loss: Annotated[
        bool,
        About(
            "true",
            "an order without a `stop_loss` that opens or adds to a linear position, or a spot buy (the next action adds one that fits the loss limit; on spot it sells what the buy filled); removing or cancelling a stop that leaves some of the position or of the coin held without one",
            "`policy.json requires a stop_loss on every order that opens or adds to a position`",
            shown=Shown.LOSS_RULES,
            per_market=True,
        ),
    ] = Field(default=False, alias="requireStopLoss", strict=True)
    daily_loss_limit_usd: Annotated[
        Decimal | None,
        About(
            "50 (or null for no limit)",
            "past it (the day's loss on every product: realised since 00:00 UTC plus unrealised now, spot counted from the day's fills at their cost: [The day's loss](#the-days-loss)), trading turns `reducing` by itself until 00:00 UTC or `pilot loss-limit reset`, journaled with the numbers, and the agent's resting orders that could grow a position are cancelled",
            "`the day's loss so far is $61.20 (realised $40, unrealised $21.20; of which spot: realised $30.99, unrealised $0), at or past the daily loss limit of $50`",
            shown=Shown.LOSS_RULES,
        ),
    ] = Field(default=None, alias="dailyLossLimitUsd", gt=0, le=BILLION)
    daily_loss_limit_pct: Annotated[
        Decimal | None,
        About(
            "3 (percent of the day's starting equity, or null)",
            "as above, with the limit this percentage of the day's starting equity (equity now minus the day's PnL)",
            "as above",
            shown=Shown.LOSS_RULES,
        ),
    ] = Field(default=None, alias="dailyLossLimitPct", gt=0, le=100)
    max_open_positions: Annotated[
        int | None,
        About(
            "2 (or null for no limit)",
            "an order that would leave linear positions open in more markets than this (this order's included)",
            "`this order would leave positions open in 3 markets (BTCUSDT, ETHUSDT and SOLUSDT), above the limit of 2`",
            shown=Shown.LOSS_RULES,
        ),
    ] = Field(default=None, alias="maxOpenPositions", ge=1, le=1000)
    trading_hours: Annotated[
        tuple[TradingWindow, ...],
        About(
            '[{"start": "08:00", "end": "20:00"}] (UTC; [] trades at any hour)',
            'outside every window (`[{"start": "08:00", "end": "20:00"}]`, UTC, end before start runs past midnight), a growing order; `retry_after` is the next opening',
            "`it is 21:05 UTC, outside the trading hours (08:00-20:00 UTC)`",
            shown=Shown.LOSS_RULES,
            key="trading_hours_utc",
        ),
    ] = Field(default=(), alias="tradingHours", max_length=24)
    # Pre-trade controls (issue 27): price collars, message throttles and resting orders, drawdown, cooldown,
    # turnover, authority that expires, the dead-man's switch, self-trade prevention. `pilot init` sets those
    # whose right value does not depend on the account (README.md, "The default policy").
    price_collar_pct: Annotated[
        Decimal | None,
        About(
            "5 (percent from mark, or null)",
            "a limit price farther than this from mark on the side where a mistake costs money (a buy above it, a sell below it), and the `stop_loss` of an order that can grow a position, or a stop `set_trading_stop` moves away, farther than this from mark (codes `priceCollar`, `priceCollar.stopLoss`); the next action is the same order, or stop, at the collar's edge. A market order is bounded by `maxSlippagePct` instead",
            "`the limit price 82000 is above the price collar's edge 81022.2 (1% above the mark 80220)`",
            init=10,
            shown=Shown.CONTROLS,
            per_market=True,
        ),
    ] = Field(default=None, alias="priceCollarPct", gt=0, le=100)
    price_collar_ticks: Annotated[
        int | None,
        About(
            "200 (ticks from mark, or null)",
            "as above, in ticks from mark; with both, the nearer edge applies",
            shown=Shown.CONTROLS,
            per_market=True,
        ),
    ] = Field(default=None, alias="priceCollarTicks", ge=1, le=10**9)
    max_order_messages_per_second: Annotated[
        int | None,
        About(
            "5 (creates, amends and cancels, or null)",
            "one more create, amend or cancel once this many were sent from the home in the last second, by every process of it (Bybit counts each request per account in a rolling window); it binds reducing actions too; `retry_after` is when one leaves the window",
            "`2 creates, amends and cancels were sent from this home in the last second; the most policy.json allows is 2 a second`",
            init=5,
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxOrderMessagesPerSecond", ge=1, le=1000)
    max_order_messages_per_minute: Annotated[
        int | None,
        About(
            "60 (creates, amends and cancels, or null)",
            "as above, in the last minute",
            init=60,
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxOrderMessagesPerMinute", ge=1, le=60_000)
    max_resting_orders: Annotated[
        int | None,
        About(
            "10 (in total, or null)",
            "a limit order (Pilot sends it GTC: it rests) while this many ordinary orders rest on the whole account, sends whose outcome is unknown counted; a market order never rests",
            "`10 ordinary orders rest on the account already; policy.json allows at most 10`",
            init=10,
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxRestingOrders", ge=1, le=10_000)
    max_resting_orders_per_market: Annotated[
        int | None,
        About(
            "3 (each market, or null)",
            "as above, on its market",
            "`1 ordinary orders rest on BTCUSDT already; policy.json allows at most 1`",
            init=5,
            shown=Shown.CONTROLS,
            per_market=True,
        ),
    ] = Field(default=None, alias="maxRestingOrdersPerMarket", ge=1, le=500)
    max_drawdown_usd: Annotated[
        Decimal | None,
        About(
            "50 (from the peak equity, or null)",
            "past this drawdown from the peak equity Pilot read in the UTC day (or in `drawdownWindowHours`: every equity it reads counts, a judgement's, `get_policy`'s, `get_balances`' and the wallet stream's), trading turns `reducing` by itself until the window passes (00:00 UTC, or that many hours after it was reached) or `pilot drawdown reset`, journaled with the numbers, and the agent's resting orders that could grow a position are cancelled",
            "`the equity $995.12 is $4.88 below its peak $1000, at or past the drawdown limit of $3`",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxDrawdownUsd", gt=0, le=BILLION)
    max_drawdown_pct: Annotated[
        Decimal | None,
        About(
            "5 (percent of the peak equity, or null)",
            "as above, with the limit this percentage of the peak",
            "as above",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxDrawdownPct", gt=0, le=100)
    drawdown_window_hours: Annotated[
        int | None,
        About(
            "24 (a rolling window; null: the UTC day)",
            "(the window the peak is taken over: the last this many hours; `null`: the UTC day)",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="drawdownWindowHours", ge=1, le=168)
    cooldown: Annotated[
        Cooldown | None,
        About(
            '{"afterLosses": 3, "minutes": 30} (or null)',
            '`{"afterLosses": 3, "minutes": 30}`, with `"withinMinutes": 60` to count losses within that window instead of in a row: after that many losing closed trades (on derivatives a closed-PnL row; on spot a sell of coin bought that day: [The day\'s loss](#the-days-loss)), a growing order for `minutes` from when Pilot first saw them (`retry_after`), and the agent\'s resting orders that could grow a position are cancelled',
            "`2 closed trades were losses in a row: no order that opens or adds for 30 minutes, until …`",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None)
    max_turnover_usd_per_day: Annotated[
        Decimal | None,
        About(
            "1000 (or null)",
            'a growing order whose worst-fill notional, added to what Pilot sent since 00:00 UTC (a resting order in full, an IOC one what it filled, an amend what it adds), is above this; the next action is the largest size that fits, or "nothing fits" with `retry_after` 00:00 UTC',
            "`this order's $16.04 at its worst fill would bring the notional sent today (UTC) to $32.09, above the $30 a day allows`",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxTurnoverUsdPerDay", gt=0, le=Decimal(10) ** 12)
    max_turnover_usd_24h: Annotated[
        Decimal | None,
        About(
            "1000 (or null)",
            "as above, over the last 24 hours (`retry_after`: when the oldest order counted leaves them)",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxTurnoverUsd24h", gt=0, le=Decimal(10) ** 12)
    valid_until: Annotated[
        datetime | None,
        About(
            '"2026-12-31T18:00:00Z" (UTC, or null)',
            'after this UTC time (`"2026-12-31T18:00:00Z"`), anything that grows a position: only reducing actions pass until a human extends it',
            "`policy.json gives authority to open or add until 2026-12-31T18:00:00+00:00; it is …`",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="validUntil")
    max_session_minutes: Annotated[
        int | None,
        About(
            "480 (or null)",
            "in an MCP session older than this, anything that grows a position (a human starts a new session, or raises it)",
            "`this session has lasted 31 minutes; policy.json gives a session authority to open or add for 30`",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="maxSessionMinutes", ge=1, le=10_080)
    dead_man_switch: Annotated[
        DeadManSwitch | None,
        About(
            '{"afterSeconds": 300, "onSessionEnd": false, "reducing": true} (or null)',
            '(acts, refuses nothing) `{"afterSeconds": 300, "onSessionEnd": false, "reducing": true}`: when no agent call reached the home for that long, or the last MCP session ended, while orders the agent placed that can open a position rest, Pilot cancels them and with `reducing` turns the kill switch on ([Pre-trade controls](controls.md))',
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="deadManSwitch")
    self_trade_prevention: Annotated[
        SelfTradePrevention | None,
        About(
            '"CancelMaker" (or "CancelTaker", "CancelBoth", null)',
            "(refuses nothing) Bybit's `smpType` sent with every create: `CancelMaker`, `CancelTaker` or `CancelBoth`",
            init="CancelMaker",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default=None, alias="selfTradePrevention")
    agents: Annotated[
        dict[str, AgentBudget],
        About(
            '{"scout": {"maxNotionalUsd": 50, "dailyOrderCap": 10}}',
            "an order by agent NAME (`pilot agent add NAME`) past its own budget: `allowedMarkets`, `maxNotionalUsd` and `maxOrderNotionalUsd` (and per market under `markets`), `maxLossPerTradeUsd`, `dailyLossLimitUsd` (the account's loss today), `dailyOrderCap` and `maxTurnoverUsdPerDay` (its own sends); its `maxNotionalUsd` counts its share of the market, what its own orders put there and never more than the account holds ([Agents' budgets](#agents-budgets)); the account's limits bind it too, the tighter wins, and a refusal's `budget` says whose",
            "`5 orders already sent today (UTC), the cap is 5` with `budget` `agent:scout`",
            shown=Shown.CONTROLS,
        ),
    ] = Field(default_factory=dict)
    markets: Annotated[
        dict[str, MarketOverrides],
        About(
            '{"BTCUSDT": {"maxNotionalUsd": 50}}',
            "per-market overrides of {overrides}; SYMBOL must be in `allowedMarkets`",
            init=_INIT_OVERRIDES,
        ),
    ] = Field(default_factory=dict)
    _limits_cache: dict[str, EffectiveLimits] = PrivateAttr(default_factory=dict)

    @field_validator("allowed_markets")
    @classmethod
    def _symbols(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for symbol in value:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(f"{quoted(symbol)} is not a market's symbol ({SYMBOL_SHAPE})")
        if len(set(value)) != len(value):
            raise ValueError("a market is listed twice")
        return value

    @field_validator("valid_until", mode="before")
    @classmethod
    def _utc_moment(cls, value: Any) -> Any:
        # A time without its zone would be read in this machine's zone: ambiguous, so refused.
        if value is None:
            return value
        if not isinstance(value, str) or len(value) > 40:
            raise ValueError('must be a UTC time as text, such as "2026-12-31T18:00:00Z"')
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError('must be a UTC time as text, such as "2026-12-31T18:00:00Z"') from None
        if moment.tzinfo is None:
            raise ValueError('needs its zone: end it with "Z" for UTC, such as "2026-12-31T18:00:00Z"')
        return moment

    @field_validator("agents")
    @classmethod
    def _agent_names(cls, value: dict[str, AgentBudget]) -> dict[str, AgentBudget]:
        return check_agent_names(value)

    @model_validator(mode="after")
    def _market_keys(self) -> Policy:
        for symbol in self.markets:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(f"markets key {quoted(symbol)} is not a market's symbol ({SYMBOL_SHAPE})")
        return self

    def limits_for(self, symbol: str) -> EffectiveLimits:
        """The effective limits for one market: the top-level values with its overrides applied."""
        private = self.__pydantic_private__ or {}  # direct: pydantic's __getattr__ is slow here
        cache: dict[str, EffectiveLimits] = private["_limits_cache"]
        cached = cache.get(symbol)
        if cached is not None:
            return cached
        override = self.markets.get(symbol)
        values = {}
        for name in PER_MARKET:
            value = getattr(override, name) if override is not None else None
            values[name] = value if value is not None else getattr(self, name)
        limits = EffectiveLimits(**values)
        cache[symbol] = limits  # the model is frozen, so the answer never changes
        return limits

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Policy:
        """A copy with changed fields; the limits cache starts empty so it never serves the old values."""
        copy = super().model_copy(update=update, deep=deep)
        copy.__pydantic_private__ = {"_limits_cache": {}}
        return copy

    def to_canonical(self) -> dict[str, Any]:
        """The policy with every default filled in, JSON-ready (decimals as strings), keys as in the file."""
        canonical: dict[str, Any] = json.loads(self.model_dump_json(by_alias=True))
        return canonical

    @staticmethod
    def fail_closed() -> Policy:
        """What applies while policy.json is invalid: nothing may grow, reducing still works."""
        return Policy(trading_state=TradingState.REDUCING)


# The fields a market may override, in the order Policy declares them (MarketOverrides and EffectiveLimits
# declare the same ones: tests/core/test_policy_fields.py holds the three together).
PER_MARKET: tuple[str, ...] = tuple(
    name
    for name, field in Policy.model_fields.items()
    if any(isinstance(item, About) and item.per_market for item in field.metadata)
)
