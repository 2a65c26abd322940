"""Bybit V5 JSON to Pilot's models and back: pure functions, no I/O, no client library."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pilot.core.facts import InstrumentRules, Position
from pilot.core.venues import StopScope
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    Balance,
    BookLevel,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderBook,
    OrderRequest,
    PriceBand,
    Ticker,
)
from pilot.exchange.symbols import UNTRUSTED_KEY

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


# What a stop sent with an order covers (OrderRequest.stop_scope), in Bybit's words (tpslMode).
TPSL_MODES = {StopScope.POSITION: "Full", StopScope.ORDER: "Partial"}


def order_params(request: OrderRequest) -> dict[str, Any]:
    """The /v5/order/create body for an OrderRequest (positionIdx 0: one-way mode; hedge mode is refused
    when positions are read, see UnsupportedPositionMode).

    Pilot sends Limit orders (a market intent is a Limit IOC at the worst acceptable price), so `qty` is
    always in the base coin. That matters on spot: a spot *Market* Buy takes `qty` in the quote coin by
    default (create-order.mdx, `marketUnit`); a Limit order never does.
    """
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
    if request.stop_loss is not None or request.take_profit is not None:
        params.update(tpsl_params(request))
    if request.smp_type is not None:
        params["smpType"] = request.smp_type
    return params


def tpsl_params(request: OrderRequest) -> dict[str, str]:
    """The TP/SL sent with a create (create-order.mdx). Linear: tpslMode Full, the whole position's TP/SL
    closed at market, or Partial, TP/SL orders for the quantity that filled; sent whenever a TP/SL is, since
    the docs do not say which mode a create without it gets. Spot (a limit order; tpslMode is for linear and
    inverse only): the stop and the target each sell what filled at market when triggered (slOrderType /
    tpOrderType Market, which spot asks for with the price)."""
    params: dict[str, str] = {}
    if request.category != "spot":
        params["tpslMode"] = TPSL_MODES[request.stop_scope]
    if request.stop_loss is not None:
        params["stopLoss"] = wire(request.stop_loss)
        if request.category == "spot":
            params["slOrderType"] = "Market"
    if request.take_profit is not None:
        params["takeProfit"] = wire(request.take_profit)
        if request.category == "spot":
            params["tpOrderType"] = "Market"
    return params


def instrument_rules(category: str, row: Row, maintenance_margin_rate: Decimal) -> InstrumentRules:
    """InstrumentRules from an instruments-info row.

    Spot is checked by Bybit as market/instrument.mdx says today: `basePrecision` is the quantity step (and
    so the smallest quantity), `minOrderAmt` the minimum order value in the quote coin; `minOrderQty` is
    deprecated ("no longer check minOrderQty, check minOrderAmt instead") and ignored. The largest limit
    order is `maxLimitOrderQty` (`maxOrderQty` is deprecated; read only when the new field is missing).
    Spot has no leverage and no liquidation.
    """
    lot = row.get("lotSizeFilter") or {}
    tick = dec((row.get("priceFilter") or {}).get("tickSize"))
    if category == "spot":
        step = dec(lot.get("basePrecision"))
        return InstrumentRules(
            symbol=row["symbol"],
            category=category,
            tick_size=tick,
            qty_step=step,
            min_qty=step,
            max_qty=dec(lot.get("maxLimitOrderQty") or lot.get("maxOrderQty")),
            min_notional=dec(lot.get("minOrderAmt") or lot.get("minNotionalValue"), Decimal(0)),
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
        band_margin=band_margin(row),
    )


def band_margin(row: Row) -> Decimal | None:
    """How far from the mark a derivatives price is always inside Bybit's price limit: `priceLimitRatioX`.

    Bybit's highest buy is min(mark x (1 + Y), max(index, mark x (1 + X) + a x max(0, premium))) and its
    lowest sell the mirror, max(mark x (1 - Y), min(index, mark x (1 - X) + a x min(0, premium)))
    (account/set-price-limit, `riskParameters` of market/instrument.mdx): with X <= Y neither edge comes
    nearer the mark than X, whatever the index and the premium. None without a usable pair (an older row,
    X above Y): then the band is read. Spot's limits follow the index with a signed premium, so spot rows
    are not read here.
    """
    risk = row.get("riskParameters") or {}
    try:
        x, y = Decimal(str(risk["priceLimitRatioX"])), Decimal(str(risk["priceLimitRatioY"]))
        usable = x.is_finite() and y.is_finite() and Decimal(0) <= x <= y < Decimal(1)
    except (KeyError, TypeError, ArithmeticError):
        return None
    return x if usable else None


def lowest_risk_tier(symbol: str, tiers: list[Row]) -> Row | None:
    """The first risk-limit tier of `symbol`: the one Bybit marks `isLowestRisk`, else the smallest
    `riskLimitValue` (market/risk-limit.mdx). Never "the first row": the list's order is not documented."""
    mine = [tier for tier in tiers if tier.get("symbol", symbol) == symbol]
    marked = [tier for tier in mine if str(tier.get("isLowestRisk", "0")) == "1"]
    if marked:
        return marked[0]
    if not mine:
        return None
    return min(mine, key=lambda tier: dec(tier.get("riskLimitValue"), Decimal("Infinity")))


def price_band(category: str, result: Row, observed_at: datetime) -> PriceBand:
    """A /v5/market/price-limit result as a PriceBand: spot rejects outside it, derivatives clamp."""
    return PriceBand(
        symbol=result["symbol"],
        category=category,
        buy_limit=dec(result.get("buyLmt")),
        sell_limit=dec(result.get("sellLmt")),
        outside="reject" if category == "spot" else "clamp",
        observed_at=observed_at,
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
    def levels(rows: list[Any]) -> tuple[BookLevel, ...]:
        return tuple(BookLevel(price=dec(price), size=dec(size)) for price, size in rows)

    return OrderBook(
        symbol=result["s"],
        category=category,
        bids=levels(result.get("b") or []),
        asks=levels(result.get("a") or []),
        observed_at=observed_at,
    )


def position_idx(row: Row) -> int:
    """0 one-way, 1 hedge Buy leg, 2 hedge Sell leg (Bybit sends an integer; some recorders a string)."""
    return int(row.get("positionIdx") or 0)


def signed_size(row: Row) -> Decimal:
    size = dec(row.get("size"), Decimal(0))
    return -size if row.get("side") == "Sell" else size


def entry_price(row: Row) -> Any:
    """A position's average entry price: `avgPrice` in /v5/position/list (position.mdx), `entryPrice` on the
    `position` stream (websocket/private/position.mdx; the recorded pushes carry no avgPrice)."""
    listed = row.get("avgPrice")
    return listed if listed not in (None, "") else row.get("entryPrice")


def position(symbol: str, row: Row | None) -> Position:
    """A one-way position from a position-list row or a `position` push."""
    if row is None:
        return Position.flat(symbol)
    leverage = dec(row.get("leverage"), Decimal(1))
    size = signed_size(row)
    if size == 0:
        return Position.flat(symbol, leverage)
    return Position(
        symbol=symbol,
        size=size,
        entry_price=dec(entry_price(row)),
        leverage=leverage,
        stop_loss=_set_price(row.get("stopLoss")),  # the whole stop (tpslMode Full); partial legs are orders
    )


def exchange_position(category: str, row: Row) -> ExchangePosition:
    return ExchangePosition(
        symbol=row["symbol"],
        category=category,
        size=signed_size(row),
        entry_price=dec(entry_price(row), Decimal(0)),
        mark_price=dec(row.get("markPrice"), Decimal(0)),
        leverage=dec(row.get("leverage"), Decimal(1)),
        unrealised_pnl=dec(row.get("unrealisedPnl"), Decimal(0)),
        liq_price=maybe_dec(row.get("liqPrice")),
        position_value=dec(row.get("positionValue"), Decimal(0)),
        stop_loss=_set_price(row.get("stopLoss")),
        take_profit=_set_price(row.get("takeProfit")),
        untrusted_symbol=str(row.get(UNTRUSTED_KEY) or ""),
    )


def _set_price(value: Any) -> Decimal | None:
    """A TP/SL price as the position list gives it: "" or "0" when none is set."""
    price = maybe_dec(value)
    return price if price is not None and price > 0 else None


def closed_pnl(row: Row) -> ClosedPnl:
    return ClosedPnl(
        symbol=str(row["symbol"]),
        order_id=str(row.get("orderId") or ""),
        side=str(row.get("side") or ""),
        qty=dec(row.get("qty"), Decimal(0)),
        closed_size=dec(row.get("closedSize"), Decimal(0)),
        avg_entry_price=dec(row.get("avgEntryPrice"), Decimal(0)),
        avg_exit_price=dec(row.get("avgExitPrice"), Decimal(0)),
        closed_pnl=dec(row["closedPnl"]),
        order_type=str(row.get("orderType") or ""),
        exec_type=str(row.get("execType") or ""),
        created_at=ms_to_datetime(row.get("createdTime") or row.get("updatedTime")),
        updated_at=ms_to_datetime(row.get("updatedTime")),
        untrusted_symbol=str(row.get(UNTRUSTED_KEY) or ""),
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
            locked=dec(row.get("locked"), Decimal(0)),
        )
        for row in account.get("coin") or []
    )
    return AccountBalance(
        total_equity_usd=dec(account.get("totalEquity"), Decimal(0)),
        coins=coins,
        # "" when the account mode has none; "0" is nothing available, not an unset value
        available_usd=dec(account.get("totalAvailableBalance"))
        if account.get("totalAvailableBalance")
        else None,
    )


def order_fees(row: Row) -> tuple[str, Decimal, tuple[tuple[str, Decimal], ...]]:
    """(fee coin, fee, every coin's fee) of an order.

    `cumFeeDetail` ({coin: amount}) replaces `cumExecFee` on linear and spot (order-list.mdx: cumExecFee
    "Deprecated. Use cumFeeDetail instead"); inverse and option still report `cumExecFee` only, and an
    order without fills has `{}`. With several coins the fee reported is the one in the symbol's quote
    coin when present, else the first coin; all of them stay in the third element. Without
    `cumFeeDetail`, a spot order push's deprecated `feeCurrency` names the coin of `cumExecFee`.
    """
    detail = row.get("cumFeeDetail")
    fees = tuple(sorted((str(coin), dec(amount, Decimal(0))) for coin, amount in (detail or {}).items()))
    if not fees:
        return str(row.get("feeCurrency") or ""), dec(row.get("cumExecFee"), Decimal(0)), ()
    symbol = str(row.get("symbol", ""))
    quote = [(coin, amount) for coin, amount in fees if symbol.endswith(coin)]
    coin, amount = (quote or list(fees))[0]
    return coin, amount, fees


def exchange_order(category: str, row: Row) -> ExchangeOrder:
    fee_coin, fee, fees = order_fees(row)
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
        cum_exec_fee=fee,
        status=row.get("orderStatus", ""),
        time_in_force=row.get("timeInForce", ""),
        reduce_only=bool(row.get("reduceOnly", False)),
        reject_reason=row.get("rejectReason", ""),
        created_at=ms_to_datetime(row.get("createdTime")),
        updated_at=ms_to_datetime(row.get("updatedTime")),
        fee_coin=fee_coin,
        fees=fees,
        position_idx=position_idx(row),
        stop_order_type=stop_order_type(row.get("stopOrderType")),
        trigger_price=_set_price(row.get("triggerPrice")),
        trigger_direction=int(row.get("triggerDirection") or 0),
        trigger_by=_named(row.get("triggerBy")),
        tpsl_mode=_named(row.get("tpslMode")),
        take_profit=_set_price(row.get("takeProfit")),
        stop_loss=_set_price(row.get("stopLoss")),
        close_on_trigger=row.get("closeOnTrigger") in (True, "true"),
        create_type=_named(row.get("createType")),
        untrusted_symbol=str(row.get(UNTRUSTED_KEY) or ""),
    )


def _named(value: Any) -> str:
    """An enum field as Bybit writes it, with its ways of saying "none" ("", "UNKNOWN") made ""."""
    text = str(value or "")
    return "" if text == "UNKNOWN" else text


# Bybit's stopOrderType values (enum.mdx). Bybit writes "UNKNOWN" (or nothing) for an ordinary order.
STOP_ORDER_TYPES = frozenset(
    {
        "TakeProfit",
        "StopLoss",
        "TrailingStop",
        "Stop",
        "PartialTakeProfit",
        "PartialStopLoss",
        "tpslOrder",
        "OcoOrder",
        "MmRateClose",
        "BidirectionalTpslOrder",
    }
)


def stop_order_type(value: Any) -> str:
    """An order's stopOrderType: "" for an ordinary order, one of Bybit's own values, or "Other" for a
    kind this code does not know (never the exchange's text as it came: and never taken for ordinary)."""
    text = str(value or "")
    if text in ("", "UNKNOWN"):
        return ""
    return text if text in STOP_ORDER_TYPES else "Other"


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
        fee_coin=str(row.get("feeCurrency") or ""),
        exec_type=str(row.get("execType") or "Trade"),
        untrusted_symbol=str(row.get(UNTRUSTED_KEY) or ""),
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
        is_master=result["isMaster"] if isinstance(result.get("isMaster"), bool) else None,
    )


def page_of(key: Callable[[Row], Hashable], answer: Row) -> tuple[list[tuple[Hashable, Row]], str | None]:
    """The rows of one page of a list answer, each with its identity (`key`), and the next cursor (None
    when there is none). Raises on an answer that is not a page of objects."""
    result = answer["result"]
    rows = result.get("list") or []
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise TypeError("the list is not a list of objects")
    keyed = [(key(row), row) for row in rows]
    for identity, _ in keyed:
        hash(identity)
    return keyed, str(result.get("nextPageCursor") or "") or None


# ---- row identities: what makes two list rows the same row (duplicates across pages are dropped) --


def order_key(row: Row) -> Hashable:
    return row.get("orderId")


def position_key(row: Row) -> Hashable:
    return (row.get("symbol"), position_idx(row))


def closed_pnl_key(row: Row) -> Hashable:
    return (row.get("orderId"), row.get("updatedTime"), row.get("closedPnl"), row.get("closedSize"))


def execution_key(row: Row) -> Hashable:
    return row.get("execId")


def tier_key(row: Row) -> Hashable:
    return (row.get("symbol"), row.get("id"), row.get("riskLimitValue"))


def dcp_windows(result: Row) -> dict[str, int]:
    """query-dcp-info's rows (account_dcp-info.mdx): the window of each product whose status is ON."""
    return {
        str(row["product"]): int(row["timeWindow"])
        for row in result.get("dcpInfos") or ()
        if isinstance(row, dict) and row.get("dcpStatus") == "ON"
    }
