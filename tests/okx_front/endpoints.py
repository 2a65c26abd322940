"""The OKX front's endpoints: each OKX v5 request carried out on the paper exchange behind it, answered in
OKX's envelope ({"code", "msg", "data"}; an order write's own sCode and sMsg in its row)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import rows as okx
from .paper_wire import Market

if TYPE_CHECKING:
    from . import OkxFront

Row = dict[str, Any]
Params = Any  # a GET's query as a dict, a POST's JSON body (a dict, or a list for the batch endpoints)


def ok(data: list[Row]) -> Row:
    return {"code": "0", "msg": "", "data": data}


def error(code: int, message: str, data: list[Row] | None = None) -> Row:
    return {"code": str(code), "msg": message, "data": data or []}


def row_error(code: int, message: str, **fields: str) -> Row:
    """An order write that failed: code "1" and the order's own sCode in its row."""
    return {"code": "1", "msg": "Operation failed", "data": [{**fields, "sCode": str(code), "sMsg": message}]}


def _market(front: OkxFront, params: Params) -> Market | None:
    return front.wire.market(str(params.get("instId") or ""))


def _listed(front: OkxFront, params: Params) -> list[Market]:
    """The markets a list read asks about: its instId, else every one of its instType."""
    if params.get("instId"):
        market = _market(front, params)
        return [market] if market is not None else []
    kind = params.get("instType")
    return [m for m in front.wire.markets.values() if kind in (None, m.inst_type)]


# ---- public ----------------------------------------------------------------------------------------


def instruments(front: OkxFront, params: Params) -> Row:
    if params.get("instId") and _market(front, params) is None:
        return error(51001, "Instrument ID does not exist")
    return ok([okx.instrument(m) for m in _listed(front, params) if m.inst_type == params.get("instType")])


def position_tiers(front: OkxFront, params: Params) -> Row:
    family = params.get("instFamily")
    market = next((m for m in front.wire.markets.values() if f"{m.base}-{m.quote}" == family), None)
    if market is None or market.category != "linear":
        return error(51001, "Instrument ID does not exist")
    tiers = front.wire.get("/v5/market/risk-limit", category="linear", symbol=market.symbol)["result"]["list"]
    mmr = tiers[0]["maintenanceMargin"] if tiers else "0.005"
    return ok(
        [{"instFamily": family, "instId": "", "tier": "1", "mmr": mmr, "imr": "0.01", "maxLever": "100"}]
    )


def ticker(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return error(51001, "Instrument ID does not exist")
    row = front.wire.get("/v5/market/tickers", category=market.category, symbol=market.symbol)["result"][
        "list"
    ][0]
    return ok(
        [
            {
                "instType": market.inst_type,
                "instId": market.inst_id,
                "last": row["lastPrice"],
                "bidPx": row["bid1Price"],
                "askPx": row["ask1Price"],
                "bidSz": okx.n(market.contracts(okx.d(row.get("bid1Size")))),
                "askSz": okx.n(market.contracts(okx.d(row.get("ask1Size")))),
                "ts": str(int(time.time() * 1000)),
            }
        ]
    )


def mark_price(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None or market.category != "linear":
        return error(51001, "Instrument ID does not exist")
    row = front.wire.get("/v5/market/tickers", category="linear", symbol=market.symbol)["result"]["list"][0]
    stamp = str(int(time.time() * 1000))
    return ok([{"instType": "SWAP", "instId": market.inst_id, "markPx": row["markPrice"], "ts": stamp}])


def books(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return error(51001, "Instrument ID does not exist")
    book = front.wire.get(
        "/v5/market/orderbook", category=market.category, symbol=market.symbol, limit=params.get("sz", "25")
    )["result"]

    def levels(entries: list[list[str]]) -> list[list[str]]:
        return [[price, okx.n(market.contracts(okx.d(size))), "0", "1"] for price, size in entries]

    return ok(
        [{"bids": levels(book.get("b") or []), "asks": levels(book.get("a") or []), "ts": str(book["ts"])}]
    )


def price_limit(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return error(51001, "Instrument ID does not exist")
    band = front.wire.get("/v5/market/price-limit", category=market.category, symbol=market.symbol)["result"]
    stamp = str(int(time.time() * 1000))
    return ok(
        [
            {
                "instType": market.inst_type,
                "instId": market.inst_id,
                "buyLmt": band["buyLmt"],
                "sellLmt": band["sellLmt"],
                "ts": stamp,
                "enabled": True,
            }
        ]
    )


# ---- account -----------------------------------------------------------------------------------------


def config(front: OkxFront, params: Params) -> Row:
    """GET /api/v5/account/config in the fields of OKX's docs' example (docs-v5, Account > "Get account
    configuration": uid, mainUid (the main account's own key when uid = mainUid), acctLv, posMode, autoLoan,
    perm as "read_only,trade,withdraw", ip comma-separated or "" when unbound, label, level), from the front's
    own state."""
    return ok(
        [
            {
                "uid": front.uid,
                "mainUid": front.main_uid,
                "acctLv": "2",
                "posMode": front.position_mode,
                "autoLoan": False,
                "perm": front.perm,
                "ip": front.ip,
                "label": "pilot tests",
                "level": "Lv1",
            }
        ]
    )


def cancel_all_after(front: OkxFront, params: Params) -> Row:
    """POST /api/v5/trade/cancel-all-after as OKX's docs answer it (docs-v5, Trade > "Cancel All After":
    request {"timeOut":"60"}, response {"code":"0","msg":"","data":[{"triggerTime":"1587971460","tag":"",
    "ts":"1587971400"}]}; here in milliseconds, as the field descriptions say). timeOut 0 or 10-120."""
    seconds = int(str(params["timeOut"]))
    if seconds != 0 and not 10 <= seconds <= 120:
        return error(51000, "Parameter timeOut error")
    front.countdown = seconds
    now = int(time.time() * 1000)
    trigger = now + seconds * 1000 if seconds else 0
    return ok([{"triggerTime": str(trigger), "tag": "", "ts": str(now)}])


def balance(front: OkxFront, params: Params) -> Row:
    return ok([okx.balance(front.wire.get("/v5/account/wallet-balance", accountType="UNIFIED")["result"])])


def positions(front: OkxFront, params: Params) -> Row:
    found: list[Row] = []
    for market in _listed(front, params):
        if market.category != "linear":
            continue
        for row in front.wire.get("/v5/position/list", category="linear", symbol=market.symbol)["result"][
            "list"
        ]:
            if okx.d(row.get("size")) != 0:
                found += okx.position(market, row, front.position_mode)
    return ok(found)


def leverage_info(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None or market.category != "linear":
        return error(51001, "Instrument ID does not exist")
    rows = front.wire.get("/v5/position/list", category="linear", symbol=market.symbol)["result"]["list"]
    lever = rows[0]["leverage"] if rows else "10"
    return ok(
        [
            {
                "instId": market.inst_id,
                "mgnMode": params.get("mgnMode", "cross"),
                "posSide": "net",
                "lever": lever,
            }
        ]
    )


def set_leverage(front: OkxFront, params: Params) -> Row:
    market = _market(front, params)
    if market is None:
        return error(51001, "Instrument ID does not exist")
    lever = str(params.get("lever"))
    body = {"category": "linear", "symbol": market.symbol, "buyLeverage": lever, "sellLeverage": lever}
    answer = front.wire.post("/v5/position/set-leverage", body)
    if answer["retCode"] not in (0, 110043):  # 110043: unchanged, which OKX answers as any other success
        return error(
            59102 if answer["retCode"] == 10001 else okx.okx_code(answer["retCode"]), answer["retMsg"]
        )
    return ok(
        [
            {
                "instId": market.inst_id,
                "lever": lever,
                "mgnMode": params.get("mgnMode", "cross"),
                "posSide": "net",
            }
        ]
    )


def streams_url(front: OkxFront, params: Params) -> Row:
    """GET /pilot/streams (Pilot's, not OKX's): where the front's WebSocket side listens, so that `pilot serve
    --exchange okx-demo --streams` on a key stored at the front's address finds it, as a `pilot sim` names
    its own."""
    return ok([{"url": front.ws_url}])


# ---- the endpoints, by method and path ---------------------------------------------------------------

Handler = Callable[["OkxFront", Params], Row]
PUBLIC: dict[tuple[str, str], Handler] = {
    ("GET", "/api/v5/public/instruments"): instruments,
    ("GET", "/api/v5/public/position-tiers"): position_tiers,
    ("GET", "/api/v5/market/ticker"): ticker,
    ("GET", "/api/v5/public/mark-price"): mark_price,
    ("GET", "/api/v5/market/books"): books,
    ("GET", "/api/v5/public/price-limit"): price_limit,
    ("GET", "/pilot/streams"): streams_url,
}
ACCOUNT: dict[tuple[str, str], Handler] = {
    ("GET", "/api/v5/account/config"): config,
    ("GET", "/api/v5/account/balance"): balance,
    ("GET", "/api/v5/account/positions"): positions,
    ("GET", "/api/v5/account/leverage-info"): leverage_info,
    ("POST", "/api/v5/account/set-leverage"): set_leverage,
    ("POST", "/api/v5/trade/cancel-all-after"): cancel_all_after,
}
