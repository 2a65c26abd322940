"""One function per Bybit V5 endpoint: read the parameters, ask the engine, write Bybit's `result`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pilot.paper import views
from pilot.paper.accounts import SETTLE_COIN, ZERO
from pilot.paper.disconnect_protection import PRODUCTS as DCP_PRODUCTS
from pilot.paper.disconnect_protection import WINDOW_SECONDS as DCP_WINDOW
from pilot.paper.engine import OPEN, Engine, SimOrder
from pilot.paper.scenario import ApiKeySpec
from pilot.paper.validation import SimReject, last_price, order_filter_of

Params = dict[str, Any]
KLINE_MS = {
    "1": 60_000,
    "3": 180_000,
    "5": 300_000,
    "15": 900_000,
    "30": 1_800_000,
    "60": 3_600_000,
    "120": 7_200_000,
    "240": 14_400_000,
    "360": 21_600_000,
    "720": 43_200_000,
    "D": 86_400_000,
    "W": 604_800_000,
    "M": 2_592_000_000,
}


@dataclass(frozen=True, slots=True)
class Context:
    engine: Engine
    key: ApiKeySpec | None
    keys: Sequence[ApiKeySpec]
    now_ms: int
    streams_url: str = ""  # the WebSocket side's ws://127.0.0.1:PORT ("" when it is not serving)


@dataclass(frozen=True, slots=True)
class Answer:
    """A `result` with Bybit's `retExtInfo` filled (a batch's code per order); other routes answer `{}` there."""

    result: dict[str, Any]
    ext_info: dict[str, Any]


CATEGORIES = ("linear", "inverse", "spot", "option")  # every category Bybit V5 accepts (enum.mdx)
DERIVATIVES = ("linear", "inverse", "option")


def category_of(params: Params, allowed: tuple[str, ...] = CATEGORIES, default: str | None = None) -> str:
    """The request's category; anything else is Bybit's 10001 "Illegal category".

    Every category Bybit accepts is accepted; the paper exchange lists instruments for linear and spot only,
    so inverse and option lists are empty and their symbols unknown, as on an account that holds none.
    """
    category = params.get("category") or default
    if category not in CATEGORIES or category not in allowed:
        raise SimReject(10001, "Illegal category")
    return str(category)


def paginate(
    items: list[Any], params: Params, default: int, maximum: int, *, cursor_on_last_page: bool = True
) -> tuple[list[Any], str]:
    """Offset pages with Bybit-style opaque, already URL-encoded cursors ("offset%3D20").

    As real Bybit does on order, execution and position lists, a page with rows always carries a
    cursor, the last page included; following it gives an empty page with cursor "". Instrument lists
    (`cursor_on_last_page=False`) end with "" on their last page, as Bybit's documented examples show.
    """
    try:
        limit = min(max(int(params.get("limit") or default), 1), maximum)
        cursor = str(params.get("cursor") or "")
        offset = int(cursor.removeprefix("offset=")) if cursor else 0
    except ValueError:
        raise SimReject(10001, "params error: limit or cursor invalid") from None
    page = items[offset : offset + limit]
    more = offset + limit < len(items)
    if not page or not (more or cursor_on_last_page):
        return page, ""
    return page, f"offset%3D{offset + len(page)}"


def _symbol_rows(ctx: Context, params: Params, category: str) -> list[Any]:
    symbol = params.get("symbol")
    return [
        spec
        for (cat, sym), spec in ctx.engine.instruments.items()
        if cat == category and (not symbol or sym == symbol)
    ]


# ---- market (public) ------------------------------------------------------------------------------


def server_time(ctx: Context, params: Params) -> dict[str, Any]:
    return {"timeSecond": str(ctx.now_ms // 1000), "timeNano": str(ctx.now_ms * 1_000_000)}


def tickers(ctx: Context, params: Params) -> dict[str, Any]:
    category = category_of(params)
    if category == "option" and not (params.get("symbol") or params.get("baseCoin")):
        raise SimReject(10001, "params error: symbol or baseCoin is required for option")
    rows = []
    for spec in _symbol_rows(ctx, params, category):
        bids, _ = ctx.engine.market.book(spec, 1)
        rows.append(  # funding (rate, next time, interval) as the scenario has it: market.py
            views.ticker_view(
                spec,
                ctx.engine.market.quote(spec.symbol),
                bids[0][1] if bids else ZERO,
                ctx.engine.market.funding_view(spec.symbol),
            )
        )
    if params.get("symbol") and not rows:
        raise SimReject(10001, "params error: symbol invalid")
    return {"category": category, "list": rows}


def orderbook(ctx: Context, params: Params) -> dict[str, Any]:
    category = category_of(params)
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    bids, asks = ctx.engine.market.book(spec, int(params.get("limit") or (1 if category == "spot" else 25)))

    def side(levels: list[Any]) -> list[Any]:
        return [[views.step(p, spec.tick_size), views.num(s)] for p, s in levels]

    return {
        "s": spec.symbol,
        "b": side(bids),
        "a": side(asks),
        "ts": ctx.now_ms,
        "u": ctx.now_ms % 1_000_000,
        "seq": ctx.now_ms,
        "cts": ctx.now_ms,
    }


def kline(ctx: Context, params: Params) -> dict[str, Any]:
    category = category_of(params, allowed=("linear", "inverse", "spot"), default="linear")
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    width = KLINE_MS.get(str(params.get("interval")))
    if width is None:
        raise SimReject(10001, "params error: interval invalid")
    limit = min(max(int(params.get("limit") or 200), 1), 1000)
    end = int(params.get("end") or ctx.now_ms)
    price = views.step(last_price(ctx.engine.market.quote(spec.symbol), spec), spec.tick_size)
    first = end - end % width
    rows = [[str(first - i * width), price, price, price, price, "0", "0"] for i in range(limit)]
    return {"category": category, "symbol": spec.symbol, "list": rows}


def instruments_info(ctx: Context, params: Params) -> dict[str, Any]:
    """Instruments, filtered as instrument.mdx says: every one is `Trading` (another `status` lists none),
    `baseCoin` on derivatives."""
    category = category_of(params)
    specs = _symbol_rows(ctx, params, category)
    if params.get("status") not in (None, "", "Trading"):
        specs = []
    if params.get("baseCoin") and category != "spot":
        specs = [spec for spec in specs if spec.base_coin == params["baseCoin"]]
    page, cursor = paginate(specs, params, 500, 1000, cursor_on_last_page=False)
    rows = [views.instrument_view(spec, i + 1) for i, spec in enumerate(page)]
    return {"category": category, "list": rows, "nextPageCursor": cursor}


def price_limit(ctx: Context, params: Params) -> dict[str, Any]:
    category = category_of(params, allowed=("linear", "inverse", "spot"), default="linear")
    spec = ctx.engine.instrument(category, str(params.get("symbol") or ""))
    return views.price_limit_view(spec, ctx.engine.market.quote(spec.symbol), ctx.now_ms)


def risk_limit(ctx: Context, params: Params) -> dict[str, Any]:
    """Risk tiers: a scenario's `riskTiers`, or one tier from `maintenanceMarginRate`; the smallest
    riskLimitValue is marked isLowestRisk (market/risk-limit.mdx)."""
    category = category_of(params, allowed=("linear", "inverse"))
    rows = []
    for spec in _symbol_rows(ctx, params, category):
        tiers = spec.risk_tiers or ((Decimal(2_000_000), spec.maintenance_margin_rate, spec.max_leverage),)
        lowest = min(value for value, _, _ in tiers)
        rows += [
            {
                "id": index,
                "symbol": spec.symbol,
                "riskLimitValue": views.num(value),
                "maintenanceMargin": views.num(mmr),
                "initialMargin": views.num(1 / leverage),
                "isLowestRisk": 1 if value == lowest else 0,
                "maxLeverage": views.step(leverage, Decimal("0.01")),
                "mmDeduction": "",
            }
            for index, (value, mmr, leverage) in enumerate(tiers, start=1)
        ]
    return {"category": category, "list": rows, "nextPageCursor": ""}


# ---- orders ---------------------------------------------------------------------------------------


def _ack(order: Any) -> dict[str, Any]:
    return {"orderId": order.order_id, "orderLinkId": order.order_link_id}


def create_order(ctx: Context, params: Params) -> dict[str, Any]:
    return _ack(ctx.engine.create_order(category_of(params), params))


def amend_order(ctx: Context, params: Params) -> dict[str, Any]:
    return _ack(ctx.engine.amend_order(category_of(params), params))


def cancel_order(ctx: Context, params: Params) -> dict[str, Any]:
    return _ack(ctx.engine.cancel_order(category_of(params), params))


def cancel_all(ctx: Context, params: Params) -> dict[str, Any]:
    category = category_of(params)
    if category == "linear" and not (
        params.get("symbol") or params.get("settleCoin") or params.get("baseCoin")
    ):
        raise SimReject(10001, "params error: symbol, baseCoin or settleCoin is required")
    orders = ctx.engine.cancel_all(
        category, params.get("symbol") or None, params.get("orderFilter"), params.get("stopOrderType")
    )
    return {"list": [_ack(order) for order in orders], "success": "1"}


def _order_rows(ctx: Context, params: Params, category: str, open_orders: bool | None) -> list[Any]:
    """The orders a list shows: open ones, closed ones, or (None) both."""
    engine = ctx.engine
    if category == "linear" and not (
        params.get("symbol") or params.get("settleCoin") or params.get("baseCoin")
    ):
        raise SimReject(10001, "params error: symbol, baseCoin or settleCoin is required")
    wanted_status = params.get("orderStatus")
    kind = order_filter_of(category, params.get("orderFilter"))  # none sent: every kind of order
    rows = []
    for order in _candidates(engine, category, params, open_orders):
        if order.category != category or (open_orders is not None and (order.status in OPEN) != open_orders):
            continue
        if not engine.visible(order):  # still inside its acknowledgement lag
            continue
        if params.get("symbol") and order.symbol != params["symbol"]:
            continue
        if params.get("orderId") and order.order_id != params["orderId"]:
            continue
        if params.get("orderLinkId") and order.order_link_id != params["orderLinkId"]:
            continue
        if (wanted_status and order.status != wanted_status) or not kind(order):
            continue
        rows.append(order)
    return rows


def _candidates(
    engine: Engine, category: str, params: Params, open_orders: bool | None
) -> Iterable[SimOrder]:
    """The orders a list may show, newest first: by id or link id the one order, open ones from the few
    that are open, else every order kept (so a lookup or an open-order read costs what it returns)."""
    wanted = params.get("orderId") or engine.links.get((category, params.get("orderLinkId") or ""))
    if wanted:
        order = engine.orders.get(wanted)
        return [order] if order is not None else []
    if params.get("orderLinkId"):
        return []
    if open_orders is None:
        return reversed(engine.orders.values())
    if open_orders:
        pool = {**engine.open_orders, **engine.stop_book.waiting}
        return sorted(pool.values(), key=lambda o: engine.ranks[o.order_id], reverse=True)
    return reversed(engine.orders.values())


def _orders_result(ctx: Context, params: Params, category: str, orders: list[Any]) -> dict[str, Any]:
    page, cursor = paginate(orders, params, 20, 50)
    rows = [views.order_view(o, ctx.engine.instruments[(category, o.symbol)]) for o in page]
    ctx.engine.count_list_read()
    return {"category": category, "list": rows, "nextPageCursor": cursor}


def open_orders(ctx: Context, params: Params) -> dict[str, Any]:
    category = category_of(params)
    closed_recent = str(params.get("openOnly", "0")) == "1"
    # open-order.mdx: "openOnly param will be ignored when query by orderId or orderLinkId": an order asked
    # for by its id is listed whatever its status (a filled or cancelled one too)
    by_id = bool(params.get("orderId") or params.get("orderLinkId"))
    orders = _order_rows(ctx, params, category, None if by_id else not closed_recent)[:500]
    return _orders_result(ctx, params, category, orders)


def order_history(ctx: Context, params: Params) -> dict[str, Any]:
    """Closed orders as order-list.mdx retains them: cancelled, rejected and deactivated orders without
    fills for 24 hours, other closed orders for 7 days, orders with fills beyond; at most a 7-day window
    (`startTime`/`endTime`, by creation time; the last 7 days by default)."""
    category = category_of(params)
    params = dict(params)
    if category == "linear" and not params.get("symbol"):
        params["settleCoin"] = params.get("settleCoin") or SETTLE_COIN  # history needs no symbol
    start, end = _window(params, ctx.now_ms)
    engine = ctx.engine
    rows = [
        order
        for order in _order_rows(ctx, params, category, open_orders=False)
        if engine.retained(order, ctx.now_ms) and start <= order.created_ms <= end
    ]
    return _orders_result(ctx, params, category, rows)


def _window(params: Params, now_ms: int) -> tuple[int, int]:
    week = 7 * 86_400_000
    try:
        start = int(params["startTime"]) if params.get("startTime") else None
        end = int(params["endTime"]) if params.get("endTime") else None
    except ValueError:
        raise SimReject(10001, "params error: startTime or endTime invalid") from None
    if start is None and end is None:
        end = now_ms
    if start is None:
        start = end - week  # type: ignore[operator]
    if end is None:
        end = start + week
    if end - start > week:
        raise SimReject(10001, "params error: the time range must be 7 days or less")
    return start, end


def executions(ctx: Context, params: Params) -> dict[str, Any]:
    """Fills, newest first (execution.mdx): a 7-day window by execTime (the last 7 days by default)."""
    category = category_of(params)
    start, end = _window(params, ctx.now_ms)
    rows = [
        e
        for e in reversed(ctx.engine.executions)
        if e.order.category == category
        and ctx.engine.visible(e.order)
        and start <= e.time_ms <= end
        and (not params.get("symbol") or e.order.symbol == params["symbol"])
        and (not params.get("orderId") or e.order.order_id == params["orderId"])
        and (not params.get("orderLinkId") or e.order.order_link_id == params["orderLinkId"])
    ]
    page, cursor = paginate(rows, params, 50, 100)
    items = [views.execution_view(e, ctx.engine.instruments[(category, e.order.symbol)]) for e in page]
    return {"category": category, "list": items, "nextPageCursor": cursor}


def closed_pnl(ctx: Context, params: Params) -> dict[str, Any]:
    """Closed PnL, newest first (closed-pnl.mdx): linear only, a 7-day window by updated time (the last 7
    days by default), 50 rows a page at most (default 50)."""
    category = category_of(params, allowed=DERIVATIVES)
    start, end = _window(params, ctx.now_ms)
    rows = [
        row
        for row in reversed(ctx.engine.closed_pnl)
        if category == "linear"
        and start <= row.updated_ms <= end
        and (not params.get("symbol") or row.symbol == params["symbol"])
    ]
    page, cursor = paginate(rows, params, 50, 100)
    items = [views.closed_pnl_view(row, ctx.engine.instruments[("linear", row.symbol)]) for row in page]
    return {"category": category, "list": items, "nextPageCursor": cursor}


# ---- positions and account ------------------------------------------------------------------------


def positions(ctx: Context, params: Params) -> dict[str, Any]:
    """Positions: one row per one-way symbol (positionIdx 0); a hedge-mode symbol from the scenario shows
    its two legs (positionIdx 1 and 2). With a symbol, its rows even when empty; with settleCoin only,
    the rows with a size (position.mdx)."""
    category = category_of(params, allowed=DERIVATIVES)
    symbol = params.get("symbol")
    if category == "linear" and not symbol and not params.get("settleCoin"):
        raise SimReject(10001, "params error: symbol or settleCoin is required")
    engine = ctx.engine
    if category != "linear":
        if symbol:
            engine.instrument(category, str(symbol))
        return {"category": category, "list": [], "nextPageCursor": ""}
    if symbol:
        engine.instrument(category, str(symbol))
    chosen = []
    for name, position in engine.accounts.positions.items():
        legs = engine.accounts.hedge_legs.get(name)
        rows = sorted(legs.items()) if legs else [(0, position)]
        chosen += [(index, row) for index, row in rows if (name == symbol if symbol else row.size != 0)]
    page, cursor = paginate(chosen, params, 20, 200)
    shown = [
        views.position_view(
            p, engine.instruments[("linear", p.symbol)], engine.accounts, engine.market.quote(p.symbol), index
        )
        for index, p in page
    ]
    return {"category": category, "list": shown, "nextPageCursor": cursor}


def set_leverage(ctx: Context, params: Params) -> dict[str, Any]:
    ctx.engine.set_leverage(str(params.get("category") or ""), params)
    return {}


def trading_stop(ctx: Context, params: Params) -> dict[str, Any]:
    ctx.engine.trading_stop(str(params.get("category") or ""), params)
    return {}


def wallet_balance(ctx: Context, params: Params) -> dict[str, Any]:
    if params.get("accountType") != "UNIFIED":
        raise SimReject(10001, "accountType only support UNIFIED")
    engine, accounts = ctx.engine, ctx.engine.accounts
    wanted = [c for c in str(params.get("coin") or "").split(",") if c]
    upl = sum((accounts.unrealised_pnl(p) for p in accounts.positions.values()), ZERO)
    position_im = sum((accounts.position_im(p) for p in accounts.positions.values() if p.size), ZERO)
    position_mm = sum((accounts.position_mm(p) for p in accounts.positions.values() if p.size), ZERO)
    order_im = engine.order_im()
    coins = []
    for coin, amount in accounts.wallet.items():
        if (wanted and coin not in wanted) or (not wanted and amount == 0 and coin != SETTLE_COIN):
            continue
        settle = coin == SETTLE_COIN
        equity = amount + (upl if settle else ZERO)
        coins.append(
            _coin_row(
                coin,
                amount,
                equity,
                equity * accounts.usd_price(coin),
                engine.locked(coin),
                upl if settle else ZERO,
                position_im if settle else ZERO,
                position_mm if settle else ZERO,
                order_im if settle else ZERO,
                _realised(accounts) if settle else ZERO,
            )
        )
    wallet_usd = sum((amount * accounts.usd_price(coin) for coin, amount in accounts.wallet.items()), ZERO)
    margin = wallet_usd + upl
    initial = position_im + order_im
    account = {
        "accountType": "UNIFIED",
        "totalEquity": views.num(accounts.total_equity_usd()),
        "totalWalletBalance": views.num(wallet_usd),
        "totalMarginBalance": views.num(margin),
        "totalAvailableBalance": views.num(max(engine.available_margin(), ZERO)),
        "totalPerpUPL": views.num(upl),
        "totalInitialMargin": views.num(initial),
        "totalMaintenanceMargin": views.num(position_mm),
        "accountIMRate": views.num(initial / margin) if margin > 0 else "0",
        "accountMMRate": views.num(position_mm / margin) if margin > 0 else "0",
        "accountIMRateByMp": views.num(initial / margin) if margin > 0 else "0",
        "accountMMRateByMp": views.num(position_mm / margin) if margin > 0 else "0",
        "totalInitialMarginByMp": views.num(initial),
        "totalMaintenanceMarginByMp": views.num(position_mm),
        "accountLTV": "0",
        "coin": coins,
    }
    return {"list": [account]}


def _coin_row(
    coin: str,
    wallet: Decimal,
    equity: Decimal,
    usd: Decimal,
    locked: Decimal,
    upl: Decimal,
    position_im: Decimal,
    position_mm: Decimal,
    order_im: Decimal,
    realised: Decimal,
) -> dict[str, Any]:
    n = views.num
    return {
        "coin": coin,
        "equity": n(equity),
        "usdValue": n(usd),
        "walletBalance": n(wallet),
        "locked": n(locked),
        "spotHedgingQty": "0",
        "borrowAmount": "0",
        "accruedInterest": "0",
        "totalOrderIM": n(order_im),
        "totalPositionIM": n(position_im),
        "totalPositionMM": n(position_mm),
        "unrealisedPnl": n(upl),
        "cumRealisedPnl": n(realised),
        "bonus": "0",
        "marginCollateral": True,
        "collateralSwitch": True,
        "colRes": "",
        "spotBorrow": "0",
        "free": "",
        "availableToWithdraw": "",
        "availableToBorrow": "",
    }


def _realised(accounts: Any) -> Decimal:
    """The settle coin's cumulative realised PnL: every position's (fills, fees, funding and liquidations)."""
    return sum((p.cum_realised_pnl for p in accounts.positions.values()), ZERO)


def account_info(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/account/info: a unified trading account (UTA 2.0 Pro, unifiedMarginStatus 6), regular margin."""
    return {
        "marginMode": "REGULAR_MARGIN",
        "updatedTime": str(ctx.now_ms),
        "unifiedMarginStatus": 6,
        "dcpStatus": "OFF",
        "timeWindow": 10,
        "smpGroup": 0,
        "isMasterTrader": False,
        "spotHedgingStatus": "OFF",
    }


def query_api(ctx: Context, params: Params) -> dict[str, Any]:
    assert ctx.key is not None
    return views.api_key_view(ctx.key, list(ctx.keys).index(ctx.key))


def set_dcp(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/order/disconnected-cancel-all: a product's window, 3-300 s (OPTIONS when no product is named)."""
    product = params.get("product") or "OPTIONS"
    window = params.get("timeWindow")
    if product not in DCP_PRODUCTS:
        raise SimReject(10001, "product invalid")
    if isinstance(window, bool) or not isinstance(window, int | str) or not str(window).isdigit():
        raise SimReject(10001, "timeWindow invalid")
    low, high = DCP_WINDOW
    if not low <= int(window) <= high:
        raise SimReject(10001, "timeWindow invalid")
    ctx.engine.dcp.set(str(product), int(window))
    return {}


def query_dcp_info(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/account/query-dcp-info: each product set, ON with its window."""
    return {"dcpInfos": ctx.engine.dcp.info()}


# ---- Pilot's own --------------------------------------------------------------------------------------


def streams(ctx: Context, params: Params) -> dict[str, Any]:
    """GET /pilot/streams (Pilot's, not Bybit's): where the WebSocket side listens, so that `pilot serve
    --paper-url` finds it from the REST URL alone. A venue without this path serves no streams to Pilot."""
    if not ctx.streams_url:
        raise SimReject(10017, "route not found")
    return {"url": ctx.streams_url}


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    handler: Callable[[Context, Params], dict[str, Any] | Answer]
    signed: bool
    permission: tuple[str, str] | None = (
        None  # (group, name) needed for linear; spot needs ("Spot","SpotTrade")
    )
    write: bool = False


ROUTES: dict[str, Route] = {
    "/v5/market/time": Route("GET", server_time, False),
    "/v5/market/tickers": Route("GET", tickers, False),
    "/v5/market/orderbook": Route("GET", orderbook, False),
    "/v5/market/kline": Route("GET", kline, False),
    "/v5/market/instruments-info": Route("GET", instruments_info, False),
    "/v5/market/price-limit": Route("GET", price_limit, False),
    "/v5/market/risk-limit": Route("GET", risk_limit, False),
    "/v5/order/create": Route("POST", create_order, True, ("ContractTrade", "Order"), True),
    "/v5/order/amend": Route("POST", amend_order, True, ("ContractTrade", "Order"), True),
    "/v5/order/cancel": Route("POST", cancel_order, True, ("ContractTrade", "Order"), True),
    "/v5/order/cancel-all": Route("POST", cancel_all, True, ("ContractTrade", "Order"), True),
    "/v5/order/realtime": Route("GET", open_orders, True),
    "/v5/order/history": Route("GET", order_history, True),
    "/v5/execution/list": Route("GET", executions, True),
    "/v5/position/list": Route("GET", positions, True),
    "/v5/position/closed-pnl": Route("GET", closed_pnl, True),
    "/v5/position/set-leverage": Route("POST", set_leverage, True, ("ContractTrade", "Position"), True),
    "/v5/position/trading-stop": Route("POST", trading_stop, True, ("ContractTrade", "Position"), True),
    "/v5/account/wallet-balance": Route("GET", wallet_balance, True),
    "/v5/account/info": Route("GET", account_info, True),
    "/v5/user/query-api": Route("GET", query_api, True),
    "/v5/order/disconnected-cancel-all": Route("POST", set_dcp, True, ("ContractTrade", "Order"), True),
    "/v5/account/query-dcp-info": Route("GET", query_dcp_info, True),
    "/pilot/streams": Route("GET", streams, False),
}
