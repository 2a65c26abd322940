"""pybit's WebSocket flows on the paper exchange: every public and private stream a script subscribes to with
pybit 5.17's own methods, each message in the shape Bybit's stream pages give (websocket/*.mdx).

pybit connects only to Bybit's hosts; `LoopbackWebSocket` (conftest) hands it the paper exchange's URL
instead. Waits are bounded receives on the callbacks' messages, never sleeps.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pilot.paper import PaperExchange
from tests.clients.conftest import Inbox


def wait_until(condition: Any, timeout: float = 10) -> None:
    """Wait for the paper exchange to take what pybit sent on its own thread (polling, bounded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        threading.Event().wait(0.005)


def topic(name: str) -> Any:
    return lambda message: message.get("topic") == name


def market_buy(paper: PaperExchange, qty: str = "0.002") -> None:
    paper.leave_order("linear", {"symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": qty})


def test_linear_tickers_books_and_price_band(paper: PaperExchange, pybit_socket: Any) -> None:
    socket, inbox = pybit_socket("linear"), Inbox()
    socket.ticker_stream(symbol="BTCUSDT", callback=inbox)
    socket.orderbook_stream(depth=50, symbol="BTCUSDT", callback=inbox)
    socket.orderbook_stream(depth=1, symbol="ETHUSDT", callback=inbox)
    socket.price_limit_stream(symbol="BTCUSDT", callback=inbox)
    ticker = inbox.wait_for(topic("tickers.BTCUSDT"))
    assert (ticker["type"], ticker["data"]["bid1Price"], ticker["data"]["tickDirection"]) == (
        "snapshot",
        "80220.00",
        "ZeroPlusTick",
    )
    book = inbox.wait_for(topic("orderbook.50.BTCUSDT"))
    assert book["data"]["a"][0] == ["80220.10", "0.623"]
    top = inbox.wait_for(topic("orderbook.1.ETHUSDT"))
    assert (top["type"], len(top["data"]["b"]), len(top["data"]["a"])) == ("snapshot", 1, 1)
    band = inbox.wait_for(topic("priceLimit.BTCUSDT"))
    assert set(band["data"]) == {"symbol", "buyLmt", "sellLmt"}
    paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
    # pybit merges a ticker's deltas into its snapshot before the callback sees it
    moved = inbox.wait_for(
        lambda m: m.get("topic") == "tickers.BTCUSDT" and m["data"]["lastPrice"] == "81000.00"
    )
    assert moved["data"]["tickDirection"] == "PlusTick"


def test_trades_and_klines(paper: PaperExchange, pybit_socket: Any) -> None:
    socket, inbox = pybit_socket("linear"), Inbox()
    socket.trade_stream(symbol="BTCUSDT", callback=inbox)
    socket.kline_stream(interval=5, symbol="BTCUSDT", callback=inbox)
    first = inbox.wait_for(topic("kline.5.BTCUSDT"))
    assert first["data"][0]["confirm"] is False and first["data"][0]["volume"] == "0"
    market_buy(paper)
    trade = inbox.wait_for(topic("publicTrade.BTCUSDT"))
    assert [(t["S"], t["v"], t["p"], t["L"]) for t in trade["data"]] == [
        ("Buy", "0.002", "80220.10", "PlusTick")
    ]
    bar = inbox.wait_for(lambda m: m.get("topic") == "kline.5.BTCUSDT" and m["data"][-1]["volume"] != "0")
    assert (bar["data"][-1]["volume"], bar["data"][-1]["turnover"]) == ("0.002", "160.4402")


def test_spot_tickers_and_books(paper: PaperExchange, pybit_socket: Any) -> None:
    socket, inbox = pybit_socket("spot"), Inbox()
    socket.ticker_stream(symbol="BTCUSDT", callback=inbox)
    socket.orderbook_stream(depth=1, symbol="BTCUSDT", callback=inbox)
    ticker = inbox.wait_for(topic("tickers.BTCUSDT"))
    assert ticker["type"] == "snapshot" and "bid1Price" not in ticker["data"]  # a spot ticker has no bid
    book = inbox.wait_for(topic("orderbook.1.BTCUSDT"))
    assert book["data"]["b"][0][0] == "80220.0"  # spot BTCUSDT's tick is 0.1


def test_private_streams_of_one_fill(paper: PaperExchange, pybit_socket: Any) -> None:
    socket = pybit_socket("private")
    inboxes = {name: Inbox() for name in ("order", "execution", "execution.fast", "position", "wallet")}
    socket.order_stream(callback=inboxes["order"])
    socket.execution_stream(callback=inboxes["execution"])
    socket.fast_execution_stream(callback=inboxes["execution.fast"])
    socket.position_stream(callback=inboxes["position"])
    socket.wallet_stream(callback=inboxes["wallet"])
    wait_until(lambda: paper.streams.topics("/v5/private") >= set(inboxes))
    market_buy(paper)
    (order,) = inboxes["order"].wait_for(topic("order"))["data"]
    assert (order["orderStatus"], order["cumExecQty"], order["category"]) == ("Filled", "0.002", "linear")
    (fill,) = inboxes["execution"].wait_for(topic("execution"))["data"]
    assert (fill["execQty"], fill["isLeverage"], fill["feeCurrency"]) == ("0.002", "0", "USDT")
    (fast,) = inboxes["execution.fast"].wait_for(topic("execution.fast"))["data"]
    assert (fast["execId"], fast["execQty"]) == (fill["execId"], "0.002")
    (position,) = inboxes["position"].wait_for(topic("position"))["data"]
    assert (position["size"], position["entryPrice"], position["side"]) == ("0.002", "80220.1", "Buy")
    (account,) = inboxes["wallet"].wait_for(topic("wallet"))["data"]
    assert account["accountType"] == "UNIFIED" and account["coin"][0]["coin"] == "USDT"


def test_orders_created_amended_and_cancelled_over_the_order_entry_socket(
    paper: PaperExchange, pybit_socket: Any
) -> None:
    """websocket/trade/guideline.mdx: the REST answer in `data`, a batch's codes in `retExtInfo`."""
    trade, acks, refusals = pybit_socket("trade"), Inbox(), Inbox()
    limit = {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.001"}
    trade.place_order(acks, refusals, **limit, price="79000", orderLinkId="ws-1")
    created = acks.wait_for(lambda m: m["op"] == "order.create")
    assert (created["retCode"], created["data"]["orderLinkId"]) == (0, "ws-1")
    trade.amend_order(acks, refusals, category="linear", symbol="BTCUSDT", orderLinkId="ws-1", price="79100")
    assert acks.wait_for(lambda m: m["op"] == "order.amend")["retCode"] == 0
    assert [(o.order_link_id, str(o.price)) for o in paper.open_orders("BTCUSDT")] == [("ws-1", "79100")]
    trade.cancel_order(acks, refusals, category="linear", symbol="BTCUSDT", orderLinkId="ws-1")
    assert acks.wait_for(lambda m: m["op"] == "order.cancel")["retCode"] == 0
    assert paper.open_orders("BTCUSDT") == []
    trade.place_order(acks, refusals, **limit, price="79000.05")  # off the tick
    assert refusals.wait_for(lambda m: m["op"] == "order.create")["retCode"] == 10001
    batch = [limit | {"price": "79000"}, limit | {"price": "78000", "qty": "0.0001"}]
    trade.place_batch_order(
        acks,
        refusals,
        category="linear",
        request=[{k: v for k, v in o.items() if k != "category"} for o in batch],
    )
    placed = acks.wait_for(lambda m: m["op"] == "order.create-batch")
    assert [row["code"] for row in placed["retExtInfo"]["list"]] == [0, 10001]
