"""Human confirmation the model cannot give itself: an MCP form in the client, or the CLI queue, or refusal.

The form is built from the server's own record of the action, never from the agent's words. Only an
explicit accept with the box ticked approves; decline, cancel, a timeout or anything unclear declines.
When the client cannot show a form, the action is parked for `pilot confirm approve` (only if the human
enabled confirm.cliChannel in policy.json) and the server executes it after approval, re-checked then.
No MCP tool approves, rejects or changes anything here: the tools can only read or withdraw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, Field

from pilot.app import kinds
from pilot.app.place import ConfirmationRequest, Verdict, execute_plan
from pilot.app.responses import ActionAnswer, NextActionOut
from pilot.app.runtime import Runtime
from pilot.store import ConfirmationRecord, new_confirmation_id


class ConfirmForm(BaseModel):
    """The form a human sees. Leaving the box unticked is a decline."""

    approve: bool = Field(default=False, description="Tick to approve exactly the action described above")


def needs_confirmation(runtime: Runtime, tool: str, notional: Decimal | None) -> bool:
    """Whether policy.json (as it reads now) wants a human for this tool at this notional."""
    confirm = runtime.policy().policy.confirm
    if tool in confirm.actions:
        return True
    return (
        notional is not None
        and confirm.above_notional_usd is not None
        and notional > confirm.above_notional_usd
    )


async def plan_confirmation_prompt(runtime: Runtime, plan_id: str, tool: str) -> str | None:
    """The form text for an open plan that needs a human, or None (no plan, or no confirmation needed)."""
    plan = await runtime.store.plans.get(plan_id)
    if plan is None or plan.status != "open" or plan.expires_at <= runtime.now():
        return None
    payload = plan.payload
    if not needs_confirmation(runtime, tool, Decimal(payload["notional_usd"])):
        return None
    return form_text(payload["confirmation_text"], runtime.policy().version)


def form_text(action: str, policy_version: str, changes: tuple[str, ...] = ()) -> str:
    moved = f"\nChanged since planning: {'; '.join(changes)}." if changes else ""
    return (
        f"Pilot asks a human to approve:\n{action}.{moved}\n"
        f"Policy {policy_version[:15]}. Tick the box to approve; anything else declines."
    )


@dataclass
class AnsweredConfirmer:
    """A Confirmer whose answer was collected before the tool body ran (the form came through the client).

    `verdict` is "approved" or "declined" when a form was shown, "not_needed" when none was asked for, and
    "no_form" when the client cannot show one; then the CLI queue is used if the human enabled it.
    """

    gate: ConfirmationGate
    verdict: str
    parked_id: str | None = field(default=None)

    async def confirm(self, request: ConfirmationRequest) -> Verdict:
        if self.verdict in ("approved", "declined"):
            return self.verdict  # type: ignore[return-value]
        if self.verdict == "not_needed":
            return "not_asked"  # the need arose after the form would have been shown: never assume approval
        if not self.gate.runtime.policy().policy.confirm.cli_channel:
            return "unavailable"
        self.parked_id = await self.gate.park(request)
        return "parked"


@dataclass
class ConfirmationGate:
    """How this server obtains human approvals, and the executor of approvals made in the CLI."""

    runtime: Runtime

    def answered(self, verdict: str) -> AnsweredConfirmer:
        return AnsweredConfirmer(self, verdict)

    def without_form(self) -> AnsweredConfirmer:
        """For callers that cannot show a form: the CLI queue if the human enabled it, else a refusal."""
        return AnsweredConfirmer(self, "no_form")

    def action_prompt(self, tool: str, summary: str) -> str | None:
        """The form text for cancel_order or set_leverage when confirm.actions names the tool, else None."""
        if not needs_confirmation(self.runtime, tool, None):
            return None
        return form_text(summary, self.runtime.policy().version)

    async def close_prompt(self, symbol: str, qty: str | None, category: str) -> str | None:
        if not needs_confirmation(self.runtime, "close_position", None):
            return None
        amount = f"{qty} of" if qty else "all of"
        return form_text(
            f"Close {amount} the {symbol} ({category}) position with a reduce-only Limit IOC",
            self.runtime.policy().version,
        )

    async def park(self, request: ConfirmationRequest) -> str:
        runtime = self.runtime
        confirmation_id = new_confirmation_id()
        ttl = runtime.policy().policy.confirm.pending_ttl_seconds
        action = {"plan_id": request.plan_id, "order": request.order, "notional_usd": request.notional_usd}
        await runtime.store.confirmations.park(
            confirmation_id=confirmation_id,
            tool=request.tool,
            action=action,
            summary=request.text,
            now=runtime.now(),
            ttl_seconds=ttl,
        )
        await runtime.store.journal.append(
            kinds.CONFIRMATION,
            {
                "event": "parked",
                "confirmation_id": confirmation_id,
                "tool": request.tool,
                "text": request.text,
            },
            now=runtime.now(),
            plan_id=request.plan_id or None,
            actor="pilot",
        )
        return confirmation_id

    async def status(self, confirmation_id: str) -> ActionAnswer:
        record = await self.runtime.store.confirmations.get(confirmation_id, now=self.runtime.now())
        if record is None:
            return ActionAnswer(status="not_found", detail=f"no confirmation {confirmation_id}")
        return ActionAnswer(status="done", detail=f"confirmation is {record.status}", data=_view(record))

    async def withdraw(self, confirmation_id: str) -> ActionAnswer:
        runtime = self.runtime
        record = await runtime.store.confirmations.cancel(confirmation_id, now=runtime.now())
        if record is None:
            return ActionAnswer(
                status="not_found", detail="no pending confirmation with that id; nothing changed"
            )
        entry = await runtime.store.journal.append(
            kinds.CONFIRMATION, {"event": "withdrawn", "confirmation_id": confirmation_id}, now=runtime.now()
        )
        return ActionAnswer(
            status="done", detail="withdrawn; it can no longer be approved", journal_seq=[entry.seq]
        )

    async def run_approved(self) -> list[dict[str, Any]]:
        """Execute every action a human approved in the CLI, once each, re-checked now. Returns the answers."""
        runtime, results = self.runtime, []
        for record in await runtime.store.confirmations.list(status="approved", now=runtime.now()):
            claimed = await runtime.store.confirmations.claim_approved(
                record.confirmation_id, now=runtime.now()
            )
            if claimed is None:
                continue
            answer = await self._execute(claimed)
            await runtime.store.confirmations.record_result(
                claimed.confirmation_id, answer, now=runtime.now()
            )
            results.append(answer)
        return results

    async def _execute(self, record: ConfirmationRecord) -> dict[str, Any]:
        from pilot.app import actions  # the actions import this module's confirmer types

        runtime, action = self.runtime, record.action
        approved = AnsweredConfirmer(self, "approved")
        if record.tool in ("place_order", "close_position"):
            plan = await runtime.store.plans.get(action["plan_id"])
            if plan is None:
                return {"status": "refused", "reason": "the plan is gone"}
            answer = await execute_plan(
                runtime,
                plan,
                origin=f"{record.tool} (approved in the CLI)",
                confirmer=approved,
                tool=record.tool,
            )
            return answer.model_dump(mode="json", exclude_none=True)
        order = action["order"]
        if record.tool == "set_leverage":
            answer = await actions.set_leverage(
                runtime, order["symbol"], Decimal(order["leverage"]), order["category"], approved
            )
        else:
            answer = await actions.cancel_order(
                runtime,
                order["symbol"],
                order.get("order_id"),
                order.get("order_link_id"),
                order["category"],
                approved,
            )
        return answer.model_dump(mode="json", exclude_none=True)


def _view(record: ConfirmationRecord) -> dict[str, Any]:
    return {
        "confirmation_id": record.confirmation_id,
        "tool": record.tool,
        "status": record.status,
        "summary": record.summary,
        "expires_at": record.expires_at.isoformat(),
        "result": record.result,
    }


def pending_next(confirmation_id: str) -> NextActionOut:
    return NextActionOut(
        tool="get_confirmation_status",
        args={"confirmation_id": confirmation_id},
        text="a human must approve this in the CLI; check its status later, do not plan it again",
        human=f"run `pilot confirm approve {confirmation_id}` (or reject) to decide",
    )


__all__ = ["AnsweredConfirmer", "ConfirmForm", "ConfirmationGate", "pending_next", "plan_confirmation_prompt"]
