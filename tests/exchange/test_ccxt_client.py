"""An independent client: ccxt's Bybit class (not written by us, not pybit) trades on the paper exchange.

Every ccxt URL points at the paper exchange on 127.0.0.1; the features that would reach the internet are
off (server time difference, currencies from /v5/asset/coin/query-info) and proxies are ignored.

ccxt sets the calling thread's decimal context to ROUND_HALF_UP with the Underflow trap on; each test runs
it inside a local decimal context so nothing after it inherits that.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from decimal import Decimal

import ccxt
import pytest

from pilot.paper import PaperExchange

API_KINDS = ("spot", "futures", "v2", "public", "private")


@pytest.fixture
def client(paper: PaperExchange) -> Iterator[ccxt.bybit]:
    exchange = ccxt.bybit(
        {
            "apiKey": paper.api_key,
            "secret": paper.api_secret,
            "enableRateLimit": False,
            "timeout": 5000,
            "options": {"adjustForTimeDifference": False, "fetchCurrencies": False},
        }
    )
    exchange.urls["api"] = dict.fromkeys(API_KINDS, paper.url)
    exchange.has["fetchCurrencies"] = False
    exchange.session.trust_env = False
    with decimal.localcontext():
        yield exchange
    exchange.session.close()


def test_ccxt_loads_every_market_category_from_the_paper_exchange(paper, client):
    markets = client.load_markets()
    assert {"BTC/USDT", "ETH/USDT", "SOL/USDT", "BTC/USDT:USDT", "ETH/USDT:USDT", "SOL/USDT:USDT"} <= set(
        markets
    )
    perp = markets["BTC/USDT:USDT"]
    assert (perp["linear"], perp["precision"]["price"], perp["limits"]["amount"]["min"]) == (
        True,
        0.1,
        0.00001,
    )
    assert paper.request_count("/v5/market/instruments-info") >= 4  # spot, linear, inverse and option asked


def test_ccxt_reads_ticker_book_balance_and_positions(paper, client):
    client.load_markets()
    ticker = client.fetch_ticker("BTC/USDT:USDT")
    assert (ticker["bid"], ticker["ask"], ticker["markPrice"]) == (80220.0, 80220.1, 80220.0)
    book = client.fetch_order_book("ETH/USDT:USDT", 5)
    assert book["asks"][0][0] == 3100.01 and len(book["bids"]) == 5
    balance = client.fetch_balance()
    assert balance["USDT"]["total"] == 1000
    positions = client.fetch_positions(["BTC/USDT:USDT"])
    assert [(p["symbol"], p["contracts"]) for p in positions] == [("BTC/USDT:USDT", 0.0)]


def test_ccxt_places_and_cancels_an_order(paper, client):
    client.load_markets()
    placed = client.create_order("BTC/USDT:USDT", "limit", "buy", 0.001, 79000)
    assert [o["id"] for o in client.fetch_open_orders("BTC/USDT:USDT")] == [placed["id"]]
    client.cancel_order(placed["id"], "BTC/USDT:USDT")
    assert client.fetch_open_orders("BTC/USDT:USDT") == []
    (sim_order,) = paper.orders()
    assert (sim_order.order_id, sim_order.status, sim_order.qty) == (
        placed["id"],
        "Cancelled",
        Decimal("0.001"),
    )
    filled = client.create_order("BTC/USDT:USDT", "limit", "buy", 0.001, 80300)
    assert paper.position("BTCUSDT").size == Decimal("0.001") and filled["id"]
    assert client.fetch_positions(["BTC/USDT:USDT"])[0]["contracts"] == 0.001
