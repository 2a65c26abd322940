"""Read-only tools: market data, account state, and the policy in force with the room left under each cap."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pilot.app.answers.refusals import position_mode_violation
from pilot.app.answers.responses import (
    Answer,
    NextActionOut,
    ViolationOut,
    next_out,
    snake_keys,
    violations_out,
)
from pilot.app.facts.gather import Gathered, gather_market_facts, rules_dict
from pilot.app.facts.peaks import equity_read
from pilot.app.runtime.latches import drawdown_state
from pilot.app.runtime.ledger import JournalState
from pilot.app.runtime.loss_limit import latch_if_reached, latch_of
from pilot.app.runtime.runtime import Runtime
from pilot.core.day_pnl import COUNTED
from pilot.core.facts import Facts, Side
from pilot.core.policy import Policy, Shown
from pilot.core.policy.fields import answer_group
from pilot.core.room import Room, room_now
from pilot.core.rules import GROWING_NEEDS, day_loss
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError, UnsupportedPositionMode
from pilot.exchange.models import AccountBalance, ClosedPnl, ExchangeOrder, ExchangePosition, Execution


class ReadAnswer(Answer):
    """A read tool's answer. Text the exchange controls (client order ids, reasons) is marked untrusted."""

    status: str  # "ok" | "unavailable" (read again later) | "refused" (reading again will not help)
    data: dict[str, Any] | list[dict[str, Any]] | None = None
    detail: str | None = None
    violations: list[ViolationOut] | None = None
    next_safe_action: NextActionOut | None = None


CENT = Decimal("0.01")


def _num(value: Decimal | None) -> str | None:
    return plain(value) if value is not None else None


def unavailable(error: ExchangeError) -> ReadAnswer:
    """A read that failed and may work later; `retry_after` is when the exchange said it will (an IP ban's
    end, a rate limit's reset), else absent: read again in a few seconds."""
    retry = error.retry_at.isoformat() if error.retry_at is not None else None
    return ReadAnswer(
        status="unavailable",
        detail=error.message,
        next_safe_action=NextActionOut(
            tool=None, args=None, text="read again later (after retry_after when given)", retry_after=retry
        ),
    )


async def _read(call: Any, shape: Any) -> ReadAnswer:
    try:
        value = await call
    except UnsupportedPositionMode as hedged:  # a symbol in hedge mode: a human must switch it
        refused = position_mode_violation(hedged)
        return ReadAnswer(
            status="refused",
            detail=refused.detail,
            violations=violations_out([refused]),
            next_safe_action=next_out(refused.next),
        )
    except ExchangeError as error:
        return unavailable(error)
    return ReadAnswer(status="ok", data=shape(value))


async def get_ticker(runtime: Runtime, symbol: str, category: str) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_ticker(category, symbol),
        lambda t: {
            "symbol": t.symbol,
            "category": t.category,
            "bid": _num(t.bid),
            "ask": _num(t.ask),
            "last": _num(t.last),
            "mark": _num(t.mark),
            "observed_at": t.observed_at.isoformat(),
        },
    )


async def get_orderbook(runtime: Runtime, symbol: str, category: str, depth: int) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_orderbook(category, symbol, depth),
        lambda b: {
            "symbol": b.symbol,
            "bids": [[_num(level.price), _num(level.size)] for level in b.bids],
            "asks": [[_num(level.price), _num(level.size)] for level in b.asks],
            "observed_at": b.observed_at.isoformat(),
        },
    )


async def get_instrument_rules(runtime: Runtime, symbol: str, category: str) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_instrument(category, symbol),
        lambda r: {"symbol": r.symbol, "category": r.category, **snake_keys(rules_dict(r))},
    )


async def get_balances(runtime: Runtime) -> ReadAnswer:
    """The account's equity and coins. The equity read counts for the drawdown as a judgement's does
    (pilot.app.facts.peaks): a new peak is journaled, a fall past the limit latches."""
    try:
        balance = await runtime.exchange.get_balance()
    except ExchangeError as error:
        return unavailable(error)
    await equity_read(runtime, runtime.policy().policy, balance.total_equity_usd)
    return ReadAnswer(status="ok", data=_balances(balance))


def _balances(balance: AccountBalance) -> dict[str, Any]:
    return {
        "total_equity_usd": _num(balance.total_equity_usd),
        "coins": [
            {
                "coin": c.coin,
                "wallet_balance": _num(c.wallet_balance),
                "equity": _num(c.equity),
                "usd_value": _num(c.usd_value),
            }
            for c in balance.coins
        ],
    }


async def get_positions(runtime: Runtime, category: str, symbol: str | None) -> ReadAnswer:
    """Open positions. Two leverages are told apart: `exchange_leverage` is the exchange's setting for the
    symbol (the margin it holds and where it liquidates; set_leverage changes it), `leverage_on_equity` the
    position's value over the account's equity, which policy.json's maxLeverage (`policy_max_leverage`) caps
    for every order that grows a position."""
    policy = runtime.policy().policy

    async def read() -> tuple[list[ExchangePosition], Decimal | None]:
        rows, balance = await asyncio.gather(
            runtime.exchange.get_positions(category, symbol), _maybe_balance(runtime)
        )
        return rows, balance.total_equity_usd if balance is not None else None

    return await _read(read(), lambda found: [_position_view(p, found[1], policy) for p in found[0]])


async def _maybe_balance(runtime: Runtime) -> AccountBalance | None:
    try:
        return await runtime.exchange.get_balance()
    except ExchangeError:  # the positions are still worth showing; only the multiple of equity is unknown
        return None


def _position_view(p: ExchangePosition, equity: Decimal | None, policy: Policy) -> dict[str, Any]:
    on_equity = abs(p.position_value) / equity if equity is not None and equity > 0 else None
    return {
        "symbol": p.symbol,
        "size": _num(p.size),
        "side": "long" if p.size > 0 else "short" if p.size < 0 else "flat",
        "entry_price": _num(p.entry_price),
        "mark_price": _num(p.mark_price),
        "exchange_leverage": _num(p.leverage),
        "leverage_on_equity": _num(on_equity.quantize(CENT)) if on_equity is not None else None,
        "policy_max_leverage": _num(policy.limits_for(p.symbol).max_leverage),
        "unrealised_pnl": _num(p.unrealised_pnl),
        "liquidation_price": _num(p.liq_price),
        "position_value": _num(p.position_value),
        "stop_loss": _num(p.stop_loss),
        "take_profit": _num(p.take_profit),
        "settle_coin": p.settle_coin or None,  # USDT or USDC: the coin of the PnL and the value
        **({"untrusted_text": quarantined(p)} if p.untrusted_symbol else {}),
    }


def order_view(order: ExchangeOrder) -> dict[str, Any]:
    return {
        "order_id": order.order_id,
        "symbol": order.symbol,
        "side": order.side,
        "order_type": order.order_type,
        "price": _num(order.price),
        "qty": _num(order.qty),
        "filled_qty": _num(order.cum_exec_qty),
        "fee": _num(order.cum_exec_fee),
        "fee_coin": order.fee_coin or None,  # a spot buy pays in the coin bought
        **({"fees": {coin: plain(fee) for coin, fee in order.fees}} if len(order.fees) > 1 else {}),
        "status": order.status,
        "time_in_force": order.time_in_force,
        "reduce_only": order.reduce_only,
        **_stop_fields(order),
        "created_at": order.created_at.isoformat(),
        "untrusted_text": {
            "order_link_id": order.order_link_id,
            "reject_reason": order.reject_reason,
            **quarantined(order),
        },
    }


def quarantined(row: ExchangeOrder | ExchangePosition | Execution | ClosedPnl) -> dict[str, str]:
    """The exchange's own text for a symbol Pilot renamed because no agent could write it
    (pilot.exchange.symbols): answers show it only here, in `untrusted_text`; `symbol` is Pilot's name."""
    return {"symbol": row.untrusted_symbol} if row.untrusted_symbol else {}


def _stop_fields(order: ExchangeOrder) -> dict[str, Any]:
    """A TP/SL or conditional order's kind and trigger (stop_type: Bybit's stopOrderType, e.g. StopLoss for
    the whole position's stop, PartialStopLoss for one of its own size, Stop for a conditional order); an
    ordinary order's stop-loss and take-profit, set on the position when it fills. Only what is set."""
    fields = {
        "stop_type": order.stop_order_type if not order.is_ordinary else None,
        "trigger_price": _num(order.trigger_price) if not order.is_ordinary else None,
        "tpsl_mode": order.tpsl_mode or None,
        "stop_loss": _num(order.stop_loss),
        "take_profit": _num(order.take_profit),
    }
    return {key: value for key, value in fields.items() if value is not None}


async def get_open_orders(runtime: Runtime, category: str, symbol: str | None) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_open_orders(category, symbol), lambda rows: [order_view(o) for o in rows]
    )


async def get_policy(runtime: Runtime) -> ReadAnswer:
    """The limits in force, the policy version, trading state, orders left today, and room under each cap.

    The room is the largest market order plan_order would pass now (pilot.core.room.room_now): every check
    it runs, valued as it values an order (worst fill, open orders and unresolved sends counted as filled),
    so the trading state, the latches and the throttles bound it too; `limited_by` names what one more lot
    step breaks, and `without_approval` the part a human need not approve when that is less. A fact that
    could not be read is null, listed under `missing`.
    Like every answer, its keys are snake_case: policy.json's `maxNotionalUsd` is `max_notional_usd` here.
    """
    view = runtime.policy()
    policy = view.policy
    facts = await gather_market_facts(runtime, view, "linear", policy.allowed_markets)
    first = next(iter(facts.values())).facts if facts else None
    equity = first.equity if first is not None else None
    if equity is not None:  # counts for the drawdown as every equity Pilot reads (pilot.app.facts.peaks)
        await equity_read(runtime, policy, equity)
    if first is not None:  # a day's loss read past its limit latches here as in a judgement
        journal = await runtime.journal_state()
        await latch_if_reached(
            runtime.store.journal, policy, first, latch_of(journal.loss_limit, journal.today)
        )
    journal = await runtime.journal_state()
    trading, loss_limit_on = await asyncio.gather(
        runtime.trading_status(policy, journal, valid=view.valid), runtime.loss_limit_on(journal)
    )
    sent, kill_switch = journal.sent_today, journal.kill_switch_on
    today = {"orders_sent_today": sent, "orders_left_today": max(policy.daily_order_cap - sent, 0)}
    day = {"daily_loss_limit_reached": loss_limit_on, "day_loss": _day_loss_view(policy, first)}
    data = {
        "policy_version": view.version,
        "valid": view.valid,
        "issues": [str(issue) for issue in view.issues],
        "trading_state": trading.state.value,
        "held_by": [{k: v for k, v in hold.to_dict().items() if v is not None} for hold in trading.holds],
        **answer_group(Shown.STATE, policy),
        "kill_switch": kill_switch,
        **beside(answer_group(Shown.TOP, policy), {"daily_order_cap": today}),
        "confirm": answer_group(Shown.CONFIRM, policy.confirm),
        "loss_rules": beside(answer_group(Shown.LOSS_RULES, policy), {"daily_loss_limit_pct": day}),
        "controls": _controls_view(runtime, policy, journal),
        "equity_usd": _num(equity),
        "markets": {symbol: _market_view(policy, one) for symbol, one in facts.items()},
    }
    return ReadAnswer(status="ok", data=data)


def _controls_view(runtime: Runtime, policy: Policy, journal: JournalState) -> dict[str, Any]:
    """The pre-trade controls in force (issue 27) and where this home stands against each."""
    activity = journal.activity
    drawdown = drawdown_state(policy, journal, runtime.now())
    figures: dict[str, dict[str, Any]] = {
        "max_order_messages_per_minute": {
            "messages_last_second": sum(1 for age in activity.messages if age < timedelta(seconds=1)),
            "messages_last_minute": len(activity.messages),
        },
        "drawdown_window_hours": {
            "drawdown_peak_usd": _num(drawdown.peak),
            "drawdown_reached": drawdown.latched,
        },
        "max_turnover_usd_per_day": {"turnover_today_usd": plain(activity.turnover.day_usd.quantize(CENT))},
        "max_turnover_usd_24h": {"turnover_24h_usd": plain(activity.turnover.rolling_usd.quantize(CENT))},
    }
    return beside(answer_group(Shown.CONTROLS, policy), figures)


def beside(fields: dict[str, Any], figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The policy's `fields` as get_policy shows them, each limit followed by its `figures` (where this home
    stands against it)."""
    missing = figures.keys() - fields.keys()
    if missing:
        raise KeyError(f"get_policy shows no field {sorted(missing)} to put figures beside")
    placed: dict[str, Any] = {}
    for name, value in fields.items():
        placed[name] = value
        placed.update(figures.get(name, {}))
    return placed


def _day_loss_view(policy: Policy, facts: Facts | None) -> dict[str, Any] | None:
    """Today's loss set against the daily loss limit, as check_daily_loss counts it (null without a limit,
    or when the day's PnL could not be read)."""
    if facts is None or facts.day_pnl is None:
        return None
    loss = day_loss(policy, facts.equity, facts.day_pnl)
    if loss is None:
        return None
    return {
        "rule": loss.rule.value,
        "limit_usd": plain(loss.limit.quantize(CENT)),
        "loss_usd": plain(loss.loss.quantize(CENT)),
        "realised_pnl_usd": plain(loss.pnl.realised.quantize(CENT)),
        "unrealised_pnl_usd": plain(loss.pnl.unrealised.quantize(CENT)),
        "spot_realised_pnl_usd": plain(loss.pnl.spot_realised.quantize(CENT)),  # of those, spot's
        "spot_unrealised_pnl_usd": plain(loss.pnl.spot_unrealised.quantize(CENT)),
        "counted": COUNTED,
    }


def _market_view(policy: Policy, gathered: Gathered) -> dict[str, Any]:
    facts = gathered.facts
    limits = policy.limits_for(facts.order.symbol)
    missing = [name for name in ("rules", "touch", *GROWING_NEEDS) if getattr(facts, name) is None]
    size = facts.position.size if facts.position is not None else None
    mark = facts.touch.mark if facts.touch is not None else None
    at_mark = abs(size) * mark if size is not None and mark is not None else None
    return {
        **answer_group(Shown.MARKET, limits),
        "position_size": _num(size),
        "position_notional_usd_at_mark": _num(at_mark.quantize(CENT) if at_mark is not None else None),
        "pending_qty": {"buy": plain(facts.pending.buy_qty), "sell": plain(facts.pending.sell_qty)}
        if facts.pending is not None
        else None,
        "room": {side.value: _room_view(policy, facts, side) for side in Side} if not missing else None,
        "missing": missing,
        "blocked_by": _blocked_by(gathered),
    }


def _blocked_by(gathered: Gathered) -> dict[str, Any] | None:
    """What stops every order on this market whatever its size (hedge mode), as plan_order would refuse it."""
    if gathered.hedged is None:
        return None
    return violations_out([position_mode_violation(gathered.hedged)])[0].model_dump(mode="json")


def _room_view(policy: Policy, facts: Facts, side: Side) -> dict[str, Any] | None:
    """The room as plan_order would judge an order on `side` now (pilot.core.room.room_now), and, when a
    human must approve part of it, the part that needs none (`without_approval`)."""
    judged = room_now(policy, replace(facts, order=replace(facts.order, side=side)))
    if judged is None:
        return None
    view = _room_figures(judged.room)
    if judged.without_approval is not None:
        view["without_approval"] = _room_figures(judged.without_approval)
    return view


def _room_figures(room: Room) -> dict[str, Any]:
    return {
        "qty": plain(room.qty),
        "notional_usd_at_worst_fill": plain(room.notional_usd.quantize(CENT)),
        "limited_by": [code.value for code in room.limited_by],
    }


RECENT_FILLS = 100  # the newest fills position_path reads, in pages of 50


async def position_path(runtime: Runtime) -> dict[str, list[tuple[datetime, Decimal, Decimal]]]:
    """Each linear market's position after each of its recent fills (stops that triggered and liquidations
    too), oldest first, as (time, signed size after the fill, fill price): walked back from the positions now
    through the exchange's fill list. Empty when the exchange cannot be read."""
    try:
        held = {p.symbol: p.size for p in await runtime.exchange.get_positions("linear")}
        fills: list[Execution] = []
        cursor = None
        while len(fills) < RECENT_FILLS:
            page = await runtime.exchange.get_executions_page("linear", None, cursor, 50)
            fills.extend(row for row in page.rows if row.is_fill)
            cursor = page.next_cursor
            if not cursor:
                break
    except ExchangeError:
        return {}
    paths: dict[str, list[tuple[datetime, Decimal, Decimal]]] = {}
    size = dict(held)
    for fill in sorted(fills, key=lambda row: row.exec_time, reverse=True):  # newest first: walk back
        after = size.get(fill.symbol, Decimal(0))
        paths.setdefault(fill.symbol, []).append((fill.exec_time, after, fill.exec_price))
        size[fill.symbol] = after - (fill.exec_qty if fill.side == "Buy" else -fill.exec_qty)
    return {symbol: path[::-1] for symbol, path in paths.items()}
