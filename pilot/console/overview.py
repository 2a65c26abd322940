"""The Overview page: what a trader reads at a glance, from the agent's own read tools and the journal.

* the trading state and why (policy.json, the kill switch, the daily loss limit), the kill switch with who
  turned it on, when and why, orders sent today against the daily cap, today's loss against its limit,
  actions waiting for a human, the streams' trouble (the private stream down, messages Pilot could not
  read): from the journal (the desk);
* each position with its stop-loss (or that it has none), take-profit, partial stops and unrealised PnL, and
  the room left per market and side as plan_order would judge an order now (the trading state, the latches
  and throttles included, and the part a human must approve): get_positions, get_open_orders and get_policy
  (pilot.app.facts.reads) on the exchange the console reads, so the page shows what the agent is shown.
  Without one, it says how to get it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.app.facts.reads import get_open_orders, get_policy, get_positions
from pilot.app.facts.stream_health import stream_trouble
from pilot.app.human.desk import KillSwitchState, kill_switch_state, pending_confirmations
from pilot.app.runtime.runtime import Runtime


@dataclass(frozen=True, slots=True)
class PositionLine:
    symbol: str
    side: str
    size: str
    entry_price: str | None
    mark_price: str | None
    value_usd: str | None
    unrealised_pnl: str | None
    stop_loss: str | None
    take_profit: str | None
    liquidation_price: str | None
    partial_stops: tuple[str, ...]  # "0.005 at 2900": stop orders for their own size

    @property
    def protected(self) -> bool:
        """Whether any stop guards the position (its own, or a partial stop for part of it)."""
        return self.stop_loss is not None or bool(self.partial_stops)


@dataclass(frozen=True, slots=True)
class RoomSide:
    """One side's room as get_policy gives it: the largest order plan_order passes now, the rules one lot step
    more breaks (codes), and, when a human must approve part of it, the part that needs none."""

    qty: str
    notional_usd: str
    limited_by: tuple[str, ...]
    approval_above_qty: str | None = None
    approval_above_usd: str | None = None


@dataclass(frozen=True, slots=True)
class RoomLine:
    symbol: str
    cap_usd: str
    buy: RoomSide | None  # None: unknown (a fact is missing)
    sell: RoomSide | None
    missing: str


@dataclass(frozen=True, slots=True)
class Overview:
    trading_state: str
    why: tuple[str, ...]  # what makes it stricter than policy.json's tradingState
    kill_switch: KillSwitchState
    orders_sent_today: int
    daily_order_cap: int
    waiting_for_a_human: int
    valid_policy: bool
    day_loss: dict[str, Any] | None  # get_policy's loss_rules.day_loss (null: no daily limit set)
    equity_usd: str | None
    positions: list[PositionLine] | None  # None: no exchange read
    rooms: list[RoomLine] | None
    exchange_problem: str | None
    streams: tuple[str, ...] = ()  # the private stream down, messages that could not be read (the journal)


async def overview(desk: Runtime, reader: Runtime | None) -> Overview:
    """The overview; positions and room only when the console reads an exchange (`reader`)."""
    journal = await desk.journal_state()
    view = desk.policy()
    state, loss_on, waiting, trouble, switch = await asyncio.gather(
        desk.trading_state(view.policy, journal),
        desk.loss_limit_on(journal),
        pending_confirmations(desk),
        stream_trouble(desk.store.journal, desk.clock.now()),
        kill_switch_state(desk),
    )
    why = tuple(
        reason
        for reason, holds in (
            ("kill switch on", journal.kill_switch_on),
            ("daily loss limit reached", loss_on),
            ("policy.json is invalid", not view.valid),
        )
        if holds
    )
    base = Overview(
        trading_state=state.value,
        why=why,
        kill_switch=switch,
        orders_sent_today=journal.sent_today,
        daily_order_cap=view.policy.daily_order_cap,
        waiting_for_a_human=len(waiting),
        valid_policy=view.valid,
        day_loss=None,
        equity_usd=None,
        positions=None,
        rooms=None,
        exchange_problem=None,
        streams=trouble.lines() if trouble is not None else (),
    )
    if reader is None:
        return base
    return await _with_exchange(base, reader)


async def _with_exchange(base: Overview, reader: Runtime) -> Overview:
    positions, orders, policy = await asyncio.gather(
        get_positions(reader, "linear", None), get_open_orders(reader, "linear", None), get_policy(reader)
    )
    problems = [
        a.detail or "the exchange could not be read" for a in (positions, orders, policy) if a.status != "ok"
    ]
    if problems:
        return replace(base, exchange_problem=problems[0])
    data = policy.data if isinstance(policy.data, dict) else {}
    rows = positions.data if isinstance(positions.data, list) else []
    open_orders = orders.data if isinstance(orders.data, list) else []
    return replace(
        base,
        day_loss=(data.get("loss_rules") or {}).get("day_loss"),
        equity_usd=_cents(data.get("equity_usd")),
        positions=[_position(row, open_orders) for row in rows if row.get("side") != "flat"],
        rooms=[room_line(symbol, market) for symbol, market in (data.get("markets") or {}).items()],
    )


def _position(row: dict[str, Any], open_orders: list[dict[str, Any]]) -> PositionLine:
    symbol = str(row.get("symbol"))
    partial = tuple(
        f"{order.get('qty')} at {order.get('trigger_price')}"
        for order in open_orders
        if order.get("symbol") == symbol and order.get("stop_type") == "PartialStopLoss"
    )
    return PositionLine(
        symbol=symbol,
        side=str(row.get("side")),
        size=str(row.get("size")),
        entry_price=row.get("entry_price"),
        mark_price=row.get("mark_price"),
        value_usd=row.get("position_value"),
        unrealised_pnl=row.get("unrealised_pnl"),
        stop_loss=row.get("stop_loss"),
        take_profit=row.get("take_profit"),
        liquidation_price=row.get("liquidation_price"),
        partial_stops=partial,
    )


def room_line(symbol: str, market: dict[str, Any]) -> RoomLine:
    """One market of get_policy's answer as a row of the room left."""
    room = market.get("room") or {}
    return RoomLine(
        symbol=symbol,
        cap_usd=str(market.get("max_notional_usd")),
        buy=_side(room.get("buy")),
        sell=_side(room.get("sell")),
        missing=", ".join(market.get("missing") or []),
    )


def _side(room: dict[str, Any] | None) -> RoomSide | None:
    if not room:
        return None
    free = room.get("without_approval") or {}
    return RoomSide(
        qty=str(room["qty"]),
        notional_usd=str(room["notional_usd_at_worst_fill"]),
        limited_by=tuple(room.get("limited_by") or ()),
        approval_above_qty=free.get("qty"),
        approval_above_usd=free.get("notional_usd_at_worst_fill"),
    )


def _cents(amount: object) -> str | None:
    """An amount of dollars as the page shows it: to the cent."""
    if amount is None:
        return None
    try:
        return f"{Decimal(str(amount)):.2f}"
    except InvalidOperation:
        return str(amount)
