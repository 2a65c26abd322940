"""close_position: shrink or close a position with a reduce-only Limit IOC, planned and sent like any order."""

from __future__ import annotations

from decimal import Decimal

from pilot.app.approvals import ApprovalChannel
from pilot.app.inputs import PlanRequest
from pilot.app.place import execute_plan
from pilot.app.plan import plan_order
from pilot.app.refusals import journal_order_refusal, position_mode_violation, violation
from pilot.app.responses import OrderAnswer, Refusal
from pilot.app.runtime import Runtime
from pilot.core.codes import Code
from pilot.core.facts import OrderType, Side
from pilot.core.rules import RETRY_MISSING_FACTS
from pilot.core.violations import NextAction
from pilot.exchange.errors import ExchangeError, UnsupportedPositionMode


async def close_position(
    runtime: Runtime,
    symbol: str,
    qty: Decimal | None,
    category: str = "linear",
    channel: ApprovalChannel | None = None,
) -> OrderAnswer:
    """Plan a reduce-only order against the position (all of it, or `qty`) and execute it at once.

    The plan goes through plan_order and place_order's execution, so the same evaluate, approval rule and
    gate apply; its receipt says close_position.
    """
    context = {"tool": "close_position", "symbol": symbol}
    try:
        position = await runtime.exchange.get_position(category, symbol)
    except UnsupportedPositionMode as hedged:  # two legs: no one-way close can be judged or sent
        refusal = Refusal.of(
            position_mode_violation(hedged), "the symbol is held in hedge mode; nothing was sent"
        )
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), context=context)
    except ExchangeError:
        unread = violation(
            Code.FACTS,
            "all facts present",
            "missing: position",
            f"could not read the {symbol} position, so nothing can be closed safely",
            NextAction.wait(
                "wait a few seconds and call close_position again", runtime.now() + RETRY_MISSING_FACTS
            ),
        )
        refusal = Refusal.of(unread, "the position could not be read; nothing was sent")
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), context=context)
    if position.size == 0:
        flat = violation(
            Code.REDUCE_ONLY,
            "0",
            "close",
            f"there is no {symbol} position to close",
            NextAction.stop("nothing to close"),
        )
        refusal = Refusal.of(flat, "there is no position to close; nothing was sent")
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), context=context)
    side = Side.SELL if position.size > 0 else Side.BUY
    amount = abs(position.size) if qty is None else min(qty, abs(position.size))
    request = PlanRequest(symbol, side, OrderType.MARKET, amount, None, None, True, category)
    planned = await plan_order(runtime, request, tool="close_position")
    if planned.status != "ok" or planned.plan_id is None:
        return OrderAnswer(
            status="refused",
            violations=planned.violations,
            next_safe_action=planned.next_safe_action,
            detail="the close did not pass; nothing was sent",
        )
    claim = await runtime.store.plans.claim(planned.plan_id, now=runtime.now())
    assert claim.plan is not None, "just created by this call; nobody else has its id"
    return await execute_plan(runtime, claim.plan, origin="close_position", channel=channel)
