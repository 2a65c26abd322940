"""close_position: shrink or close a position with a reduce-only Limit IOC, planned and sent like any order."""

from __future__ import annotations

from decimal import Decimal

from pilot.app.approvals import ApprovalChannel
from pilot.app.facts import gather_facts
from pilot.app.inputs import PlanRequest
from pilot.app.place import execute_plan
from pilot.app.plan import plan_order
from pilot.app.refusals import journal_order_refusal, position_mode_violation, violation
from pilot.app.responses import CancelledOrder, OrderAnswer, Refusal
from pilot.app.runtime import Runtime
from pilot.core.codes import SIZE_CAP_CODES, Code
from pilot.core.evaluate import Evaluation, evaluate
from pilot.core.facts import Facts, OrderIntent, OrderType, Side, TradingState
from pilot.core.rules import RETRY_MISSING_FACTS
from pilot.core.violations import NextAction, plain
from pilot.exchange.errors import ExchangeError, UnsupportedPositionMode
from pilot.exchange.models import ExchangeOrder


async def close_position(
    runtime: Runtime,
    symbol: str,
    qty: Decimal | None,
    category: str = "linear",
    channel: ApprovalChannel | None = None,
) -> OrderAnswer:
    """Plan a reduce-only order against the position (all of it, or `qty`) and execute it at once.

    The plan goes through plan_order and place_order's execution, so the same evaluate, approval rule and
    gate apply; its receipt says close_position. It runs to its end even if the client goes away.
    """
    return await runtime.gate.complete(_close(runtime, symbol, qty, category, channel))


async def _close(
    runtime: Runtime, symbol: str, qty: Decimal | None, category: str, channel: ApprovalChannel | None
) -> OrderAnswer:
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
    cancelled = await _cancel_what_would_reopen(runtime, request)
    planned = await plan_order(runtime, request, tool="close_position")
    if planned.status != "ok" or planned.plan_id is None:
        answer = OrderAnswer(
            status="refused",
            violations=planned.violations,
            next_safe_action=planned.next_safe_action,
            detail="the close did not pass; nothing was sent",
        )
    else:
        claim = await runtime.store.plans.claim(planned.plan_id, now=runtime.now())
        assert claim.plan is not None, "just created by this call; nobody else has its id"
        answer = await execute_plan(runtime, claim.plan, origin="close_position", channel=channel)
    return answer.model_copy(update={"cancelled_first": cancelled or None})


async def _cancel_what_would_reopen(runtime: Runtime, request: PlanRequest) -> list[CancelledOrder]:
    """Cancel resting orders on the close's side, newest first, while they would reopen past a cap.

    Closing a long under resting sells leaves those sells free to open a short; evaluate() counts them
    (pilot.core.risk), so the close itself would be refused. Pilot cancels them first, one at a time, until
    the close passes or none is left, and says which it cancelled. Nothing is cancelled while trading is
    halted (the close could not follow), nor when the close is refused for anything else.
    """
    cancelled: list[CancelledOrder] = []
    view = runtime.policy()
    intent = OrderIntent(
        request.symbol,
        request.side,
        request.qty or Decimal(0),
        OrderType.MARKET,
        None,
        True,
        request.category,
    )
    while True:
        facts = await gather_facts(runtime, view, intent)
        result = evaluate(view.policy, facts)
        if not _held_back_by_resting_orders(result, facts):
            return cancelled
        newest = await _newest_resting(runtime, intent)
        if newest is None:
            return cancelled
        done = await runtime.gate.cancel_order(
            intent.category, intent.symbol, order_id=newest.order_id, order_link_id=None
        )
        if done.status != "done":
            return cancelled
        cancelled.append(
            CancelledOrder(
                order_id=newest.order_id,
                side=intent.side.value,
                qty=plain(newest.qty - newest.cum_exec_qty),
                price=plain(newest.price),
            )
        )


def _held_back_by_resting_orders(result: Evaluation, facts: Facts) -> bool:
    if result.passed or result.situation is None or result.situation.pending == 0:
        return False
    if facts.trading_state is TradingState.HALTED:
        return False
    return all(v.rule in SIZE_CAP_CODES or v.rule is Code.TRADING_STATE for v in result.violations)


async def _newest_resting(runtime: Runtime, intent: OrderIntent) -> ExchangeOrder | None:
    side = "Buy" if intent.side is Side.BUY else "Sell"
    try:
        orders = await runtime.exchange.get_open_orders(intent.category, intent.symbol)
    except ExchangeError:
        return None
    resting = [order for order in orders if order.side == side and not order.reduce_only]
    return max(resting, key=lambda order: order.created_at, default=None)
