"""cancel_order and set_leverage: checked against the policy (leverage), approved if the policy asks, sent by the gate."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal

from pilot.app.answers.refusals import journal_action_refusal, position_mode_violation, violation
from pilot.app.answers.responses import ActionAnswer, Refusal
from pilot.app.facts.gather import daily_limit_set, status_now
from pilot.app.facts.pending import position_with_stops
from pilot.app.human.approvals import (
    ApprovalChannel,
    ApprovalRequest,
    no_human_for,
    refusal_of,
    seek_approval,
)
from pilot.app.orders.messages import throttled
from pilot.app.orders.spot_holding import find, judge_spot_removal, spot_holding, waiting_kind, what_cancel
from pilot.app.runtime.runtime import Runtime
from pilot.core.approval import needs_human
from pilot.core.codes import Code
from pilot.core.facts import Position, TradingState
from pilot.core.leverage import check_set_leverage
from pilot.core.policy import ApprovalTool, Policy
from pilot.core.stops import RAISE_LOSS_CAP, check_stop_change, with_pending, without_legs
from pilot.core.violations import NextAction, plain
from pilot.exchange.errors import ExchangeError, UnsupportedPositionMode
from pilot.exchange.models import ExchangeOrder


async def set_leverage(
    runtime: Runtime,
    symbol: str,
    leverage: Decimal,
    category: str = "linear",
    channel: ApprovalChannel | None = None,
) -> ActionAnswer:
    """Lowering is always allowed (unless halted); raising must fit maxLeverage and the instrument, and
    waits while the day's loss is past its limit or cannot be read (gather.status_now)."""
    view = runtime.policy()
    status = await status_now(runtime, view)
    action = {"symbol": symbol, "category": category, "leverage": plain(leverage)}
    try:
        current, instrument_max = await _leverage_facts(runtime, category, symbol)
    except UnsupportedPositionMode as hedged:  # two legs, two leverages: a human must switch the mode
        blocked = position_mode_violation(hedged)
        return await _refuse_leverage(runtime, action, Refusal.of(blocked, blocked.detail))
    # An invalid policy.json reads as the fail-closed policy, whose "reducing" state refuses any raise.
    violations = check_set_leverage(
        view.policy, status.state, symbol, current, leverage, instrument_max, status.holds
    )
    if current is not None:
        action["from"] = plain(current)
    if violations:
        unreachable = no_human_for(runtime, channel, "set_leverage")  # the call offered would need one
        if unreachable is not None:
            violations = [replace(v, next=unreachable) if v.next.tool else v for v in violations]
        refusal = Refusal("refused", violations[0].detail, tuple(violations), violations[0].next)
        return await _refuse_leverage(runtime, action, refusal)
    text = f"{leverage_summary(symbol, leverage)} (from {plain(current) if current else 'unknown'}x)"
    again = NextAction.call(
        "set_leverage", {"symbol": symbol, "leverage": plain(leverage), "category": category}, "ask again"
    )
    refused = await _approval(runtime, channel, "set_leverage", text, action, again)
    if refused is not None:
        return refused
    return await runtime.gate.set_leverage(category, symbol, leverage, action)


async def _refuse_leverage(runtime: Runtime, action: dict[str, str], refusal: Refusal) -> ActionAnswer:
    return await journal_action_refusal(
        runtime.store.journal, "set_leverage", action, refusal, now=runtime.now()
    )


async def cancel_order(
    runtime: Runtime,
    symbol: str,
    order_id: str | None,
    order_link_id: str | None,
    category: str = "linear",
    channel: ApprovalChannel | None = None,
) -> ActionAnswer:
    """Cancel one open order. Allowed in every trading state, including halted, unless the order is one of
    the position's stop-losses: cancelling that widens the loss and is judged as such."""
    action = {"symbol": symbol, "category": category, "order_id": order_id, "order_link_id": order_link_id}
    args = {key: value for key, value in action.items() if value is not None}
    busy = await throttled(runtime, runtime.policy())  # a cancel is a message too (Bybit counts it)
    if busy is not None:
        return await journal_action_refusal(
            runtime.store.journal, "cancel_order", action, busy, now=runtime.now()
        )
    if category == "linear":
        judged, kind = await judge_stop_cancel(runtime, symbol, order_id, order_link_id), ""
    else:
        judged, kind = await _judge_spot_cancel(runtime, symbol, order_id, order_link_id)
    if judged is not None:
        return await journal_action_refusal(
            runtime.store.journal, "cancel_order", action, judged, now=runtime.now()
        )
    again = NextAction.call("cancel_order", args, "ask again")
    refused = await _approval(
        runtime, channel, "cancel_order", cancel_summary(symbol, order_id, order_link_id), action, again
    )
    if refused is not None:
        return refused
    return await runtime.gate.cancel_order(
        category, symbol, order_id=order_id, order_link_id=order_link_id, waiting_kind=kind
    )


async def _judge_spot_cancel(
    runtime: Runtime, symbol: str, order_id: str | None, order_link_id: str | None
) -> tuple[Refusal | None, str]:
    """Why cancelling this spot order may not go ahead (it is a stop selling the coin held, and its removal
    widens the holding's loss past a rule), or None; and the kind the cancel must name the order by when it
    waits for a trigger. When nothing can be read and a stop rule could apply, the cancel waits; with no
    such rule it goes as an ordinary order's."""
    try:
        holding = await spot_holding(runtime, symbol)
    except ExchangeError:
        view = runtime.policy()
        state = await runtime.trading_state(view.policy)
        if state is TradingState.ACTIVE and not _stops_matter(view.policy, symbol):
            return None, ""
        return _unjudged(symbol, order_id, order_link_id, "spot"), ""
    order = find(holding.orders, order_id, order_link_id)
    if order is None:
        return None, ""
    kind = waiting_kind(holding.orders, order_id, order_link_id)
    if not order.is_spot_stop_sell:
        return None, kind
    removed = frozenset({order.order_id})
    return await judge_spot_removal(runtime, holding, removed, what_cancel(order)), kind


def leverage_summary(symbol: str, leverage: Decimal) -> str:
    """What a human approves for set_leverage (the form and the journal say the same)."""
    return f"Set {symbol} leverage to {plain(leverage)}x"


def cancel_summary(symbol: str, order_id: str | None, order_link_id: str | None) -> str:
    """What a human approves for cancel_order. The ids are the agent's (possibly copied from exchange text),
    so they are shown as quoted data."""
    which = (
        f"exchange order id «{order_id}»" if order_id else f"client order id «{order_link_id}» (untrusted)"
    )
    return f"Cancel the open {symbol} order with {which}"


async def _approval(
    runtime: Runtime,
    channel: ApprovalChannel | None,
    tool: ApprovalTool,
    text: str,
    action: Mapping[str, str | None],
    again: NextAction,
) -> ActionAnswer | None:
    """None when no human is needed or one approved; else the journaled answer saying why nothing was sent."""
    if not needs_human(runtime.policy().policy.confirm, tool):
        return None
    request = ApprovalRequest(tool=tool, text=text, action=dict(action))
    refusal = refusal_of(await seek_approval(runtime, channel, request), again=again)
    if refusal is None:
        return None
    return await journal_action_refusal(runtime.store.journal, tool, action, refusal, now=runtime.now())


async def _leverage_facts(
    runtime: Runtime, category: str, symbol: str
) -> tuple[Decimal | None, Decimal | None]:
    """The position's leverage now and the instrument's maximum, read at once; None where a read failed.

    Raises:
        UnsupportedPositionMode: the symbol is held in hedge mode (two legs, two leverages).
    """
    position, rules = await asyncio.gather(
        runtime.exchange.get_position(category, symbol),
        runtime.exchange.get_instrument(category, symbol),
        return_exceptions=True,
    )
    current = None if isinstance(position, BaseException) else position.leverage
    instrument_max = None if isinstance(rules, BaseException) else rules.max_leverage
    for result in (position, rules):
        hedged = isinstance(result, UnsupportedPositionMode)
        if isinstance(result, BaseException) and (hedged or not isinstance(result, ExchangeError)):
            raise result
    return current, instrument_max


async def judge_stop_cancel(
    runtime: Runtime, symbol: str, order_id: str | None, order_link_id: str | None
) -> Refusal | None:
    """Why cancelling this order may not go ahead (it is a stop-loss whose removal widens the loss past a
    rule), or None. When the open orders cannot be read and a stop rule could apply, the cancel waits."""
    view = runtime.policy()
    status = await runtime.trading_status(view.policy, valid=view.valid)
    daily = daily_limit_set(view.policy)
    if status.state is TradingState.ACTIVE and not _stops_matter(view.policy, symbol) and not daily:
        return None  # no rule a removed stop could break: nothing to read
    try:
        orders = await runtime.exchange.get_open_orders("linear", symbol)
    except ExchangeError:
        return _unjudged(symbol, order_id, order_link_id)
    order = next(
        (
            o
            for o in orders
            if (order_id and o.order_id == order_id) or (not order_id and o.order_link_id == order_link_id)
        ),
        None,
    )
    if order is None or not order.is_stop_leg or order.trigger_price is None:
        return None  # an ordinary order (or none): the cancel only takes risk away
    if daily:  # a stop removed widens what the day can lose: the day's loss read and latched first
        status = await status_now(runtime, view)
    state = status.state
    try:
        (held, read), balance = await asyncio.gather(
            position_with_stops(runtime, symbol), runtime.exchange.get_balance()
        )
    except ExchangeError:
        return _unjudged(symbol, order_id, order_link_id)
    cancelled = _cancelled_stops(held, order)
    before = with_pending(held, read.pending, runtime.venue.scope("linear"))
    after = with_pending(cancelled, read.pending, runtime.venue.scope("linear"))
    keep = NextAction.stop(
        "keep this stop; to move it, call set_trading_stop with a stop the loss rules allow",
        human=RAISE_LOSS_CAP,
    )
    if order.stop_order_type == "TakeProfit":  # trading-stop with only the target changes only the target
        keep = NextAction.call(
            "set_trading_stop",
            {"symbol": symbol, "take_profit": "0"},
            "remove only the take-profit: cancelling its order also cancels the stop-loss set with it",
        )
    what = f"cancelling the {order.stop_order_type} at {plain(order.trigger_price)}"
    violations = check_stop_change(
        view.policy, state, symbol, (before, after), balance.total_equity_usd, what, keep, status.holds
    )
    if not violations:
        return None
    return Refusal("refused", violations[0].detail, tuple(violations), violations[0].next)


def _unjudged(
    symbol: str, order_id: str | None, order_link_id: str | None, category: str = "linear"
) -> Refusal:
    """The orders or the position could not be read: whether the cancel removes a stop is unknown."""
    which = {"order_id": order_id} if order_id else {"order_link_id": order_link_id}
    missing = violation(
        Code.FACTS,
        "all facts present",
        "missing: open orders, position",
        f"could not read the {symbol} orders and position: whether this cancel removes a stop is unknown",
        NextAction.call(
            "cancel_order",
            {"symbol": symbol, **which, "category": category},
            "call cancel_order again shortly",
        ),
    )
    return Refusal.of(missing, "nothing was sent")


def _cancelled_stops(held: Position, order: ExchangeOrder) -> Position:
    """The position's stops once this TP/SL order is cancelled. A take-profit and a stop-loss set together
    are bound (position_trading-stop.mdx): cancelling one cancels the other, and which stop-loss a take-profit
    is bound to is not listed, so a whole take-profit takes the whole stop with it, and a partial one every
    partial stop-loss of its size."""
    kind = order.stop_order_type
    if kind in ("StopLoss", "TakeProfit"):
        return without_legs(held, frozenset({order.order_id}), whole=True)
    if kind == "PartialTakeProfit":
        size = order.qty - order.cum_exec_qty
        paired = frozenset(leg.order_id for leg in held.partial_stops if leg.qty == size)
        return without_legs(held, paired, whole=False)
    return without_legs(held, frozenset({order.order_id}), whole=False)


def _stops_matter(policy: Policy, symbol: str) -> bool:
    """Whether a stop rule applies to the market: a removed stop could then break it."""
    limits = policy.limits_for(symbol)
    return (
        limits.require_stop_loss
        or limits.max_loss_per_trade_usd is not None
        or limits.max_loss_per_trade_pct is not None
    )
