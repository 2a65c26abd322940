"""Bybit V5 JSON to Pilot's models and back: pure functions, no I/O, no client library."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pilot.core.facts import InstrumentRules, Position
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    Balance,
    BookLevel,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderBook,
    OrderRequest,
    Ticker,
)

Row = dict[str, Any]


def dec(value: Any, default: Decimal | None = None) -> Decimal:
    """A Bybit string number as a Decimal; "" or missing gives `default` (or raises ValueError without one)."""
    if value in (None, ""):
        if default is None:
            raise ValueError("a number is missing from the exchange's answer")
        return default
    return Decimal(str(value))


def maybe_dec(value: Any) -> Decimal | None:
    """None for "", missing or zero (Bybit's ways of saying "no value")."""
    if value in (None, ""):
        return None
    number = Decimal(str(value))
    return None if number == 0 else number


def ms_to_datetime(value: Any) -> datetime:
    return datetime.fromtimestamp(int(value or 0) / 1000, tz=UTC)


def wire(value: Decimal) -> str:
    """A Decimal as Bybit wants it: plain digits, never an exponent (str(Decimal("1E-5")) is "1E-5")."""
    return format(value, "f")


def order_params(request: OrderRequest) -> dict[str, Any]:
    """The /v5/order/create body for an OrderRequest (positionIdx 0: one-way mode)."""
    params: dict[str, Any] = {
        "category": request.category,
        "symbol": request.symbol,
        "side": request.side,
        "orderType": request.order_type,
        "qty": wire(request.qty),
        "timeInForce": request.time_in_force,
        "orderLinkId": request.order_link_id,
    }
    if request.order_type == "Limit":
        params["price"] = wire(request.price)
    if request.category != "spot":
        params["positionIdx"] = 0
    if request.reduce_only:
        params["reduceOnly"] = True
    return params


def instrument_rules(category: str, row: Row, maintenance_margin_rate: Decimal) -> InstrumentRules:
    """InstrumentRules from an instruments-info row. Spot: basePrecision is the lot step, minOrderAmt the
    minimum notional, and there is no leverage."""
    lot = row.get("lotSizeFilter") or {}
    tick = dec((row.get("priceFilter") or {}).get("tickSize"))
    if category == "spot":
        step = dec(lot.get("basePrecision"))
        return InstrumentRules(
            symbol=row["symbol"],
            category=category,
            tick_size=tick,
            qty_step=step,
            min_qty=dec(lot.get("minOrderQty"), step),
            max_qty=dec(lot.get("maxLimitOrderQty") or lot.get("maxOrderQty")),
            min_notional=dec(lot.get("minOrderAmt"), Decimal(0)),
            max_leverage=Decimal(1),
            maintenance_margin_rate=Decimal(0),
            base_coin=row.get("baseCoin", ""),
            quote_coin=row.get("quoteCoin", "USDT"),
        )
    return InstrumentRules(
        symbol=row["symbol"],
        category=category,
        tick_size=tick,
        qty_step=dec(lot.get("qtyStep")),
        min_qty=dec(lot.get("minOrderQty")),
        max_qty=dec(lot.get("maxOrderQty")),
        min_notional=dec(lot.get("minNotionalValue"), Decimal(0)),
        max_leverage=dec((row.get("leverageFilter") or {}).get("maxLeverage"), Decimal(1)),
        maintenance_margin_rate=maintenance_margin_rate,
        base_coin=row.get("baseCoin", ""),
        quote_coin=row.get("quoteCoin", "USDT"),
    )


def ticker(category: str, row: Row, observed_at: datetime) -> Ticker:
    return Ticker(
        symbol=row["symbol"],
        category=category,
        bid=dec(row.get("bid1Price")),
        ask=dec(row.get("ask1Price")),
        last=dec(row.get("lastPrice")),
        mark=None if category == "spot" else dec(row.get("markPrice")),
        observed_at=observed_at,
    )


def orderbook(category: str, result: Row, observed_at: datetime) -> OrderBook:
    def levels(rows: list) -> tuple[BookLevel, ...]:
        return tuple(BookLevel(price=dec(price), size=dec(size)) for price, size in rows)

    return OrderBook(
        symbol=result["s"],
        category=category,
        bids=levels(result.get("b") or []),
        asks=levels(result.get("a") or []),
        observed_at=observed_at,
    )


def signed_size(row: Row) -> Decimal:
    size = dec(row.get("size"), Decimal(0))
    return -size if row.get("side") == "Sell" else size


def position(symbol: str, row: Row | None) -> Position:
    if row is None:
        return Position.flat(symbol)
    leverage = dec(row.get("leverage"), Decimal(1))
    size = signed_size(row)
    if size == 0:
        return Position.flat(symbol, leverage)
    return Position(symbol=symbol, size=size, entry_price=dec(row.get("avgPrice")), leverage=leverage)


def exchange_position(category: str, row: Row) -> ExchangePosition:
    return ExchangePosition(
        symbol=row["symbol"],
        category=category,
        size=signed_size(row),
        entry_price=dec(row.get("avgPrice"), Decimal(0)),
        mark_price=dec(row.get("markPrice"), Decimal(0)),
        leverage=dec(row.get("leverage"), Decimal(1)),
        unrealised_pnl=dec(row.get("unrealisedPnl"), Decimal(0)),
        liq_price=maybe_dec(row.get("liqPrice")),
        position_value=dec(row.get("positionValue"), Decimal(0)),
    )


def account_balance(result: Row) -> AccountBalance:
    accounts = result.get("list") or []
    if not accounts:
        return AccountBalance(total_equity_usd=Decimal(0), coins=())
    account = accounts[0]
    coins = tuple(
        Balance(
            coin=row["coin"],
            wallet_balance=dec(row.get("walletBalance"), Decimal(0)),
            equity=dec(row.get("equity"), Decimal(0)),
            usd_value=dec(row.get("usdValue"), Decimal(0)),
        )
        for row in account.get("coin") or []
    )
    return AccountBalance(total_equity_usd=dec(account.get("totalEquity"), Decimal(0)), coins=coins)


def exchange_order(category: str, row: Row) -> ExchangeOrder:
    return ExchangeOrder(
        order_id=row["orderId"],
        order_link_id=row.get("orderLinkId", ""),
        symbol=row["symbol"],
        category=category,
        side=row.get("side", ""),
        order_type=row.get("orderType", ""),
        price=dec(row.get("price"), Decimal(0)),
        qty=dec(row.get("qty"), Decimal(0)),
        cum_exec_qty=dec(row.get("cumExecQty"), Decimal(0)),
        avg_price=maybe_dec(row.get("avgPrice")),
        cum_exec_fee=dec(row.get("cumExecFee"), Decimal(0)),
        status=row.get("orderStatus", ""),
        time_in_force=row.get("timeInForce", ""),
        reduce_only=bool(row.get("reduceOnly", False)),
        reject_reason=row.get("rejectReason", ""),
        created_at=ms_to_datetime(row.get("createdTime")),
        updated_at=ms_to_datetime(row.get("updatedTime")),
    )


def execution(row: Row) -> Execution:
    return Execution(
        exec_id=row["execId"],
        order_id=row["orderId"],
        order_link_id=row.get("orderLinkId", ""),
        symbol=row["symbol"],
        side=row.get("side", ""),
        exec_price=dec(row.get("execPrice")),
        exec_qty=dec(row.get("execQty")),
        exec_fee=dec(row.get("execFee"), Decimal(0)),
        exec_time=ms_to_datetime(row.get("execTime")),
    )


def api_key_info(result: Row) -> ApiKeyInfo:
    expires = result.get("expiredAt") or ""
    expires_at = None
    if expires and not expires.startswith("1970"):
        expires_at = datetime.fromisoformat(expires.replace("Z", "+00:00"))
    permissions = {
        group: tuple(names)
        for group, names in (result.get("permissions") or {}).items()
        if isinstance(names, list)
    }
    return ApiKeyInfo(
        read_only=int(result.get("readOnly", 1)) == 1,
        permissions=permissions,
        ips=tuple(result.get("ips") or ()),
        expires_at=expires_at,
    )
