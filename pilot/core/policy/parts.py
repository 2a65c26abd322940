"""The parts of policy.json a field holds: the confirmation rule and its channels, trading windows, the
cooldown, the dead-man's switch, a market's overrides; and the limits that apply to one market."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationInfo, field_validator, model_validator

from pilot.core.channels import CHANNELS, Via
from pilot.core.policy.about import About, Shown

# A market's symbol in the venue's own spelling: capitals and digits (Bybit's BTCUSDT), in parts joined by
# single hyphens (OKX's BTC-USDT); 2 to 30 characters. The one rule for the policy and for tool arguments.
SYMBOL_PATTERN = re.compile(r"^(?=[A-Z0-9-]{2,30}\Z)[A-Z0-9]+(?:-[A-Z0-9]+)*\Z")
SYMBOL_SHAPE = "capitals and digits, parts joined by single hyphens (BTCUSDT on Bybit, BTC-USDT on OKX)"
MAX_SLIPPAGE_CEILING = Decimal(3)
BILLION = Decimal(10) ** 9
HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")

# Tools a human may require confirmation for (policy.json "confirm.actions").
ApprovalTool = Literal["place_order", "close_position", "cancel_order", "set_leverage"]
CONFIRMABLE_TOOLS: tuple[ApprovalTool, ...] = get_args(ApprovalTool)

# Bybit's smpType (enum.mdx): which side of a self-match the exchange cancels.
SelfTradePrevention = Literal["CancelMaker", "CancelTaker", "CancelBoth"]


class Frozen(BaseModel):
    """A part of policy.json: frozen, no unknown keys, and a number is a JSON number."""

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
    """The limits that apply to one market (top level, then that market's overrides): one field for each
    Policy field declared `per_market`, under its name (tests/core/test_policy_fields.py holds it)."""

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


class MarketOverrides(Frozen):
    """Per-market overrides: each Policy field declared `per_market`, under its name and alias, with its
    bounds, optional (tests/core/test_policy_fields.py holds it to Policy)."""

    max_notional_usd: Decimal | None = Field(default=None, alias="maxNotionalUsd", gt=0, le=BILLION)
    max_order_notional_usd: Decimal | None = Field(
        default=None, alias="maxOrderNotionalUsd", gt=0, le=BILLION
    )
    max_leverage: Decimal | None = Field(default=None, alias="maxLeverage", ge=1, le=100)
    min_liquidation_distance_pct: Decimal | None = Field(
        default=None, alias="minLiquidationDistancePct", ge=0, le=1000
    )
    max_slippage_pct: Decimal | None = Field(
        default=None, alias="maxSlippagePct", gt=0, le=MAX_SLIPPAGE_CEILING
    )
    max_loss_per_trade_usd: Decimal | None = Field(default=None, alias="maxLossPerTradeUsd", gt=0, le=BILLION)
    max_loss_per_trade_pct: Decimal | None = Field(default=None, alias="maxLossPerTradePct", gt=0, le=100)
    require_stop_loss: bool | None = Field(default=None, alias="requireStopLoss", strict=True)
    price_collar_pct: Decimal | None = Field(default=None, alias="priceCollarPct", gt=0, le=100)
    price_collar_ticks: int | None = Field(default=None, alias="priceCollarTicks", ge=1, le=10**9)
    max_resting_orders_per_market: int | None = Field(
        default=None, alias="maxRestingOrdersPerMarket", ge=1, le=500
    )


class TradingWindow(Frozen):
    """One daily window of UTC time in which growing orders are allowed: [start, end), wrapping past midnight
    when end is earlier than start."""

    start: Annotated[str, About('"08:00" (UTC, HH:MM)')]
    end: Annotated[str, About('"20:00" (UTC, HH:MM; earlier than start runs past midnight)')]

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

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"


class Cooldown(Frozen):
    """After `afterLosses` losing trades in a row (or within `withinMinutes` of each other), no growing order
    for `minutes`."""

    after_losses: Annotated[int, About("3")] = Field(alias="afterLosses", ge=1, le=100)
    within_minutes: Annotated[int | None, About("60 (or null: in a row)")] = Field(
        default=None, alias="withinMinutes", ge=1, le=10_080
    )
    minutes: Annotated[int, About("30")] = Field(alias="minutes", ge=1, le=10_080)


class DeadManSwitch(Frozen):
    """When no agent call reached the home for `afterSeconds`, or the last MCP session ended
    (`onSessionEnd`), Pilot cancels the opening orders its agent left resting, and with `reducing` turns the
    kill switch on."""

    after_seconds: Annotated[int | None, About("300 (or null)")] = Field(
        default=None, alias="afterSeconds", ge=10, le=86_400
    )
    on_session_end: Annotated[bool, About("false")] = Field(default=False, alias="onSessionEnd", strict=True)
    reducing: Annotated[bool, About("true")] = Field(default=False, alias="reducing", strict=True)

    @model_validator(mode="after")
    def _some_trigger(self) -> DeadManSwitch:
        if self.after_seconds is None and not self.on_session_end:
            raise ValueError("set afterSeconds, or onSessionEnd true: otherwise it never fires")
        return self


_WEB_ADDRESS = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+(:[0-9]{1,5})?(/[A-Za-z0-9._~\-/]*)?$")
_NTFY_TOPIC = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


def _web_address(value: str) -> str:
    if not isinstance(value, str) or len(value) > 200 or not _WEB_ADDRESS.match(value):
        raise ValueError("must be an http:// or https:// address, such as http://127.0.0.1:8765")
    return value.rstrip("/")


class TelegramChannel(Frozen):
    """A Telegram bot asks these users (by their Telegram user id) to approve or reject each parked action."""

    approvers: Annotated[
        tuple[StrictInt, ...], About("[123456789] (Telegram user ids: ask @userinfobot for yours)")
    ]

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


class NtfyChannel(Frozen):
    """An ntfy topic is sent each parked action; its button opens the console's page for it."""

    topic: Annotated[
        str, About('"pilot-7f3k2q9x" (letters, digits, - and _; hard to guess: it is the password)')
    ]
    server: Annotated[str, About('"https://ntfy.sh"')] = "https://ntfy.sh"

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


_TOOLS = ", ".join(f"`{tool}`" for tool in CONFIRMABLE_TOOLS)


class ConfirmRule(Frozen):
    """When a human must confirm: above a notional, or for named tools; and where a human may approve."""

    above_notional_usd: Annotated[
        Decimal | None,
        About(
            "100 (or null for never)",
            "without a human's approval, orders that can grow the exposure above this notional (an order that only shrinks it, like `close_position`, never waits on it)",
            "`this order needs a human's approval and no confirmation channel is available`",
            init=50,  # every BTC order (one lot is about $80) asks a human; small ETH and SOL orders do not
            shown=Shown.CONFIRM,
        ),
    ] = Field(default=None, alias="aboveNotionalUsd", gt=0)
    actions: Annotated[
        tuple[str, ...],
        About(
            '["place_order", "set_leverage"]',
            f"without approval, the named tools ({_TOOLS})",
            "as above",
            shown=Shown.CONFIRM,
        ),
    ] = Field(default=())
    # Strict: "yes", "true", 1 are not the JSON boolean true; a switch that opens a channel takes only true.
    cli_channel: Annotated[
        bool,
        About("false", "(enables `pilot confirm approve` for clients without forms)", shown=Shown.CONFIRM),
    ] = Field(default=False, alias="cliChannel", strict=True)
    console_channel: Annotated[
        bool,
        About("false", "(enables Approve in `pilot console` for clients without forms)", shown=Shown.CONFIRM),
    ] = Field(default=False, alias="consoleChannel", strict=True)
    pending_ttl_seconds: Annotated[
        int,
        About(
            "300",
            "approving a parked action after this (a Telegram message then says it timed out: denied)",
            shown=Shown.CONFIRM,
        ),
    ] = Field(default=300, alias="pendingTtlSeconds", ge=30, le=3600)
    # Where the human's browser reaches `pilot console`: the address approval links (URL-mode elicitation,
    # ntfy's button, the Telegram message) point to. Not shown to the agent, nor are the channels below:
    # the approvers' ids and the ntfy topic (its password) are the human's.
    console_url: Annotated[
        str,
        About(
            '"http://127.0.0.1:8765" (where your browser reaches `pilot console`)',
            "(where your browser reaches `pilot console`: approval links point there)",
        ),
    ] = Field(default="http://127.0.0.1:8765", alias="consoleUrl")
    telegram: Annotated[
        TelegramChannel | None,
        About(
            '{"approvers": [123456789]} (your Telegram user id; or null for off)',
            '(`{"approvers": [USER_ID]}` opens the Telegram channel: see [Approvals on your phone](confirmation.md#approvals-on-your-phone))',
        ),
    ] = None
    ntfy: Annotated[
        NtfyChannel | None,
        About(
            '{"topic": "pilot-7f3k2q9x", "server": "https://ntfy.sh"} (or null for off)',
            '(`{"topic": "…", "server": "https://ntfy.sh"}` sends each parked action to an ntfy topic, with a button to its console page; needs `consoleChannel`)',
        ),
    ] = None

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
            raise ValueError(f"unknown tool {quoted(unknown[0])}; choose from {', '.join(CONFIRMABLE_TOOLS)}")
        return value


# The ConfirmRule attribute of each channel's switch, read off the model so the alias is written once.
_SWITCHES = {field.alias or name: name for name, field in ConfirmRule.model_fields.items()}


def shown(text: str, limit: int = 40) -> str:
    """`text` as it may appear in a message: printable, escaped where not, and short."""
    if not text.isprintable():
        text = json.dumps(text)[1:-1]  # escapes control characters and lone surrogates as \uXXXX
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(text: str) -> str:
    return f"'{shown(text)}'"
