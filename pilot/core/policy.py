"""policy.json: the human's limits, parsed into a frozen model with a version and errors that say the fix."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pilot.core.facts import TradingState

SYMBOL_PATTERN = re.compile(r"^[A-Z0-9]{2,30}$")
MAX_SLIPPAGE_CEILING = Decimal(3)

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
    "pendingTtlSeconds": "300",
    "tradingState": '"active" (or "reducing", "halted")',
    "markets": '{"BTCUSDT": {"maxNotionalUsd": 50}}',
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        # JSON true/false is not a number, whatever Python thinks.
        annotation = cls.model_fields[info.field_name].annotation if info.field_name else None
        if isinstance(value, bool) and annotation is not bool:
            raise ValueError("expected a number, not true/false")
        return value


@dataclass(frozen=True, slots=True)
class EffectiveLimits:
    """The numeric limits that apply to one market (top level, then that market's overrides)."""

    max_notional_usd: Decimal
    max_order_notional_usd: Decimal
    max_leverage: Decimal
    min_liquidation_distance_pct: Decimal
    max_slippage_pct: Decimal


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


class ConfirmRule(_Frozen):
    """When a human must confirm: above a notional, or for named tools; and whether the CLI may approve."""

    above_notional_usd: Decimal | None = Field(default=None, alias="aboveNotionalUsd", gt=0)
    actions: tuple[str, ...] = Field(default=())
    cli_channel: bool = Field(default=False, alias="cliChannel")
    pending_ttl_seconds: int = Field(default=300, alias="pendingTtlSeconds", ge=30, le=3600)

    @field_validator("actions")
    @classmethod
    def _known_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in CONFIRMABLE_TOOLS]
        if unknown:
            raise ValueError(f"unknown tool {unknown[0]!r}; choose from {', '.join(CONFIRMABLE_TOOLS)}")
        return value


class Policy(_Frozen):
    """The whole policy.json. Defaults are the safe example values."""

    allowed_markets: tuple[str, ...] = Field(default=(), alias="allowedMarkets")
    max_notional_usd: Decimal = Field(default=Decimal(25), alias="maxNotionalUsd", gt=0, le=Decimal(10) ** 9)
    max_order_notional_usd: Decimal = Field(
        default=Decimal(25), alias="maxOrderNotionalUsd", gt=0, le=Decimal(10) ** 9
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
    confirm: ConfirmRule = Field(default_factory=ConfirmRule)
    trading_state: TradingState = Field(default=TradingState.ACTIVE, alias="tradingState")
    markets: dict[str, MarketOverrides] = Field(default_factory=dict)
    _limits_cache: dict[str, EffectiveLimits] = PrivateAttr(default_factory=dict)

    @field_validator("allowed_markets")
    @classmethod
    def _symbols(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for symbol in value:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(f"{symbol!r} is not a Bybit symbol (upper-case letters and digits)")
        if len(set(value)) != len(value):
            raise ValueError("a market is listed twice")
        return value

    @model_validator(mode="after")
    def _market_keys(self) -> Policy:
        for symbol in self.markets:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(
                    f"markets key {symbol!r} is not a Bybit symbol (upper-case letters and digits)"
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

        limits = EffectiveLimits(
            max_notional_usd=pick("max_notional_usd"),
            max_order_notional_usd=pick("max_order_notional_usd"),
            max_leverage=pick("max_leverage"),
            min_liquidation_distance_pct=pick("min_liquidation_distance_pct"),
            max_slippage_pct=pick("max_slippage_pct"),
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
    """Parse policy.json text. Raises PolicyInvalid naming each JSON path, the problem and an example."""
    try:
        raw = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        raise PolicyInvalid(
            [
                PolicyIssue(
                    f"line {error.lineno} column {error.colno}",
                    f"not valid JSON: {error.msg}",
                    "fix the JSON syntax (a missing comma or quote?)",
                )
            ]
        ) from None
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
        raise PolicyInvalid([_issue(detail) for detail in error.errors()]) from None
    return LoadedPolicy(policy=policy, version=policy_version(policy))


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
    return value.value if isinstance(value, TradingState) else value


def _issue(detail: Any) -> PolicyIssue:
    location = [str(part) for part in detail["loc"]]
    path = ".".join(location) or "$"
    field = next((part for part in reversed(location) if part in EXAMPLES), None)
    fix = (
        f"example of a valid value: {EXAMPLES[field]}" if field else "see the README's policy.json reference"
    )
    kind = detail["type"]
    if kind == "extra_forbidden":
        problem = f"unknown key {location[-1]!r}"
        close = [name for name in EXAMPLES if name.lower() == location[-1].lower()]
        fix = f"did you mean {close[0]!r}?" if close else f"remove it; known keys: {', '.join(EXAMPLES)}"
    elif kind == "missing":
        problem = "is required"
    else:
        problem = detail["msg"].removeprefix("Value error, ")
        found = detail.get("input")
        if found is not None and not isinstance(found, dict | list | tuple):
            problem += f" (found {json.dumps(found, default=str)})"
    return PolicyIssue(path=path, problem=problem, fix=fix)
