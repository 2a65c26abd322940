"""ccxt.pro's flows on the paper exchange: ccxt.pro's `bybit` watches what a trader's script watches (tickers,
books, best bid and ask, trades, candles, its orders, trades, positions and balance) over the paper
exchange's WebSocket side, its REST and WebSocket URLs on 127.0.0.1 (conftest). Waits are bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest

from pilot.paper import PaperExchange

pytestmark = pytest.mark.anyio
PERP, SPOT = "BTC/USDT:USDT", "BTC/USDT"
WAIT = 10.0


async def within(awaitable: Awaitable[Any]) -> Any:
    return await asyncio.wait_for(awaitable, WAIT)


async def after_a_fill(paper: PaperExchange, watch: Awaitable[Any], topic: str, path: str) -> Any:
    """Start a watch, wait until the paper exchange has its subscription, fill a market buy, return the update."""
    task = asyncio.ensure_future(watch)
    deadline = asyncio.get_running_loop().time() + WAIT
    while topic not in paper.streams.topics(path):
        assert asyncio.get_running_loop().time() < deadline, f"{topic} was never subscribed"
        await asyncio.sleep(0.005)
    paper.leave_order("linear", {"symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.002"})
    return await within(task)


async def test_tickers(pro: Any) -> None:
    ticker = await within(pro.watch_ticker(PERP))
    assert (ticker["bid"], ticker["ask"], ticker["last"]) == (80220.0, 80220.1, 80220.0)
    spot = await within(pro.watch_ticker(SPOT))
    assert spot["last"] == 80220.0 and spot["bid"] is None  # a spot ticker stream has no bid
    both = await within(pro.watch_tickers([PERP, "ETH/USDT:USDT"]))
    assert set(both) <= {PERP, "ETH/USDT:USDT"} and both


async def test_books_and_best_bid_and_ask(pro: Any, paper: PaperExchange) -> None:
    book = await within(pro.watch_order_book(PERP))
    assert (book["bids"][0][0], book["asks"][0][0]) == (80220.0, 80220.1)
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
    while book["bids"][0][0] != 81000.0:  # the deltas that moved it
        book = await within(pro.watch_order_book(PERP))
    assert book["asks"][0][0] == 81000.1
    best = await within(pro.watch_bids_asks([PERP]))
    assert (best[PERP]["bid"], best[PERP]["ask"]) == (81000.0, 81000.1)


async def test_trades_and_candles(pro: Any, paper: PaperExchange) -> None:
    trades = await after_a_fill(paper, pro.watch_trades(PERP), "publicTrade.BTCUSDT", "/v5/public/linear")
    assert [(t["side"], t["amount"], t["price"]) for t in trades] == [("buy", 0.002, 80220.1)]
    candles = await within(pro.watch_ohlcv(PERP, "1m"))
    assert candles[-1][5] == 0.002  # the bar's volume: the fill


async def test_my_orders_trades_positions_and_balance(pro: Any, paper: PaperExchange) -> None:
    orders = await after_a_fill(paper, pro.watch_orders(PERP), "order", "/v5/private")
    assert [(o["status"], o["filled"]) for o in orders] == [("closed", 0.002)]
    trades = await after_a_fill(paper, pro.watch_my_trades(PERP), "execution", "/v5/private")
    assert [t["amount"] for t in trades][-1:] == [0.002]
    snapshot = await within(pro.watch_positions([PERP]))  # ccxt.pro's first answer: the REST snapshot
    assert [p["contracts"] for p in snapshot] == [0.004]
    positions = await after_a_fill(paper, pro.watch_positions([PERP]), "position", "/v5/private")
    assert positions[-1]["contracts"] == 0.006 and positions[-1]["entryPrice"] == 80220.1
    balance = await after_a_fill(paper, pro.watch_balance(), "wallet", "/v5/private")
    assert 999 < balance["USDT"]["total"] < 1000  # fees paid on four fills


async def test_orders_over_the_order_entry_socket(pro: Any, paper: PaperExchange) -> None:
    placed = await within(pro.create_order_ws(PERP, "limit", "buy", 0.001, 79000))
    assert [o.order_id for o in paper.open_orders("BTCUSDT")] == [placed["id"]]
    await within(pro.edit_order_ws(placed["id"], PERP, "limit", "buy", 0.002, 79100))
    (resting,) = paper.open_orders("BTCUSDT")
    assert (str(resting.qty), str(resting.price)) == ("0.002", "79100")
    await within(pro.cancel_order_ws(placed["id"], PERP))
    assert paper.open_orders("BTCUSDT") == []


async def test_a_spot_stop_placed_over_the_order_entry_socket_triggers_and_is_watched(
    pro: Any, paper: PaperExchange
) -> None:
    """A spot conditional order through createOrderWs; watch_orders sees it fill when the price reaches it."""
    placed = await within(pro.create_order_ws(SPOT, "limit", "buy", 0.0005, 81100, {"triggerPrice": 81000}))
    watch = asyncio.ensure_future(pro.watch_orders(SPOT))
    deadline = asyncio.get_running_loop().time() + WAIT
    while "order" not in paper.streams.topics("/v5/private"):
        assert asyncio.get_running_loop().time() < deadline, "order was never subscribed"
        await asyncio.sleep(0.005)
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")  # the last price reaches the trigger
    seen = await within(watch)
    while seen[-1]["status"] != "closed":
        seen = await within(pro.watch_orders(SPOT))
    assert (seen[-1]["id"], seen[-1]["filled"], seen[-1]["price"]) == (placed["id"], 0.0005, 81100.0)
