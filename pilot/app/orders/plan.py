"""plan_order: gather the facts, run evaluate once, and issue a single-use plan for an order that passes."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import IntentRecord, PlanPayload, PlanTool, approval_text
from pilot.app.answers.refusals import position_mode_violation
from pilot.app.answers.responses import (
    PlanAnswer,
    PlannedOrderOut,
    Snapshot,
    journaled,
    next_out,
    violations_out,
)
from pilot.app.facts.gather import gather, snapshot
from pilot.app.orders.adjustments import Nearest, adjustments, named_nearest, nearest_market, with_nearest
from pilot.app.orders.inputs import PlanRequest
from pilot.app.runtime.runtime import PolicyView, Runtime, acting_agent
from pilot.core.agent_budgets import Role
from pilot.core.approval import needs_human
from pilot.core.codes import Code
from pilot.core.evaluate import Evaluation, evaluate, evaluate_close
from pilot.core.facts import Facts, OrderIntent, OrderType, Side
from pilot.core.sizing import qty_for_notional
from pilot.core.valuation import floor_to_step, price_on_tick, worst_fill_price
from pilot.core.violations import NextAction, Violation, plain
from pilot.store import new_plan_id


async def plan_order(
    runtime: Runtime, request: PlanRequest, *, tool: PlanTool = "place_order", can_reach_human: bool = True
) -> PlanAnswer:
    """Judge the order on live facts; an order that passes gets a plan id that works once, for planTtlSeconds.

    `tool` is what will use the plan: place_order, or close_position (which plans its own closing order).
    `can_reach_human` is False for a caller with no way to ask a human (no forms, no CLI channel): an order
    that would need one is then refused with the largest size that does not.
    """
    view = runtime.policy()
    gathered = await gather(runtime, view, _intent(request))
    order = _rounded(request, gathered.facts, view)
    facts = replace(gathered.facts, order=order, can_reach_human=can_reach_human)
    judge = evaluate_close if tool == "close_position" else evaluate
    result = judge(view.policy, facts)
    violations, next_action = with_policy_issues(view, result)
    if gathered.hedged is not None:  # no position to judge against, nothing sendable: only a human helps
        hedged = position_mode_violation(gathered.hedged)
        violations, next_action = [hedged], hedged.next
    shot = snapshot(view, facts)
    now = runtime.now()
    changed = adjustments(request, order, gathered.facts.rules) or None
    if violations:
        nearest = await _nearest(runtime, view, facts, violations)
        violations, next_action = with_nearest(violations, next_action, request.symbol, nearest)
        answer = PlanAnswer(
            status="refused",
            violations=named_nearest(violations_out(violations), nearest),
            next_safe_action=next_out(next_action),
            snapshot=shot,
            adjustments=changed,
        )
        await journal_decision(runtime, answer, request, now)
        return answer
    payload = plan_payload(view, result, shot, tool)
    answer = await issue_plan(runtime, view, payload, shot, now, can_confirm=can_reach_human)
    answer = answer.model_copy(update={"adjustments": changed})
    assert answer.plan_id is not None
    await journal_decision(runtime, answer, request, now)
    return answer


async def _nearest(
    runtime: Runtime, view: PolicyView, facts: Facts, violations: list[Violation]
) -> Nearest | None:
    """The listed market a refused symbol most likely meant, asked only when the symbol is the problem."""
    if not any(v.rule in (Code.ALLOWED_MARKETS, Code.UNKNOWN_SYMBOL) for v in violations):
        return None
    order = facts.order
    allowed = view.policy.allowed_markets
    return await nearest_market(runtime.exchange, order.category, order.symbol, allowed, facts.listed)


async def journal_decision(runtime: Runtime, answer: PlanAnswer, request: PlanRequest, now: datetime) -> None:
    """Journal what plan_order decided. Not durable: a decision lost to a power cut leaves nothing to act
    on (its plan, written the same way, is lost with it, or a later durable write keeps both)."""
    await runtime.store.journal.append(
        entry_kinds.PLAN, _entry(answer, request), now=now, plan_id=answer.plan_id, durable=False
    )


async def issue_plan(
    runtime: Runtime,
    view: PolicyView,
    payload: PlanPayload,
    shot: Snapshot,
    now: datetime,
    *,
    can_confirm: bool | None = None,
) -> PlanAnswer:
    """Store a passing judgement as a single-use plan (it lives planTtlSeconds) and answer ok with it."""
    plan_id = new_plan_id()
    record = await runtime.store.plans.create(
        plan_id=plan_id,
        payload=payload.model_dump(mode="json"),
        now=now,
        ttl_seconds=view.policy.plan_ttl_seconds,
    )
    return PlanAnswer(
        status="ok",
        plan_id=plan_id,
        expires_at=record.expires_at.isoformat(),
        order=payload.order,
        notional_usd=payload.notional_usd,
        position_notional_usd=payload.position_notional_usd,
        liquidation_price=payload.liquidation_price,
        liquidation_distance_pct=payload.liquidation_distance_pct,
        needs_confirmation=payload.needs_confirmation,
        can_confirm=can_confirm,
        snapshot=shot,
    )


def _entry(answer: PlanAnswer, request: PlanRequest) -> dict[str, Any]:
    """The journal's record of a decision: what was asked, and the answer (with its snapshot)."""
    asked = {
        "symbol": request.symbol,
        "side": request.side.value,
        "qty": plain(request.qty) if request.qty is not None else None,
        "notional_usd": plain(request.notional_usd) if request.notional_usd is not None else None,
        "order_type": request.order_type.value,
        "price": plain(request.price) if request.price is not None else None,
        "reduce_only": request.reduce_only,
        "category": request.category,
        "stop_loss": plain(request.stop_loss) if request.stop_loss is not None else None,
        "take_profit": plain(request.take_profit) if request.take_profit is not None else None,
    }
    return {**journaled(answer), "request": asked}


def plan_payload(view: PolicyView, result: Evaluation, shot: Snapshot, tool: PlanTool) -> PlanPayload:
    """Everything place_order needs to send exactly this order and to evaluate it again."""
    s = result.situation
    assert s is not None, "a passing evaluation has a situation"
    order = s.order
    found = result.liquidation
    planned = PlannedOrderOut(
        category=order.category,
        symbol=order.symbol,
        side=order.side.value,
        qty=plain(order.qty),
        order_type=order.order_type.value,
        price=plain(s.sent_price),
        time_in_force="IOC" if order.order_type is OrderType.MARKET else "GTC",
        reduce_only=order.reduce_only,
        stop_loss=plain(order.stop_loss) if order.stop_loss is not None else None,
        take_profit=plain(order.take_profit) if order.take_profit is not None else None,
    )
    needs = needs_human(view.policy.confirm, tool, s.order_notional, grows=not s.reducing)
    return PlanPayload(
        tool=tool,
        order=planned,
        intent=IntentRecord.of(order),
        notional_usd=plain(s.order_notional),
        position_notional_usd=plain(s.after_notional),
        liquidation_distance_pct=plain(found.distance_pct.quantize(Decimal("0.01"))) if found else None,
        liquidation_price=plain(found.price) if found else None,
        needs_confirmation=needs,
        grows=not s.reducing,
        confirmation_text=approval_text(planned, s.order_notional, found) if needs else None,
        snapshot=shot,
        policy_version=view.version,
    )


def with_policy_issues(view: PolicyView, result: Evaluation) -> tuple[list[Violation], NextAction | None]:
    """The violations and next action to report. While policy.json is invalid, a growing order is refused
    for that reason first, with the file's fixes, and the next action is to stop."""
    grows = any(v.rule is Code.TRADING_STATE for v in result.violations)  # the fail-closed policy is reducing
    if view.valid or not grows:
        return result.violations, result.next_safe_action
    problems = "; ".join(str(issue) for issue in view.issues)
    policy_violation = Violation(
        rule=Code.POLICY,
        limit="a valid policy.json",
        attempted="invalid policy.json",
        detail=f"policy.json is invalid, so only orders that shrink a position are allowed: {problems}",
        next=NextAction.stop(
            "stop opening or adding; reducing orders and close_position still work",
            human="fix policy.json: " + "; ".join(f"{issue.path}: {issue.fix}" for issue in view.issues),
        ),
    )
    others = [v for v in result.violations if v.rule not in (Code.TRADING_STATE, Code.ALLOWED_MARKETS)]
    return [policy_violation, *others], policy_violation.next


def _intent(request: PlanRequest) -> OrderIntent:
    return OrderIntent(
        symbol=request.symbol,
        side=request.side,
        qty=request.qty or Decimal(0),
        order_type=request.order_type,
        limit_price=request.price,
        reduce_only=request.reduce_only,
        category=request.category,
        stop_loss=request.stop_loss,
        take_profit=request.take_profit,
    )


def _rounded(request: PlanRequest, facts: Facts, view: PolicyView) -> OrderIntent:
    """Quantities floor to the lot step; a limit price rounds to the tick on the safe side; notional -> qty.

    Spot has no reduce-only orders (Bybit leaves the flag aside there): a reduce-only spot sell is planned as a
    plain sell, which the checks keep to the coin held; a reduce-only spot buy has nothing to reduce.
    """
    order, rules = facts.order, facts.rules
    if order.category == "spot" and order.reduce_only and order.side is Side.SELL:
        order = replace(order, reduce_only=False)  # a reduce-only spot buy reduces nothing: refused as such
    agent = acting_agent()
    if agent is not None and agent.role != Role.TRADE and order.category == "linear":
        order = replace(order, reduce_only=True)  # an agent that may only reduce sends nothing else
    if rules is None:
        return order
    price = order.limit_price
    if price is not None:
        price = price_on_tick(price, rules.tick_size, order.side)
    # A stop and a target are the closing side's prices: on the tick towards the entry for the stop (a
    # smaller loss), away from it for the target.
    closing = Side.SELL if order.side is Side.BUY else Side.BUY
    stop, target = order.stop_loss, order.take_profit
    if stop is not None:
        stop = price_on_tick(stop, rules.tick_size, closing)
    if target is not None:
        target = price_on_tick(target, rules.tick_size, closing)
    order = replace(order, limit_price=price, stop_loss=stop, take_profit=target)
    if request.notional_usd is not None:
        if facts.touch is None:
            return order
        slippage = view.policy.limits_for(order.symbol).max_slippage_pct
        worst = worst_fill_price(
            order, facts.touch, rules, slippage, facts.band
        )  # as judged: inside the band
        return replace(order, qty=qty_for_notional(request.notional_usd, worst, rules.qty_step))
    return replace(order, qty=floor_to_step(order.qty, rules.qty_step))
