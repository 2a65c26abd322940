"""The paper exchange speaks Bybit V5 as pybit sees it: shapes, signing, recv window, rate limits, codes."""

from __future__ import annotations

import hashlib
import hmac
import time

import pytest
import requests
from pybit.exceptions import FailedRequestError, InvalidRequestError

from tests.exchange.conftest import raw_session

ENVELOPE = {"retCode", "retMsg", "result", "retExtInfo", "time"}


def ret_code(call, **params) -> int:
    with pytest.raises(InvalidRequestError) as caught:
        call(**params)
    return caught.value.status_code


def buy_btc(session, qty="0.00031", price="80300", tif="IOC", link=None, **extra):
    params = dict(
        category="linear",
        symbol="BTCUSDT",
        side="Buy",
        orderType="Limit",
        qty=qty,
        price=price,
        timeInForce=tif,
        **extra,
    )
    if link:
        params["orderLinkId"] = link
    return session.place_order(**params)


def test_public_market_endpoints_answer_in_bybit_shapes(session):
    time_result = session.get_server_time()
    assert set(time_result) == ENVELOPE and time_result["retCode"] == 0
    assert time_result["result"]["timeSecond"].isdigit()
    ticker = session.get_tickers(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert (ticker["bid1Price"], ticker["ask1Price"], ticker["markPrice"]) == (
        "80220.0",
        "80220.1",
        "80220.0",
    )
    spot = session.get_tickers(category="spot", symbol="BTCUSDT")["result"]["list"][0]
    assert "markPrice" not in spot and "usdIndexPrice" in spot
    book = session.get_orderbook(category="linear", symbol="BTCUSDT", limit=3)["result"]
    assert [level[0] for level in book["b"]] == ["80220.0", "80219.9", "80219.8"]
    assert [level[0] for level in book["a"]] == ["80220.1", "80220.2", "80220.3"]
    assert isinstance(book["ts"], int) and book["s"] == "BTCUSDT"
    candles = session.get_kline(category="linear", symbol="BTCUSDT", interval="1", limit=3)["result"]["list"]
    assert len(candles) == 3 and len(candles[0]) == 7 and int(candles[0][0]) > int(candles[1][0])
    limits = session.get_price_limit(category="linear", symbol="BTCUSDT")["result"]
    assert float(limits["buyLmt"]) > 80220.1 > 80220.0 > float(limits["sellLmt"])
    tiers = session.get_risk_limit(category="linear", symbol="SOLUSDT")["result"]["list"]
    assert tiers[0]["maintenanceMargin"] == "0.01"


def test_instruments_info_writes_linear_and_spot_rules_as_bybit_does(session):
    linear = session.get_instruments_info(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert linear["priceFilter"]["tickSize"] == "0.1"
    assert linear["lotSizeFilter"]["qtyStep"] == "0.00001"
    assert linear["leverageFilter"]["maxLeverage"] == "100.00"
    spot = session.get_instruments_info(category="spot", symbol="BTCUSDT")["result"]["list"][0]
    assert "qtyStep" not in spot["lotSizeFilter"] and "leverageFilter" not in spot
    assert spot["lotSizeFilter"]["basePrecision"] == "0.000001"
    everything = session.get_instruments_info(category="linear", limit=2)["result"]
    assert len(everything["list"]) == 2 and everything["nextPageCursor"]
    rest = session.get_instruments_info(category="linear", limit=2, cursor=everything["nextPageCursor"])
    assert [row["symbol"] for row in rest["result"]["list"]] == ["SOLUSDT"]


def test_signed_order_lifecycle_over_every_trade_endpoint(paper, session):
    resting = session.place_order(
        category="linear",
        symbol="ETHUSDT",
        side="Buy",
        orderType="Limit",
        qty="0.01",
        price="3000",
        orderLinkId="rest-1",
    )["result"]
    open_rows = session.get_open_orders(category="linear", symbol="ETHUSDT")["result"]["list"]
    assert [(r["orderId"], r["orderStatus"], r["positionIdx"]) for r in open_rows] == [
        (resting["orderId"], "New", 0)
    ]
    session.amend_order(category="linear", symbol="ETHUSDT", orderLinkId="rest-1", price="3001")
    assert paper.open_orders("ETHUSDT")[0].price == 3001
    cancelled = session.cancel_order(category="linear", symbol="ETHUSDT", orderId=resting["orderId"])
    assert cancelled["result"]["orderLinkId"] == "rest-1"
    history = session.get_order_history(category="linear", orderLinkId="rest-1")["result"]["list"]
    assert history[0]["orderStatus"] == "Cancelled" and history[0]["cancelType"] == "CancelByUser"
    for price in ("2990", "2980"):
        session.place_order(
            category="linear", symbol="ETHUSDT", side="Buy", orderType="Limit", qty="0.01", price=price
        )
    gone = session.cancel_all_orders(category="linear", symbol="ETHUSDT")["result"]
    assert len(gone["list"]) == 2 and gone["success"] == "1" and paper.open_orders() == []


def test_fill_shows_in_executions_positions_and_wallet(session):
    order = buy_btc(session, link="fill-1")["result"]
    fills = session.get_executions(category="linear", symbol="BTCUSDT", orderId=order["orderId"])["result"][
        "list"
    ]
    assert [(f["execPrice"], f["execQty"], f["isMaker"]) for f in fills] == [("80220.1", "0.00031", False)]
    position = session.get_positions(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert (position["side"], position["size"], position["avgPrice"]) == ("Buy", "0.00031", "80220.1")
    assert isinstance(position["positionIdx"], int) and position["leverage"] == "10"
    account = session.get_wallet_balance(accountType="UNIFIED")["result"]["list"][0]
    assert account["accountType"] == "UNIFIED" and float(account["totalEquity"]) < 1000
    assert [c["coin"] for c in account["coin"]] == ["USDT"]


def test_leverage_and_trading_stop(paper, session):
    session.set_leverage(category="linear", symbol="BTCUSDT", buyLeverage="5", sellLeverage="5")
    assert paper.position("BTCUSDT").leverage == 5
    assert (
        ret_code(session.set_leverage, category="linear", symbol="BTCUSDT", buyLeverage="5", sellLeverage="5")
        == 110043
    )
    assert (
        ret_code(
            session.set_trading_stop,
            category="linear",
            symbol="BTCUSDT",
            tpslMode="Full",
            positionIdx=0,
            stopLoss="70000",
        )
        == 10001
    )
    buy_btc(session)
    session.set_trading_stop(
        category="linear", symbol="BTCUSDT", tpslMode="Full", positionIdx=0, stopLoss="70000"
    )
    assert paper.position("BTCUSDT").stop_loss == 70000


def test_query_api_reports_the_scenario_permissions(session):
    info = session.get_api_key_information()["result"]
    assert info["readOnly"] == 0 and info["secret"] == ""
    assert (
        info["permissions"]["ContractTrade"] == ["Order", "Position"] and info["permissions"]["Wallet"] == []
    )


def signed_get(paper, path: str, query: str, *, key=None, secret=None, timestamp=None, window="5000"):
    stamp = str(timestamp if timestamp is not None else int(time.time() * 1000))
    key = key or paper.api_key
    payload = f"{stamp}{key}{window}{query}".encode()
    signature = hmac.new((secret or paper.api_secret).encode(), payload, hashlib.sha256).hexdigest()
    headers = {
        "X-BAPI-API-KEY": key,
        "X-BAPI-SIGN": signature,
        "X-BAPI-TIMESTAMP": stamp,
        "X-BAPI-RECV-WINDOW": window,
    }
    return requests.get(f"{paper.url}{path}?{query}", headers=headers, timeout=2).json()["retCode"]


def test_signature_is_checked_over_the_raw_query(paper):
    query = "accountType=UNIFIED"
    assert signed_get(paper, "/v5/account/wallet-balance", query) == 0
    assert signed_get(paper, "/v5/account/wallet-balance", query, secret="not-the-secret") == 10004
    assert signed_get(paper, "/v5/account/wallet-balance", query, key="unknown-key") == 10003


def test_stale_and_future_timestamps_are_outside_the_recv_window(paper):
    now = int(time.time() * 1000)
    assert (
        signed_get(paper, "/v5/account/wallet-balance", "accountType=UNIFIED", timestamp=now - 10_000)
        == 10002
    )
    assert (
        signed_get(paper, "/v5/account/wallet-balance", "accountType=UNIFIED", timestamp=now + 5_000) == 10002
    )


def test_pybit_with_a_wrong_secret_is_refused_with_10004(paper):
    wrong = raw_session(paper, api_secret="wrong-secret")
    assert ret_code(wrong.get_wallet_balance, accountType="UNIFIED") == 10004


def test_missing_auth_headers_get_http_401(paper):
    assert (
        requests.get(f"{paper.url}/v5/order/realtime?category=linear&symbol=BTCUSDT", timeout=2).status_code
        == 401
    )


def test_rate_limit_headers_on_every_answer_and_10006_with_a_future_reset(session):
    session.return_response_headers = True
    _, _, headers = session.get_wallet_balance(accountType="UNIFIED")
    assert (headers["X-Bapi-Limit"], headers["X-Bapi-Limit-Status"]) == ("50", "49")
    for _ in range(10):
        session.place_order(
            category="linear", symbol="ETHUSDT", side="Buy", orderType="Limit", qty="0.01", price="3000"
        )
    with pytest.raises(InvalidRequestError) as caught:
        session.place_order(
            category="linear", symbol="ETHUSDT", side="Buy", orderType="Limit", qty="0.01", price="3000"
        )
    assert caught.value.status_code == 10006
    assert int(caught.value.resp_headers["X-Bapi-Limit-Reset-Timestamp"]) > time.time() * 1000


def test_unknown_path_is_http_404(session):
    with pytest.raises(FailedRequestError) as caught:
        session._submit_request(method="GET", path=f"{session.endpoint}/v5/nothing/here", query={})
    assert caught.value.status_code == 404
