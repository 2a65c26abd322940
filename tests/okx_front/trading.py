"""The OKX front's trading endpoints: orders, algo orders (the position's TP/SL) and fills, carried out on the
paper exchange behind it as OKX runs them.

* A create's attachAlgoOrds become the paper exchange's partial TP/SL for what fills (Bybit's tpslMode
  Partial with the order's size): a stop of the order's own size, as OKX places it.
* On spot they become the paper exchange's spot TP/SL orders (tpslOrder), listed as OKX's spot conditional
  algo orders and cancelled by cancel-algos.
* The whole position's TP/SL (an algo with closeFraction 1) is Bybit's Full trading stop; OKX allows one per
  position (51088). A partial algo (its own sz) is a Partial trading stop leg.
* In long/short mode a create without posSide is refused as OKX refuses it (51000 posSide error).
"""

from __future__ import annotations

import re
import time
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from . import rows as okx
from .endpoints import Handler, Params, Row, _listed, _market, error, ok, row_error
from .paper_wire import LOT, Market

if TYPE_CHECKING:
    from . import OkxFront

CL_ORD_ID = re.compile(r"[0-9A-Za-z]{1,32}")
TIF = {"limit": "GTC", "ioc": "IOC", "post_only": "PostOnly", "fok": "FOK"}


def _orders(front: OkxFront, markets: list[Market], path: str, *, ordinary: bool) -> list[tuple[Market, Row]]:
    found = []
    for market in markets:
        answer = front.wire.get(path, category=market.category, symbol=market.symbol, limit="50")
        for row in answer["result"]["list"]:
            if bool(row.get("stopOrderType")) != ordinary:
                found.append((market, row))
    return found


def _paged(data: list[Row], params: Params, key: str) -> list[Row]:
    """OKX's paging: newest first; `after` the rows older than the one it names; `limit` at most 100."""
    after = params.get("after")
    if after:
        ids = [str(row.get(key)) for row in data]
        data = data[ids.index(after) + 1 :] if after in ids else []
    return data[: int(params.get("limit") or 100)]


def orders_pending(front: OkxFront, params: Params) -> Row:
    found = _orders(front, _listed(front, params), "/v5/order/realtime", ordinary=True)
    data = [okx.order(m, r) for m, r in found if r["orderStatus"] in ("New", "PartiallyFilled")]
    return ok(_paged(sorted(data, key=lambda r: r["cTime"], reverse=True), params, "ordId"))


def orders_history(front: OkxFront, params: Params) -> Row:
    """Finished orders: the ordinary ones, and the orders a triggered TP/SL placed (OKX lists a triggered
    algo's order here, as an ordinary market order; one that never triggered only in the algo history)."""
    markets = _listed(front, params)
    found = _orders(front, markets, "/v5/order/history", ordinary=True)
    found += [
        (m, {**r, "stopOrderType": "", "orderType": "Market"})
        for m, r in _orders(front, markets, "/v5/order/history", ordinary=False)
        if okx.d(r.get("cumExecQty")) > 0
    ]
    data = [okx.order(m, r) for m, r in found if r["orderStatus"] not in ("New", "PartiallyFilled")]
    return ok(_paged(sorted(data, key=lambda r: r["uTime"], reverse=True), params, "ordId"))


def order(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return error(51001, "Instrument ID does not exist")
    where = {"orderLinkId": params["clOrdId"]} if params.get("clOrdId") else {"orderId": params.get("ordId")}
    for path in ("/v5/order/realtime", "/v5/order/history"):
        rows = front.wire.get(path, category=market.category, symbol=market.symbol, **where)["result"]["list"]
        if rows:
            return ok([okx.order(market, rows[0])])
    return error(51603, "Order does not exist")


def orders_algo_pending(front: OkxFront, params: Params) -> Row:
    kinds = set(str(params.get("ordType") or "").split(","))
    data: list[Row] = []
    for market in _listed(front, params):
        legs = [
            r
            for m, r in _orders(front, [market], "/v5/order/realtime", ordinary=False)
            if r["orderStatus"] == "Untriggered"
        ]
        whole = [leg for leg in legs if leg["stopOrderType"] in okx.WHOLE]
        if kinds & {"conditional", "oco"}:
            data += [okx.whole_algo(market, whole)] if whole else []
            data += [okx.partial_algo(market, leg) for leg in legs if leg["stopOrderType"] in okx.PARTIAL]
            data += [okx.spot_algo(market, leg) for leg in legs if leg["stopOrderType"] == okx.SPOT_TPSL]
    return ok(_paged(data, params, "algoId"))


def fills(front: OkxFront, params: Params) -> Row:
    data: list[Row] = []
    for market in _listed(front, params):
        where = {"orderId": params["ordId"]} if params.get("ordId") else {}
        rows = front.wire.get(
            "/v5/execution/list", category=market.category, symbol=market.symbol, limit="100", **where
        )["result"]["list"]
        trades = [row for row in rows if row.get("execType", "Trade") == "Trade"]
        pnl = _fill_pnl(front, market, trades)
        data += [okx.fill(market, row, pnl.get(row["execId"])) for row in trades]
    begin = int(params.get("begin") or 0)
    data = [row for row in sorted(data, key=lambda r: r["ts"], reverse=True) if int(row["ts"]) >= begin]
    return ok(_paged(data, params, "billId"))


def _fill_pnl(front: OkxFront, market: Market, trades: list[Row]) -> dict[str, Decimal]:
    """Each closing fill's fillPnl: the paper exchange's closed PnL of its order (after fees) with the fees
    added back (OKX's fillPnl is before fees), shared out by size."""
    if market.category != "linear":
        return {}
    closed = front.wire.get("/v5/position/closed-pnl", category="linear", symbol=market.symbol, limit="100")
    by_order = {row["orderId"]: okx.d(row["closedPnl"]) for row in closed["result"]["list"]}
    shares: dict[str, Decimal] = {}
    for order_id, pnl in by_order.items():
        mine = [t for t in trades if t["orderId"] == order_id]
        qty = sum((okx.d(t["execQty"]) for t in mine), Decimal(0))
        fees = sum((okx.d(t["execFee"]) for t in mine), Decimal(0))
        for trade in mine:
            shares[trade["execId"]] = (pnl + fees) * okx.d(trade["execQty"]) / qty if qty else Decimal(0)
    return shares


# ---- writes ------------------------------------------------------------------------------------------


def place_order(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    cl = str(params.get("clOrdId") or "")
    if market is None:
        return row_error(51001, "Instrument ID does not exist", clOrdId=cl, ordId="")
    problem = _order_problem(front, market, params)
    if problem is not None:
        return row_error(problem[0], problem[1], clOrdId=cl, ordId="")
    body = _create_body(market, params)
    answer = front.wire.post("/v5/order/create", body)
    if answer["retCode"] != 0:
        return row_error(okx.okx_code(answer["retCode"]), answer["retMsg"], clOrdId=cl, ordId="")
    stamp = str(int(time.time() * 1000))
    return ok(
        [
            {
                "ordId": answer["result"]["orderId"],
                "clOrdId": cl,
                "tag": "",
                "ts": stamp,
                "sCode": "0",
                "sMsg": "Order placed",
            }
        ]
    )


def _order_problem(front: OkxFront, market: Market, params: Params) -> tuple[int, str] | None:
    """What OKX refuses in a create before it reaches the book."""
    if params.get("clOrdId") is not None and not CL_ORD_ID.fullmatch(str(params["clOrdId"])):
        return 51000, "Parameter clOrdId error"
    if params.get("ordType") not in (*TIF, "market"):
        return 51000, "Parameter ordType error"
    if (
        market.category == "linear"
        and front.position_mode != "net_mode"
        and params.get("posSide") not in ("long", "short")
    ):
        return 51000, "Parameter posSide error"
    if params.get("tdMode") != ("cash" if market.category == "spot" else "cross"):
        return 51000, "Parameter tdMode error"
    try:
        size = Decimal(str(params.get("sz")))
    except InvalidOperation:
        return 51000, "Parameter sz error"
    lot = LOT if market.category == "linear" else Decimal(okx.instrument(market)["lotSz"])
    if size <= 0 or size % lot != 0:
        return 51121, "Order quantity must be a multiple of the lot size"
    return None


def _create_body(market: Market, params: Params) -> Row:
    ord_type = str(params["ordType"])
    body: Row = {
        "category": market.category,
        "symbol": market.symbol,
        "side": "Buy" if params["side"] == "buy" else "Sell",
        "orderType": "Market" if ord_type == "market" else "Limit",
        "qty": okx.n(market.coins(Decimal(str(params["sz"])))),
        "timeInForce": TIF.get(ord_type, "IOC"),
        "orderLinkId": params.get("clOrdId") or f"okx{int(time.time() * 1e6)}",
    }
    if ord_type != "market":
        body["price"] = str(params["px"])
    if market.category == "linear":
        body["positionIdx"] = 0
    if params.get("reduceOnly") in (True, "true"):
        body["reduceOnly"] = True
    for algo in params.get("attachAlgoOrds") or []:
        if market.category == "linear":  # spot TP/SL orders are the quantity filled's already
            body["tpslMode"] = "Partial"  # OKX: a TP/SL for the quantity that filled
        if algo.get("slTriggerPx"):
            body |= {"stopLoss": str(algo["slTriggerPx"]), "slOrderType": "Market"}
        if algo.get("tpTriggerPx"):
            body |= {"takeProfit": str(algo["tpTriggerPx"]), "tpOrderType": "Market"}
    if params.get("stpMode"):
        body["smpType"] = {
            "cancel_maker": "CancelMaker",
            "cancel_taker": "CancelTaker",
            "cancel_both": "CancelBoth",
        }[params["stpMode"]]
    return body


def cancel_order(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return row_error(51001, "Instrument ID does not exist", ordId="", clOrdId="")
    return _cancel_one(front, market, params)


def _cancel_one(front: OkxFront, market: Market, params: Row) -> Row:
    which = {"orderId": params["ordId"]} if params.get("ordId") else {"orderLinkId": params.get("clOrdId")}
    answer = front.wire.post(
        "/v5/order/cancel", {"category": market.category, "symbol": market.symbol, **which}
    )
    ids = {"ordId": str(params.get("ordId") or ""), "clOrdId": str(params.get("clOrdId") or "")}
    if answer["retCode"] != 0:
        return row_error(okx.okx_code(answer["retCode"], missing=51400), answer["retMsg"], **ids)
    return ok([{**ids, "ordId": answer["result"]["orderId"], "sCode": "0", "sMsg": ""}])


def cancel_batch(front: OkxFront, params: Params) -> Row:
    results = []
    for item in params:
        market = _market(front, item)
        answer = (
            _cancel_one(front, market, item)
            if market is not None
            else row_error(51001, "Instrument ID does not exist")
        )
        results += answer["data"]
    failed = sum(1 for row in results if row["sCode"] != "0")
    code = "0" if not failed else ("1" if failed == len(results) else "2")
    return {"code": code, "msg": "", "data": results}


def amend_order(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return row_error(51001, "Instrument ID does not exist", ordId="", clOrdId="")
    body: Row = {"category": market.category, "symbol": market.symbol}
    body |= {"orderId": params["ordId"]} if params.get("ordId") else {"orderLinkId": params.get("clOrdId")}
    if params.get("newSz"):
        body["qty"] = okx.n(market.coins(Decimal(str(params["newSz"]))))
    if params.get("newPx"):
        body["price"] = str(params["newPx"])
    answer = front.wire.post("/v5/order/amend", body)
    ids = {"ordId": str(params.get("ordId") or ""), "clOrdId": str(params.get("clOrdId") or "")}
    if answer["retCode"] != 0:
        return row_error(okx.okx_code(answer["retCode"], missing=51503), answer["retMsg"], **ids)
    return ok([{**ids, "ordId": answer["result"]["orderId"], "reqId": "", "sCode": "0", "sMsg": ""}])


# ---- algo orders: the position's TP/SL ---------------------------------------------------------------------


def _trading_stop(front: OkxFront, market: Market, fields: Row) -> Row | None:
    """A Bybit trading stop on the paper exchange; an OKX error answer when it is refused."""
    body = {"category": "linear", "symbol": market.symbol, "positionIdx": 0, **fields}
    answer = front.wire.post("/v5/position/trading-stop", body)
    if answer["retCode"] in (0, 34040):
        return None
    code = 51023 if "zero position" in answer["retMsg"] else 51000
    return row_error(code, answer["retMsg"], algoId="", algoClOrdId="")


def _whole_exists(front: OkxFront, market: Market) -> bool:
    legs = _orders(front, [market], "/v5/order/realtime", ordinary=False)
    return any(r["stopOrderType"] in okx.WHOLE and r["orderStatus"] == "Untriggered" for _, r in legs)


def place_algo(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None or market.category != "linear":
        return row_error(51001, "Instrument ID does not exist", algoId="", algoClOrdId="")
    if params.get("ordType") not in ("conditional", "oco"):
        return row_error(51000, "Parameter ordType error", algoId="", algoClOrdId="")
    stop, target = params.get("slTriggerPx") or "", params.get("tpTriggerPx") or ""
    if str(params.get("closeFraction")) == "1":
        if _whole_exists(front, market):
            return row_error(
                51088,
                "You can only place 1 TP/SL order to close an entire position",
                algoId="",
                algoClOrdId="",
            )
        refused = _trading_stop(
            front, market, {"tpslMode": "Full", "stopLoss": stop or "0", "takeProfit": target or "0"}
        )
        algo_id = market.whole_algo_id
    else:
        size = okx.n(market.coins(Decimal(str(params.get("sz")))))
        fields = {
            "tpslMode": "Partial",
            "slSize": size,
            "tpSize": size,
            "slOrderType": "Market",
            "tpOrderType": "Market",
        }
        refused = _trading_stop(front, market, {**fields, "stopLoss": stop, "takeProfit": target})
        algo_id = f"{int(time.time() * 1e6)}"
    if refused is not None:
        return refused
    return ok(
        [{"algoId": algo_id, "algoClOrdId": str(params.get("algoClOrdId") or ""), "sCode": "0", "sMsg": ""}]
    )


def amend_algo(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return row_error(51001, "Instrument ID does not exist", algoId="", algoClOrdId="")
    if params.get("algoId") != market.whole_algo_id or not _whole_exists(front, market):
        return row_error(51603, "Order does not exist", algoId=str(params.get("algoId")), algoClOrdId="")
    fields: Row = {"tpslMode": "Full"}
    if "newSlTriggerPx" in params:
        fields["stopLoss"] = str(params["newSlTriggerPx"])
    if "newTpTriggerPx" in params:
        fields["takeProfit"] = str(params["newTpTriggerPx"])
    refused = _trading_stop(front, market, fields)
    if refused is not None:
        return refused
    return ok([{"algoId": market.whole_algo_id, "algoClOrdId": "", "reqId": "", "sCode": "0", "sMsg": ""}])


def cancel_algos(front: OkxFront, params: Params) -> Row:
    results = []
    for item in params:
        market = _market(front, item)
        algo_id = str(item.get("algoId"))
        if market is None:
            results.append({"algoId": algo_id, "sCode": "51001", "sMsg": "Instrument ID does not exist"})
        elif algo_id == market.whole_algo_id:
            refused = _trading_stop(front, market, {"tpslMode": "Full", "stopLoss": "0", "takeProfit": "0"})
            results.append({"algoId": algo_id, "sCode": "0" if refused is None else "51400", "sMsg": ""})
        else:
            body = {"category": market.category, "symbol": market.symbol, "orderId": algo_id}
            if market.category == "spot":  # a spot TP/SL is found by its kind (pilot/paper/spot_stops.py)
                body["orderFilter"] = okx.SPOT_TPSL
            answer = front.wire.post("/v5/order/cancel", body)
            code = "0" if answer["retCode"] == 0 else "51400"
            results.append(
                {"algoId": algo_id, "sCode": code, "sMsg": "" if code == "0" else answer["retMsg"]}
            )
    failed = sum(1 for row in results if row["sCode"] != "0")
    code = "0" if not failed else ("1" if failed == len(results) else "2")
    return {"code": code, "msg": "", "data": results}


TRADING: dict[tuple[str, str], Handler] = {
    ("GET", "/api/v5/trade/orders-pending"): orders_pending,
    ("GET", "/api/v5/trade/orders-history"): orders_history,
    ("GET", "/api/v5/trade/order"): order,
    ("GET", "/api/v5/trade/orders-algo-pending"): orders_algo_pending,
    ("GET", "/api/v5/trade/fills"): fills,
    ("POST", "/api/v5/trade/order"): place_order,
    ("POST", "/api/v5/trade/cancel-order"): cancel_order,
    ("POST", "/api/v5/trade/cancel-batch-orders"): cancel_batch,
    ("POST", "/api/v5/trade/amend-order"): amend_order,
    ("POST", "/api/v5/trade/order-algo"): place_algo,
    ("POST", "/api/v5/trade/amend-algos"): amend_algo,
    ("POST", "/api/v5/trade/cancel-algos"): cancel_algos,
}
