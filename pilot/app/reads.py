"""Read-only tools: market data, account state, and the policy in force with the room left under each cap."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict

from pilot.app.facts import orders_sent_today
from pilot.app.runtime import Runtime
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ExchangeOrder


class ReadAnswer(BaseModel):
    """A read tool's answer. Text the exchange controls (client order ids, reasons) is marked untrusted."""

    model_config = ConfigDict(frozen=True)

    status: str  # "ok" | "unavailable"
    data: dict[str, Any] | list[dict[str, Any]] | None = None
    detail: str | None = None


def _num(value: Decimal | None) -> str | None:
    return plain(value) if value is not None else None


async def _read(call: Any, shape: Any) -> ReadAnswer:
    try:
        value = await call
    except ExchangeError as error:
        return ReadAnswer(status="unavailable", detail=error.message)
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
        lambda r: {
            "symbol": r.symbol,
            "category": r.category,
            "tickSize": _num(r.tick_size),
            "qtyStep": _num(r.qty_step),
            "minOrderQty": _num(r.min_qty),
            "maxOrderQty": _num(r.max_qty),
            "minNotionalValue": _num(r.min_notional),
            "maxLeverage": _num(r.max_leverage),
            "maintenanceMarginRate": _num(r.maintenance_margin_rate),
        },
    )


async def get_balances(runtime: Runtime) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_balance(),
        lambda b: {
            "total_equity_usd": _num(b.total_equity_usd),
            "coins": [
                {
                    "coin": c.coin,
                    "wallet_balance": _num(c.wallet_balance),
                    "equity": _num(c.equity),
                    "usd_value": _num(c.usd_value),
                }
                for c in b.coins
            ],
        },
    )


async def get_positions(runtime: Runtime, category: str, symbol: str | None) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_positions(category, symbol),
        lambda rows: [
            {
                "symbol": p.symbol,
                "size": _num(p.size),
                "side": "long" if p.size > 0 else "short" if p.size < 0 else "flat",
                "entry_price": _num(p.entry_price),
                "mark_price": _num(p.mark_price),
                "leverage": _num(p.leverage),
                "unrealised_pnl": _num(p.unrealised_pnl),
                "liquidation_price": _num(p.liq_price),
                "position_value": _num(p.position_value),
            }
            for p in rows
        ],
    )


def order_view(order: ExchangeOrder) -> dict[str, Any]:
    return {
        "order_id": order.order_id,
        "symbol": order.symbol,
        "side": order.side,
        "order_type": order.order_type,
        "price": _num(order.price),
        "qty": _num(order.qty),
        "filled_qty": _num(order.cum_exec_qty),
        "status": order.status,
        "time_in_force": order.time_in_force,
        "reduce_only": order.reduce_only,
        "created_at": order.created_at.isoformat(),
        "untrusted_text": {"order_link_id": order.order_link_id, "reject_reason": order.reject_reason},
    }


async def get_open_orders(runtime: Runtime, category: str, symbol: str | None) -> ReadAnswer:
    return await _read(
        runtime.exchange.get_open_orders(category, symbol), lambda rows: [order_view(o) for o in rows]
    )


async def get_policy(runtime: Runtime) -> ReadAnswer:
    """The limits in force, the policy version, trading state, orders left today, and room under each cap."""
    view = runtime.policy()
    policy, now = view.policy, runtime.now()
    state, sent = await asyncio.gather(runtime.trading_state(policy), orders_sent_today(runtime, now))
    exchange, markets_allowed = runtime.exchange, policy.allowed_markets
    try:  # every read at once: one round trip
        rows, balance, *touches = await asyncio.gather(
            exchange.get_positions("linear"),
            exchange.get_balance(),
            *(exchange.get_touch("linear", symbol) for symbol in markets_allowed),
        )
    except ExchangeError:
        rows, balance, touches = [], None, []
    positions = {row.symbol: row.size for row in rows}
    marks = {symbol: touch.mark for symbol, touch in zip(markets_allowed, touches, strict=False)}
    markets = {}
    for symbol in policy.allowed_markets:
        limits, size, mark = policy.limits_for(symbol), positions.get(symbol, Decimal(0)), marks.get(symbol)
        used = abs(size) * mark if mark is not None else None
        markets[symbol] = {
            "maxNotionalUsd": plain(limits.max_notional_usd),
            "maxOrderNotionalUsd": plain(limits.max_order_notional_usd),
            "maxLeverage": plain(limits.max_leverage),
            "minLiquidationDistancePct": plain(limits.min_liquidation_distance_pct),
            "maxSlippagePct": plain(limits.max_slippage_pct),
            "position_size": plain(size),
            "position_notional_usd_at_mark": plain(used.quantize(Decimal("0.01")))
            if used is not None
            else None,
            "room_usd_at_mark": plain(
                max(limits.max_notional_usd - used, Decimal(0)).quantize(Decimal("0.01"))
            )
            if used is not None
            else None,
        }
    data = {
        "policy_version": view.version,
        "valid": view.valid,
        "issues": [str(issue) for issue in view.issues],
        "trading_state": state.value,
        "policy_trading_state": policy.trading_state.value,
        "kill_switch": await runtime.kill_switch_on(),
        "allowed_markets": list(policy.allowed_markets),
        "daily_order_cap": policy.daily_order_cap,
        "orders_sent_today": sent,
        "orders_left_today": max(policy.daily_order_cap - sent, 0),
        "plan_ttl_seconds": policy.plan_ttl_seconds,
        "confirm": {
            "above_notional_usd": plain(policy.confirm.above_notional_usd)
            if policy.confirm.above_notional_usd
            else None,
            "actions": list(policy.confirm.actions),
            "cli_channel": policy.confirm.cli_channel,
        },
        "equity_usd": plain(balance.total_equity_usd) if balance is not None else None,
        "markets": markets,
    }
    return ReadAnswer(status="ok", data=data)
