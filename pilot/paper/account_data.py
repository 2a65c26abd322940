"""Account and trading routes the standard clients ask for: fee rates, the transaction log, coin information,
a coin's transferable balance, the batches (create, amend, cancel) and the position mode.

Shapes as Bybit's pages give them (account/fee-rate.mdx, account/transaction-log.mdx, asset/coin-info.mdx,
order/batch-place.mdx and its amend and cancel pages, position/position-mode.mdx). Each route is its own function. What the paper exchange
does not model it refuses with Bybit's documented code: hedge mode (110029, "Hedge mode is not supported
for this symbol"), and deposits and withdrawals (every chain suspended in coin-info).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pilot.paper import views
from pilot.paper.accounts import SETTLE_COIN, ZERO
from pilot.paper.engine import SimExecution, SimOrder
from pilot.paper.handlers import Answer, Context, Params, category_of, paginate
from pilot.paper.validation import SimReject

DAY_MS = 86_400_000
BATCH_LIMITS = {"spot": 10}  # order/batch-place.mdx: 10 orders a request on spot, 20 elsewhere
BATCH_LIMIT = 20
TRADE_TYPES = {"Trade": "TRADE", "BustTrade": "LIQUIDATION", "Funding": "SETTLEMENT"}


def fee_rate(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/account/fee-rate: the rates the paper exchange charges, for each instrument of the category."""
    category = category_of(params)
    symbol = params.get("symbol")
    specs = [
        spec
        for (cat, name), spec in ctx.engine.instruments.items()
        if cat == category and (not symbol or name == symbol)
    ]
    if symbol and not specs:
        raise SimReject(10001, "params error: symbol invalid")
    taker, maker = views.num(ctx.engine.taker_fee), views.num(ctx.engine.maker_fee)
    rows = [{"symbol": s.symbol, "takerFeeRate": taker, "makerFeeRate": maker} for s in specs]
    result: dict[str, Any] = {"list": rows}
    if category in ("spot", "option"):  # fee-rate.mdx: derivatives have no category field
        result = {"category": category} | result
    return result


def coin_info(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/asset/coin/query-info: every coin the instruments and wallet name, with one chain each, deposits
    and withdrawals suspended (chainDeposit / chainWithdraw "0", withdrawFee "": not withdrawable)."""
    coins = {coin for spec in ctx.engine.instruments.values() for coin in (spec.base_coin, spec.quote_coin)}
    coins |= set(ctx.engine.accounts.wallet)
    wanted = params.get("coin")
    rows = [_coin(coin) for coin in sorted(coins) if not wanted or coin == wanted]
    return {"rows": rows}


def _coin(coin: str) -> dict[str, Any]:
    chain = {
        "chainType": coin,
        "confirmation": "1",
        "withdrawFee": "",
        "depositMin": "0",
        "withdrawMin": "0",
        "chain": coin,
        "chainDeposit": "0",
        "chainWithdraw": "0",
        "minAccuracy": "8",
        "withdrawPercentageFee": "0",
        "contractAddress": "",
        "safeConfirmNumber": "1",
        "withdrawMax": "0",
    }
    return {"name": coin, "coin": coin, "remainAmount": "0", "chains": [chain]}


def account_coin_balance(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/asset/transfer/query-account-coin-balance: a coin in the unified account (free to transfer:
    the wallet balance less what orders lock); the paper exchange has no other account (FUND: empty)."""
    account_type, coin = params.get("accountType"), params.get("coin")
    if not account_type or not coin:
        raise SimReject(10001, "params error: accountType and coin are required")
    held = ctx.engine.accounts.wallet.get(str(coin), ZERO) if account_type == "UNIFIED" else ZERO
    free = max(held - ctx.engine.locked(str(coin)), ZERO) if account_type == "UNIFIED" else ZERO
    balance = {
        "coin": coin,
        "walletBalance": views.num(held),
        "transferBalance": views.num(free),
        "bonus": "0",
        "transferSafeAmount": "",
        "ltvTransferSafeAmount": "",
    }
    return {"accountType": account_type, "bizType": 1, "accountId": "100001", "memberId": "100001"} | {
        "balance": balance
    }


def switch_mode(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/position/switch-mode: one-way (0) is what every symbol is (110025: not modified); hedge mode (3)
    is not modelled: 110024 with a position, 110028 with open orders, else 110029 (position-mode.mdx)."""
    if params.get("category") != "linear":
        raise SimReject(10001, "params error: category only support linear")
    mode, symbol = str(params.get("mode")), params.get("symbol")
    if mode not in ("0", "3"):
        raise SimReject(10001, "params error: mode invalid")
    if not symbol and not params.get("coin"):
        raise SimReject(10001, "params error: symbol or coin is required")
    engine = ctx.engine
    if symbol:
        engine.instrument("linear", str(symbol))
    legs = engine.accounts.hedge_legs.get(str(symbol or ""))
    if mode == "0" and not legs:
        if symbol:
            raise SimReject(110025, "Position mode has not been modified.")
        return {}
    position = engine.accounts.positions.get(str(symbol or ""))
    if legs or (position is not None and position.size != 0):
        raise SimReject(110024, "You have an existing position, so the position mode cannot be switched.")
    if any(o.symbol == symbol and o.category == "linear" for o in engine.open_orders.values()):
        raise SimReject(110028, "You have existing open orders, so the position mode cannot be switched.")
    raise SimReject(110029, "Hedge mode is not supported for this symbol.")


def create_batch(ctx: Context, params: Params) -> Answer:
    """/v5/order/create-batch: each order created as /v5/order/create would, in the order sent; the result
    lists every order (a refused one with empty ids), retExtInfo each one's code (batch-place.mdx)."""
    return _batch(ctx, params, ctx.engine.create_order, created=True)


def amend_batch(ctx: Context, params: Params) -> Answer:
    """/v5/order/amend-batch: each order amended as /v5/order/amend would (batch-amend.mdx)."""
    return _batch(ctx, params, ctx.engine.amend_order, created=False)


def cancel_batch(ctx: Context, params: Params) -> Answer:
    """/v5/order/cancel-batch: each order cancelled as /v5/order/cancel would (batch-cancel.mdx)."""
    return _batch(ctx, params, ctx.engine.cancel_order, created=False)


def _batch(ctx: Context, params: Params, act: Callable[[str, Params], SimOrder], *, created: bool) -> Answer:
    """One request per order, in the order sent, at most BATCH_LIMITS (10 spot, 20 elsewhere); every order
    listed in the result (a refused one with empty ids), its code in retExtInfo."""
    category = category_of(params)
    if category == "inverse":
        raise SimReject(10001, "params error: symbol invalid")  # the paper exchange lists no inverse symbol
    request = params.get("request")
    if not isinstance(request, list) or not request or not all(isinstance(i, dict) for i in request):
        raise SimReject(10001, "params error: request must be a list of orders")
    if len(request) > BATCH_LIMITS.get(category, BATCH_LIMIT):
        raise SimReject(10001, f"params error: at most {BATCH_LIMITS.get(category, BATCH_LIMIT)} orders")
    rows, codes = [], []
    for item in request:
        row = {"category": category, "symbol": str(item.get("symbol") or ""), "orderId": ""}
        row["orderLinkId"] = str(item.get("orderLinkId") or "")
        try:
            order = act(category, dict(item))
        except SimReject as reject:
            codes.append({"code": reject.code, "msg": reject.message})
        else:
            row |= {"orderId": order.order_id, "orderLinkId": order.order_link_id}
            codes.append({"code": 0, "msg": "OK"})
            if created:
                row["createAt"] = str(order.created_ms)
        if created:
            row.setdefault("createAt", "")
        rows.append(row)
    return Answer({"list": rows}, {"list": codes})


def transaction_log(ctx: Context, params: Params) -> dict[str, Any]:
    """/v5/account/transaction-log (UTA): a row per fill (TRADE, LIQUIDATION; a spot fill one per coin)
    and per funding settlement (SETTLEMENT), newest first, each with the cash balance it left; a window of
    24 hours by default, at most 7 days (transaction-log.mdx)."""
    if params.get("accountType") not in (None, "", "UNIFIED"):
        raise SimReject(10001, "accountType only support UNIFIED")
    start, end = _log_window(params, ctx.now_ms)
    rows = [
        row
        for row in _log_rows(ctx)
        if start <= int(row["transactionTime"]) <= end and _log_wanted(row, params)
    ]
    page, cursor = paginate(rows, params, 20, 50)
    return {"list": page, "nextPageCursor": cursor}


def _log_window(params: Params, now_ms: int) -> tuple[int, int]:
    try:
        start = int(params["startTime"]) if params.get("startTime") else None
        end = int(params["endTime"]) if params.get("endTime") else None
    except ValueError:
        raise SimReject(10001, "params error: startTime or endTime invalid") from None
    if start is None:
        end = now_ms if end is None else end
        return end - DAY_MS, end
    if end is None:
        return start, start + DAY_MS
    if end - start > 7 * DAY_MS:
        raise SimReject(10001, "params error: the time range must be 7 days or less")
    return start, end


def _log_wanted(row: dict[str, Any], params: Params) -> bool:
    for name, key in (("category", "category"), ("currency", "currency"), ("type", "type")):
        if params.get(name) and row[key] != params[name]:
            return False
    return not params.get("baseCoin") or str(row["symbol"]).startswith(str(params["baseCoin"]))


def _log_rows(ctx: Context) -> list[dict[str, Any]]:
    """Every fill's rows, newest first, walking back from today's balances and positions."""
    engine = ctx.engine
    balances = dict(engine.accounts.wallet)
    sizes = {symbol: p.size for symbol, p in engine.accounts.positions.items()}
    rows: list[dict[str, Any]] = []
    for execution in reversed(engine.executions):
        for row in reversed(_fill_rows(ctx, execution, sizes)):
            currency = row["currency"]
            row["cashBalance"] = views.num(balances.get(currency, ZERO))
            balances[currency] = balances.get(currency, ZERO) - Decimal(row["change"])
            rows.append(row)
        order = execution.order
        if order.category == "linear" and execution.exec_type != "Funding":
            sizes[order.symbol] = sizes.get(order.symbol, ZERO) - (
                execution.qty if order.is_buy else -execution.qty
            )
    return rows


def _fill_rows(ctx: Context, execution: SimExecution, sizes: dict[str, Decimal]) -> list[dict[str, Any]]:
    order = execution.order
    n = views.num
    base = {
        "id": execution.exec_id,
        "symbol": order.symbol,
        "category": order.category,
        "side": order.side,
        "transactionTime": str(execution.time_ms),
        "type": TRADE_TYPES.get(execution.exec_type, "TRADE"),
        "transSubType": "",
        "tradePrice": n(execution.price),
        "funding": "",
        "feeRate": n(execution.fee_rate),
        "bonusChange": "",
        "tradeId": execution.exec_id,
        "orderId": order.order_id,
        "orderLinkId": order.order_link_id,
        "extraFees": "",
    }
    if order.category == "linear":
        size = n(sizes.get(order.symbol, ZERO))
        if execution.exec_type == "Funding":
            rate = execution.fee_rate if order.is_buy else -execution.fee_rate
            got = -execution.fee
            return [
                base
                | {"qty": n(execution.qty), "size": size, "currency": SETTLE_COIN, "feeRate": n(rate)}
                | {"funding": n(got), "fee": "0", "cashFlow": "0", "change": n(got)}
            ]
        change = execution.cash_flow - execution.fee
        return [
            base
            | {"qty": n(execution.qty), "size": size, "currency": execution.fee_coin}
            | {"fee": n(execution.fee), "cashFlow": n(execution.cash_flow), "change": n(change)}
        ]
    return _spot_rows(ctx, execution, base)


def _spot_rows(ctx: Context, execution: SimExecution, base: dict[str, Any]) -> list[dict[str, Any]]:
    """A spot fill moves two coins: one row each, the fee on the coin it was paid in (transaction-log.mdx:
    a spot row's qty is the coin's change, negative when it went down)."""
    order = execution.order
    spec = ctx.engine.instruments[(order.category, order.symbol)]
    value = execution.qty * execution.price
    moves = (
        ((spec.base_coin, execution.qty), (spec.quote_coin, -value))
        if order.is_buy
        else ((spec.base_coin, -execution.qty), (spec.quote_coin, value))
    )
    rows = []
    for coin, moved in moves:
        fee = execution.fee if coin == execution.fee_coin else ZERO
        row = base | {"qty": views.num(moved), "size": "0", "currency": coin, "fee": views.num(fee)}
        rows.append(row | {"cashFlow": views.num(moved), "change": views.num(moved - fee)})
    return rows
