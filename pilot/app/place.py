"""place_order: redeem a plan once, judge it again on fresh facts, and send exactly what was planned."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol

from pilot.app import kinds
from pilot.app.facts import gather_facts
from pilot.app.gate import look_up, order_link_id, send_order
from pilot.app.plan import confirmation_text, intent_from_dict, with_policy_issues
from pilot.app.responses import NextActionOut, OrderAnswer, ViolationOut, next_out, violations_out
from pilot.app.runtime import Runtime
from pilot.core.evaluate import assess
from pilot.core.facts import Side
from pilot.core.violations import plain
from pilot.exchange.models import OrderRequest
from pilot.store import ClaimResult, PlanRecord

Verdict = Literal["approved", "declined", "unavailable", "parked", "not_asked"]


@dataclass(frozen=True, slots=True)
class ConfirmationRequest:
    """What a human is asked to approve: the server's own record of the order and what changed since."""

    tool: str
    plan_id: str
    text: str
    order: dict[str, Any]
    notional_usd: str
    liquidation_distance_pct: str | None
    changes: tuple[str, ...]


class Confirmer(Protocol):
    """Asks a human. Only an explicit approval approves; anything else is a decline."""

    async def confirm(self, request: ConfirmationRequest) -> Verdict: ...


async def place_order(runtime: Runtime, plan_id: str, confirmer: Confirmer | None = None) -> OrderAnswer:
    """Claim the plan atomically (only one caller ever can), then execute it."""
    claim = await runtime.store.plans.claim(plan_id, now=runtime.now())
    if claim.status != "claimed" or claim.plan is None:
        return await _lifecycle_refusal(runtime, plan_id, claim)
    return await execute_plan(runtime, claim.plan, origin="place_order", confirmer=confirmer)


async def execute_plan(
    runtime: Runtime,
    plan: PlanRecord,
    *,
    origin: str,
    confirmer: Confirmer | None = None,
    tool: str = "place_order",
) -> OrderAnswer:
    """Re-read the policy and fresh facts, run the same evaluate, confirm if the policy says so, then send.

    One send at a time per runtime: otherwise concurrent sends of different plans are each judged on the same
    facts, and together break dailyOrderCap or maxNotionalUsd that each of them passes alone.
    """
    async with runtime.send_lock:
        return await _judge_and_send(runtime, plan, origin=origin, confirmer=confirmer, tool=tool)


async def _judge_and_send(
    runtime: Runtime, plan: PlanRecord, *, origin: str, confirmer: Confirmer | None, tool: str
) -> OrderAnswer:
    view = runtime.policy()
    intent = intent_from_dict(plan.payload["intent"])
    facts = await gather_facts(runtime, view, intent)
    result = assess(view.policy, facts)
    violations, next_action = with_policy_issues(view, result)
    if violations:
        return await _refuse(
            runtime,
            plan.plan_id,
            violations=violations_out(violations),
            next_action=next_out(next_action),
            reason="the order no longer passes the policy on fresh facts; nothing was sent",
        )
    planned = plan.payload["order"]
    price = tightened(Side(planned["side"]), Decimal(planned["price"]), result.situation.sent_price)  # type: ignore[union-attr]
    notional = intent.qty * (price if intent.side is Side.BUY else max(price, facts.touch.bid))  # type: ignore[union-attr]
    confirm = view.policy.confirm
    # aboveNotionalUsd guards placing orders; a close needs a human only if confirm.actions names it, so that
    # reducing risk never waits on a threshold meant for growing it.
    if tool in confirm.actions or (
        tool == "place_order"
        and confirm.above_notional_usd is not None
        and notional > confirm.above_notional_usd
    ):
        distance = result.liquidation_distance_pct
        ask = ConfirmationRequest(
            tool=tool,
            plan_id=plan.plan_id,
            text=confirmation_text({**planned, "price": plain(price)}, notional, distance),
            order={**planned, "price": plain(price)},
            notional_usd=plain(notional),
            liquidation_distance_pct=plain(distance.quantize(Decimal("0.01")))
            if distance is not None
            else None,
            changes=_changes(plan.payload, facts, price),
        )
        verdict = await _ask(runtime, confirmer, ask)
        if verdict != "approved":
            return await _declined(runtime, plan.plan_id, verdict, getattr(confirmer, "parked_id", None))
    key_problem = await runtime.key_problem()
    if key_problem is not None:
        violation = _key_violation(key_problem)
        return await _refuse(
            runtime,
            plan.plan_id,
            violations=[violation],
            next_action=violation.next,
            reason="nothing was sent",
        )
    request = OrderRequest(
        category=intent.category,
        symbol=intent.symbol,
        side="Buy" if intent.side is Side.BUY else "Sell",
        qty=intent.qty,
        price=price,
        time_in_force=planned["time_in_force"],
        order_link_id=order_link_id(plan.plan_id),
        reduce_only=intent.reduce_only,
    )
    answer = await send_order(runtime, request, plan_id=plan.plan_id, origin=origin)
    await runtime.store.plans.record_outcome(plan.plan_id, _outcome_summary(answer), now=runtime.now())
    return answer


def tightened(side: Side, planned: Decimal, fresh: Decimal) -> Decimal:
    """The limit price may only tighten: a buy never pays more than planned, a sell never takes less."""
    return min(planned, fresh) if side is Side.BUY else max(planned, fresh)


async def _ask(runtime: Runtime, confirmer: Confirmer | None, ask: ConfirmationRequest) -> Verdict:
    verdict: Verdict = "unavailable" if confirmer is None else await confirmer.confirm(ask)
    await runtime.store.journal.append(
        kinds.CONFIRMATION,
        {"tool": ask.tool, "text": ask.text, "verdict": verdict, "changes": list(ask.changes)},
        now=runtime.now(),
        plan_id=ask.plan_id,
        actor="human" if verdict == "approved" else "pilot",
    )
    return verdict


async def _declined(runtime: Runtime, plan_id: str, verdict: Verdict, parked_id: str | None) -> OrderAnswer:
    if verdict == "parked" and parked_id is not None:
        from pilot.app.confirm import pending_next

        answer = OrderAnswer(
            status="pending_confirmation",
            plan_id=plan_id,
            confirmation_id=parked_id,
            reason="waiting for a human to approve in the CLI; nothing was sent yet",
            next_safe_action=pending_next(parked_id),
        )
        entry = await runtime.store.journal.append(
            kinds.PLACE_REFUSED,
            answer.model_dump(mode="json", exclude_none=True),
            now=runtime.now(),
            plan_id=plan_id,
        )
        return answer.model_copy(update={"journal_seq": [entry.seq]})
    if verdict == "not_asked":
        return await _refuse(
            runtime,
            plan_id,
            violations=[
                ViolationOut(
                    rule="confirmationRequired",
                    limit="a human confirmation",
                    attempted="none asked",
                    detail="on fresh facts this order now needs a human's approval, which was not asked for",
                    next=NextActionOut(
                        tool=None, args=None, text="plan the order again; the new plan will ask"
                    ),
                )
            ],
            next_action=NextActionOut(tool=None, args=None, text="call plan_order again for this order"),
            reason="confirmation became necessary after planning; nothing was sent",
        )
    if verdict == "declined":
        return await _refuse(
            runtime,
            plan_id,
            status="declined",
            reason="the human did not approve this order; nothing was sent",
            next_action=NextActionOut(
                tool=None, args=None, text="declined by the human; do not retry this order"
            ),
        )
    stop = NextActionOut(
        tool=None,
        args=None,
        text="stop: this order needs a human, and this client cannot show a confirmation form",
        human="use a client that supports MCP form elicitation, or enable confirm.cliChannel in "
        "policy.json and approve with `pilot confirm approve`",
    )
    return await _refuse(
        runtime,
        plan_id,
        violations=[
            ViolationOut(
                rule="confirmationChannelUnavailable",
                limit="a human confirmation",
                attempted="none possible",
                detail="this order needs a human's approval and no confirmation channel is available",
                next=stop,
            )
        ],
        next_action=stop,
        reason="no way to ask a human; nothing was sent",
    )


async def _lifecycle_refusal(runtime: Runtime, plan_id: str, claim: ClaimResult) -> OrderAnswer:
    plan = claim.plan
    if claim.status == "not_found" or plan is None:
        next_action = NextActionOut(tool=None, args=None, text="call plan_order to get a plan id")
        detail = "no such plan; plan ids come only from plan_order"
        return await _lifecycle(runtime, None, "planNotFound", detail, next_action, "unknown plan id")
    replan = NextActionOut(tool="plan_order", args=_plan_args(plan), text="plan the same order again")
    if claim.status == "expired":
        detail = f"the plan expired at {plan.expires_at.isoformat()}"
        return await _lifecycle(runtime, plan_id, "planExpired", detail, replan, "the plan expired")
    became = _first_use(plan)
    status = (plan.outcome or {}).get("status")
    if status == "refused":  # nothing was sent: judging the same order again is safe
        next_action = replan
    elif status == "declined":
        next_action = NextActionOut(
            tool=None, args=None, text="the human declined this order; do not retry it"
        )
    else:
        intent = plan.payload["intent"]
        next_action = look_up(
            intent["symbol"],
            intent["category"],
            f"do not resend: {became}; check get_open_orders and get_positions",
        )
    detail = f"plan {plan_id} was already used: {became}"
    return await _lifecycle(runtime, plan_id, "planAlreadyUsed", detail, next_action, "a plan works once")


async def _lifecycle(
    runtime: Runtime, plan_id: str | None, rule: str, detail: str, next_action: NextActionOut, why: str
) -> OrderAnswer:
    violation = ViolationOut(
        rule=rule, limit="a fresh, unused plan id", attempted=rule, detail=detail, next=next_action
    )
    return await _refuse(
        runtime, plan_id, violations=[violation], next_action=next_action, reason=f"{why}; nothing was sent"
    )


def _plan_args(plan: PlanRecord) -> dict[str, Any]:
    """plan_order arguments for the same order as `plan`."""
    intent = plan.payload["intent"]
    args = {k: v for k, v in intent.items() if k != "limit_price" and v is not None}
    if intent.get("limit_price"):
        args["price"] = intent["limit_price"]
    return args


def _first_use(plan: PlanRecord) -> str:
    outcome = plan.outcome
    if not outcome:
        return "its first use is still in progress"
    status = outcome.get("status")
    if status in ("refused", "declined"):
        return f"its first use was {status} and nothing was sent"
    fill = outcome.get("fill") or {}
    order = outcome.get("order_id") or outcome.get("order_link_id")
    return f"it was sent as order {order} ({status}, filled {fill.get('filled_qty', '0')})"


def _key_violation(problem: str) -> ViolationOut:
    return ViolationOut(
        rule="apiKeyPermissions",
        limit="a key with trade-only permissions, checked within the hour",
        attempted="send",
        detail=problem,
        next=NextActionOut(
            tool=None,
            args=None,
            text="stop: the exchange key must be fixed by a human",
            human="run `pilot keys show`, then `pilot keys replace` with a narrow key",
        ),
    )


async def _refuse(
    runtime: Runtime,
    plan_id: str | None,
    *,
    reason: str,
    status: Literal["refused", "declined"] = "refused",
    violations: list[ViolationOut] | None = None,
    next_action: NextActionOut | None = None,
) -> OrderAnswer:
    answer = OrderAnswer(
        status=status, plan_id=plan_id, violations=violations, reason=reason, next_safe_action=next_action
    )
    entry = await runtime.store.journal.append(
        kinds.PLACE_REFUSED,
        answer.model_dump(mode="json", exclude_none=True),
        now=runtime.now(),
        plan_id=plan_id,
    )
    if plan_id is not None and status in ("refused", "declined"):
        record = await runtime.store.plans.get(plan_id)
        if record is not None and record.status == "claimed":
            await runtime.store.plans.record_outcome(plan_id, {"status": status}, now=runtime.now())
    return answer.model_copy(update={"journal_seq": [entry.seq]})


def _outcome_summary(answer: OrderAnswer) -> dict[str, Any]:
    return answer.model_dump(
        mode="json", include={"status", "order_id", "order_link_id", "fill"}, exclude_none=True
    )


def _changes(payload: dict[str, Any], facts: Any, price: Decimal) -> tuple[str, ...]:
    """What moved between planning and now, in plain words for the human."""
    before, changes = payload["snapshot"], []
    touch = facts.touch
    if touch is not None and before.get("mark") and Decimal(before["mark"]) != touch.mark:
        changes.append(f"mark {before['mark']} -> {plain(touch.mark)}")
    if facts.position is not None and before.get("position_size") not in (None, plain(facts.position.size)):
        changes.append(f"position {before['position_size']} -> {plain(facts.position.size)}")
    if Decimal(payload["order"]["price"]) != price:
        changes.append(f"limit price tightened {payload['order']['price']} -> {plain(price)}")
    return tuple(changes)
