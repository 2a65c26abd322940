"""The violations only the app can find, and the journal rows of a Refusal (pilot.app.answers.responses).

Nothing is sent for a Refusal. Whatever tool it ends, it becomes that tool's answer in one place
(`OrderAnswer.from_refusal`, `ActionAnswer.from_refusal`) and one journal row, written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.answers.responses import ActionAnswer, OrderAnswer, Refusal, journaled
from pilot.core.codes import Code
from pilot.core.violations import NextAction, Violation
from pilot.exchange.errors import UnsupportedPositionMode
from pilot.store import Journal


def violation(code: Code, limit: str, attempted: str, detail: str, next_action: NextAction) -> Violation:
    """A violation the app finds (lifecycle, confirmation, keys, idempotency, facts it could not read)."""
    return Violation(rule=code, limit=limit, attempted=attempted, detail=detail, next=next_action)


def key_violation(problem: str, retry_after: datetime | None = None) -> Violation:
    """The stored exchange key may do more than Pilot allows, or could not be checked; with `retry_after`,
    the venue's own backstop is being renewed by Pilot's timer: waiting helps, and no human is needed."""
    if retry_after is not None:
        return violation(
            Code.VENUE_BACKSTOP,
            "the venue's cancel-all-after renewed",
            "send",
            problem,
            NextAction.wait(
                "wait, then plan again: Pilot renews the venue's backstop on its own timer",
                retry_after,
                human="if it lasts, check that the network reaches the exchange (`pilot doctor`)",
            ),
        )
    return violation(
        Code.API_KEY_PERMISSIONS,
        "a key with trade-only permissions, checked within the hour",
        "send",
        problem,
        NextAction.stop(
            "stop: the exchange key must be fixed by a human",
            human="run `pilot keys show`, then `pilot keys replace` with a narrow key",
        ),
    )


def agent_violation(name: str, role: str | None, tool: str) -> Violation:
    """The acting agent's credential does not allow `tool` (role read: no write; reduce: no growth;
    None: the credential was revoked or is unknown)."""
    if role is None:
        code, limit, why = (
            Code.AGENT_REVOKED,
            "a credential of this home",
            "was revoked, or is not this home's",
        )
        fix = (
            f"issue a new credential with `pilot agent add {name} --role ...`, if the agent should act again"
        )
    elif role == "read":
        code, limit, why = Code.AGENT_READ_ONLY, "role read", "may only read"
        fix = f"revoke it and add it again with role reduce or trade (`pilot agent add {name} --role trade`)"
    else:
        code, limit, why = Code.AGENT_REDUCE_ONLY, "role reduce", "may only close, cancel and reduce"
        fix = f"revoke it and add it again with role trade (`pilot agent add {name} --role trade`)"
    return violation(
        code,
        limit,
        tool,
        f"agent {name}'s credential {why}: {tool} was refused and nothing was sent",
        NextAction.stop(f"do not call {tool}: agent {name}'s credential {why}", human=fix),
    )


def position_mode_violation(error: UnsupportedPositionMode) -> Violation:
    """The symbol is held in hedge mode: nothing on it can be judged or sent until a human switches it.

    Terminal, never a retry: reading again finds the same two legs. Every use case that reads the position
    (plan_order, close_position, set_leverage, get_policy) answers with this one violation.
    """
    symbol = error.symbol
    return violation(
        Code.POSITION_MODE,
        "one-way position mode",
        "hedge mode",
        f"{symbol} is held in hedge mode (a Buy and a Sell leg); Pilot judges one-way positions only and will "
        f"not guess the net, so nothing on {symbol} can be planned, closed or re-levered",
        NextAction.stop(
            f"stop trading {symbol}: only a human can change the account's position mode (cancel_order still "
            + ("works, and other symbols are not affected)" if error.per_symbol else "works)"),
            human=error.human_fix,
        ),
    )


async def journal_order_refusal(
    journal: Journal,
    refusal: Refusal,
    *,
    now: datetime,
    plan_id: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> OrderAnswer:
    """Journal a refusal of an order tool (place_order, close_position) and return its answer.

    An action parked for a human (pending_confirmation) is not refused: it is journaled as PLACE_PENDING.
    """
    answer = OrderAnswer.from_refusal(refusal, plan_id=plan_id)
    data = {**(context or {}), **journaled(answer)}
    kind = (
        entry_kinds.PLACE_PENDING if refusal.status == "pending_confirmation" else entry_kinds.PLACE_REFUSED
    )
    entry = await journal.append(kind, data, now=now, plan_id=plan_id)
    return answer.model_copy(update={"journal_seq": [entry.seq]})


async def journal_action_refusal(
    journal: Journal, tool: str, action: Mapping[str, Any], refusal: Refusal, *, now: datetime
) -> ActionAnswer:
    """Journal a refusal of cancel_order or set_leverage and return its answer."""
    answer = ActionAnswer.from_refusal(refusal)
    data = {"tool": tool, "phase": "refused", **action, **journaled(answer)}
    entry = await journal.append(entry_kinds.ACTION, data, now=now)
    return answer.model_copy(update={"journal_seq": [entry.seq]})
