"""Actions a human approved outside the client (`pilot confirm approve`, the console, Telegram): the running
server carries each out once.

Each runs through its own use case with the approval already given, so it is evaluated again on fresh
facts at that moment and a tightened policy still refuses it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pilot.app.human.approvals import ApprovedInCli
from pilot.app.orders import cancel_and_leverage
from pilot.app.orders.place import execute_plan
from pilot.app.runtime.runtime import Runtime
from pilot.core.channels import CHANNELS
from pilot.store import ConfirmationRecord


async def run_approved(runtime: Runtime) -> list[dict[str, Any]]:
    """Execute every action a human approved outside the client, once each. Returns their answers."""
    results = []
    for record in await runtime.store.confirmations.list(status="approved", now=runtime.now()):
        claimed = await runtime.store.confirmations.claim_approved(record.confirmation_id, now=runtime.now())
        if claimed is None:  # another task or process took it first
            continue
        answer = await _execute(runtime, claimed)
        await runtime.store.confirmations.record_result(claimed.confirmation_id, answer, now=runtime.now())
        results.append(answer)
    return results


async def _execute(runtime: Runtime, record: ConfirmationRecord) -> dict[str, Any]:
    action, approved = record.action, ApprovedInCli()
    if record.tool in ("place_order", "close_position"):
        plan = await runtime.store.plans.get(action["plan_id"])
        if plan is None:
            return {"status": "refused", "detail": "the plan is gone"}
        answer = await execute_plan(
            runtime, plan, origin=f"{record.tool} (approved in the {_channel_name(record)})", channel=approved
        )
        return answer.model_dump(mode="json", exclude_none=True)
    order = action["order"]
    if record.tool == "set_leverage":
        done = await cancel_and_leverage.set_leverage(
            runtime, order["symbol"], Decimal(order["leverage"]), order["category"], approved
        )
    else:
        done = await cancel_and_leverage.cancel_order(
            runtime,
            order["symbol"],
            order.get("order_id"),
            order.get("order_link_id"),
            order["category"],
            approved,
        )
    return done.model_dump(mode="json", exclude_none=True)


def _channel_name(record: ConfirmationRecord) -> str:
    """Where the human approved it, as the receipt card says it: the decision's channel (`human:console`)."""
    via = (record.decided_by or "").partition(":")[2] or "cli"
    return CHANNELS[via][0] if via in CHANNELS else via
