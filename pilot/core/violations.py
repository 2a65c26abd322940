"""A refusal is a value: a stable rule code, the numbers, one sentence, and the next safe action."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pilot.core.codes import Code
from pilot.core.holds import Hold

CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call an agent can make exactly as given."""

    tool: str
    args: dict[str, Any]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": dict(self.args), "text": self.text}


@dataclass(frozen=True, slots=True)
class NothingFits:
    """Why no size fits, in numbers: the room a rule leaves, and the instrument's minimum (base units)."""

    rule: Code
    room: Decimal
    minimum: Decimal

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule.value, "room": plain(self.room), "minimum": plain(self.minimum)}


@dataclass(frozen=True, slots=True)
class NextAction:
    """What to do after a refusal.

    Either a call to make unchanged (`tool` and `args`), or `tool=None` with `text` saying plainly that
    nothing the agent can call fits; then `human` names what only a person can change, `retry_after` says
    when waiting helps, and `options` lists calls that free room (e.g. close_position) if the agent's task
    allows them.
    """

    tool: str | None
    args: dict[str, Any] | None
    text: str
    human: str | None = None
    retry_after: datetime | None = None
    options: tuple[ToolCall, ...] = field(default=())
    nothing_fits: NothingFits | None = None

    @staticmethod
    def call(tool: str, args: dict[str, Any], text: str) -> NextAction:
        return NextAction(tool=tool, args=args, text=text)

    @staticmethod
    def stop(
        text: str,
        *,
        human: str,
        options: tuple[ToolCall, ...] = (),
        nothing_fits: NothingFits | None = None,
    ) -> NextAction:
        """Nothing the agent can call helps: `human` says what only a person can change (or why no one must)."""
        return NextAction(
            tool=None, args=None, text=text, human=human, options=options, nothing_fits=nothing_fits
        )

    @staticmethod
    def wait(text: str, retry_after: datetime, *, human: str) -> NextAction:
        """Waiting helps: call again after `retry_after`; `human` says what a person could change meanwhile."""
        return NextAction(tool=None, args=None, text=text, human=human, retry_after=retry_after)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "tool": self.tool,
            "args": dict(self.args) if self.args else None,
            "text": self.text,
        }
        if self.human:
            data["human"] = self.human
        if self.retry_after is not None:
            data["retry_after"] = self.retry_after.isoformat()
        if self.options:
            data["options"] = [option.to_dict() for option in self.options]
        if self.nothing_fits is not None:
            data["nothing_fits"] = self.nothing_fits.to_dict()
        return data


@dataclass(frozen=True, slots=True)
class Breach:
    """A broken rule as a check finds it: the code, the numbers and one sentence.

    `next` is the check's own next action; None for the size codes, whose next action is the one size
    that fixes them all at once, known only after every check has run (see pilot.core.evaluate).
    `retry_after` is, for a size cap that frees room as time passes (turnover), when it does: a "nothing
    fits" it causes says so.
    """

    rule: Code
    limit: str
    attempted: str
    detail: str
    next: NextAction | None = None
    retry_after: datetime | None = None
    held_by: tuple[Hold, ...] = ()  # a tradingState breach: what holds trading, and what lifts it

    def with_next(self, action: NextAction) -> Violation:
        return Violation(self.rule, self.limit, self.attempted, self.detail, action, self.held_by)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: code, limit and attempted value as decimal strings, one sentence, the next action;
    for the trading state, what holds it (`held_by`: the policy, the kill switch, a latch; who, when, why)."""

    rule: Code
    limit: str
    attempted: str
    detail: str
    next: NextAction
    held_by: tuple[Hold, ...] = ()
    budget: str | None = None  # whose limit: "account" or "agent:NAME" (None: no agent named)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule.value,
            "limit": self.limit,
            "attempted": self.attempted,
            "detail": self.detail,
            "next": self.next.to_dict(),
        }
        if self.held_by:
            data["held_by"] = [hold.to_dict() for hold in self.held_by]
        if self.budget is not None:
            data["budget"] = self.budget
        return data


def plain(value: Decimal | int) -> str:
    """A decimal as plain text without exponent or trailing zeros: 0.00031, 25, 102.67."""
    if isinstance(value, int):
        return str(value)
    text = format(value.normalize(), "f")
    return text if text != "-0" else "0"


def to_cent(value: Decimal) -> Decimal:
    """`value` to two places, half to even (5.345 to 5.34, 5.355 to 5.36), whatever the thread's decimal
    context says (a process hosting ccxt rounds half up): the one rule every figure Pilot shows to the cent
    (a limit, an attempted amount, a dollar figure in a sentence) is rounded by. The rule judges the figure
    unrounded."""
    return value.quantize(CENT, rounding=ROUND_HALF_EVEN)


def plain_usd(value: Decimal) -> str:
    """Dollars for a limit or an attempted amount: to the cent (to_cent), as plain text (plain): 3337256.36."""
    return plain(to_cent(value))


def usd(value: Decimal) -> str:
    """Dollars for a sentence: whole dollars stay whole ($25), others get cents ($40.11, by to_cent)."""
    if value == value.to_integral_value():
        return f"${plain(value)}"
    return f"${to_cent(value)}"


def pct(value: Decimal) -> str:
    return f"{to_cent(value)}%"
