"""pybit's HTTP flows on the paper exchange: what Pilot and a trader's own scripts call, answered as Bybit does.

Each test is one flow through pybit 5.17's own methods (no request built by hand), asserting on the numbers
and states Bybit's pages say it should answer. The paper exchange stands still (speed 0) unless a test moves
its prices, so every figure is exact.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.request
from decimal import Decimal
from typing import Any

import pytest
from pybit.exceptions import InvalidRequestError
from pybit.unified_trading import HTTP

from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.scenario import scenario_document


def code_of(call: Any, **params: Any) -> int:
    with pytest.raises(InvalidRequestError) as refused:
        call(**params)
    return int(refused.value.status_code)


def result(answer: dict[str, Any]) -> Any:
    assert answer["retCode"] == 0, answer
    return answer["result"]


def buy(session: HTTP, qty: str = "0.002", **extra: Any) -> str:
    params = {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": qty}
    return str(result(session.place_order(**params | extra))["orderId"])


def test_market_data_the_clients_read(session: HTTP, paper: PaperExchange) -> None:
    assert int(result(session.get_server_time())["timeSecond"]) == paper.now_ms() // 1000
    linear = result(session.get_instruments_info(category="linear", symbol="BTCUSDT"))["list"][0]
    assert (linear["priceFilter"]["tickSize"], linear["lotSizeFilter"]["qtyStep"]) == ("0.1", "0.001")
    ticker = result(session.get_tickers(category="linear", symbol="BTCUSDT"))["list"][0]
    assert (ticker["bid1Price"], ticker["ask1Price"], ticker["markPrice"]) == (
        "80220.00",
        "80220.10",
        "80220.00",
    )
    book = result(session.get_orderbook(category="spot", symbol="ETHUSDT", limit=3))
    assert [level[0] for level in book["a"]] == ["3100.01", "3100.02", "3100.03"]
    band = result(session.get_price_limit(category="linear", symbol="BTCUSDT"))
    assert Decimal(band["sellLmt"]) < Decimal("80220.05") < Decimal(band["buyLmt"])
    tier = result(session.get_risk_limit(category="linear", symbol="BTCUSDT"))["list"][0]
    assert tier["isLowestRisk"] == 1


def test_klines_and_trades_come_from_the_exchanges_own_moves_and_fills(
    session: HTTP, paper: PaperExchange
) -> None:
    assert result(session.get_public_trade_history(category="linear", symbol="BTCUSDT"))["list"] == []
    buy(session)
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
    paper.advance(60_000)
    (trade,) = result(session.get_public_trade_history(category="linear", symbol="BTCUSDT", limit=5))["list"]
    assert (trade["price"], trade["size"], trade["side"], trade["isBlockTrade"]) == (
        "80220.10",
        "0.002",
        "Buy",
        False,
    )
    bars = result(session.get_kline(category="linear", symbol="BTCUSDT", interval="1", limit=2))["list"]
    newest, before = bars
    assert int(newest[0]) - int(before[0]) == 60_000  # newest first, a minute apart
    assert (before[1], before[2], before[5]) == ("80220.00", "81000.00", "0.002")  # open, high, volume
    marks = result(session.get_mark_price_kline(category="linear", symbol="BTCUSDT", interval="1", limit=1))
    assert marks["list"][0][4] == "81000.05"  # the mark's close: the new quote's mid (set_prices)


def test_funding_history_and_open_interest(session: HTTP) -> None:
    rates = result(session.get_funding_rate_history(category="linear", symbol="BTCUSDT", limit=3))["list"]
    times = [int(row["fundingRateTimestamp"]) for row in rates]
    assert len(rates) == 3 and times[0] - times[1] == 8 * 3_600_000 and times[0] % (8 * 3_600_000) == 0
    code = code_of(session.get_funding_rate_history, category="linear", symbol="BTCUSDT", startTime=1)
    assert code == 10001  # history-fund-rate.mdx: startTime alone is an error
    buy(session, "0.004")
    interest = result(session.get_open_interest(category="linear", symbol="BTCUSDT", intervalTime="5min"))
    assert interest["list"][0]["openInterest"] == "0.004"


def test_funding_settles_into_executions_and_the_transaction_log() -> None:
    document = scenario_document()
    for instrument in document["instruments"]:
        if instrument["category"] == "linear":
            instrument["fundingRate"] = "0.0001"
    with start_paper_exchange(document, speed=0) as paper:
        session = HTTP(api_key=paper.api_key, api_secret=paper.api_secret, max_retries=1, timeout=5)
        session.endpoint, session.client.trust_env = paper.url, False
        buy(session, "0.01")
        paper.advance(paper.next_funding_ms("BTCUSDT") - paper.now_ms())
        fills = result(session.get_executions(category="linear", symbol="BTCUSDT", execType="Funding"))[
            "list"
        ]
        funding = [row for row in fills if row["execType"] == "Funding"]
        assert [(row["execQty"], row["feeRate"]) for row in funding] == [("0.010", "0.0001")]
        log = result(session.get_transaction_log(accountType="UNIFIED", category="linear", type="SETTLEMENT"))
        (settled,) = log["list"]
        assert Decimal(settled["funding"]) == -Decimal(funding[0]["execFee"]) < 0  # a long pays


def test_account_reads(session: HTTP, paper: PaperExchange) -> None:
    wallet = result(session.get_wallet_balance(accountType="UNIFIED"))["list"][0]
    assert (wallet["totalEquity"], wallet["coin"][0]["coin"]) == ("1000", "USDT")
    fees = result(session.get_fee_rates(category="linear", symbol="BTCUSDT"))["list"]
    assert fees == [{"symbol": "BTCUSDT", "takerFeeRate": "0.00055", "makerFeeRate": "0.0002"}]
    key = result(session.get_api_key_information())
    assert (key["apiKey"], key["readOnly"], key["userIDInt64"]) == (paper.api_key, 0, "0")
    assert result(session.get_account_info())["unifiedMarginStatus"] == 6
    coins = {row["coin"] for row in result(session.get_coin_info())["rows"]}
    assert {"BTC", "ETH", "SOL", "USDT"} <= coins
    balance = result(session.get_coin_balance(accountType="UNIFIED", coin="USDT"))["balance"]
    assert (balance["walletBalance"], balance["transferBalance"]) == ("1000", "1000")


def test_a_resting_order_is_amended_cancelled_and_still_found_by_its_id(session: HTTP) -> None:
    placed = result(
        session.place_order(
            category="linear", symbol="BTCUSDT", side="Buy", orderType="Limit", qty="0.001", price="79000",
            orderLinkId="rest-1",
        )
    )  # fmt: skip
    (open_,) = result(session.get_open_orders(category="linear", symbol="BTCUSDT"))["list"]
    assert (open_["orderId"], open_["orderStatus"]) == (placed["orderId"], "New")
    result(session.amend_order(category="linear", symbol="BTCUSDT", orderLinkId="rest-1", price="79100"))
    result(session.cancel_order(category="linear", symbol="BTCUSDT", orderId=placed["orderId"]))
    assert result(session.get_open_orders(category="linear", symbol="BTCUSDT"))["list"] == []
    (by_id,) = result(
        session.get_open_orders(category="linear", symbol="BTCUSDT", orderId=placed["orderId"])
    )["list"]
    assert (by_id["orderStatus"], by_id["price"]) == ("Cancelled", "79100.00")  # by id: whatever its status
    (by_link,) = result(session.get_order_history(category="linear", orderLinkId="rest-1"))["list"]
    assert by_link["orderId"] == placed["orderId"]


def test_a_filled_order_its_fills_position_and_closed_pnl(session: HTTP) -> None:
    order_id = buy(session)
    (filled,) = result(session.get_open_orders(category="linear", symbol="BTCUSDT", orderId=order_id))["list"]
    assert (filled["orderStatus"], filled["cumExecQty"], filled["avgPrice"]) == ("Filled", "0.002", "80220.1")
    (fill,) = result(session.get_executions(category="linear", orderId=order_id))["list"]
    assert (fill["execQty"], fill["execPrice"], fill["isMaker"]) == ("0.002", "80220.10", False)
    (position,) = result(session.get_positions(category="linear", symbol="BTCUSDT"))["list"]
    assert (position["side"], position["size"], position["avgPrice"]) == ("Buy", "0.002", "80220.1")
    result(session.place_order(
        category="linear", symbol="BTCUSDT", side="Sell", orderType="Market", qty="0.002", reduceOnly=True
    ))  # fmt: skip
    (flat,) = result(session.get_positions(category="linear", symbol="BTCUSDT"))["list"]
    assert (flat["side"], flat["size"]) == ("", "0")  # a flat position's size is "0"
    (closed,) = result(session.get_closed_pnl(category="linear", symbol="BTCUSDT"))["list"]
    assert (closed["closedSize"], closed["avgEntryPrice"], closed["avgExitPrice"]) == (
        "0.002",
        "80220.1",
        "80220",
    )
    wallet = result(session.get_wallet_balance(accountType="UNIFIED", coin="USDT"))["list"][0]["coin"][0]
    assert Decimal(wallet["cumRealisedPnl"]) == Decimal(wallet["walletBalance"]) - 1000 < 0  # fees and spread
    log = result(session.get_transaction_log(accountType="UNIFIED", category="linear"))["list"]
    assert [row["type"] for row in log] == ["TRADE", "TRADE"]
    assert Decimal(log[0]["cashBalance"]) == Decimal(wallet["walletBalance"])


def test_a_batch_creates_each_order_with_its_own_code(session: HTTP) -> None:
    orders = [
        {"symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.001", "price": "79000"},
        {"symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.0001", "price": "79000"},
        {
            "symbol": "ETHUSDT",
            "side": "Sell",
            "orderType": "Limit",
            "qty": "0.01",
            "price": "3200",
            "orderLinkId": "b3",
        },
    ]
    answer = session.place_batch_order(category="linear", request=orders)
    assert [row["code"] for row in answer["retExtInfo"]["list"]] == [0, 10001, 0]
    made = answer["result"]["list"]
    assert (bool(made[0]["orderId"]), made[1]["orderId"], made[2]["orderLinkId"]) == (True, "", "b3")
    assert code_of(session.place_batch_order, category="spot", request=orders[:1] * 11) == 10001
    cancelled = result(session.cancel_all_orders(category="linear", settleCoin="USDT"))["list"]
    assert len(cancelled) == 2


def test_take_profit_and_stop_loss_with_an_order_and_by_trading_stop(
    session: HTTP, paper: PaperExchange
) -> None:
    buy(session, "0.002", takeProfit="90000", stopLoss="75000")
    (position,) = result(session.get_positions(category="linear", symbol="BTCUSDT"))["list"]
    assert (position["takeProfit"], position["stopLoss"]) == ("90000", "75000")
    result(
        session.set_trading_stop(
            category="linear", symbol="BTCUSDT", tpslMode="Full", stopLoss="78000", positionIdx=0
        )
    )
    stops = result(session.get_open_orders(category="linear", symbol="BTCUSDT", orderFilter="StopOrder"))[
        "list"
    ]
    assert sorted((o["stopOrderType"], o["triggerPrice"]) for o in stops) == [
        ("StopLoss", "78000.00"),
        ("TakeProfit", "90000.00"),
    ]
    paper.set_prices("BTCUSDT", bid="77900", ask="77900.1")
    (flat,) = result(session.get_positions(category="linear", symbol="BTCUSDT"))["list"]
    assert flat["size"] == "0"


def test_a_conditional_order_waits_for_its_trigger(session: HTTP, paper: PaperExchange) -> None:
    order_id = buy(session, "0.001", triggerPrice="81000", triggerDirection=1)
    (waiting,) = result(session.get_open_orders(category="linear", symbol="BTCUSDT"))["list"]
    assert (waiting["orderId"], waiting["orderStatus"], waiting["stopOrderType"]) == (
        order_id,
        "Untriggered",
        "Stop",
    )
    paper.set_prices("BTCUSDT", bid="81000", ask="81000.1")
    (done,) = result(session.get_open_orders(category="linear", symbol="BTCUSDT", orderId=order_id))["list"]
    assert (done["orderStatus"], done["cumExecQty"]) == ("Filled", "0.001")


def test_leverage_and_position_mode(session: HTTP) -> None:
    result(session.set_leverage(category="linear", symbol="BTCUSDT", buyLeverage="5", sellLeverage="5"))
    assert result(session.get_positions(category="linear", symbol="BTCUSDT"))["list"][0]["leverage"] == "5"
    assert code_of(session.switch_position_mode, category="linear", symbol="BTCUSDT", mode=0) == 110025
    assert code_of(session.switch_position_mode, category="linear", symbol="BTCUSDT", mode=3) == 110029
    buy(session, "0.001")
    assert code_of(session.switch_position_mode, category="linear", symbol="BTCUSDT", mode=3) == 110024


def signed_post(paper: PaperExchange, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A create sent as a client that writes JSON numbers would send it (Bybit's V5 signature)."""
    text, stamp = json.dumps(body), str(paper.server_ms())
    signature = hmac.new(
        paper.api_secret.encode(), (stamp + paper.api_key + "5000" + text).encode(), hashlib.sha256
    ).hexdigest()
    headers = {
        "X-BAPI-API-KEY": paper.api_key,
        "X-BAPI-TIMESTAMP": stamp,
        "X-BAPI-RECV-WINDOW": "5000",
        "X-BAPI-SIGN": signature,
        "Content-Type": "application/json",
    }
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    request = urllib.request.Request(paper.url + path, data=text.encode(), headers=headers, method="POST")
    with opener.open(request, timeout=5) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return answer


@pytest.mark.parametrize(
    "qty, price", [(0.001, "79000"), ("0.001", 79000), ("1E-3", "79000"), ("0.001", "7.9E4")]
)
def test_numbers_and_exponents_are_refused_for_qty_and_price(
    paper: PaperExchange, qty: Any, price: Any
) -> None:
    body = {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit"}
    answer = signed_post(paper, "/v5/order/create", body | {"qty": qty, "price": price})
    assert (answer["retCode"], answer["retMsg"]) == (10001, "Request parameter error.")
    assert paper.orders() == []


def test_pybit_writes_a_small_float_with_an_exponent_and_bybit_refuses_it(session: HTTP) -> None:
    params = {"category": "linear", "symbol": "ETHUSDT", "side": "Buy", "orderType": "Limit", "price": "3000"}
    assert code_of(session.place_order, **params, qty=0.00001) == 10001  # pybit sends str(1e-05): "1e-05"
    assert result(session.place_order(**params, qty=0.01))["orderId"]  # "0.01" is plain digits


def test_spot_orders_move_both_coins(session: HTTP) -> None:
    result(session.place_order(category="spot", symbol="BTCUSDT", side="Buy", orderType="Market", qty="100"))
    coins = {
        c["coin"]: Decimal(c["walletBalance"])
        for c in result(session.get_wallet_balance(accountType="UNIFIED"))["list"][0]["coin"]
    }
    # a market buy's qty is in the quote coin: 100 USDT bought 0.001246 BTC (the base coin's step), fee in BTC
    assert 900 <= coins["USDT"] < Decimal("900.1")
    assert coins["BTC"] == Decimal("0.001246") * (1 - Decimal("0.00055"))
    placed = result(session.place_order(
        category="spot", symbol="BTCUSDT", side="Sell", orderType="Limit", qty="0.0005", price="90000"
    ))  # fmt: skip
    (resting,) = result(session.get_open_orders(category="spot", symbol="BTCUSDT"))["list"]
    assert resting["orderId"] == placed["orderId"] and resting["orderStatus"] == "New"


def test_a_spot_sell_with_reduce_only_is_a_plain_sell(session: HTTP) -> None:
    """create-order.mdx: reduceOnly is "Valid for linear, inverse & option"; spot leaves it aside."""
    result(session.place_order(category="spot", symbol="BTCUSDT", side="Buy", orderType="Market", qty="100"))
    placed = result(session.place_order(
        category="spot", symbol="BTCUSDT", side="Sell", orderType="Limit", qty="0.0005", price="90000",
        reduceOnly=True,
    ))  # fmt: skip
    (resting,) = result(session.get_open_orders(category="spot", orderId=placed["orderId"]))["list"]
    assert (resting["orderStatus"], resting["reduceOnly"]) == ("New", False)


def test_a_spot_take_profit_and_stop_loss_order(session: HTTP, paper: PaperExchange) -> None:
    result(session.place_order(category="spot", symbol="BTCUSDT", side="Buy", orderType="Market", qty="100"))
    placed = result(session.place_order(
        category="spot", symbol="BTCUSDT", side="Sell", orderType="Limit", qty="0.001", price="70000",
        triggerPrice="70000", orderFilter="tpslOrder",
    ))  # fmt: skip
    stops = result(session.get_open_orders(category="spot", symbol="BTCUSDT", orderFilter="tpslOrder"))[
        "list"
    ]
    assert [(o["orderId"], o["stopOrderType"], o["orderStatus"]) for o in stops] == [
        (placed["orderId"], "tpslOrder", "Untriggered")
    ]
    paper.set_prices("BTCUSDT", bid=70000, ask="70000.1")  # the last price falls to the trigger
    (done,) = result(session.get_open_orders(category="spot", orderId=placed["orderId"]))["list"]
    assert (done["orderStatus"], Decimal(done["cumExecQty"]), Decimal(done["avgPrice"])) == (
        "Filled",
        Decimal("0.001"),
        Decimal(70000),
    )


def test_a_spot_limit_buy_carrying_its_take_profit_and_stop_loss(session: HTTP) -> None:
    """A spot Limit order may carry takeProfit / stopLoss: each fill grows their tpslOrder sells."""
    result(session.place_order(
        category="spot", symbol="BTCUSDT", side="Buy", orderType="Limit", qty="0.001", price="80300",
        takeProfit="90000", stopLoss="75000",
    ))  # fmt: skip
    stops = result(session.get_open_orders(category="spot", symbol="BTCUSDT", orderFilter="tpslOrder"))[
        "list"
    ]
    assert sorted((o["side"], o["triggerPrice"]) for o in stops) == [("Sell", "75000.0"), ("Sell", "90000.0")]


def test_a_spot_conditional_order(session: HTTP) -> None:
    placed = result(session.place_order(
        category="spot", symbol="BTCUSDT", side="Buy", orderType="Limit", qty="0.001", price="81000",
        triggerPrice="81000", orderFilter="StopOrder",
    ))  # fmt: skip
    stops = result(session.get_open_orders(category="spot", symbol="BTCUSDT", orderFilter="StopOrder"))[
        "list"
    ]
    assert [o["orderId"] for o in stops] == [placed["orderId"]]
