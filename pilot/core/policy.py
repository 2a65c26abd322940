"""policy.json: the human's limits, parsed into a frozen model with a version and errors that say the fix."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pilot.core.channels import CHANNELS, Via
from pilot.core.facts import TradingState

SYMBOL_PATTERN = re.compile(r"^[A-Z0-9]{2,30}$")
MAX_SLIPPAGE_CEILING = Decimal(3)

# policy.json is read as hostile input; what a policy never needs is refused before it can cost anything.
MAX_POLICY_BYTES = 64 * 1024
MAX_NESTING = 10  # the deepest real path is 3: markets.SYMBOL.field
MAX_NUMBER_DIGITS = 30  # and a magnitude between 1e-30 and 1e30
MAX_ISSUES = 20  # reported; a file of a thousand typos gets the first twenty and a count
# A JSON string (possessive, so an unterminated one runs to the end in one pass) or a bracket.
_BRACKETS_AND_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_NUMBER_FIX = "write a plain number such as 25 (at most 30 digits, magnitude 1e-30 to 1e30)"
_SHIPPED = "start again from the example that `pilot init` writes"

# Tools a human may require confirmation for (policy.json "confirm.actions").
ApprovalTool = Literal["place_order", "close_position", "cancel_order", "set_leverage"]
CONFIRMABLE_TOOLS: tuple[ApprovalTool, ...] = get_args(ApprovalTool)

# A valid example for every field, shown next to any error about it.
EXAMPLES: dict[str, str] = {
    "allowedMarkets": '["BTCUSDT", "ETHUSDT"]',
    "maxNotionalUsd": "25",
    "maxOrderNotionalUsd": "25",
    "maxLeverage": "3",
    "minLiquidationDistancePct": "20",
    "dailyOrderCap": "20",
    "maxSlippagePct": "0.5",
    "planTtlSeconds": "60",
    "confirm": '{"aboveNotionalUsd": 100, "actions": ["set_leverage"], "cliChannel": false}',
    "aboveNotionalUsd": "100 (or null for never)",
    "actions": '["place_order", "set_leverage"]',
    "cliChannel": "false",
    "consoleChannel": "false",
    "pendingTtlSeconds": "300",
    "consoleUrl": '"http://127.0.0.1:8765" (where your browser reaches `pilot console`)',
    "telegram": '{"approvers": [123456789]} (your Telegram user id; or null for off)',
    "approvers": "[123456789] (Telegram user ids: ask @userinfobot for yours)",
    "ntfy": '{"topic": "pilot-7f3k2q9x", "server": "https://ntfy.sh"} (or null for off)',
    "topic": '"pilot-7f3k2q9x" (letters, digits, - and _; hard to guess: it is the password)',
    "server": '"https://ntfy.sh"',
    "tradingState": '"active" (or "reducing", "halted")',
    "markets": '{"BTCUSDT": {"maxNotionalUsd": 50}}',
    "maxLossPerTradeUsd": "10 (or null for no limit)",
    "maxLossPerTradePct": "1 (percent of equity, or null)",
    "requireStopLoss": "true",
    "dailyLossLimitUsd": "50 (or null for no limit)",
    "dailyLossLimitPct": "3 (percent of the day's starting equity, or null)",
    "maxOpenPositions": "2 (or null for no limit)",
    "tradingHours": '[{"start": "08:00", "end": "20:00"}] (UTC; [] trades at any hour)',
    "start": '"08:00" (UTC, HH:MM)',
    "end": '"20:00" (UTC, HH:MM; earlier than start runs past midnight)',
    "priceCollarPct": "5 (percent from mark, or null)",
    "priceCollarTicks": "200 (ticks from mark, or null)",
    "maxOrderMessagesPerSecond": "5 (creates, amends and cancels, or null)",
    "maxOrderMessagesPerMinute": "60 (creates, amends and cancels, or null)",
    "maxRestingOrders": "10 (in total, or null)",
    "maxRestingOrdersPerMarket": "3 (each market, or null)",
    "maxDrawdownUsd": "50 (from the peak equity, or null)",
    "maxDrawdownPct": "5 (percent of the peak equity, or null)",
    "drawdownWindowHours": "24 (a rolling window; null: the UTC day)",
    "cooldown": '{"afterLosses": 3, "minutes": 30} (or null)',
    "afterLosses": "3",
    "withinMinutes": "60 (or null: in a row)",
    "minutes": "30",
    "maxTurnoverUsdPerDay": "1000 (or null)",
    "maxTurnoverUsd24h": "1000 (or null)",
    "validUntil": '"2026-12-31T18:00:00Z" (UTC, or null)',
    "maxSessionMinutes": "480 (or null)",
    "deadManSwitch": '{"afterSeconds": 300, "onSessionEnd": false, "reducing": true} (or null)',
    "afterSeconds": "300 (or null)",
    "onSessionEnd": "false",
    "reducing": "true",
    "selfTradePrevention": '"CancelMaker" (or "CancelTaker", "CancelBoth", null)',
}
HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        # JSON true/false is not a number, whatever Python thinks; nor is text that looks like one ("100"
        # may be a slip for something else in a file a human edits by hand).
        annotation = cls.model_fields[info.field_name].annotation if info.field_name else None
        kinds = {annotation, *get_args(annotation)}
        if isinstance(value, bool) and bool not in kinds:
            raise ValueError("expected a number, not true/false")
        if isinstance(value, str) and str not in kinds and kinds & {Decimal, int}:
            raise ValueError(
                f"expected a number, not the text {json.dumps(value)[:40]}: write it without quotes"
            )
        return value


@dataclass(frozen=True, slots=True)
class EffectiveLimits:
    """The numeric limits that apply to one market (top level, then that market's overrides)."""

    max_notional_usd: Decimal
    max_order_notional_usd: Decimal
    max_leverage: Decimal
    min_liquidation_distance_pct: Decimal
    max_slippage_pct: Decimal
    max_loss_per_trade_usd: Decimal | None = None
    max_loss_per_trade_pct: Decimal | None = None
    require_stop_loss: bool = False
    price_collar_pct: Decimal | None = None
    price_collar_ticks: int | None = None
    max_resting_orders_per_market: int | None = None


class TradingWindow(_Frozen):
    """One daily window of UTC time in which growing orders are allowed: [start, end), wrapping past midnight
    when end is earlier than start."""

    start: str
    end: str

    @field_validator("start", "end")
    @classmethod
    def _clock_time(cls, value: str) -> str:
        if not isinstance(value, str) or not HHMM.match(value):
            raise ValueError('must be a UTC time of day as HH:MM, such as "08:00"')
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> TradingWindow:
        if self.start == self.end:
            raise ValueError("start and end are the same time; for all day, leave tradingHours out")
        return self

    @property
    def start_minute(self) -> int:
        return int(self.start[:2]) * 60 + int(self.start[3:])

    @property
    def end_minute(self) -> int:
        return int(self.end[:2]) * 60 + int(self.end[3:])


class MarketOverrides(_Frozen):
    """Per-market overrides: any subset of the numeric limits."""

    max_notional_usd: Decimal | None = Field(default=None, alias="maxNotionalUsd", gt=0, le=Decimal(10) ** 9)
    max_order_notional_usd: Decimal | None = Field(
        default=None, alias="maxOrderNotionalUsd", gt=0, le=Decimal(10) ** 9
    )
    max_leverage: Decimal | None = Field(default=None, alias="maxLeverage", ge=1, le=100)
    min_liquidation_distance_pct: Decimal | None = Field(
        default=None, alias="minLiquidationDistancePct", ge=0, le=1000
    )
    max_slippage_pct: Decimal | None = Field(
        default=None, alias="maxSlippagePct", gt=0, le=MAX_SLIPPAGE_CEILING
    )
    max_loss_per_trade_usd: Decimal | None = Field(
        default=None, alias="maxLossPerTradeUsd", gt=0, le=Decimal(10) ** 9
    )
    max_loss_per_trade_pct: Decimal | None = Field(default=None, alias="maxLossPerTradePct", gt=0, le=100)
    require_stop_loss: bool | None = Field(default=None, alias="requireStopLoss", strict=True)
    price_collar_pct: Decimal | None = Field(default=None, alias="priceCollarPct", gt=0, le=100)
    price_collar_ticks: int | None = Field(default=None, alias="priceCollarTicks", ge=1, le=10**9)
    max_resting_orders_per_market: int | None = Field(
        default=None, alias="maxRestingOrdersPerMarket", ge=1, le=500
    )


class Cooldown(_Frozen):
    """After `afterLosses` losing trades in a row (or within `withinMinutes` of each other), no growing order
    for `minutes`."""

    after_losses: int = Field(alias="afterLosses", ge=1, le=100)
    within_minutes: int | None = Field(default=None, alias="withinMinutes", ge=1, le=10_080)
    minutes: int = Field(alias="minutes", ge=1, le=10_080)


class DeadManSwitch(_Frozen):
    """When no agent call reached the home for `afterSeconds`, or the last MCP session ended
    (`onSessionEnd`), Pilot cancels the opening orders its agent left resting, and with `reducing` turns the
    kill switch on."""

    after_seconds: int | None = Field(default=None, alias="afterSeconds", ge=10, le=86_400)
    on_session_end: bool = Field(default=False, alias="onSessionEnd", strict=True)
    reducing: bool = Field(default=False, alias="reducing", strict=True)

    @model_validator(mode="after")
    def _some_trigger(self) -> DeadManSwitch:
        if self.after_seconds is None and not self.on_session_end:
            raise ValueError("set afterSeconds, or onSessionEnd true: otherwise it never fires")
        return self


# Bybit's smpType (enum.mdx): which side of a self-match the exchange cancels.
SelfTradePrevention = Literal["CancelMaker", "CancelTaker", "CancelBoth"]


_WEB_ADDRESS = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+(:[0-9]{1,5})?(/[A-Za-z0-9._~\-/]*)?$")
_NTFY_TOPIC = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


def _web_address(value: str) -> str:
    if not isinstance(value, str) or len(value) > 200 or not _WEB_ADDRESS.match(value):
        raise ValueError("must be an http:// or https:// address, such as http://127.0.0.1:8765")
    return value.rstrip("/")


class TelegramChannel(_Frozen):
    """A Telegram bot asks these users (by their Telegram user id) to approve or reject each parked action."""

    approvers: tuple[StrictInt, ...]

    @field_validator("approvers")
    @classmethod
    def _user_ids(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not 1 <= len(value) <= 10:
            raise ValueError("list 1 to 10 approvers")
        if any(user <= 0 for user in value):
            raise ValueError("a Telegram user id is a positive number (a group's chat id is not an approver)")
        if len(set(value)) != len(value):
            raise ValueError("an approver is listed twice")
        return value


class NtfyChannel(_Frozen):
    """An ntfy topic is sent each parked action; its button opens the console's page for it."""

    topic: str
    server: str = "https://ntfy.sh"

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        if not isinstance(value, str) or not _NTFY_TOPIC.match(value):
            raise ValueError("a topic is 1 to 64 letters, digits, - or _")
        return value

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        return _web_address(value)


class ConfirmRule(_Frozen):
    """When a human must confirm: above a notional, or for named tools; and where a human may approve."""

    above_notional_usd: Decimal | None = Field(default=None, alias="aboveNotionalUsd", gt=0)
    actions: tuple[str, ...] = Field(default=())
    # Strict: "yes", "true", 1 are not the JSON boolean true; a switch that opens a channel takes only true.
    cli_channel: bool = Field(default=False, alias="cliChannel", strict=True)
    console_channel: bool = Field(default=False, alias="consoleChannel", strict=True)  # `pilot console`
    pending_ttl_seconds: int = Field(default=300, alias="pendingTtlSeconds", ge=30, le=3600)
    # Where the human's browser reaches `pilot console`: the address approval links (URL-mode elicitation,
    # ntfy's button, the Telegram message) point to.
    console_url: str = Field(default="http://127.0.0.1:8765", alias="consoleUrl")
    telegram: TelegramChannel | None = None  # a bot asks the approvers on their phones (off: null)
    ntfy: NtfyChannel | None = None  # notifications with a button to the console's page (off: null)

    def opens(self, via: Via) -> bool:
        """Whether policy.json opens this channel for a human to decide parked actions."""
        return bool(getattr(self, _SWITCHES[CHANNELS[via][1]]))

    @property
    def open_channels(self) -> tuple[Via, ...]:
        """The channels a human may decide parked actions on, in CHANNELS' order."""
        return tuple(via for via in CHANNELS if self.opens(via))

    @property
    def human_outside_client(self) -> bool:
        """Whether a human can be asked outside the MCP client: some channel is open."""
        return bool(self.open_channels)

    @field_validator("console_url")
    @classmethod
    def _console_url(cls, value: str) -> str:
        return _web_address(value)

    @model_validator(mode="after")
    def _ntfy_needs_the_console(self) -> ConfirmRule:
        if self.ntfy is not None and not self.console_channel:
            raise ValueError(
                "ntfy's button opens the console's page for the action, so confirm.ntfy needs "
                "confirm.consoleChannel true"
            )
        return self

    @field_validator("actions")
    @classmethod
    def _known_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in CONFIRMABLE_TOOLS]
        if unknown:
            raise ValueError(
                f"unknown tool {_quoted(unknown[0])}; choose from {', '.join(CONFIRMABLE_TOOLS)}"
            )
        return value


# The ConfirmRule attribute of each channel's switch, read off the model so the alias is written once.
_SWITCHES = {field.alias or name: name for name, field in ConfirmRule.model_fields.items()}


class Policy(_Frozen):
    """The whole policy.json. Defaults are the safe example values."""

    allowed_markets: tuple[str, ...] = Field(default=(), alias="allowedMarkets")
    # $100: one minimum lot of Bybit's ETH and SOL perpetuals fits several times, and one of BTC's ($80 at
    # 0.001 BTC) once; a smaller cap would refuse every BTCUSDT order on the real venue.
    max_notional_usd: Decimal = Field(default=Decimal(100), alias="maxNotionalUsd", gt=0, le=Decimal(10) ** 9)
    max_order_notional_usd: Decimal = Field(
        default=Decimal(100), alias="maxOrderNotionalUsd", gt=0, le=Decimal(10) ** 9
    )
    max_leverage: Decimal = Field(default=Decimal(3), alias="maxLeverage", ge=1, le=100)
    min_liquidation_distance_pct: Decimal = Field(
        default=Decimal(20), alias="minLiquidationDistancePct", ge=0, le=1000
    )
    daily_order_cap: int = Field(default=20, alias="dailyOrderCap", ge=0, le=100_000)
    max_slippage_pct: Decimal = Field(
        default=Decimal("0.5"), alias="maxSlippagePct", gt=0, le=MAX_SLIPPAGE_CEILING
    )
    plan_ttl_seconds: int = Field(default=60, alias="planTtlSeconds", ge=5, le=300)
    # How old a fact kept from the exchange's streams may be and still be judged on (pilot.core.freshness);
    # older, or a stream out of sync, and the fact is read over REST. Not a refusal: it picks the source.
    max_fact_age_ms: int = Field(default=300, alias="maxFactAgeMs", ge=0, le=5000)
    confirm: ConfirmRule = Field(default_factory=ConfirmRule)
    trading_state: TradingState = Field(default=TradingState.ACTIVE, alias="tradingState")
    markets: dict[str, MarketOverrides] = Field(default_factory=dict)
    # Loss rules (issue 15): the loss one trade may take at its stop, the day's loss, open markets, hours.
    max_loss_per_trade_usd: Decimal | None = Field(
        default=None, alias="maxLossPerTradeUsd", gt=0, le=Decimal(10) ** 9
    )
    max_loss_per_trade_pct: Decimal | None = Field(default=None, alias="maxLossPerTradePct", gt=0, le=100)
    require_stop_loss: bool = Field(default=False, alias="requireStopLoss", strict=True)
    daily_loss_limit_usd: Decimal | None = Field(
        default=None, alias="dailyLossLimitUsd", gt=0, le=Decimal(10) ** 9
    )
    daily_loss_limit_pct: Decimal | None = Field(default=None, alias="dailyLossLimitPct", gt=0, le=100)
    max_open_positions: int | None = Field(default=None, alias="maxOpenPositions", ge=1, le=1000)
    trading_hours: tuple[TradingWindow, ...] = Field(default=(), alias="tradingHours", max_length=24)
    # Pre-trade controls (issue 27): price collars, message throttles and resting orders, drawdown, cooldown,
    # turnover, authority that expires, the dead-man's switch, self-trade prevention.
    price_collar_pct: Decimal | None = Field(default=None, alias="priceCollarPct", gt=0, le=100)
    price_collar_ticks: int | None = Field(default=None, alias="priceCollarTicks", ge=1, le=10**9)
    max_order_messages_per_second: int | None = Field(
        default=None, alias="maxOrderMessagesPerSecond", ge=1, le=1000
    )
    max_order_messages_per_minute: int | None = Field(
        default=None, alias="maxOrderMessagesPerMinute", ge=1, le=60_000
    )
    max_resting_orders: int | None = Field(default=None, alias="maxRestingOrders", ge=1, le=10_000)
    max_resting_orders_per_market: int | None = Field(
        default=None, alias="maxRestingOrdersPerMarket", ge=1, le=500
    )
    max_drawdown_usd: Decimal | None = Field(default=None, alias="maxDrawdownUsd", gt=0, le=Decimal(10) ** 9)
    max_drawdown_pct: Decimal | None = Field(default=None, alias="maxDrawdownPct", gt=0, le=100)
    drawdown_window_hours: int | None = Field(default=None, alias="drawdownWindowHours", ge=1, le=168)
    cooldown: Cooldown | None = Field(default=None)
    max_turnover_usd_per_day: Decimal | None = Field(
        default=None, alias="maxTurnoverUsdPerDay", gt=0, le=Decimal(10) ** 12
    )
    max_turnover_usd_24h: Decimal | None = Field(
        default=None, alias="maxTurnoverUsd24h", gt=0, le=Decimal(10) ** 12
    )
    valid_until: datetime | None = Field(default=None, alias="validUntil")
    max_session_minutes: int | None = Field(default=None, alias="maxSessionMinutes", ge=1, le=10_080)
    dead_man_switch: DeadManSwitch | None = Field(default=None, alias="deadManSwitch")
    self_trade_prevention: SelfTradePrevention | None = Field(default=None, alias="selfTradePrevention")
    _limits_cache: dict[str, EffectiveLimits] = PrivateAttr(default_factory=dict)

    @field_validator("allowed_markets")
    @classmethod
    def _symbols(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for symbol in value:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(f"{_quoted(symbol)} is not a Bybit symbol (upper-case letters and digits)")
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

    @model_validator(mode="after")
    def _market_keys(self) -> Policy:
        for symbol in self.markets:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(
                    f"markets key {_quoted(symbol)} is not a Bybit symbol (upper-case letters and digits)"
                )
        return self

    def limits_for(self, symbol: str) -> EffectiveLimits:
        """The effective numeric limits for one market: the top-level values with its overrides applied."""
        private = self.__pydantic_private__ or {}  # direct: pydantic's __getattr__ is slow here
        cache: dict[str, EffectiveLimits] = private["_limits_cache"]
        cached = cache.get(symbol)
        if cached is not None:
            return cached
        override = self.markets.get(symbol)

        def pick(name: str) -> Decimal:
            value: Decimal | None = getattr(override, name) if override is not None else None
            fallback: Decimal = getattr(self, name)
            return value if value is not None else fallback

        def maybe(name: str) -> Any:
            value = getattr(override, name) if override is not None else None
            return value if value is not None else getattr(self, name)

        limits = EffectiveLimits(
            max_notional_usd=pick("max_notional_usd"),
            max_order_notional_usd=pick("max_order_notional_usd"),
            max_leverage=pick("max_leverage"),
            min_liquidation_distance_pct=pick("min_liquidation_distance_pct"),
            max_slippage_pct=pick("max_slippage_pct"),
            max_loss_per_trade_usd=maybe("max_loss_per_trade_usd"),
            max_loss_per_trade_pct=maybe("max_loss_per_trade_pct"),
            require_stop_loss=maybe("require_stop_loss"),
            price_collar_pct=maybe("price_collar_pct"),
            price_collar_ticks=maybe("price_collar_ticks"),
            max_resting_orders_per_market=maybe("max_resting_orders_per_market"),
        )
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


@dataclass(frozen=True, slots=True)
class PolicyIssue:
    """One thing wrong with policy.json: where (a JSON path), what, and how to fix it."""

    path: str
    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}; {self.fix}"


class PolicyInvalid(ValueError):
    """policy.json cannot be used; `issues` lists each problem with its fix."""

    def __init__(self, issues: list[PolicyIssue]) -> None:
        super().__init__("; ".join(str(issue) for issue in issues))
        self.issues = issues


@dataclass(frozen=True, slots=True)
class LoadedPolicy:
    policy: Policy
    version: str  # sha256 of the canonical content, "sha256:<hex>"


def parse_policy(text: str) -> LoadedPolicy:
    """Parse policy.json text. Raises PolicyInvalid naming each JSON path, the problem and an example.

    The text is treated as hostile: its length, nesting, numbers and repeated keys are checked before anything
    recursive or costly touches them, so no input makes this raise anything else or run for long.
    """
    raw = _decoded(text)
    if not isinstance(raw, dict):
        raise PolicyInvalid(
            [
                PolicyIssue(
                    "$", "the top level must be a JSON object", 'example: {"allowedMarkets": ["BTCUSDT"]}'
                )
            ]
        )
    try:
        policy = Policy.model_validate(raw)
    except ValidationError as error:
        raise PolicyInvalid(_at_most([_issue(detail) for detail in error.errors()])) from None
    unused = _overrides_outside_allowed_markets(policy)
    if unused:
        raise PolicyInvalid(_at_most(unused))
    return LoadedPolicy(policy=policy, version=policy_version(policy))


def _overrides_outside_allowed_markets(policy: Policy) -> list[PolicyIssue]:
    """An override for a market not in allowedMarkets never lets an order open there: a typo or a leftover."""
    return [
        PolicyIssue(
            f"markets.{_shown(symbol)}",
            f"{_shown(symbol)} is not in allowedMarkets, so this override would never let an order open there",
            f'add "{_shown(symbol)}" to allowedMarkets, or remove markets.{_shown(symbol)}',
        )
        for symbol in policy.markets
        if symbol not in policy.allowed_markets
    ]


def _decoded(text: str) -> Any:
    """The JSON value of `text`, or PolicyInvalid for what no policy needs: size, depth, odd numbers, repeats."""
    if len(text) > MAX_POLICY_BYTES:
        raise PolicyInvalid([policy_too_large(f"{len(text)} characters")])
    if _deeper_than(text, MAX_NESTING):
        raise PolicyInvalid(
            [
                PolicyIssue(
                    "$",
                    f"nested deeper than {MAX_NESTING} levels",
                    "a policy needs 3 (markets, symbol, field): " + _SHIPPED,
                )
            ]
        )
    try:
        raw = json.loads(
            text,
            parse_int=_integer,
            parse_float=_decimal,
            parse_constant=_not_a_number,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as error:
        raise PolicyInvalid([syntax_issue(text, error)]) from None
    marked = list(_marked(raw, []))
    if marked:
        raise PolicyInvalid(_at_most(marked))
    return raw


def syntax_issue(text: str, error: json.JSONDecodeError) -> PolicyIssue:
    """A JSON syntax error where it really is (the comma before a "}", not the "}"), quoting that line."""
    where, problem, fix = _real_problem(text, error)
    line_number = text.count("\n", 0, where) + 1
    line_start = text.rfind("\n", 0, where) + 1
    line_end = text.find("\n", where)
    line = text[line_start : line_end if line_end != -1 else len(text)].strip()
    quoted = f": line {line_number} reads {_shown(line, 80)}" if line else ""
    return PolicyIssue(
        f"line {line_number} column {where - line_start + 1}", f"not valid JSON, {problem}{quoted}", fix
    )


def _real_problem(text: str, error: json.JSONDecodeError) -> tuple[int, str, str]:
    """(position, what is wrong, the fix) for the JSON decoder's complaint at `error.pos`."""
    at, message = error.pos, error.msg
    here = text[at] if at < len(text) else ""
    before = len(text[:at].rstrip()) - 1  # the last character before the complaint that is not blank
    previous = text[before] if before >= 0 else ""
    if here in "/#" and here:
        return at, "a comment", "remove it: JSON has no comments"
    if at >= len(text.rstrip()):
        return max(before, 0), "the file ends too early", 'close every "{" and "[" it opens'
    if here in "}]" and here and previous == ",":
        return (
            before,
            f'a comma before the closing "{here}"',
            "remove that comma: JSON allows none after the last item",
        )
    if here == "," and previous in ",[{":
        # `20,,` or `{,`: the decoder wants a key or a value where the extra comma stands
        what = "two commas in a row" if previous == "," else f'a comma right after the opening "{previous}"'
        return at, what, "remove the extra comma"
    if message.startswith("Expecting ',' delimiter") and before >= 0:
        return before + 1, "a comma is missing after this value", "add a comma at the end of this line"
    if here == "'":
        return at, "a single quote", "use double quotes: \"BTCUSDT\", not 'BTCUSDT'"
    if message.startswith("Expecting property name") and here:
        return at, "a key without double quotes", 'put every key in double quotes: "maxNotionalUsd": 25'
    if message.startswith("Expecting value") and text[at:].startswith(("True", "False", "None")):
        return at, "a Python constant", "JSON writes true, false and null in lower case"
    if message.startswith("Unterminated string"):
        return at, "a string is not closed", "add its closing double quote"
    if message.startswith("Invalid control character"):
        return at, "a line break or tab inside a string", "close the string on the line it starts on"
    if message.startswith("Extra data"):
        return at, "more after the end of the policy", 'remove it, or move it inside the outer "{ ... }"'
    return at, message[:1].lower() + message[1:], "fix the JSON syntax at this point"


def policy_too_large(size: str) -> PolicyIssue:
    """The issue for a policy file or text over MAX_POLICY_BYTES; `size` says how big it is, with its unit."""
    return PolicyIssue(
        "policy.json",
        f"is {size}, above the limit of {MAX_POLICY_BYTES // 1024} KiB",
        "a policy needs about 1 KiB: " + _SHIPPED,
    )


def _deeper_than(text: str, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than `limit`: json and pydantic recurse per level."""
    depth = 0
    for token in _BRACKETS_AND_STRINGS.finditer(text):
        opener = token.group()[0]
        if opener in "[{":
            depth += 1
            if depth > limit:
                return True
        elif opener in "]}":
            depth -= 1
    return False


@dataclass(frozen=True, slots=True)
class _Refused:
    """Stands in for a JSON value the decoder would not turn into a number; reported with its path."""

    problem: str
    fix: str


class _Repeated(dict[str, Any]):
    """A JSON object that gave some keys more than once (json would silently keep the last)."""

    def __init__(self, pairs: list[tuple[str, Any]], repeated: list[str]) -> None:
        super().__init__(pairs)
        self.repeated = repeated


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    counts = Counter(key for key, _ in pairs)
    repeated = [key for key, count in counts.items() if count > 1]
    return _Repeated(pairs, repeated) if repeated else dict(pairs)


def _integer(text: str) -> int | _Refused:
    # Checked before int(): Python refuses over 4300 digits with ValueError, and no limit needs more than 10.
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        return _Refused(f"a number {len(text)} characters long", _NUMBER_FIX)
    return int(text)


def _decimal(text: str) -> Decimal | _Refused:
    if len(text) > MAX_NUMBER_DIGITS + 8:  # digits, then room for a sign, a point and an exponent
        return _Refused(f"a number {len(text)} characters long", _NUMBER_FIX)
    value = Decimal(text)
    # 1e999999999 is cheap to hold but a billion digits to print: bound the magnitude, not only the text.
    if not -MAX_NUMBER_DIGITS <= value.adjusted() <= MAX_NUMBER_DIGITS:
        return _Refused(f"the number {_shown(text)} is out of range", _NUMBER_FIX)
    return value


def _not_a_number(text: str) -> _Refused:
    return _Refused(f"{text} is not a JSON number", "write a plain number such as 25")


def _marked(value: Any, path: list[str]) -> Iterator[PolicyIssue]:
    """The problems the decoder left in place, each with its JSON path (depth is bounded, so recursion is)."""
    if isinstance(value, _Refused):
        yield PolicyIssue(_path(path), value.problem, value.fix)
    elif isinstance(value, dict):
        for key in getattr(value, "repeated", ()):
            yield PolicyIssue(
                _path([*path, key]),
                "is given more than once (JSON would silently keep the last)",
                "keep exactly one of them",
            )
        for key, item in value.items():
            yield from _marked(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _marked(item, [*path, str(index)])


def _at_most(issues: list[PolicyIssue]) -> list[PolicyIssue]:
    if len(issues) <= MAX_ISSUES:
        return issues
    more = PolicyIssue(
        "$", f"{len(issues) - MAX_ISSUES} more problems", "fix the ones above, then run `pilot policy check`"
    )
    return [*issues[:MAX_ISSUES], more]


def _path(parts: list[str]) -> str:
    return ".".join(_shown(part) for part in parts) or "$"


def _shown(text: str, limit: int = 40) -> str:
    """`text` as it may appear in a message: printable, escaped where not, and short."""
    if not text.isprintable():
        text = json.dumps(text)[1:-1]  # escapes control characters and lone surrogates as \uXXXX
    return text if len(text) <= limit else text[: limit - 1] + "…"


def policy_version(policy: Policy) -> str:
    """sha256 over the canonical policy: defaults filled in, keys sorted, numbers normalised (25 == 25.0)."""
    canonical = json.dumps(
        _normalised(policy.model_dump(by_alias=True)), sort_keys=True, separators=(",", ":")
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _normalised(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalised(item) for item in value]
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, datetime):
        return value.isoformat()
    return value.value if isinstance(value, TradingState) else value


def _issue(detail: Any) -> PolicyIssue:
    location = [str(part) for part in detail["loc"]]
    path = _path(location)
    field = next((part for part in reversed(location) if part in EXAMPLES), None)
    fix = (
        f"example of a valid value: {EXAMPLES[field]}"
        if field
        else "see the policy.json reference, docs/policy.md"
    )
    kind = detail["type"]
    if kind == "extra_forbidden":
        problem = f"unknown key {_quoted(location[-1])}"
        close = [name for name in EXAMPLES if name.lower() == location[-1].lower()]
        fix = f"did you mean {close[0]!r}?" if close else f"remove it; known keys: {_known_keys(location)}"
    elif kind == "missing":
        problem = "is required"
    elif kind == "bool_type":
        problem = f"must be true or false, without quotes (found {_shown(json.dumps(detail.get('input'), default=str), 60)})"
    else:
        problem = detail["msg"].removeprefix("Value error, ")
        found = detail.get("input")
        if found is not None and not isinstance(found, dict | list | tuple):
            problem += f" (found {_shown(json.dumps(found, default=str), 60)})"
    return PolicyIssue(path=path, problem=problem, fix=fix)


def _known_keys(location: list[str]) -> str:
    """The keys allowed where an unknown one was found: at the top, under confirm, a market, or a window."""
    model: type[BaseModel] = Policy
    if len(location) >= 3 and location[:2] in (["confirm", "telegram"], ["confirm", "ntfy"]):
        model = TelegramChannel if location[1] == "telegram" else NtfyChannel
    elif len(location) >= 2 and location[0] == "confirm":
        model = ConfirmRule
    elif len(location) >= 3 and location[0] == "markets":
        model = MarketOverrides
    elif len(location) >= 3 and location[0] == "tradingHours":
        model = TradingWindow
    elif len(location) >= 2 and location[0] == "cooldown":
        model = Cooldown
    elif len(location) >= 2 and location[0] == "deadManSwitch":
        model = DeadManSwitch
    names = [field.alias or name for name, field in model.model_fields.items()]
    shown: list[str] = []
    for name in names:  # as many as fit a line or three; docs/policy.md lists them all
        if sum(len(one) + 2 for one in shown) + len(name) > 200:
            return (
                ", ".join(shown)
                + f" and {len(names) - len(shown)} more (the policy.json reference, docs/policy.md)"
            )
        shown.append(name)
    return ", ".join(shown)


def _quoted(text: str) -> str:
    return f"'{_shown(text)}'"
