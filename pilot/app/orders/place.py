"""place_order: redeem a plan once, evaluate it again on fresh facts, and send exactly what was planned."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds, store_faults
from pilot.app.answers.plan_records import PlanOutcome, PlanPayload, approval_text
from pilot.app.answers.refusals import journal_order_refusal, violation
from pilot.app.answers.responses import OrderAnswer, Refusal
from pilot.app.facts.gather import gather
from pilot.app.human.approvals import ApprovalChannel, ApprovalRequest, refusal_of, seek_approval
from pilot.app.orders.amend import send_amend
from pilot.app.orders.plan import with_policy_issues
from pilot.app.orders.protection import after_fill
from pilot.app.road.gate import TURN_WAIT, NotSent, SendCondition, TurnBusy, look_up, order_link_id
from pilot.app.runtime.runtime import JUDGEMENTS, Runtime
from pilot.core.approval import needs_human
from pilot.core.codes import Code
from pilot.core.evaluate import evaluate
from pilot.core.facts import Facts, Side
from pilot.core.valuation import worst_fill_for
from pilot.core.violations import NextAction, Violation, plain
from pilot.exchange.models import OrderRequest
from pilot.store import ClaimResult, PlanRecord, StoreError, acting_actor

# Plans whose one use stopped on a store failure with nothing sent, while the store could not record that
# either: the next place_order of one records it ("refused"), so the agent is told to plan again.
UNRECORDED_REFUSALS: set[str] = set()


async def place_order(runtime: Runtime, plan_id: str, channel: ApprovalChannel | None = None) -> OrderAnswer:
    """Claim the plan atomically (only one caller ever can), then execute it.

    Once claimed, the plan's use runs to its end even if the client goes away (see ExchangeGate.complete).
    """
    return await runtime.gate.complete(_claim_and_execute(runtime, plan_id, channel))


async def _claim_and_execute(runtime: Runtime, plan_id: str, channel: ApprovalChannel | None) -> OrderAnswer:
    if await _made_by_another(runtime, plan_id):  # answered as unknown: nothing says whose it is
        refusal = _lifecycle_refusal(ClaimResult("not_found", None), plan_id)
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), plan_id=None)
    claim = await runtime.store.plans.claim(plan_id, now=runtime.now(), holder=runtime.gate.holder)
    if claim.status == "already_used" and claim.plan is not None and plan_id in UNRECORDED_REFUSALS:
        claim = ClaimResult("already_used", await release_unsent(runtime, claim.plan))
        UNRECORDED_REFUSALS.discard(plan_id)
    if claim.status != "claimed" or claim.plan is None:
        known = plan_id if claim.plan is not None else None
        return await journal_order_refusal(
            runtime.store.journal, _lifecycle_refusal(claim, plan_id), now=runtime.now(), plan_id=known
        )
    return await execute_plan(runtime, claim.plan, origin="place_order", channel=channel)


async def _made_by_another(runtime: Runtime, plan_id: str) -> bool:
    """Whether another caller made plan `plan_id` (its `plan` entry names another actor): a plan id is its
    maker's to place, never one another agent, with its own role and budget, can spend. Left unclaimed, so
    its maker can still place it."""
    made = await runtime.store.journal.entries(plan_id=plan_id, kind=entry_kinds.PLAN, limit=1)
    return bool(made) and made[0].actor != acting_actor("agent")


async def execute_plan(
    runtime: Runtime, plan: PlanRecord, *, origin: str, channel: ApprovalChannel | None
) -> OrderAnswer:
    """Re-read the policy and fresh facts, run the same evaluate, ask a human if the policy says so, send.

    The gate's turn is held throughout, so concurrent sends are evaluated one after another. A store failure
    (disk full, I/O error) that stops it is "refused, nothing sent": once the gate has sent, it answers
    whatever the journal does (pilot.app.road.gate).
    """
    try:
        answer = await _execute(runtime, plan, origin, channel)
    except StoreError as error:
        answer = OrderAnswer.from_refusal(store_faults.refusal(error), plan_id=plan.plan_id)
    if answer.status != "pending_confirmation":  # a parked plan stays claimed until the human decides
        answer = await _record_outcome(runtime, plan.plan_id, answer)
    return answer


async def _execute(
    runtime: Runtime, plan: PlanRecord, origin: str, channel: ApprovalChannel | None
) -> OrderAnswer:
    payload = PlanPayload.read(plan.payload)
    if payload is None:
        refusal = Refusal.of(_unreadable_plan(), "the plan cannot be read; nothing was sent")
        return await journal_order_refusal(
            runtime.store.journal, refusal, now=runtime.now(), plan_id=plan.plan_id
        )
    sent: OrderAnswer | Refusal | None = None
    try:
        async with runtime.gate.turn():
            sent = await _evaluate_and_send(runtime, plan.plan_id, payload, origin, channel)
    except TurnBusy:
        sent = _busy(payload, runtime.now())
    except StoreError:
        if not isinstance(sent, OrderAnswer):  # nothing was sent
            raise
        # the send is done and journaled by the gate; only leaving the turn failed: the answer stands
    assert sent is not None, "the turn either raised or produced an answer"
    if isinstance(sent, Refusal):
        return await journal_order_refusal(
            runtime.store.journal, sent, now=runtime.now(), plan_id=plan.plan_id
        )
    return sent


async def _record_outcome(runtime: Runtime, plan_id: str, answer: OrderAnswer) -> OrderAnswer:
    """Record what the plan's one use came to; a store that cannot must not lose the answer."""
    outcome = PlanOutcome.of(answer)
    try:
        await runtime.store.plans.record_outcome(
            plan_id, outcome.model_dump(mode="json", exclude_none=True), now=runtime.now()
        )
    except StoreError as error:
        if outcome.sent_nothing:
            UNRECORDED_REFUSALS.add(plan_id)
            return answer
        return store_faults.unrecorded(answer, error, "the outcome of this order on its plan", sent=True)
    return answer


async def release_unsent(runtime: Runtime, plan: PlanRecord) -> PlanRecord:
    """Record "refused" for a claimed plan that has no outcome and no order.sent entry: nothing was sent.

    Only for a plan no running use still holds (its use ended on a store failure, or before a restart):
    a use in progress has no order.sent entry yet either. Returns the plan as it now stands.

    Raises:
        StoreError: the store still cannot record it.
    """
    if plan.outcome is not None or await runtime.store.journal.entries(
        plan_id=plan.plan_id, kind=entry_kinds.ORDER_SENT
    ):
        return plan
    outcome = PlanOutcome(status="refused").model_dump(mode="json", exclude_none=True)
    await runtime.store.plans.record_outcome(plan.plan_id, outcome, now=runtime.now())
    return dataclasses.replace(plan, status="done", outcome=outcome)


async def _evaluate_and_send(
    runtime: Runtime, plan_id: str, payload: PlanPayload, origin: str, channel: ApprovalChannel | None
) -> OrderAnswer | Refusal:
    """Judge the plan on fresh facts and send it, on the condition it was judged on (SendCondition): a kill
    switch, loss latch or policy edit that lands in between sends it back to be judged again, so it is
    refused if the change refuses it. A human who approved it is not asked twice."""
    if payload.amend is not None:
        return await send_amend(
            runtime, plan_id, payload.amend, payload.intent.symbol, payload.intent.category
        )
    approved = False
    for _ in range(JUDGEMENTS):
        judged = await _judge(runtime, plan_id, payload, channel, approved=approved)
        if isinstance(judged, Refusal):
            return judged
        request, condition, approved = judged
        answer = await runtime.gate.send_order(request, plan_id=plan_id, origin=origin, condition=condition)
        if not isinstance(answer, NotSent):
            return await after_fill(runtime, payload.intent.to_intent(), answer)
    return _changing(payload, runtime.now())


async def _judge(
    runtime: Runtime, plan_id: str, payload: PlanPayload, channel: ApprovalChannel | None, *, approved: bool
) -> Refusal | tuple[OrderRequest, SendCondition | None, bool]:
    """The plan judged on fresh facts (and a human asked, if the policy wants one and none was yet): what to
    send, on what condition (None for an order that only shrinks a position: nothing that turns trading
    reducing can refuse it), and whether a human approved it; or why not."""
    view = runtime.policy()
    intent = payload.intent.to_intent()
    gathered = await gather(runtime, view, intent)
    result = evaluate(view.policy, gathered.facts)
    violations, next_action = with_policy_issues(view, result)
    if violations or result.situation is None:
        detail = "the order no longer passes the policy on fresh facts; nothing was sent"
        return Refusal("refused", detail, tuple(violations), next_action)
    s = result.situation
    price = tightened(intent.side, Decimal(payload.order.price), s.sent_price)
    notional = intent.qty * worst_fill_for(intent.side, price, s.touch.bid)
    if not approved and needs_human(view.policy.confirm, payload.tool, notional, grows=not s.reducing):
        order = payload.order.model_copy(update={"price": plain(price)})
        approval = ApprovalRequest(
            tool=payload.tool,
            text=approval_text(order, notional, result.liquidation),
            action=order.model_dump(mode="json"),
            plan_id=plan_id,
            notional_usd=plain(notional),
            changes=_changes(payload, gathered.facts, price),
        )
        refusal = refusal_of(await seek_approval(runtime, channel, approval), again=_replan(payload))
        if refusal is not None:
            return refusal
        approved = True
    request = OrderRequest(
        category=intent.category,
        symbol=intent.symbol,
        side="Buy" if intent.side is Side.BUY else "Sell",
        qty=intent.qty,
        price=price,
        time_in_force=payload.order.time_in_force,
        order_link_id=order_link_id(plan_id),
        reduce_only=intent.reduce_only,
        stop_loss=intent.stop_loss,
        take_profit=intent.take_profit,
        stop_scope=runtime.venue.scope(intent.category),  # what the judgement assumed the stop becomes
        smp_type=view.policy.self_trade_prevention,  # self-trade prevention, as policy.json says
    )
    return request, None if s.reducing else runtime.judged_on(view, gathered.mark), approved


def tightened(side: Side, planned: Decimal, fresh: Decimal) -> Decimal:
    """The limit price may only tighten: a buy never pays more than planned, a sell never takes less."""
    return min(planned, fresh) if side is Side.BUY else max(planned, fresh)


def _changing(payload: PlanPayload, now: datetime) -> Refusal:
    again = NextAction(
        tool="plan_order",
        args=payload.intent.plan_args(),
        text="the trading state or the policy kept changing while this order was judged; plan it again shortly",
        retry_after=now + timedelta(seconds=1),
    )
    busy = violation(Code.SEND_TURN_BUSY, "one judgement that stands", "a send", again.text, again)
    return Refusal.of(
        busy, "what the order was judged on changed each time it was about to be sent; nothing was sent"
    )


def _busy(payload: PlanPayload, now: datetime) -> Refusal:
    again = NextAction(
        tool="plan_order",
        args=payload.intent.plan_args(),
        text="another Pilot process on this home was sending for too long; plan the order again shortly",
        retry_after=now + TURN_WAIT,
    )
    busy = violation(Code.SEND_TURN_BUSY, "one send at a time per home", "a send", again.text, again)
    return Refusal.of(busy, "another process held the send turn; nothing was sent")


def _replan(payload: PlanPayload) -> NextAction:
    if payload.amend is not None:
        args = {
            "symbol": payload.intent.symbol,
            "order_id": payload.amend.order_id,
            "qty": payload.amend.qty,
            "price": payload.amend.price,
            "category": payload.intent.category,
        }
        return NextAction.call("plan_amend", args, "plan the same amend again")
    return NextAction.call("plan_order", payload.intent.plan_args(), "plan the same order again")


def _lifecycle_refusal(claim: ClaimResult, plan_id: str) -> Refusal:
    plan = claim.plan
    if claim.status == "not_found" or plan is None:
        stop = NextAction.stop(
            "call plan_order to get a plan id", human="nothing: plan ids come only from plan_order"
        )
        detail = "no such plan; plan ids come only from plan_order"
        return _lifecycle(Code.PLAN_NOT_FOUND, detail, stop, "unknown plan id")
    payload = PlanPayload.read(plan.payload)
    if payload is None:
        return Refusal.of(_unreadable_plan(), "the plan cannot be read; nothing was sent")
    replan = _replan(payload)
    if claim.status == "expired":
        detail = f"the plan expired at {plan.expires_at.isoformat()}"
        return _lifecycle(Code.PLAN_EXPIRED, detail, replan, "the plan expired")
    outcome = PlanOutcome.read(plan.outcome)
    became = _first_use(outcome)
    if outcome is not None and outcome.status == "declined":
        next_action = NextAction.stop(
            "the human declined this order; do not retry it", human="nothing: a human already said no to it"
        )
    elif outcome is not None and outcome.executed_nothing:  # evaluating it again is safe
        next_action = replan
    else:
        next_action = look_up(
            payload.intent.symbol,
            payload.intent.category,
            f"do not resend: {became}; check get_open_orders and get_positions",
        )
    detail = f"plan {plan_id} was already used: {became}"
    return _lifecycle(Code.PLAN_ALREADY_USED, detail, next_action, "a plan works once")


def _lifecycle(code: Code, detail: str, next_action: NextAction, why: str) -> Refusal:
    broken = violation(code, "a fresh, unused plan id", code.value, detail, next_action)
    return Refusal.of(broken, f"{why}; nothing was sent")


def _unreadable_plan() -> Violation:
    return violation(
        Code.PLAN_NOT_FOUND,
        "a plan made by this version of Pilot",
        "an unreadable plan",
        "the plan was written by another version of Pilot and cannot be read",
        NextAction.stop(
            "call plan_order for this order again", human="nothing: a new plan replaces the unreadable one"
        ),
    )


def _first_use(outcome: PlanOutcome | None) -> str:
    if outcome is None:
        return "its first use is still in progress"
    if outcome.sent_nothing:
        return f"its first use was {outcome.status} and nothing was sent"
    order = outcome.order_id or outcome.order_link_id
    return f"it was sent as order {order} ({outcome.status}, filled {outcome.filled_qty or '0'})"


def _changes(payload: PlanPayload, facts: Facts, price: Decimal) -> tuple[str, ...]:
    """What moved between planning and now, in plain words for the human."""
    before, changes = payload.snapshot, []
    touch = facts.touch
    if touch is not None and before.mark and Decimal(before.mark) != touch.mark:
        changes.append(f"mark {before.mark} -> {plain(touch.mark)}")
    if facts.position is not None and before.position_size not in (None, plain(facts.position.size)):
        changes.append(f"position {before.position_size} -> {plain(facts.position.size)}")
    if Decimal(payload.order.price) != price:
        changes.append(f"limit price tightened {payload.order.price} -> {plain(price)}")
    return tuple(changes)
