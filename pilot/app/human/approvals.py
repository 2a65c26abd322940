"""Approval the model cannot give itself: one request, a tagged verdict, one mapping from verdict to answer.

Whether an action needs a human is decided once, by pilot.core.approval.needs_human. How the human is
asked is the approval channel's business:

* the MCP client's form: the server asks before the tool body runs (pilot.server) and hands the use case
  a ClientChannel holding the answer: a form approved or declined, no form needed, or no form possible;
* the queue outside the client: when the client cannot show forms and the human opened a channel
  (confirm.cliChannel, confirm.consoleChannel or confirm.telegram), the action is parked for `pilot confirm
  approve`, the console or the Telegram bot, and the server runs it once approved (pilot.app.service.parked).

Only an explicit approval approves. Every verdict is journaled; a receipt says a human was asked only when
one was. No MCP tool approves, rejects or changes anything here: the tools can only read or withdraw.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol, get_args

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import PlanPayload, PlanTool, approval_text
from pilot.app.answers.refusals import violation
from pilot.app.answers.responses import ActionAnswer, Refusal
from pilot.app.runtime.runtime import Runtime, acting_agent
from pilot.core.approval import may_need_human, needs_human
from pilot.core.channels import REACH_A_HUMAN, Via, approval_url, names, where_to_decide
from pilot.core.codes import Code
from pilot.core.policy import ApprovalTool
from pilot.core.violations import NextAction, Violation
from pilot.store import ConfirmationRecord, new_confirmation_id

LIVE_MARK = "🔴 LIVE: REAL MONEY"  # the first line of every approval a human reads on a live home


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a human is asked to approve: the server's own record of the action, never the agent's words."""

    tool: ApprovalTool
    text: str
    action: dict[str, Any]
    plan_id: str | None = None
    notional_usd: str | None = None
    changes: tuple[str, ...] = ()


# --- verdicts ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Approved:
    kind: Literal["approved"] = "approved"


@dataclass(frozen=True, slots=True)
class Declined:
    kind: Literal["declined"] = "declined"


@dataclass(frozen=True, slots=True)
class Parked:
    """Parked for a human outside the client, on the channels open when it was parked."""

    confirmation_id: str
    channels: tuple[Via, ...] = ()
    console_url: str = ""
    kind: Literal["parked"] = "parked"


@dataclass(frozen=True, slots=True)
class Unavailable:
    """The action needs a human and there is no way to ask one."""

    kind: Literal["unavailable"] = "unavailable"


@dataclass(frozen=True, slots=True)
class NotAsked:
    """The need for a human arose after the client was (not) asked: never assume approval."""

    kind: Literal["not_asked"] = "not_asked"


Verdict = Approved | Declined | Parked | Unavailable | NotAsked


# --- what the client answered before the tool body ran -------------------------------------------------


@dataclass(frozen=True, slots=True)
class FormAnswer:
    """The human answered the form: `approved` only for an explicit accept with the box ticked."""

    approved: bool


@dataclass(frozen=True, slots=True)
class NoFormNeeded:
    """No form was shown: the policy did not ask for a human when the call came in."""


@dataclass(frozen=True, slots=True)
class NoFormPossible:
    """The action needs a human and this client cannot show a form."""


ClientAnswer = FormAnswer | NoFormNeeded | NoFormPossible


# --- channels ------------------------------------------------------------------------------------------


class ApprovalChannel(Protocol):
    """A way to obtain a human's verdict on one request."""

    async def ask(self, runtime: Runtime, request: ApprovalRequest) -> Verdict: ...


@dataclass(frozen=True, slots=True)
class ClientChannel:
    """The answer the MCP client gave; without a form, the CLI queue if the human enabled it."""

    answer: ClientAnswer

    async def ask(self, runtime: Runtime, request: ApprovalRequest) -> Verdict:
        answer = self.answer
        if isinstance(answer, FormAnswer):
            return Approved() if answer.approved else Declined()
        if isinstance(answer, NoFormNeeded):
            return NotAsked()
        confirm = runtime.policy().policy.confirm
        if not confirm.human_outside_client:
            return Unavailable()
        return Parked(await park(runtime, request), confirm.open_channels, confirm.console_url)


@dataclass(frozen=True, slots=True)
class ApprovedInCli:
    """A human already approved this exact action with `pilot confirm approve`."""

    async def ask(self, runtime: Runtime, request: ApprovalRequest) -> Verdict:
        return Approved()


async def seek_approval(
    runtime: Runtime, channel: ApprovalChannel | None, request: ApprovalRequest
) -> Verdict:
    """Ask through `channel` (no channel: unavailable) and journal the verdict."""
    verdict = Unavailable() if channel is None else await channel.ask(runtime, request)
    await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        {
            "tool": request.tool,
            "text": request.text,
            "verdict": verdict.kind,
            "changes": list(request.changes),
        },
        now=runtime.now(),
        plan_id=request.plan_id,
        actor="human" if isinstance(verdict, Approved) else "pilot",
    )
    return verdict


def refusal_of(verdict: Verdict, *, again: NextAction) -> Refusal | None:
    """The one mapping from a verdict to what the tool answers: None when approved, else why nothing was sent.

    `again` is the call that asks afresh (used when the need arose after the client was asked).
    """
    if isinstance(verdict, Approved):
        return None
    if isinstance(verdict, Declined):
        stop = NextAction.stop(
            "declined by the human; do not retry it", human="nothing: a human already said no to this"
        )
        return Refusal("declined", "the human did not approve; nothing was sent", next_safe_action=stop)
    if isinstance(verdict, Parked):
        return Refusal(
            "pending_confirmation",
            f"waiting for a human to approve ({names(verdict.channels)}); nothing was sent yet",
            next_safe_action=pending_next(verdict),
            confirmation_id=verdict.confirmation_id,
        )
    if isinstance(verdict, NotAsked):
        needed = violation(
            Code.CONFIRMATION_REQUIRED,
            "a human confirmation",
            "none asked",
            "this now needs a human's approval, which was not asked for when the call came in",
            again,
        )
        return Refusal.of(needed, "confirmation became necessary after the call came in; nothing was sent")
    return Refusal.of(_unavailable(), "no way to ask a human; nothing was sent")


def _unavailable() -> Violation:
    stop = NextAction.stop(
        "stop: this needs a human, and this client cannot show a confirmation form",
        human=REACH_A_HUMAN,
    )
    return violation(
        Code.CONFIRMATION_CHANNEL_UNAVAILABLE,
        "a human confirmation",
        "none possible",
        "this needs a human's approval and no confirmation channel is available",
        stop,
    )


def no_human_for(runtime: Runtime, channel: ApprovalChannel | None, tool: ApprovalTool) -> NextAction | None:
    """What to answer instead of suggesting another call of `tool` when that call would need a human this
    client cannot reach (no form, no channel outside it open): the stop refusal_of gives for it; None when a
    human could be asked, or none is needed."""
    confirm = runtime.policy().policy.confirm
    if not needs_human(confirm, tool) or confirm.human_outside_client:
        return None
    shows_no_form = isinstance(channel, ClientChannel) and isinstance(channel.answer, NoFormPossible)
    if channel is not None and not shows_no_form:
        return None
    return _unavailable().next


def pending_next(parked: Parked) -> NextAction:
    """Check back later; the human's line names only the channels that are open, and how to decide there."""
    return NextAction(
        tool="get_confirmation_status",
        args={"confirmation_id": parked.confirmation_id},
        text=f"a human must approve this ({names(parked.channels)}); check its status later, do not plan "
        "it again",
        human=where_to_decide(parked.channels, parked.confirmation_id, parked.console_url),
    )


# --- the form's text -----------------------------------------------------------------------------------


def live_mark(runtime: Runtime) -> str:
    """What opens every approval a human reads on a live home (form, phone), so none is taken for practice."""
    return f"{LIVE_MARK}\n" if runtime.live else ""


def form_text(action: str, policy_version: str, changes: tuple[str, ...] = (), *, mark: str = "") -> str:
    moved = f"\nChanged since planning: {'; '.join(changes)}." if changes else ""
    return (
        f"{mark}Pilot asks a human to approve:\n{action}.{moved}\n"
        f"Policy {policy_version[:15]}. Tick the box to approve; anything else declines."
    )


async def plan_form_prompt(runtime: Runtime, plan_id: str) -> str | None:
    """The form text for an open plan that needs a human, or None (no such open plan, or no human needed)."""
    view = runtime.policy()
    if not any(may_need_human(view.policy.confirm, tool) for tool in get_args(PlanTool)):
        return None  # no plan could need one, so the plan is not read
    plan = await runtime.store.plans.get(plan_id)
    if plan is None or not runtime.store.plans.alive(plan):
        return None
    payload = PlanPayload.read(plan.payload)
    if payload is None or not needs_human(
        view.policy.confirm, payload.tool, Decimal(payload.notional_usd), grows=payload.grows
    ):
        return None
    text = approval_text(payload.order, Decimal(payload.notional_usd), payload.liquidation)
    return form_text(text, view.version, mark=live_mark(runtime))


def action_form_prompt(runtime: Runtime, tool: ApprovalTool, summary: str) -> str | None:
    """The form text for close_position, cancel_order or set_leverage when the policy asks for a human."""
    view = runtime.policy()
    if not needs_human(view.policy.confirm, tool):
        return None
    return form_text(summary, view.version, mark=live_mark(runtime))


def close_summary(symbol: str, qty: str | None, category: str) -> str:
    amount = f"{qty} of" if qty else "all of"
    return f"Close {amount} the {symbol} ({category}) position with a reduce-only Limit IOC"


# --- the CLI queue ---------------------------------------------------------------------------------------


async def park(runtime: Runtime, request: ApprovalRequest) -> str:
    """Park `request` for a human's decision in the CLI; returns the confirmation id."""
    confirmation_id = new_confirmation_id()
    action = {"plan_id": request.plan_id, "order": request.action, "notional_usd": request.notional_usd}
    agent = acting_agent()
    if agent is not None:  # who asked, for the human deciding it (the phone's message, the console's page)
        action["agent"] = agent.name
    await runtime.store.confirmations.park(
        confirmation_id=confirmation_id,
        tool=request.tool,
        action=action,
        summary=request.text,
        now=runtime.now(),
        ttl_seconds=runtime.policy().policy.confirm.pending_ttl_seconds,
    )
    channels = list(runtime.policy().policy.confirm.open_channels)
    await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        {
            "event": "parked",
            "confirmation_id": confirmation_id,
            "tool": request.tool,
            "text": request.text,
            "channels": channels,
            **({"agent": agent.name} if agent is not None else {}),
        },
        now=runtime.now(),
        plan_id=request.plan_id,
        actor="pilot",
    )
    return confirmation_id


def console_link(runtime: Runtime, confirmation_id: str) -> str:
    """The console's page for one parked action, at the address policy.json gives (confirm.consoleUrl)."""
    return approval_url(runtime.policy().policy.confirm.console_url, confirmation_id)


async def note_push(runtime: Runtime, confirmation_id: str, channel: str, details: dict[str, Any]) -> None:
    """Journal that a parked action was sent to the human outside the queue (the MCP client's URL prompt, a
    Telegram message, an ntfy notification), by Pilot, under its plan."""
    record = await runtime.store.confirmations.get(confirmation_id)
    plan_id = record.action.get("plan_id") if record is not None else None
    await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        {"event": "pushed", "channel": channel, "confirmation_id": confirmation_id, **details},
        now=runtime.now(),
        plan_id=plan_id or None,
        actor="pilot",
    )


async def confirmation_status(runtime: Runtime, confirmation_id: str) -> ActionAnswer:
    """Where a parked confirmation stands. Reads only."""
    record = await runtime.store.confirmations.get(confirmation_id, now=runtime.now())
    if record is None:
        return ActionAnswer(status="not_found", detail=f"no confirmation {confirmation_id}")
    return ActionAnswer(status="done", detail=_standing(record.status), data=_view(record))


# What is still to come for a confirmation in each state where its action has not run yet: "done" is the
# read's own status, and an agent must not take an approval for the action's result.
_TO_COME = {
    "pending": "; waiting for a human",
    "approved": "; not carried out yet: the server runs it within a second, then `result` holds its answer",
    "executing": "; being carried out now: call again for its answer in `result`",
}


def _standing(status: str) -> str:
    return f"confirmation is {status}" + _TO_COME.get(status, "")


async def withdraw(runtime: Runtime, confirmation_id: str) -> ActionAnswer:
    """Withdraw a pending confirmation before a human decides. It cannot approve anything."""
    record = await runtime.store.confirmations.cancel(confirmation_id, now=runtime.now())
    if record is None:
        return ActionAnswer(
            status="not_found", detail="no pending confirmation with that id; nothing changed"
        )
    entry = await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        {"event": "withdrawn", "confirmation_id": confirmation_id},
        now=runtime.now(),
    )
    return ActionAnswer(
        status="done", detail="withdrawn; it can no longer be approved", journal_seq=[entry.seq]
    )


def _view(record: ConfirmationRecord) -> dict[str, Any]:
    return {
        "confirmation_id": record.confirmation_id,
        "tool": record.tool,
        "status": record.status,
        "summary": record.summary,
        "expires_at": record.expires_at.isoformat(),
        "result": record.result,
    }
