"""Stops and the tools traders expect around them: set_trading_stop, cancel_all_orders, the history reads,
and the check after a fill that the stop asked for is where the venue puts it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from decimal import Decimal
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.answers.refusals import journal_action_refusal, violation
from pilot.app.answers.responses import (
    ActionAnswer,
    NextActionOut,
    OrderAnswer,
    ProtectionOut,
    Refusal,
    next_out,
)
from pilot.app.facts.gather import status_now
from pilot.app.facts.pending import position_with_stops
from pilot.app.facts.reads import ReadAnswer, order_view, quarantined, unavailable
from pilot.app.orders.messages import throttled
from pilot.app.orders.spot_holding import judge_spot_removal, spot_holding
from pilot.app.runtime.runtime import Runtime
from pilot.core.codes import Code
from pilot.core.facts import OrderIntent
from pilot.core.stops import TradingStop, check_stop_change, check_trading_stop_call, with_pending
from pilot.core.venues import StopScope
from pilot.core.violations import NextAction, plain
from pilot.exchange.errors import ExchangeError, ExchangeRejected
from pilot.exchange.models import ClosedPnl, ExchangePosition, Execution, Page
from pilot.store import StoreError

MAX_PAGE = 50


async def cancel_all_orders(
    runtime: Runtime, symbol: str | None, category: str = "linear", *, include_stops: bool = False
) -> ActionAnswer:
    """Cancel every ordinary open order (of one symbol, or of the category): allowed in every trading state;
    the positions' stops stay. With `include_stops` the TP/SL and conditional orders go too: that removes
    the stops of every position it covers (on spot, the stop orders selling the coin held), judged as any
    removal of a stop (refused unless trading is active, and where it breaks requireStopLoss or the loss
    cap)."""
    busy = await throttled(runtime, runtime.policy())  # a cancel-all is a message too (Bybit counts it)
    if busy is not None:
        action = {"symbol": symbol, "category": category, "include_stops": include_stops}
        return await journal_action_refusal(
            runtime.store.journal, "cancel_all_orders", action, busy, now=runtime.now()
        )
    if not include_stops:
        return await runtime.gate.cancel_all_orders(category, symbol, include_stops=False)
    if category == "spot":
        refused = await _judge_spot_cancel_all(runtime, symbol)
    else:
        refused = await _judge_cancel_all(runtime, symbol)
    if refused is not None:
        return refused
    return await runtime.gate.cancel_all_orders(category, symbol, include_stops=True)


async def _judge_spot_cancel_all(runtime: Runtime, symbol: str | None) -> ActionAnswer | None:
    """A spot cancel-all with its TP/SL and conditional orders takes every stop off the coin held of each
    market it reaches: judged as any removal of a stop, market by market (every allowed market when no
    symbol is named)."""
    view = runtime.policy()
    action: dict[str, Any] = {"symbol": symbol, "category": "spot", "include_stops": True}
    symbols = [symbol] if symbol else list(view.policy.allowed_markets)
    keep = NextAction.call(
        "cancel_all_orders",
        {"symbol": symbol, "category": "spot"} if symbol else {"category": "spot"},
        "cancel the ordinary orders and keep the stops",
    )
    for one in symbols:
        try:
            holding = await spot_holding(runtime, one)
        except ExchangeError as error:
            if isinstance(error, ExchangeRejected) and error.unlisted:
                continue  # no such spot market: nothing of it to cancel
            return _unread(one, "cancel_all_orders", error)
        removed = frozenset(leg.order_id for leg in holding.position.partial_stops)
        refusal = await judge_spot_removal(runtime, holding, removed, f"cancelling the {one} spot stops")
        if refusal is not None:
            fixed = Refusal(refusal.status, refusal.detail, refusal.violations, keep)
            return await journal_action_refusal(
                runtime.store.journal, "cancel_all_orders", action, fixed, now=runtime.now()
            )
    return None


async def _judge_cancel_all(runtime: Runtime, symbol: str | None) -> ActionAnswer | None:
    view = runtime.policy()
    action: dict[str, Any] = {"symbol": symbol, "category": "linear", "include_stops": True}
    try:
        rows, balance, status = await asyncio.gather(
            runtime.exchange.get_positions("linear", symbol),
            runtime.exchange.get_balance(),
            status_now(runtime, view),
        )
        held = sorted({row.symbol for row in rows if row.size != 0})
        positions = await asyncio.gather(*(position_with_stops(runtime, held_symbol) for held_symbol in held))
    except ExchangeError as error:
        return _unread(symbol or "linear", "cancel_all_orders", error)
    keep = NextAction.call(
        "cancel_all_orders",
        {"symbol": symbol, "category": "linear"} if symbol else {"category": "linear"},
        "cancel the ordinary orders and keep the stops",
    )
    for position, read in positions:
        before = with_pending(position, read.pending, runtime.venue.scope("linear"))
        after = with_pending(
            replace(position, stop_loss=None, partial_stops=()), read.pending, runtime.venue.scope("linear")
        )
        what = f"cancelling the {position.symbol} stops"
        change = (before, after)
        violations = check_stop_change(
            view.policy,
            status.state,
            position.symbol,
            change,
            balance.total_equity_usd,
            what,
            keep,
            status.holds,
        )
        if violations:
            refusal = Refusal("refused", violations[0].detail, tuple(violations), keep)
            return await journal_action_refusal(
                runtime.store.journal, "cancel_all_orders", action, refusal, now=runtime.now()
            )
    return None


async def set_trading_stop(
    runtime: Runtime,
    symbol: str,
    stop_loss: Decimal | None,
    take_profit: Decimal | None,
) -> ActionAnswer:
    """Set the position's whole stop-loss and/or take-profit ("0" removes one): the stop that closes all of
    the position (at Bybit, trading-stop in its whole-position mode). Closer or new stops always pass; a stop
    moved away or removed widens the loss: refused unless trading is active (the day's loss read and latched
    first, pilot.app.facts.gather.status_now), and it must keep the position's loss at its stops (with any
    partial legs) within maxLossPerTradeUsd/Pct, and a stop in place under requireStopLoss."""
    action: dict[str, Any] = {
        "symbol": symbol,
        "category": "linear",
        "stop_loss": plain(stop_loss) if stop_loss is not None else None,
        "take_profit": plain(take_profit) if take_profit is not None else None,
    }
    judged = await _judge_stop(runtime, TradingStop(symbol, stop_loss, take_profit), action)
    if isinstance(judged, ActionAnswer):
        return judged
    sent = {"stop_loss": judged.stop_loss, "take_profit": judged.take_profit}
    for name, value in sent.items():
        if value is not None and plain(value) != action[name]:
            action[f"{name}_asked"], action[name] = action[name], plain(value)  # rounded to the tick
    return await runtime.gate.set_trading_stop(
        "linear", symbol, stop_loss=judged.stop_loss, take_profit=judged.take_profit, action=action
    )


async def _judge_stop(
    runtime: Runtime, ask: TradingStop, action: dict[str, Any]
) -> ActionAnswer | TradingStop:
    """The journaled refusal of this trading-stop, or what to send: the prices on the tick, towards the price
    (a smaller loss at the stop, a closer target), judged as Bybit will apply them."""
    view = runtime.policy()
    try:
        (position, read), balance, rules, status, touch = await asyncio.gather(
            position_with_stops(runtime, ask.symbol),
            runtime.exchange.get_balance(),
            runtime.exchange.get_instrument("linear", ask.symbol),
            status_now(runtime, view),
            runtime.exchange.get_touch("linear", ask.symbol),
        )
    except ExchangeError as error:
        return _unread(ask.symbol, "set_trading_stop", error)
    action["stop_loss_before"] = plain(position.stop_loss) if position.stop_loss else None
    on_tick = ask.on_tick(rules.tick_size, long=position.size > 0)
    violations = check_trading_stop_call(
        view.policy,
        status.state,
        position,
        balance.total_equity_usd,
        on_tick,
        rules.tick_size,
        read.pending,
        touch,
        scope=runtime.venue.scope("linear"),
        holds=status.holds,
    )
    if not violations:
        return on_tick
    refusal = Refusal("refused", violations[0].detail, tuple(violations), violations[0].next)
    return await journal_action_refusal(
        runtime.store.journal, "set_trading_stop", action, refusal, now=runtime.now()
    )


def _unread(symbol: str, tool: str, error: ExchangeError) -> ActionAnswer:
    if isinstance(error, ExchangeRejected) and error.unlisted:
        stop = NextAction.stop(
            f"stop: {symbol} does not exist on linear; check the symbol (get_instrument_rules)",
            human="nothing: there is no such market, so nothing of it to protect",
        )
        unknown = violation(
            Code.UNKNOWN_SYMBOL, "a linear instrument the exchange lists", symbol, "no such market", stop
        )
        return ActionAnswer.from_refusal(
            Refusal.of(unknown, f"the exchange lists no linear {symbol}; nothing was sent")
        )
    return ActionAnswer(
        status="rejected",
        detail=f"could not read the {symbol} position and its stops to judge this; nothing was sent",
        reject_family="unavailable",
        next_safe_action=NextActionOut(
            tool=None,
            args=None,
            text=f"call {tool} again shortly (after retry_after when given)",
            retry_after=error.retry_at.isoformat() if error.retry_at is not None else None,
        ),
    )


async def _position(runtime: Runtime, symbol: str) -> ExchangePosition | None:
    rows = await runtime.exchange.get_positions("linear", symbol)
    return next((row for row in rows if row.symbol == symbol), None)


async def _stop_seen(
    runtime: Runtime, symbol: str, answer: OrderAnswer
) -> tuple[ExchangePosition | None, Decimal | None]:
    """The position after a fill, and the stop the order's stop became where the venue puts it
    (pilot.core.venues): the position's whole stop (Bybit), or a partial stop at the price sent (OKX)."""
    position = await _position(runtime, symbol)
    if position is None or runtime.venue.order_stop is StopScope.POSITION:
        return position, position.stop_loss if position is not None else None
    sent = (answer.sent or {}).get("stop_loss")
    held, _ = await position_with_stops(runtime, symbol)
    legs = [leg.price for leg in held.partial_stops if sent is not None and leg.price == Decimal(sent)]
    return position, legs[0] if legs else None


async def after_fill(runtime: Runtime, intent: OrderIntent, answer: OrderAnswer) -> OrderAnswer:
    """After a fill that asked for a stop: read back the stop it became, where the venue puts it (the
    position's whole stop, or a partial stop of what filled). Journaled either way; a missing stop is
    reported with the set_trading_stop call that sets it."""
    if intent.stop_loss is None or answer.fill is None or Decimal(answer.fill.filled_qty) == 0:
        return answer
    if intent.category == "spot":
        protection = await _spot_protection(runtime, intent)
        read = protection is not None
        protection = protection or _unseen(intent)
    else:
        linear = await _linear_protection(runtime, intent, answer, intent.stop_loss)
        if linear is None:
            return answer  # closed already (or the stop triggered at once): nothing to protect
        protection, read = linear
    data = {
        "symbol": intent.symbol,
        "asked_stop_loss": plain(intent.stop_loss),
        "read": read,
        **protection.model_dump(mode="json", exclude_none=True),
    }
    try:
        entry = await runtime.store.journal.append(
            entry_kinds.PROTECTION, data, now=runtime.now(), plan_id=answer.plan_id
        )
    except StoreError:
        return answer.model_copy(update={"protection": protection})
    return answer.model_copy(
        update={"protection": protection, "journal_seq": [*answer.journal_seq, entry.seq]}
    )


async def _linear_protection(
    runtime: Runtime, intent: OrderIntent, answer: OrderAnswer, stop_loss: Decimal
) -> tuple[ProtectionOut, bool] | None:
    """After a perpetual's fill: the stop it became and whether it could be read; None once flat."""
    set_with = NextAction.call(
        "set_trading_stop",
        {"symbol": intent.symbol, "stop_loss": plain(stop_loss)},
        f"the stop asked for is not on the position: set it at {plain(stop_loss)} now",
    )
    try:
        position, seen = await _stop_seen(runtime, intent.symbol, answer)
    except ExchangeError:
        position, seen, read = None, None, False
    else:
        read = True
    if read and position is not None and position.size == 0:
        return None
    missing = seen is None
    return ProtectionOut(
        stop_loss=plain(seen) if seen is not None else None,
        take_profit=plain(position.take_profit) if position is not None and position.take_profit else None,
        missing_stop=missing,
        set_with=next_out(set_with) if missing else None,
    ), read


def _spot_sell_out(symbol: str) -> NextAction:
    return NextAction.call(
        "close_position",
        {"symbol": symbol, "category": "spot"},
        "the stop asked for is not on the coin bought: sell it with close_position (or give it a stop-loss "
        "order in the exchange's app)",
    )


def _unseen(intent: OrderIntent) -> ProtectionOut:
    """The spot orders could not be read: whether the stop is there is not known."""
    return ProtectionOut(
        stop_loss=None, take_profit=None, missing_stop=True, set_with=next_out(_spot_sell_out(intent.symbol))
    )


async def _spot_protection(runtime: Runtime, intent: OrderIntent) -> ProtectionOut | None:
    """After a spot buy that asked for a stop: the spot TP/SL order at that stop, selling what it bought
    (Bybit places it as the order fills); None when the orders could not be read."""
    try:
        orders = await runtime.exchange.get_open_orders("spot", intent.symbol)
    except ExchangeError:
        return None
    waiting = [o for o in orders if o.is_spot_stop_sell and o.is_untriggered]
    seen = next((o.trigger_price for o in waiting if o.trigger_price == intent.stop_loss), None)
    target = next((o.trigger_price for o in waiting if o.trigger_price == intent.take_profit), None)
    missing = seen is None
    return ProtectionOut(
        stop_loss=plain(seen) if seen is not None else None,
        take_profit=plain(target) if target is not None else None,
        missing_stop=missing,
        set_with=next_out(_spot_sell_out(intent.symbol)) if missing else None,
    )


# ---- paged history reads ------------------------------------------------------------------------------


async def get_order_history(
    runtime: Runtime, category: str, symbol: str | None, cursor: str | None, limit: int
) -> ReadAnswer:
    return await _paged(
        runtime.exchange.get_order_history_page(category, symbol, cursor, min(limit, MAX_PAGE)), order_view
    )


async def get_fills(
    runtime: Runtime, category: str, symbol: str | None, cursor: str | None, limit: int
) -> ReadAnswer:
    """One page of executions: the fills in `rows`; funding and other rows that trade nothing (enum.mdx
    execType) apart in `not_fills`, never counted as fills."""
    try:
        page = await runtime.exchange.get_executions_page(category, symbol, cursor, min(limit, MAX_PAGE))
    except ExchangeError as error:
        return unavailable(error)
    data = {
        "rows": [_fill(row) for row in page.rows if row.is_fill],
        "not_fills": [_not_fill(row) for row in page.rows if not row.is_fill],
        "next_cursor": page.next_cursor,
    }
    return ReadAnswer(status="ok", data=data)


async def get_closed_pnl(runtime: Runtime, symbol: str | None, cursor: str | None, limit: int) -> ReadAnswer:
    return await _paged(
        runtime.exchange.get_closed_pnl_page("linear", symbol, cursor, min(limit, MAX_PAGE)), _closed
    )


async def _paged(call: Any, shape: Any) -> ReadAnswer:
    try:
        page: Page[Any] = await call
    except ExchangeError as error:
        return unavailable(error)
    data = {"rows": [shape(row) for row in page.rows], "next_cursor": page.next_cursor}
    return ReadAnswer(status="ok", data=data)


def _fill(row: Execution) -> dict[str, Any]:
    return {
        "exec_id": row.exec_id,
        "order_id": row.order_id,
        "symbol": row.symbol,
        "side": row.side.lower(),
        "price": plain(row.exec_price),
        "qty": plain(row.exec_qty),
        "fee": plain(row.exec_fee),
        "fee_coin": row.fee_coin or None,
        "at": row.exec_time.isoformat(),
        "untrusted_text": {"order_link_id": row.order_link_id, **quarantined(row)},
    }


def _not_fill(row: Execution) -> dict[str, Any]:
    """A payment with no trade: funding's `amount` is what was paid (negative: received)."""
    return {
        "exec_id": row.exec_id,
        "kind": "funding" if row.exec_type == "Funding" else "other",
        "symbol": row.symbol,
        "amount": plain(row.exec_fee),
        "coin": row.fee_coin or None,
        "at": row.exec_time.isoformat(),
        "untrusted_text": {"exec_type": row.exec_type, **quarantined(row)},
    }


def _closed(row: ClosedPnl) -> dict[str, Any]:
    return {
        "order_id": row.order_id,
        "symbol": row.symbol,
        "side": row.side.lower(),
        "qty": plain(row.qty),
        "closed_size": plain(row.closed_size),
        "avg_entry_price": plain(row.avg_entry_price),
        "avg_exit_price": plain(row.avg_exit_price),
        "closed_pnl": plain(row.closed_pnl),
        "order_type": row.order_type,
        "at": row.updated_at.isoformat(),
        "untrusted_text": {"exec_type": row.exec_type, **quarantined(row)},
    }
