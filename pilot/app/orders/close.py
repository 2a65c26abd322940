"""close_position: shrink or close a position with a reduce-only Limit IOC, planned and sent like any order."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from pilot.app.answers.refusals import journal_order_refusal, position_mode_violation, violation
from pilot.app.answers.responses import CancelledOrder, NextActionOut, OrderAnswer, Refusal
from pilot.app.facts.gather import gather_facts
from pilot.app.human.approvals import ApprovalChannel, no_human_for
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import execute_plan
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.core.codes import Code
from pilot.core.facts import InstrumentRules, OrderIntent, OrderType, Side, TradingState
from pilot.core.rules import refused_only_for_pending, retry_missing
from pilot.core.sizing import closing_qty
from pilot.core.violations import NextAction, Violation, plain
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
        size, rules = await _holding(runtime, category, symbol)
    except UnsupportedPositionMode as hedged:  # two legs: no one-way close can be judged or sent
        refusal = Refusal.of(
            position_mode_violation(hedged), "the symbol is held in hedge mode; nothing was sent"
        )
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), context=context)
    except ExchangeError as error:
        unread = violation(
            Code.FACTS,
            "all facts present",
            "missing: position",
            f"could not read the {symbol} position, so nothing can be closed safely",
            NextAction.wait(
                "wait until retry_after and call close_position again",
                retry_missing(runtime.now(), error.retry_at),
                human="if this goes on, check the exchange's status page and this machine's network",
            ),
        )
        refusal = Refusal.of(unread, "the position could not be read; nothing was sent")
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), context=context)
    if size == 0 and category == "spot":
        size = await _held_under_stops(runtime, symbol)
    if size == 0:
        refusal = Refusal.of(_nothing_to_close(symbol), "there is no position to close; nothing was sent")
        return await journal_order_refusal(runtime.store.journal, refusal, now=runtime.now(), context=context)
    freed: list[CancelledOrder] = []
    if category == "spot":  # coin held by the spot stops selling it is freed for the close first
        freed = await free_held_coin(runtime, symbol, qty, rules)
        if freed:
            size, rules = await _holding(runtime, category, symbol)
    side = Side.SELL if size > 0 else Side.BUY
    amount = closing_qty(size, qty, rules)
    linear = category == "linear"  # spot takes no reduce-only orders: its close is a sell of what is held
    request = PlanRequest(symbol, side, OrderType.MARKET, amount, None, None, linear, category)
    cancelled = freed + await _cancel_what_would_reopen(runtime, request)
    planned = await plan_order(runtime, request, tool="close_position")
    if planned.status != "ok" or planned.plan_id is None:
        again = _as_close(planned.next_safe_action, symbol, category)
        if no_human_for(runtime, channel, "close_position") is not None:
            # another close would wait for a human this client cannot reach: the order that closes as much
            # is offered as plan_order, which confirm.actions does not name
            again = planned.next_safe_action
        answer = OrderAnswer(
            status="refused",
            violations=planned.violations,
            next_safe_action=again,
            detail="the close did not pass; nothing was sent",
        )
    else:
        claim = await runtime.store.plans.claim(planned.plan_id, now=runtime.now())
        assert claim.plan is not None, "just created by this call; nobody else has its id"
        answer = await execute_plan(runtime, claim.plan, origin="close_position", channel=channel)
        answer = _next_chunk(answer, size, amount, qty, symbol, category)
    return answer.model_copy(update={"cancelled_first": cancelled or None})


def _nothing_to_close(symbol: str) -> Violation:
    return violation(
        Code.REDUCE_ONLY,
        "0",
        "close",
        f"there is no {symbol} position to close",
        NextAction.stop("nothing to close", human="nothing: there is no position to close"),
    )


def _as_close(action: NextActionOut | None, symbol: str, category: str) -> NextActionOut | None:
    """A resized close is offered as close_position with that qty: replayed as a plan_order it would be judged
    as an order of place_order's (a confirmation threshold applies there, not to a close)."""
    if action is None or action.tool != "plan_order" or action.args is None:
        return action
    args = {"symbol": symbol, "category": category, "qty": action.args["qty"]}
    return action.model_copy(update={"tool": "close_position", "args": args})


def _next_chunk(
    answer: OrderAnswer, size: Decimal, amount: Decimal, asked: Decimal | None, symbol: str, category: str
) -> OrderAnswer:
    """A position larger than one maximum order closes in chunks: the answer says what is left and how."""
    filled = Decimal(answer.fill.filled_qty) if answer.fill is not None else Decimal(0)
    left = abs(size) - filled
    if asked is not None or amount >= abs(size) or filled == 0 or left <= 0:
        return answer
    again = NextActionOut(
        tool="close_position",
        args={"symbol": symbol, "category": category},
        text=f"{plain(left)} is left, more than one order may close: call close_position again",
    )
    return answer.model_copy(update={"next_safe_action": again})


async def _holding(runtime: Runtime, category: str, symbol: str) -> tuple[Decimal, InstrumentRules]:
    """The signed position (on spot, the base coin held and not locked by open orders) and the rules.

    Raises:
        ExchangeError: a read failed (UnsupportedPositionMode: the symbol is held in hedge mode).
    """
    exchange = runtime.exchange
    if category == "spot":
        rules, balance = await asyncio.gather(
            exchange.get_instrument(category, symbol), exchange.get_balance()
        )
        return balance.free(rules.base), rules
    rules, position = await asyncio.gather(
        exchange.get_instrument(category, symbol), exchange.get_position(category, symbol)
    )
    return position.size, rules


async def _held_under_stops(runtime: Runtime, symbol: str) -> Decimal:
    """The coin the spot orders waiting to sell it hold (none free): a close frees it first."""
    try:
        orders = await runtime.exchange.get_open_orders("spot", symbol)
    except ExchangeError:
        return Decimal(0)
    return sum((o.qty - o.cum_exec_qty for o in orders if _holds_coin(o)), Decimal(0))


def _holds_coin(order: ExchangeOrder) -> bool:
    """A spot TP/SL order waiting to sell: it holds its coin until it triggers (create-order.mdx)."""
    return order.is_spot_stop_sell and order.is_untriggered and order.stop_order_type == "tpslOrder"


async def free_held_coin(
    runtime: Runtime, symbol: str, qty: Decimal | None, rules: InstrumentRules
) -> list[CancelledOrder]:
    """Before a spot close: cancel the TP/SL orders holding the coin it sells (newest first, only as many as
    the close needs), through the gate. A spot TP/SL order holds its coin until it triggers, so no sell of
    that coin can pass while it rests; the close takes its place. Nothing is cancelled while trading is
    halted (the sell could not follow). If the sell then does not happen, the coin is left without those
    stops: the answer lists them (cancelled_first)."""
    view = runtime.policy()
    if await runtime.trading_state(view.policy) is TradingState.HALTED:
        return []
    try:
        balance, orders = await asyncio.gather(
            runtime.exchange.get_balance(), runtime.exchange.get_open_orders("spot", symbol)
        )
    except ExchangeError:
        return []
    holding = [o for o in orders if _holds_coin(o)]
    free = balance.free(rules.base)
    wanted = qty if qty is not None else free + sum((o.qty - o.cum_exec_qty for o in holding), Decimal(0))
    cancelled: list[CancelledOrder] = []
    for order in sorted(holding, key=lambda o: o.created_at, reverse=True):
        if free >= wanted:
            break
        done = await runtime.gate.cancel_order(
            "spot",
            symbol,
            order_id=order.order_id,
            order_link_id=None,
            origin="close_position",
            waiting_kind=order.stop_order_type,
        )
        if done.status != "done":
            break
        left = order.qty - order.cum_exec_qty
        free += left
        price = order.trigger_price if order.trigger_price is not None else order.price
        cancelled.append(
            CancelledOrder(order_id=order.order_id, side="sell", qty=plain(left), price=plain(price))
        )
    return cancelled


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
        request.reduce_only,
        request.category,
    )
    while True:
        facts = await gather_facts(runtime, view, intent)
        pending = facts.pending.on_side(intent.side) if facts.pending is not None else Decimal(0)
        if not refused_only_for_pending(view.policy, facts, pending):
            return cancelled  # not even every pending order gone would let it pass: no read, no cancel
        resting = await _resting(runtime, intent)
        cancellable = sum((order.qty - order.cum_exec_qty for order in resting), Decimal(0))
        if not resting or not refused_only_for_pending(view.policy, facts, cancellable):
            return cancelled
        newest = max(resting, key=lambda order: order.created_at)
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


async def _resting(runtime: Runtime, intent: OrderIntent) -> list[ExchangeOrder]:
    """The orders resting on the close's side that a cancel can take off the book (none if unreadable)."""
    side = "Buy" if intent.side is Side.BUY else "Sell"
    try:
        orders = await runtime.exchange.get_open_orders(intent.category, intent.symbol)
    except ExchangeError:
        return []
    return [order for order in orders if order.side == side and not order.reduce_only]
