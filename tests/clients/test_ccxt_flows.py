"""ccxt's flows on the paper exchange: ccxt's `bybit` (not written by us, not pybit), with its default options,
does what Pilot and a trader's own scripts do: markets, tickers, books, trades, OHLCV, balances, positions,
orders created, amended, cancelled and fetched open and closed, TP/SL and conditional orders, its trades,
funding, leverage and position mode. Only its URLs point at the paper exchange (conftest).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import ccxt
import pytest

from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.scenario import scenario_document
from tests.clients.conftest import REST_KINDS, UNPACED

PERP, SPOT = "BTC/USDT:USDT", "BTC/USDT"


def test_markets_load_with_default_options_currencies_included(paper: PaperExchange) -> None:
    exchange = ccxt.bybit({"apiKey": paper.api_key, "secret": paper.api_secret})  # every option its default
    exchange.urls["api"] = dict.fromkeys(REST_KINDS, paper.url)
    exchange.session.trust_env = False
    markets = exchange.load_markets()
    assert {"BTC/USDT", "ETH/USDT", "SOL/USDT", PERP, "ETH/USDT:USDT", "SOL/USDT:USDT"} <= set(markets)
    perp = markets[PERP]
    assert (perp["linear"], perp["precision"]["price"], perp["limits"]["amount"]["min"]) == (True, 0.1, 0.001)
    assert {"BTC", "ETH", "SOL", "USDT"} <= set(exchange.currencies)  # /v5/asset/coin/query-info
    assert paper.request_count("/v5/asset/coin/query-info") == 1
    assert exchange.fetch_time() == paper.now_ms()
    exchange.session.close()


def test_tickers_books_trades_and_candles(exchange: Any, paper: PaperExchange) -> None:
    ticker = exchange.fetch_ticker(PERP)
    assert (ticker["bid"], ticker["ask"], ticker["markPrice"]) == (80220.0, 80220.1, 80220.0)
    assert set(exchange.fetch_tickers([PERP, "ETH/USDT:USDT"])) == {PERP, "ETH/USDT:USDT"}
    book = exchange.fetch_order_book("ETH/USDT:USDT", 5)
    assert book["asks"][0][0] == 3100.01 and len(book["bids"]) == 5
    exchange.create_order(PERP, "market", "buy", 0.002)
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
    (trade,) = exchange.fetch_trades(PERP)
    assert (trade["side"], trade["amount"], trade["price"]) == ("buy", 0.002, 80220.1)
    (bar,) = exchange.fetch_ohlcv(PERP, "1m", limit=1)
    assert (bar[1], bar[2], bar[4], bar[5]) == (80220.0, 81000.0, 81000.0, 0.002)  # open, high, close, volume
    (mark,) = exchange.fetch_mark_ohlcv(PERP, "1m", limit=1)
    assert mark[4] == 81000.05
    day = exchange.fetch_ticker(PERP)
    assert (day["high"], day["low"], day["baseVolume"]) == (81000.0, 80220.0, 0.002)


def test_balance_positions_and_fees(exchange: Any) -> None:
    assert exchange.fetch_balance()["USDT"]["total"] == 1000
    assert [(p["symbol"], p["contracts"]) for p in exchange.fetch_positions([PERP])] == [(PERP, 0.0)]
    fee = exchange.fetch_trading_fee(PERP)
    assert (fee["taker"], fee["maker"]) == (0.00055, 0.0002)


def test_an_order_created_amended_cancelled_and_fetched(exchange: Any, paper: PaperExchange) -> None:
    placed = exchange.create_order(PERP, "limit", "buy", 0.001, 79000, {"clientOrderId": "ccxt-1"})
    assert [o["id"] for o in exchange.fetch_open_orders(PERP)] == [placed["id"]]
    exchange.edit_order(placed["id"], PERP, "limit", "buy", 0.002, 79100)
    resting = exchange.fetch_open_order(placed["id"], PERP)
    assert (resting["amount"], resting["price"], resting["status"]) == (0.002, 79100.0, "open")
    exchange.cancel_order(placed["id"], PERP)
    assert exchange.fetch_open_orders(PERP) == []
    cancelled = exchange.fetch_order(placed["id"], PERP, {"acknowledged": True})  # /v5/order/realtime by id
    assert (cancelled["status"], cancelled["clientOrderId"]) == ("canceled", "ccxt-1")
    assert [o["id"] for o in exchange.fetch_canceled_orders(PERP)] == [placed["id"]]
    (sim_order,) = paper.orders()
    assert (sim_order.order_id, sim_order.status, sim_order.qty) == (
        placed["id"],
        "Cancelled",
        Decimal("0.002"),
    )


def test_a_filled_order_its_trades_and_the_position_closed(exchange: Any) -> None:
    filled = exchange.create_order(PERP, "market", "buy", 0.002)
    fetched = exchange.fetch_order(filled["id"], PERP, {"acknowledged": True})
    assert (fetched["status"], fetched["filled"], fetched["average"]) == ("closed", 0.002, 80220.1)
    assert exchange.fetch_closed_order(filled["id"], PERP)["id"] == filled["id"]
    (mine,) = exchange.fetch_my_trades(PERP)
    assert (mine["order"], mine["amount"], mine["takerOrMaker"]) == (filled["id"], 0.002, "taker")
    (position,) = exchange.fetch_positions([PERP])
    assert (position["side"], position["contracts"], position["entryPrice"]) == ("long", 0.002, 80220.1)
    exchange.create_order(PERP, "market", "sell", 0.002, None, {"reduceOnly": True})
    assert exchange.fetch_positions([PERP])[0]["contracts"] == 0.0
    assert sorted(o["side"] for o in exchange.fetch_closed_orders(PERP)) == ["buy", "sell"]
    ledger = exchange.fetch_ledger("USDT")
    assert [entry["type"] for entry in ledger] == ["trade", "trade"]


def test_a_batch_and_cancel_all(exchange: Any, paper: PaperExchange) -> None:
    orders = [
        {"symbol": PERP, "type": "limit", "side": "buy", "amount": 0.001, "price": 79000},
        {"symbol": PERP, "type": "limit", "side": "buy", "amount": 0.001, "price": 78000},
    ]
    made = exchange.create_orders(orders)
    assert [bool(o["id"]) for o in made] == [True, True]
    assert len(exchange.fetch_open_orders(PERP)) == 2
    exchange.edit_orders([o | {"id": m["id"], "amount": 0.002} for o, m in zip(orders, made, strict=True)])
    assert [o["amount"] for o in exchange.fetch_open_orders(PERP)] == [0.002, 0.002]
    exchange.cancel_orders([made[0]["id"]], PERP)
    assert [o["id"] for o in exchange.fetch_open_orders(PERP)] == [made[1]["id"]]
    exchange.cancel_all_orders(PERP)
    assert exchange.fetch_open_orders(PERP) == []
    batches = ("/v5/order/create-batch", "/v5/order/amend-batch", "/v5/order/cancel-batch")
    assert [paper.request_count(path) for path in batches] == [1, 1, 1]


def test_take_profit_stop_loss_and_conditional_orders(exchange: Any, paper: PaperExchange) -> None:
    exchange.create_order(
        PERP,
        "market",
        "buy",
        0.002,
        None,
        {"stopLoss": {"triggerPrice": 75000}, "takeProfit": {"triggerPrice": 90000}},
    )
    (position,) = exchange.fetch_positions([PERP])
    assert (position["stopLossPrice"], position["takeProfitPrice"]) == (75000.0, 90000.0)
    trigger = exchange.create_order(
        PERP, "market", "buy", 0.001, None, {"triggerPrice": 81000, "triggerDirection": "above"}
    )
    stop = exchange.create_order(
        PERP, "market", "sell", 0.002, None, {"stopLossPrice": 76000, "reduceOnly": True}
    )
    waiting = {o["id"]: o for o in exchange.fetch_open_orders(PERP, params={"trigger": True})}
    assert {trigger["id"], stop["id"]} <= set(waiting)
    assert (waiting[trigger["id"]]["triggerPrice"], waiting[stop["id"]]["triggerPrice"]) == (81000.0, 76000.0)
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
    assert exchange.fetch_order(trigger["id"], PERP, {"acknowledged": True})["status"] == "closed"
    exchange.cancel_order(stop["id"], PERP, {"trigger": True})
    assert stop["id"] not in {o["id"] for o in exchange.fetch_open_orders(PERP, params={"trigger": True})}


def test_leverage_and_position_mode(exchange: Any) -> None:
    exchange.set_leverage(5, PERP)
    assert exchange.fetch_positions([PERP])[0]["leverage"] == 5
    with pytest.raises(ccxt.NoChange):  # 110025: one-way already
        exchange.set_position_mode(False, PERP)
    with pytest.raises(ccxt.ExchangeError):  # 110029: the paper exchange does not model hedge mode
        exchange.set_position_mode(True, PERP)


def test_funding_rates_and_payments() -> None:
    document = scenario_document()
    for instrument in document["instruments"]:
        if instrument["category"] == "linear":
            instrument["fundingRate"] = "0.0001"
    with start_paper_exchange(document, speed=0) as paper:
        client = ccxt.bybit({"apiKey": paper.api_key, "secret": paper.api_secret} | UNPACED)
        client.urls["api"] = dict.fromkeys(REST_KINDS, paper.url)
        client.session.trust_env = False
        assert client.fetch_funding_rate(PERP)["fundingRate"] == 0.0001
        history = client.fetch_funding_rate_history(PERP, limit=3)
        assert [row["fundingRate"] for row in history] == [0.0001] * 3
        client.create_order(PERP, "market", "buy", 0.01)
        paper.advance(paper.next_funding_ms("BTCUSDT") - paper.now_ms())
        (payment,) = [p for p in client.fetch_funding_history(PERP) if p["info"]["execType"] == "Funding"]
        assert payment["amount"] == pytest.approx(0.01 * 80220.05 * 0.0001, rel=1e-3)
        assert Decimal(payment["info"]["execFee"]) > 0  # a long pays at a positive rate
        client.session.close()


def test_open_interest(exchange: Any) -> None:
    exchange.create_order(PERP, "market", "buy", 0.004)
    assert exchange.fetch_open_interest(PERP)["openInterestAmount"] == 0.004


def test_spot_orders_and_balance(exchange: Any) -> None:
    exchange.create_order(SPOT, "market", "buy", 100, None, {"marketUnit": "quoteCoin"})
    balance = exchange.fetch_balance()
    assert balance["BTC"]["total"] > 0 and 900 <= balance["USDT"]["total"] < 900.1
    placed = exchange.create_order(SPOT, "limit", "sell", 0.0005, 90000)
    assert [o["id"] for o in exchange.fetch_open_orders(SPOT)] == [placed["id"]]
    exchange.cancel_order(placed["id"], SPOT)
    assert exchange.fetch_open_orders(SPOT) == []


def test_a_spot_stop_loss_order(exchange: Any) -> None:
    """ccxt sends a spot stopLossPrice as a tpslOrder (with reduceOnly, which spot leaves aside); its
    `trigger` lists the conditional orders (StopOrder), so the TP/SL ones are asked for by their filter."""
    exchange.create_order(SPOT, "market", "buy", 100, None, {"marketUnit": "quoteCoin"})
    stop = exchange.create_order(SPOT, "limit", "sell", 0.0005, 70000, {"stopLossPrice": 70000})
    tpsl = {"orderFilter": "tpslOrder"}
    (listed,) = exchange.fetch_open_orders(SPOT, params=tpsl)
    assert (listed["id"], listed["triggerPrice"], listed["status"]) == (stop["id"], 70000.0, "open")
    assert exchange.fetch_open_orders(SPOT, params={"trigger": True}) == []
    exchange.cancel_order(stop["id"], SPOT, tpsl)
    assert exchange.fetch_open_orders(SPOT, params=tpsl) == []


def test_a_spot_conditional_order(exchange: Any, paper: PaperExchange) -> None:
    trigger = exchange.create_order(SPOT, "limit", "buy", 0.0005, 81100, {"triggerPrice": 81000})
    assert [o["id"] for o in exchange.fetch_open_orders(SPOT, params={"trigger": True})] == [trigger["id"]]
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")  # the last price reaches the trigger
    assert exchange.fetch_open_orders(SPOT, params={"trigger": True}) == []
    (filled,) = exchange.fetch_closed_orders(SPOT, params={"trigger": True})
    assert (filled["id"], filled["filled"]) == (trigger["id"], 0.0005)
