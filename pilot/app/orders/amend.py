"""plan_amend: judge a change to an open order's quantity or price, and issue a plan that place_order redeems.

The amended order is judged as the order it becomes, in place of the one resting: the resting order's
remaining quantity leaves the pending exposure and the amended remainder is evaluated as a limit order at
its (new) price by the same evaluate() as any order. Shrinking the quantity at the same price is always
allowed. A refusal's next action is the same amend, resized by the one sizing path. An amend is never
parked for a human: one that would need approval is sized under confirm.aboveNotionalUsd instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, assert_never

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import AmendRecord
from pilot.app.answers.refusals import position_mode_violation, violation
from pilot.app.answers.responses import (
    ActionStatus,
    OrderAnswer,
    OrderStatus,
    PlanAnswer,
    Refusal,
    journaled,
    next_out,
    violations_out,
)
from pilot.app.facts.gather import gather, snapshot
from pilot.app.orders.plan import issue_plan, plan_payload, with_policy_issues
from pilot.app.road.gate import NotSent, SendCondition
from pilot.app.runtime.runtime import JUDGEMENTS, PolicyView, Runtime
from pilot.core.approval import needs_human
from pilot.core.channels import REACH_A_HUMAN
from pilot.core.codes import NO_HUMAN_FIX, Code
from pilot.core.controls import throttle
from pilot.core.evaluate import Evaluation, evaluate
from pilot.core.facts import (
    Facts,
    Funds,
    OrderIntent,
    OrderType,
    PendingOrders,
    RestingOrders,
    Side,
    Turnover,
)
from pilot.core.policy import CONFIRMABLE_TOOLS, ConfirmRule
from pilot.core.valuation import floor_to_step, price_on_tick
from pilot.core.violations import NextAction, ToolCall, Violation, plain
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ExchangeOrder


@dataclass(frozen=True, slots=True)
class AmendAsk:
    """What the agent asked: which order, and its new total quantity and/or price (None: unchanged)."""

    symbol: str
    order_id: str | None
    order_link_id: str | None
    qty: Decimal | None
    price: Decimal | None
    category: str = "linear"

    def names(self, order: ExchangeOrder) -> bool:
        """Whether `order` is the one asked for: by the exchange's order id, else by the client's."""
        if self.order_id:
            return order.order_id == self.order_id
        return bool(self.order_link_id) and order.order_link_id == self.order_link_id

    def args(self, qty: Decimal | None = None, price: Decimal | None = None) -> dict[str, Any]:
        """plan_amend arguments for this order, with another quantity and/or price if given."""
        args: dict[str, Any] = {"symbol": self.symbol, "category": self.category}
        if self.order_id:
            args["order_id"] = self.order_id
        else:
            args["order_link_id"] = self.order_link_id
        new_qty, new_price = qty if qty is not None else self.qty, price if price is not None else self.price
        if new_qty is not None:
            args["qty"] = plain(new_qty)
        if new_price is not None:
            args["price"] = plain(new_price)
        return args


@dataclass(frozen=True, slots=True)
class Judged:
    """An amend judged on fresh facts: the order as it stands, what it becomes, and the verdict."""

    order: ExchangeOrder
    qty: Decimal  # the new total quantity
    price: Decimal  # the new price
    facts: Facts
    result: Evaluation
    violations: list[Violation]
    next_action: NextAction | None


async def judge_amend(runtime: Runtime, view: PolicyView, ask: AmendAsk) -> Judged | Refusal:
    """Read the open order and the facts, and judge the amended order in its place."""
    try:
        resting = await runtime.exchange.get_open_orders(ask.category, ask.symbol)
    except ExchangeError as error:
        return Refusal.of(_unreadable(ask, error), "the open orders could not be read; nothing was sent")
    order = next((o for o in resting if ask.names(o)), None)
    if order is None:
        return Refusal.of(_not_open(ask), "no such open order; nothing was sent")
    if not order.is_ordinary:
        return Refusal.of(_stop_order(ask, order), "a TP/SL or conditional order; nothing was sent")
    side = Side.BUY if order.side.lower() == "buy" else Side.SELL
    qty, price = (
        ask.qty if ask.qty is not None else order.qty,
        ask.price if ask.price is not None else order.price,
    )
    remaining = max(qty - order.cum_exec_qty, Decimal(0))
    # The stop it carries applies once it fills, as the venue applies it (Facts.venue): judged with it.
    intent = OrderIntent(
        ask.symbol,
        side,
        remaining,
        OrderType.LIMIT,
        price,
        order.reduce_only,
        category=ask.category,
        stop_loss=order.stop_loss,
        take_profit=order.take_profit,
    )
    gathered = await gather(runtime, view, intent)
    facts = gathered.facts
    if facts.rules is not None:
        tick, step = facts.rules.tick_size, facts.rules.qty_step
        price = price_on_tick(price, tick, side)
        qty = order.cum_exec_qty + floor_to_step(remaining, step)
        intent = replace(intent, qty=qty - order.cum_exec_qty, limit_price=price)
    facts = _in_its_place(facts, order, intent)
    result = evaluate(view.policy, facts)
    violations, next_action = with_policy_issues(view, result)
    if gathered.hedged is not None:
        hedged = position_mode_violation(gathered.hedged)
        violations, next_action = [hedged], hedged.next
    if qty <= order.qty and price == order.price:
        violations, next_action = [], None  # shrinking at the same price: always allowed
        grid = _off_grid(ask, order, qty, facts)
        if grid is not None:  # ... but what the exchange refuses (10001) is not planned
            violations, next_action = [grid], grid.next
        busy = throttle(view.policy, facts.messages, facts.now)  # ... and it is a message like any other
        if busy is not None and busy.next is not None:
            violations, next_action = [busy.with_next(busy.next)], busy.next
    if qty <= order.cum_exec_qty:
        broken = _at_most_filled(ask, order)
        violations, next_action = [broken], broken.next
    human = next((v.rule.cap.human.format(symbol=ask.symbol) for v in violations if v.rule.cap), NO_HUMAN_FIX)
    violations = [replace(v, next=_as_amend(ask, order, v.next, human) or v.next) for v in violations]
    return Judged(order, qty, price, facts, result, violations, _as_amend(ask, order, next_action, human))


def _reachable(action: NextAction | None, confirm: ConfirmRule, can_reach_human: bool) -> NextAction | None:
    """`action`, or, when it calls a tool confirm.actions names for a caller who cannot reach a human (the way
    out of an amend below the minimum is cancel_order), the stop that says what only a human can do."""
    if can_reach_human or action is None or action.tool not in CONFIRMABLE_TOOLS:
        return action
    if not needs_human(confirm, action.tool):
        return action
    return NextAction.stop(
        f"stop: the way out is {action.tool}, which needs a human, and this client cannot show a "
        "confirmation form",
        human=REACH_A_HUMAN,
    )


def _off_grid(ask: AmendAsk, order: ExchangeOrder, qty: Decimal, facts: Facts) -> Violation | None:
    """An amend to the same total and price (nothing to send: Bybit answers 10001), or to a total below the
    instrument's minimum (Bybit checks the new total): refused, the way out named."""
    rules = facts.rules
    keep = NextAction.call(
        "get_open_orders",
        {"symbol": ask.symbol, "category": ask.category},
        "nothing to change: it rests as it is",
    )
    cancel = NextAction.call(
        "cancel_order",
        {"symbol": ask.symbol, "order_id": order.order_id, "category": ask.category},
        "to hold less than the minimum order, cancel it instead",
    )
    if qty == order.qty:
        return violation(
            Code.ORDER_NOT_OPEN, "a new qty or price", plain(qty), "the amend changes nothing", keep
        )
    if rules is not None and qty < rules.min_qty:
        detail = f"the new total {plain(qty)} is below the instrument's minimum order {plain(rules.min_qty)}"
        return violation(Code.MIN_ORDER_QTY, plain(rules.min_qty), plain(qty), detail, cancel)
    return None


def _without(pending: PendingOrders | None, order: ExchangeOrder, side: Side) -> PendingOrders | None:
    """The pending exposure with the resting order's remainder taken out: the amended order replaces it."""
    if pending is None:
        return None
    leaves = max(order.qty - order.cum_exec_qty, Decimal(0))
    return PendingOrders(
        max(pending.buy_qty - (leaves if side is Side.BUY else 0), Decimal(0)),
        max(pending.sell_qty - (leaves if side is Side.SELL else 0), Decimal(0)),
        tuple(fill for fill in pending.fills if fill.order_id != order.order_id),
    )


def _in_its_place(facts: Facts, order: ExchangeOrder, intent: OrderIntent) -> Facts:
    """The facts the amended order is judged on, in place of the resting one: that one's remainder leaves
    the pending exposure, its place among the resting orders is the amended one's, and what it may still
    trade leaves the turnover (an amend counts what it adds). An amend never waits for a human."""
    return replace(
        facts,
        pending=_without(facts.pending, order, intent.side),
        resting=_one_fewer(facts.resting),
        turnover=_without_notional(facts.turnover, order),
        funds=_with_its_funds(facts, order, intent.side),
        order=intent,
        can_reach_human=False,
    )


def _with_its_funds(facts: Facts, order: ExchangeOrder, side: Side) -> Funds | None:
    """What the account may spend on the amended order: the available balance with what the resting order
    holds given back (its margin at the position's leverage; a spot order's locked coin), since the exchange
    charges an amend only what it adds."""
    funds = facts.funds
    if funds is None:
        return None
    leaves = max(order.qty - order.cum_exec_qty, Decimal(0))
    if order.category == "spot":
        if side is Side.BUY:
            return replace(funds, free_quote=funds.free_quote + leaves * order.price)
        return replace(funds, free_base=funds.free_base + leaves)
    if order.reduce_only:
        return funds
    leverage = max(facts.position.leverage if facts.position is not None else Decimal(1), Decimal(1))
    return replace(funds, available_usd=funds.available_usd + leaves * order.price / leverage)


def _one_fewer(resting: RestingOrders | None) -> RestingOrders | None:
    if resting is None:
        return None
    total = max(resting.total - 1, 0) if resting.total is not None else None
    return RestingOrders(max(resting.market - 1, 0), total)


def _without_notional(turnover: Turnover | None, order: ExchangeOrder) -> Turnover | None:
    """The turnover without what the resting order still may trade: the amend adds only what it changes."""
    if turnover is None:
        return None
    leaves = max(order.qty - order.cum_exec_qty, Decimal(0)) * order.price
    return replace(turnover, day_usd=turnover.day_usd - leaves, rolling_usd=turnover.rolling_usd - leaves)


async def plan_amend(runtime: Runtime, ask: AmendAsk, *, can_reach_human: bool = True) -> PlanAnswer:
    """Judge the amend on live facts; one that passes gets a single-use plan id for place_order.
    `can_reach_human`: whether this caller can get a human's approval (a form, or a channel outside the
    client); when it cannot, no refusal sends it to a call that would need one."""
    view = runtime.policy()
    judged = await judge_amend(runtime, view, ask)
    now = runtime.now()
    if isinstance(judged, Refusal):
        answer = PlanAnswer(
            status="refused",
            violations=violations_out(judged.violations),
            next_safe_action=next_out(judged.next_safe_action),
        )
        await runtime.store.journal.append(entry_kinds.PLAN, _entry(answer, ask), now=now)
        return answer
    shot = snapshot(view, judged.facts)
    if judged.violations or judged.result.situation is None:
        confirm = view.policy.confirm
        violations = [
            replace(v, next=_reachable(v.next, confirm, can_reach_human) or v.next) for v in judged.violations
        ]
        answer = PlanAnswer(
            status="refused",
            violations=violations_out(violations),
            next_safe_action=next_out(_reachable(judged.next_action, confirm, can_reach_human)),
            snapshot=shot,
        )
        await runtime.store.journal.append(entry_kinds.PLAN, _entry(answer, ask), now=now)
        return answer
    payload = plan_payload(view, judged.result, shot, "place_order")
    order = payload.order.model_copy(update={"qty": plain(judged.qty), "price": plain(judged.price)})
    amend = AmendRecord(
        order_id=judged.order.order_id,
        qty=plain(judged.qty),
        price=plain(judged.price),
        was_qty=plain(judged.order.qty),
        was_price=plain(judged.order.price),
    )
    payload = payload.model_copy(
        update={"order": order, "amend": amend, "needs_confirmation": False, "confirmation_text": None}
    )
    answer = await issue_plan(runtime, view, payload, shot, now)
    assert answer.plan_id is not None
    await runtime.store.journal.append(entry_kinds.PLAN, _entry(answer, ask), now=now, plan_id=answer.plan_id)
    return answer


async def send_amend(
    runtime: Runtime, plan_id: str, amend: AmendRecord, symbol: str, category: str
) -> OrderAnswer | Refusal:
    """place_order's road for an amend plan: judge it again on fresh facts, then amend once through the gate,
    on the condition it was judged on (judged again when a kill switch, loss latch or policy edit lands in
    between, as place_order's orders are)."""
    for _ in range(JUDGEMENTS):
        view = runtime.policy()
        ask = AmendAsk(symbol, amend.order_id, None, Decimal(amend.qty), Decimal(amend.price), category)
        mark = (await runtime.journal_state()).mark  # read before the judgement's own: never after it
        judged = await judge_amend(runtime, view, ask)
        if isinstance(judged, Refusal):
            return judged
        if judged.violations:
            detail = "the amended order no longer passes the policy on fresh facts; nothing was sent"
            return Refusal("refused", detail, tuple(judged.violations), judged.next_action)
        reducing = judged.result.situation is not None and judged.result.situation.reducing
        condition = None if reducing else runtime.judged_on(view, mark)
        done = await _amend_once(runtime, plan_id, amend, judged.order, symbol, category, condition)
        if not isinstance(done, NotSent):
            return done
    args = {"symbol": symbol, "order_id": amend.order_id, "qty": amend.qty, "price": amend.price}
    again = NextAction.call("plan_amend", {**args, "category": category}, "plan the same amend again shortly")
    changing = violation(Code.SEND_TURN_BUSY, "one judgement that stands", "an amend", again.text, again)
    return Refusal.of(changing, "what the amend was judged on kept changing as it was sent; nothing was sent")


async def _amend_once(
    runtime: Runtime,
    plan_id: str,
    amend: AmendRecord,
    order: ExchangeOrder,
    symbol: str,
    category: str,
    condition: SendCondition | None,
) -> OrderAnswer | NotSent:
    action = {
        "symbol": symbol,
        "category": category,
        "order_id": amend.order_id,
        "qty": amend.qty,
        "price": amend.price,
        "plan_id": plan_id,
        # what it was: an amend's turnover is what it adds (pilot.app.runtime.activity)
        "was_qty": plain(order.qty),
        "was_price": plain(order.price),
        "filled": plain(order.cum_exec_qty),
    }
    done = await runtime.gate.amend_order(
        category,
        symbol,
        order_id=amend.order_id,
        order_link_id=None,
        qty=Decimal(amend.qty) if amend.qty != amend.was_qty else None,
        price=Decimal(amend.price) if amend.price != amend.was_price else None,
        action=action,
        condition=condition,
    )
    if isinstance(done, NotSent):
        return done
    return OrderAnswer(
        status=_order_status(done.status),
        plan_id=plan_id,
        order_id=amend.order_id,
        sent={"amend": action} if done.status != "refused" else None,
        ret_code=done.ret_code,
        reject_family=done.reject_family,
        exchange=done.exchange,
        violations=done.violations,
        detail=("amended: " if done.status == "done" else "") + done.detail,
        next_safe_action=done.next_safe_action,
        journal_problem=done.journal_problem,
        journal_seq=done.journal_seq,
    )


def _order_status(status: ActionStatus) -> OrderStatus:
    """The gate's answer to an amend as place_order's status: done is the order resting at its new size;
    refused (by Pilot, nothing sent), rejected and outcome_unknown stay what they are, never blurred."""
    match status:
        case "done" | "unchanged":  # unchanged: the order already rests as asked
            return "open"
        case "refused" | "rejected" | "outcome_unknown" | "declined" | "pending_confirmation":
            return status
        case "not_found":
            # Only the confirmation tools answer this; a write through the gate never does. Were it ever to,
            # nothing is assumed about the amend: its outcome is not known (look it up, never resend).
            return "outcome_unknown"
        case _:
            assert_never(status)


def _as_amend(
    ask: AmendAsk, order: ExchangeOrder, action: NextAction | None, human: str
) -> NextAction | None:
    """A size suggestion for the order (a plan_order call) as the same amend with that size and price; when
    the size that fits is the one the order has, at its price, no amend fits (`human`: who can make room)."""
    if action is None or action.tool != "plan_order" or action.args is None:
        return action
    args = action.args
    stop = args.get("stop_loss")
    if stop is not None and Decimal(str(stop)) != order.stop_loss:
        # An amend cannot add or move the stop an order carries: cancel it, then plan it with the stop.
        return NextAction(
            tool="cancel_order",
            args={"symbol": ask.symbol, "order_id": order.order_id, "category": ask.category},
            text="an amend cannot give this order a stop: cancel it, then plan it again with the stop_loss",
            options=(ToolCall("plan_order", dict(args), "then plan it with the stop_loss that fits"),),
        )
    remaining = Decimal(str(args["qty"]))
    price = Decimal(str(args["price"])) if "price" in args else None
    if args.get("reduce_only") != order.reduce_only or args.get("side") != order.side.lower():
        return NextAction.stop(
            "no amend of this order fits; cancel it (cancel_order) if your task allows",
            human="see the violations: only a human can change what refuses them",
        )
    total = order.cum_exec_qty + remaining
    grow = ask.qty is not None and ask.qty > order.qty
    if (total == order.qty or (grow and total < order.qty)) and (price is None or price == order.price):
        # What fits is what it has, or less: an amend asked to grow the order cannot (shrinking it at the same
        # price always passes, and is not what was asked).
        return NextAction.stop(
            f"no larger total than the {plain(order.qty)} it has fits: the order rests as it is",
            human=human,
            options=(
                ToolCall("get_open_orders", {"symbol": ask.symbol, "category": ask.category}, "see it"),
            ),
        )
    return NextAction.call("plan_amend", ask.args(total, price), f"amend to {plain(total)} in all instead")


def _not_open(ask: AmendAsk) -> Violation:
    which = ask.order_id or ask.order_link_id or ""
    return violation(
        Code.ORDER_NOT_OPEN,
        "an open order",
        which[:64],
        f"no open {ask.symbol} order has that id; it may have filled or been cancelled",
        NextAction.call(
            "get_open_orders", {"symbol": ask.symbol, "category": ask.category}, "check the open orders"
        ),
    )


def _at_most_filled(ask: AmendAsk, order: ExchangeOrder) -> Violation:
    least = order.cum_exec_qty
    return violation(
        Code.ORDER_NOT_OPEN,
        f"more than the {plain(least)} already filled",
        plain(ask.qty or order.qty),
        f"the order has filled {plain(least)} already; a smaller total cannot be amended to",
        NextAction.call(
            "cancel_order",
            {"symbol": ask.symbol, "order_id": order.order_id, "category": ask.category},
            "cancel the rest of the order instead",
        ),
    )


def _stop_order(ask: AmendAsk, order: ExchangeOrder) -> Violation:
    """plan_amend changes an ordinary order's size or price; a position's stop moves with set_trading_stop."""
    if order.stop_order_type == "StopLoss" and order.trigger_price is not None:
        action = NextAction.call(
            "set_trading_stop",
            {"symbol": ask.symbol, "stop_loss": plain(order.trigger_price)},
            "move the position's stop with set_trading_stop (judged by the loss rules); this keeps it as it is",
        )
    else:
        action = NextAction.call(
            "get_open_orders", {"symbol": ask.symbol, "category": ask.category}, "check the open orders"
        )
    return violation(
        Code.ORDER_NOT_OPEN,
        "an ordinary open order",
        order.stop_order_type[:32],
        f"the order is a {order.stop_order_type[:32]} order waiting for its trigger; plan_amend changes only "
        "ordinary orders",
        action,
    )


def _unreadable(ask: AmendAsk, error: ExchangeError) -> Violation:
    again = NextAction.call("plan_amend", ask.args(), "call plan_amend again in a few seconds")
    return violation(
        Code.FACTS,
        "all facts present",
        "missing: open orders",
        f"could not read the open {ask.symbol} orders, so the amend cannot be judged",
        replace(again, retry_after=error.retry_at),  # the exchange's own time when it gave one (an IP ban)
    )


def _entry(answer: PlanAnswer, ask: AmendAsk) -> dict[str, Any]:
    return {**journaled(answer), "request": {"plan_amend": ask.args()}}
