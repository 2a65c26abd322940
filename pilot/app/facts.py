"""Gathering facts: every read runs concurrently; a read that fails leaves its fact missing (fail closed)."""

from __future__ import annotations

import asyncio
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import Any

from pilot.app import kinds
from pilot.app.pending import pending_orders
from pilot.app.runtime import PolicyView, Runtime
from pilot.core.facts import Facts, InstrumentRules, OrderIntent, Position
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError


def utc_day(now: datetime) -> tuple[datetime, datetime]:
    start = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    return start, start + timedelta(days=1)


async def orders_sent_today(runtime: Runtime, now: datetime) -> int:
    """Orders sent since 00:00 UTC, counted from the journal (an entry is written before each send)."""
    since, until = utc_day(now)
    return await runtime.store.journal.count(kinds.ORDER_SENT, since=since, until=until)


async def gather_facts(runtime: Runtime, view: PolicyView, order: OrderIntent) -> Facts:
    """Read everything evaluate() needs for `order`, concurrently. Exchange failures become missing facts."""
    now = runtime.now()
    exchange, category, symbol = runtime.exchange, order.category, order.symbol
    rules, touch, position, balance, sent, state, pending = await asyncio.gather(
        _maybe(exchange.get_instrument(category, symbol)),
        _maybe(exchange.get_touch(category, symbol)),
        _maybe(exchange.get_position(category, symbol)) if category == "linear" else _none(),
        _maybe(exchange.get_balance()),
        orders_sent_today(runtime, now),
        runtime.trading_state(view.policy),
        pending_orders(runtime, category, symbol, now),
    )
    if category == "spot":
        position = _spot_position(symbol, rules, balance)
    return Facts(
        order=order,
        rules=rules,
        touch=touch,
        position=position,
        equity=balance.total_equity_usd if balance is not None else None,
        orders_today=sent,
        trading_state=state,
        now=now,
        pending=pending,
    )


def snapshot(view: PolicyView, facts: Facts) -> dict[str, Any]:
    """What a decision was derived from: policy version, market data and its time, position, rules."""
    touch, rules = facts.touch, facts.rules
    return {
        "policy_version": view.version,
        "trading_state": facts.trading_state.value,
        "market_data_at": touch.observed_at.isoformat() if touch else None,
        "bid": plain(touch.bid) if touch else None,
        "ask": plain(touch.ask) if touch else None,
        "mark": plain(touch.mark) if touch else None,
        "position_size": plain(facts.position.size) if facts.position else None,
        "equity_usd": plain(facts.equity) if facts.equity is not None else None,
        "orders_today": facts.orders_today,
        "pending_qty": {"buy": plain(facts.pending.buy_qty), "sell": plain(facts.pending.sell_qty)}
        if facts.pending is not None
        else None,
        "instrument": _rules_dict(rules) if rules else None,
    }


def _rules_dict(rules: InstrumentRules) -> dict[str, str]:
    return {
        "tickSize": plain(rules.tick_size),
        "qtyStep": plain(rules.qty_step),
        "minOrderQty": plain(rules.min_qty),
        "maxOrderQty": plain(rules.max_qty),
        "minNotionalValue": plain(rules.min_notional),
        "maxLeverage": plain(rules.max_leverage),
        "maintenanceMarginRate": plain(rules.maintenance_margin_rate),
    }


def _spot_position(symbol: str, rules: InstrumentRules | None, balance: Any) -> Position | None:
    """On spot, the 'position' is the base coin held."""
    if rules is None or balance is None:
        return None
    held = next((coin.wallet_balance for coin in balance.coins if coin.coin == rules.base), Decimal(0))
    return Position(symbol=symbol, size=held, entry_price=Decimal(0), leverage=Decimal(1))


async def _maybe(call: Any) -> Any:
    try:
        return await call
    except ExchangeError:
        return None


async def _none() -> None:
    return None
