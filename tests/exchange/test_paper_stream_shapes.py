"""The paper exchange pushes what Bybit pushes: each topic's fields checked against the recorded and
documented messages in tests/fixtures/bybit_streams/, and read back by Pilot's own stream reader.

A field of a recording may be missing on paper only where the paper exchange has nothing to say (option
greeks, block trades, a Bybit-internal sequence), listed here; a field Bybit's messages do not carry is never
pushed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from pilot.exchange.bybit.stream import BybitStreams
from pilot.exchange.stream_events import PRIVATE, PositionUpdate, Refused, StreamEvent
from pilot.paper import PaperExchange, start_paper_exchange
from tests.exchange.test_sim_streams import authenticate, receive, send, topic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bybit_streams"
# Fields of the recordings the paper exchange leaves out, and why: none of them is read by Pilot.
NOT_MODELLED = {
    "position": {"tradeMode", "positionBalance", "sessionAvgPrice", "bustPrice"} - set(),
    "execution": {"extraFees"},
}
# Fields the paper exchange pushes beyond a recording, each one Bybit's page lists for the topic.
DOCUMENTED = {
    "order": {"parentOrderLinkId", "isLeverage", "createType", "ocoTriggerBy", "marketUnit"}
    | {"slippageToleranceType", "slippageTolerance", "cumFeeDetail", "rpiTakerAccess", "rpiMatchedQty"},
    "execution": {"createType", "execPnl", "feeCurrency", "marketUnit", "closedSize"},
    "position": {"breakEvenPrice", "openTime", "curRealisedPnl", "positionIMByMp", "positionMMByMp"}
    | {"leverageSysUpdatedTime", "mmrSysUpdatedTime", "seq", "isReduceOnly", "category", "createdTime"},
}


def recorded_fields(name: str) -> set[str]:
    message = json.loads((FIXTURES / name).read_text())["messages"][0]
    data = message["data"]
    return set(data[0] if isinstance(data, list) else data)


@pytest.fixture
def paper() -> Any:
    with start_paper_exchange() as exchange:
        yield exchange


def private_pushes(paper: PaperExchange, ws: ClientConnection) -> dict[str, dict[str, Any]]:
    """A market buy that fills, and the first push of each private topic it causes."""
    authenticate(paper, ws)
    paper.leave_order(
        "linear",
        {"symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.001", "orderLinkId": "s1"},
    )
    return {name: receive(ws, topic(name)) for name in ("order", "execution", "position", "wallet")}


def test_private_pushes_carry_the_recorded_fields_and_no_others(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/private") as ws:
        pushed = private_pushes(paper, ws)
    for kind, fixture in (
        ("order", "order_option_filled.json"),
        ("execution", "execution_linear_docs.json"),
        ("position", "position_short_entry_price.json"),
        ("wallet", "wallet_docs.json"),
    ):
        row = pushed[kind]["data"][0]
        recorded = recorded_fields(fixture)
        assert recorded - set(row) <= NOT_MODELLED.get(kind, set()), kind
        assert set(row) - recorded <= DOCUMENTED.get(kind, set()), kind
    position = pushed["position"]["data"][0]
    assert (position["entryPrice"], position["category"], position["size"]) == ("80220.1", "linear", "0.001")
    assert "avgPrice" not in position and position["stopLoss"] == "0"
    assert pushed["execution"]["data"][0]["isLeverage"] == "0"
    assert pushed["execution"]["data"][0]["feeCurrency"] == "USDT"
    assert pushed["order"]["data"][0]["feeCurrency"] == ""  # deprecated: spot only


def test_pilots_reader_reads_every_private_push_of_the_paper_exchange(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/private") as ws:
        pushed = private_pushes(paper, ws)
    events: list[StreamEvent] = []
    reader = BybitStreams(
        "paper", api_key="k", api_secret="s", markets={"linear": ("BTCUSDT",)}, sink=events.append,
        paper_ws_url=paper.ws_url,
    )  # fmt: skip
    for message in pushed.values():
        reader.receive(PRIVATE, json.dumps(message))
    assert not [e for e in events if isinstance(e, Refused)]
    (update,) = [e for e in events if isinstance(e, PositionUpdate)]
    assert [(p.symbol, str(p.size), str(p.entry_price)) for p in update.positions] == [
        ("BTCUSDT", "0.001", "80220.1")
    ]


def test_a_closed_position_is_pushed_flat_as_bybit_documents_it(paper: PaperExchange) -> None:
    with connect(f"{paper.ws_url}/v5/private") as ws:
        private_pushes(paper, ws)
        paper.leave_order(
            "linear",
            {"symbol": "BTCUSDT", "side": "Sell", "orderType": "Market", "qty": "0.001", "reduceOnly": True},
        )
        flat = receive(ws, lambda m: m.get("topic") == "position" and m["data"][0]["side"] == "")
    row = flat["data"][0]
    assert [row[k] for k in ("size", "entryPrice", "positionValue", "unrealisedPnl", "liqPrice")] == ["0"] * 5


def test_an_order_change_pushes_its_position_even_unchanged(paper: PaperExchange) -> None:
    """position.mdx: every create, amend or cancel brings a position message, changed or not."""
    with connect(f"{paper.ws_url}/v5/private") as ws:
        authenticate(paper, ws)
        paper.leave_resting_order("linear", "ETHUSDT", "Buy", "0.01", "3000", "rest-1")
        message = receive(ws, topic("position"))
    assert [(r["symbol"], r["size"], r["side"]) for r in message["data"]] == [("ETHUSDT", "0", "")]


def test_a_wallet_push_follows_the_balance_not_the_unrealised_pnl(paper: PaperExchange) -> None:
    """wallet.mdx: "The unrealised PnL change does not trigger an event"."""
    with connect(f"{paper.ws_url}/v5/private") as ws:
        private_pushes(paper, ws)
        paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")  # the position's unrealised PnL moves
        paper.leave_resting_order("linear", "ETHUSDT", "Buy", "0.01", "3000", "rest-2")  # order margin moves
        message = receive(ws, lambda m: m.get("topic") in ("wallet", "order"))
        assert message["topic"] == "order"  # nothing for the move came first
        wallet = receive(ws, topic("wallet"))
    assert wallet["data"][0]["coin"][0]["totalOrderIM"] != "0"


@contextlib.contextmanager
def public(paper: PaperExchange, category: str, *topics: str) -> Iterator[ClientConnection]:
    with connect(f"{paper.ws_url}/v5/public/{category}") as ws:
        send(ws, {"op": "subscribe", "req_id": "1", "args": list(topics)})
        assert receive(ws, lambda m: m.get("op") == "subscribe")["success"] is True
        yield ws


def test_tickers_carry_tick_direction_and_a_cross_sequence(paper: PaperExchange) -> None:
    with public(paper, "linear", "tickers.BTCUSDT") as ws:
        snapshot = receive(ws, topic("tickers.BTCUSDT"))
        paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
        moved = receive(ws, lambda m: "lastPrice" in m.get("data", {}))
    assert set(snapshot) == {"topic", "type", "data", "cs", "ts"}
    assert set(snapshot["data"]) == recorded_fields("tickers_linear_docs.json")
    assert moved["data"]["tickDirection"] == "PlusTick" and moved["cs"] > snapshot["cs"]
    with public(paper, "spot", "tickers.BTCUSDT") as ws:
        spot = receive(ws, topic("tickers.BTCUSDT"))
        again = receive(ws, topic("tickers.BTCUSDT"))
    assert set(spot["data"]) == recorded_fields("tickers_spot_testnet.json")  # no bid, ask or mark
    assert spot["type"] == again["type"] == "snapshot"  # spot tickers: snapshots only


def test_price_limit_pushes_only_what_bybit_sends(paper: PaperExchange) -> None:
    with public(paper, "linear", "priceLimit.BTCUSDT") as ws:
        first = receive(ws, topic("priceLimit.BTCUSDT"))
        paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
        moved = receive(ws, lambda m: m.get("topic") == "priceLimit.BTCUSDT" and m is not first)
    for message in (first, moved):
        assert set(message) == {"topic", "data", "ts"}
        assert set(message["data"]) == recorded_fields("price_limit_docs.json")


def test_a_level_one_book_is_pushed_in_snapshots_only(paper: PaperExchange) -> None:
    with public(paper, "linear", "orderbook.1.BTCUSDT") as ws:
        first = receive(ws, topic("orderbook.1.BTCUSDT"))
        paper.set_prices("BTCUSDT", bid=81000, ask="81000.1")
        moved = receive(ws, topic("orderbook.1.BTCUSDT"))
    assert first["type"] == moved["type"] == "snapshot"
    assert moved["data"]["u"] == first["data"]["u"] + 1 and moved["data"]["b"] == [["81000.00", "0.617"]]


def test_trades_and_klines_are_pushed_from_the_exchanges_own_fills_and_moves(paper: PaperExchange) -> None:
    with public(paper, "linear", "publicTrade.BTCUSDT", "kline.1.BTCUSDT") as ws:
        bar = receive(ws, topic("kline.1.BTCUSDT"))
        paper.leave_order(
            "linear", {"symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.002"}
        )
        seen: dict[str, dict[str, Any]] = {}
        while len(seen) < 2:  # the trade and the bar it adds to, in either order
            message = receive(
                ws, lambda m: m.get("topic") == "publicTrade.BTCUSDT" or "0.002" in json.dumps(m.get("data"))
            )
            seen[message["topic"]] = message
    trade, filled = seen["publicTrade.BTCUSDT"], seen["kline.1.BTCUSDT"]
    assert set(trade) == {"topic", "type", "ts", "data"}
    assert set(trade["data"][0]) == recorded_fields("public_trade_docs.json") | {"RPI"}
    assert (trade["data"][0]["S"], trade["data"][0]["v"], trade["data"][0]["p"]) == (
        "Buy",
        "0.002",
        "80220.10",
    )
    assert set(bar["data"][0]) == recorded_fields("kline_docs.json")
    assert filled["data"][-1]["volume"] == "0.002" and filled["data"][-1]["confirm"] is False


def test_a_spot_subscription_takes_at_most_ten_topics(paper: PaperExchange) -> None:
    eleven = (
        [f"tickers.{s}" for s in ("BTCUSDT", "ETHUSDT", "SOLUSDT")]
        + [f"orderbook.{d}.{s}" for d in (1, 50) for s in ("BTCUSDT", "ETHUSDT", "SOLUSDT")]
        + ["priceLimit.BTCUSDT", "priceLimit.ETHUSDT"]
    )
    with connect(f"{paper.ws_url}/v5/public/spot") as ws:
        send(ws, {"op": "subscribe", "req_id": "11", "args": eleven})
        refused = receive(ws, lambda m: m.get("op") == "subscribe")
        send(ws, {"op": "subscribe", "req_id": "10", "args": eleven[:10]})
        taken = receive(ws, lambda m: m.get("op") == "subscribe")
    assert (refused["success"], refused["ret_msg"], taken["success"]) == (False, "args size >10", True)


def test_an_unknown_topic_fails_its_whole_request_as_on_bybit(paper: PaperExchange) -> None:
    """Bybit's pages do not say; answers recorded in the wild do: "error:handler not found,topic:..." and
    nothing for the request's valid topics (see pilot/paper/public_topics.py)."""
    with connect(f"{paper.ws_url}/v5/public/linear") as ws:
        send(ws, {"op": "subscribe", "req_id": "x", "args": ["tickers.BTCUSDT", "orderbook.500.BTCUSDT"]})
        refused = receive(ws, lambda m: m.get("op") == "subscribe")
        send(ws, {"op": "subscribe", "req_id": "y", "args": ["publicTrade.BTCUSDT", "kline.5.BTCUSDT"]})
        taken = receive(ws, lambda m: m.get("op") == "subscribe")
    assert (refused["success"], refused["ret_msg"]) == (
        False,
        "error:handler not found,topic:orderbook.500.BTCUSDT",
    )
    assert taken["success"] is True


def test_a_topic_subscribed_twice_is_refused_as_bybit_answers_it(paper: PaperExchange) -> None:
    with public(paper, "linear", "tickers.BTCUSDT") as ws:
        send(ws, {"op": "subscribe", "req_id": "again", "args": ["tickers.BTCUSDT"]})
        again = receive(ws, lambda m: m.get("op") == "subscribe")
    assert (again["success"], again["ret_msg"]) == (False, "error:already subscribed,topic:tickers.BTCUSDT")
