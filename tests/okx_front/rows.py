"""The paper exchange's Bybit rows as OKX's v5 rows (docs-v5's field names, sizes in contracts, string
numbers), and Bybit's retCodes as OKX's codes: what the OKX front answers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pilot.core.violations import plain

from .paper_wire import LOT, Market

Row = dict[str, Any]

STATES = {
    "New": "live",
    "Untriggered": "live",
    "PartiallyFilled": "partially_filled",
    "Filled": "filled",
}
ORD_TYPES = {"GTC": "limit", "IOC": "ioc", "PostOnly": "post_only", "FOK": "fok"}
WHOLE = ("StopLoss", "TakeProfit")
PARTIAL = ("PartialStopLoss", "PartialTakeProfit")
SPOT_TPSL = "tpslOrder"  # a spot TP/SL order on the paper exchange (pilot/paper/spot_stops.py)
FALL = 2  # Bybit's triggerDirection: the price falls to the trigger
# Bybit's retCode -> OKX's code, for the answers the paper exchange gives (anything else: 51000).
CODES = {
    110007: 51008,
    170131: 51008,
    110012: 51008,
    110044: 51008,
    110045: 51008,
    110017: 51169,
    110072: 51016,
    170141: 51016,
    110094: 51020,
    170140: 51020,
    110001: 51603,
    170213: 51603,
    10006: 50011,
    110079: 51149,  # Bybit's "processing": OKX's "order timed out", whose outcome is open
    170035: 51149,
}


def n(value: Decimal) -> str:
    return plain(value)


def d(value: Any) -> Decimal:
    return Decimal(str(value)) if value not in (None, "") else Decimal(0)


def okx_code(ret_code: int, *, missing: int = 51603) -> int:
    if ret_code in (110001, 170213):
        return missing
    return CODES.get(ret_code, 51000)


def instrument(market: Market) -> Row:
    """An instruments row: a perpetual's sizes in contracts of ct_val coins (lot 0.01), a pair's in coins."""
    lot = market.row["lotSizeFilter"]
    spot = market.category == "spot"
    step = Decimal(lot.get("qtyStep") or lot["basePrecision"])
    return {
        "instType": market.inst_type,
        "instId": market.inst_id,
        "instFamily": "" if spot else f"{market.base}-{market.quote}",
        "uly": "" if spot else f"{market.base}-{market.quote}",
        "baseCcy": market.base if spot else "",
        "quoteCcy": market.quote if spot else "",
        "settleCcy": "" if spot else market.quote,
        "ctVal": "" if spot else n(market.ct_val),
        "ctMult": "" if spot else "1",
        "ctValCcy": "" if spot else market.base,
        "ctType": "" if spot else "linear",
        "lever": "" if spot else str(market.row.get("leverageFilter", {}).get("maxLeverage", "1")),
        "tickSz": market.row["priceFilter"]["tickSize"],
        "lotSz": n(step) if spot else n(LOT),
        "minSz": lot["minOrderQty"] if spot else n(market.contracts(d(lot["minOrderQty"]))),
        "maxLmtSz": (lot.get("maxLimitOrderQty") or lot["maxOrderQty"])
        if spot
        else n(market.contracts(d(lot["maxOrderQty"]))),
        "maxMktSz": lot["maxOrderQty"] if spot else n(market.contracts(d(lot["maxOrderQty"]))),
        "state": "live",
        "listTime": "1573557408000",
    }


def order(market: Market, row: Row) -> Row:
    """An ordinary order as orders-pending / orders-history / order list it."""
    status = row["orderStatus"]
    filled = d(row["cumExecQty"])
    state = STATES.get(status, "canceled")
    attached = []
    if row.get("stopLoss") or row.get("takeProfit"):
        attached.append(
            {
                "attachAlgoId": "7" + row["orderId"][-8:].replace("-", "0"),
                "attachAlgoClOrdId": "",
                "slTriggerPx": row.get("stopLoss") or "",
                "slOrdPx": "-1" if row.get("stopLoss") else "",
                "slTriggerPxType": "last" if row.get("stopLoss") else "",
                "tpTriggerPx": row.get("takeProfit") or "",
                "tpOrdPx": "-1" if row.get("takeProfit") else "",
                "tpTriggerPxType": "last" if row.get("takeProfit") else "",
            }
        )
    fee = d(row.get("cumExecFee"))
    return {
        "instType": market.inst_type,
        "instId": market.inst_id,
        "ordId": row["orderId"],
        "clOrdId": row["orderLinkId"],
        "px": row["price"] if row["orderType"] == "Limit" else "",
        "sz": n(market.contracts(d(row["qty"]))),
        "ordType": "market" if row["orderType"] == "Market" else ORD_TYPES.get(row["timeInForce"], "limit"),
        "side": row["side"].lower(),
        "posSide": "net",
        "tdMode": "cash" if market.category == "spot" else "cross",
        "accFillSz": n(market.contracts(filled)),
        "avgPx": row.get("avgPrice") or "",
        "state": state,
        "lever": "" if market.category == "spot" else "1",
        "fee": n(-fee),
        "feeCcy": next(iter(row.get("cumFeeDetail") or {}), market.quote) if fee else "",
        "reduceOnly": "true" if row.get("reduceOnly") else "false",
        "attachAlgoOrds": attached,
        "cancelSource": "",
        "cancelSourceReason": row.get("rejectReason")
        if row.get("rejectReason") not in ("EC_NoError", "")
        else "",
        "cTime": row["createdTime"],
        "uTime": row["updatedTime"],
    }


def whole_algo(market: Market, legs: list[Row]) -> Row:
    """The position's whole TP/SL (Bybit's Full legs) as one OKX algo order with closeFraction 1."""
    stop = next((leg for leg in legs if leg["stopOrderType"] == "StopLoss"), None)
    target = next((leg for leg in legs if leg["stopOrderType"] == "TakeProfit"), None)
    first = stop or target or legs[0]
    return _algo(
        market,
        first,
        algo_id=market.whole_algo_id,
        ord_type="oco" if stop and target else "conditional",
        stop=stop["triggerPrice"] if stop else "",
        target=target["triggerPrice"] if target else "",
        close_fraction="1",
        size="",
    )


def partial_algo(market: Market, leg: Row) -> Row:
    """A partial TP/SL leg (Bybit's PartialStopLoss / PartialTakeProfit) as an OKX conditional algo order."""
    stop = leg["stopOrderType"] == "PartialStopLoss"
    return _algo(
        market,
        leg,
        algo_id=leg["orderId"],
        ord_type="conditional",
        stop=leg["triggerPrice"] if stop else "",
        target="" if stop else leg["triggerPrice"],
        close_fraction="",
        size=n(market.contracts(d(leg["qty"]) - d(leg["cumExecQty"]))),
    )


def spot_algo(market: Market, leg: Row) -> Row:
    """A spot TP/SL order (Bybit's tpslOrder, one per price) as the OKX conditional algo order a spot order's
    attachAlgoOrds become: selling (or buying) the coin in cash mode, its stop-loss leg below the price and
    its take-profit leg above (the paper exchange's triggerDirection says which)."""
    stop = int(leg.get("triggerDirection") or 0) == FALL
    row = _algo(
        market,
        leg,
        algo_id=leg["orderId"],
        ord_type="conditional",
        stop=leg["triggerPrice"] if stop else "",
        target="" if stop else leg["triggerPrice"],
        close_fraction="",
        size=n(d(leg["qty"]) - d(leg["cumExecQty"])),
    )
    return {**row, "tdMode": "cash", "posSide": "", "reduceOnly": "false"}


def _algo(
    market: Market,
    leg: Row,
    *,
    algo_id: str,
    ord_type: str,
    stop: str,
    target: str,
    close_fraction: str,
    size: str,
) -> Row:
    return {
        "instType": market.inst_type,
        "instId": market.inst_id,
        "algoId": algo_id,
        "algoClOrdId": "",
        "ordType": ord_type,
        "state": "live",
        "side": leg["side"].lower(),
        "posSide": "net",
        "tdMode": "cross",
        "sz": size,
        "closeFraction": close_fraction,
        "reduceOnly": "true",
        "slTriggerPx": stop,
        "slOrdPx": "-1" if stop else "",
        "slTriggerPxType": "last" if stop else "",
        "tpTriggerPx": target,
        "tpOrdPx": "-1" if target else "",
        "tpTriggerPxType": "last" if target else "",
        "cTime": leg["createdTime"],
        "uTime": leg["updatedTime"],
    }


def position(market: Market, row: Row, mode: str) -> list[Row]:
    """A Bybit position as OKX's row(s): one net row (pos signed, in contracts), or in long/short mode a leg."""
    size = market.contracts(d(row["size"]))
    signed = -size if row["side"] == "Sell" else size
    close_algo = []
    if row.get("stopLoss") or row.get("takeProfit"):
        close_algo.append(
            {
                "algoId": market.whole_algo_id,
                "slTriggerPx": row.get("stopLoss") or "",
                "slTriggerPxType": "last" if row.get("stopLoss") else "",
                "tpTriggerPx": row.get("takeProfit") or "",
                "tpTriggerPxType": "last" if row.get("takeProfit") else "",
                "closeFraction": "1",
            }
        )
    leg = "net" if mode == "net_mode" else ("long" if signed > 0 else "short")
    return [
        {
            "instType": "SWAP",
            "instId": market.inst_id,
            "posId": "8" + market.whole_algo_id,
            "posSide": leg,
            "pos": n(signed if leg == "net" else size),
            "mgnMode": "cross",
            "avgPx": row["avgPrice"],
            "markPx": row["markPrice"],
            "lever": row["leverage"],
            "upl": row.get("unrealisedPnl") or "0",
            "liqPx": row.get("liqPrice") or "",
            "notionalUsd": n(abs(d(row["size"])) * d(row["markPrice"])),
            "ccy": market.quote,
            "closeOrderAlgo": close_algo,
            "cTime": row["createdTime"],
            "uTime": row["updatedTime"],
        }
    ]


def fill(market: Market, row: Row, pnl: Decimal | None) -> Row:
    """An execution as a /api/v5/trade/fills row: fee negative when charged, fillPnl on closing fills."""
    return {
        "instType": market.inst_type,
        "instId": market.inst_id,
        "tradeId": row["execId"],
        "billId": row["execId"],
        "ordId": row["orderId"],
        "clOrdId": row["orderLinkId"],
        "side": row["side"].lower(),
        "posSide": "net",
        "fillPx": row["execPrice"],
        "fillSz": n(market.contracts(d(row["execQty"]))),
        "fee": n(-d(row["execFee"])),
        "feeCcy": row.get("feeCurrency") or market.quote,
        "fillPnl": n(pnl) if pnl is not None else "0",
        "execType": "M" if row.get("isMaker") else "T",
        "ts": row["execTime"],
        "fillTime": row["execTime"],
    }


def balance(result: Row) -> Row:
    """The unified wallet as /api/v5/account/balance: totalEq, availEq and each coin's cash and holds."""
    wallet = result["list"][0]
    details = []
    for coin in wallet.get("coin") or []:
        cash, locked = d(coin.get("walletBalance")), d(coin.get("locked"))
        details.append(
            {
                "ccy": coin["coin"],
                "cashBal": n(cash),
                "eq": n(d(coin.get("equity"))),
                "eqUsd": n(d(coin.get("usdValue"))),
                "availBal": n(cash - locked),
                "frozenBal": n(locked),
                "ordFrozen": n(locked),
                "upl": n(d(coin.get("unrealisedPnl"))),
            }
        )
    return {
        "totalEq": wallet.get("totalEquity") or "0",
        "availEq": wallet.get("totalAvailableBalance") or "",
        "adjEq": wallet.get("totalEquity") or "0",
        "details": details,
        "uTime": "0",
    }
