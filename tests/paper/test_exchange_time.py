"""Exchange time: the market runs at `speed` (lazily, before each answer, and on the server's own ticker, so
the streams push moves nobody asked for), while signed requests are still checked against the wall clock the
callers sign with. Waits are bounded receives; the clocks are injected or advanced, never slept on."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from websockets.sync.client import connect

from pilot.paper import start_paper_exchange, wall_clock_ms
from pilot.paper.auth import sign
from pilot.paper.clocks import ExchangeClock
from tests.exchange.conftest import raw_session
from tests.paper.conftest import HOUR_MS, still, walk, world

WAIT = 5.0


@dataclass
class Wall:
    """A wall clock the test moves by hand, starting at the real one (so signed requests stay valid)."""

    ms: int

    def __call__(self) -> int:
        return self.ms


def get(url: str, headers: dict[str, str] | None = None) -> tuple[dict[str, Any], Any]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=WAIT) as answer:
        return json.loads(answer.read()), answer.headers


def test_the_market_clock_runs_at_speed_and_the_server_clock_at_the_wall_clocks_pace():
    wall = Wall(1_000_000)
    clock = ExchangeClock(wall, Decimal(60))
    wall.ms += 1500
    assert (clock.market_ms(), clock.server_ms()) == (1_000_000 + 90_000, 1_001_500)
    clock.advance(10_000)
    clock.set_speed(Decimal(0))
    wall.ms += 5000
    assert clock.market_ms() == 1_100_000  # standing still since set_speed(0)
    clock.offset_ms = 60_000  # drift moves both clocks
    assert (clock.market_ms(), clock.server_ms()) == (1_160_000, 1_066_500)
    clock.offset_ms = 0
    assert clock.market_ms() == 1_160_000  # never backwards
    with clock.pinned(1_000_123):
        assert clock.market_ms() == 1_000_123


def test_at_speed_the_market_moves_as_far_as_an_advance_of_the_same_exchange_time():
    document = world({"BTCUSDT": walk(seed=9)})
    wall = Wall(wall_clock_ms())
    with start_paper_exchange(document, speed=60, wall_clock=wall) as fast, still(document) as reference:
        start = fast.now_ms()
        wall.ms += 1000  # one wall second: a minute of exchange time
        answer, headers = get(f"{fast.url}/v5/market/tickers?category=linear&symbol=BTCUSDT")
        reference.advance(60_000)
        expected = reference.quote("BTCUSDT")
    row = answer["result"]["list"][0]
    assert answer["time"] == start + 60_000 == int(headers["Timenow"])  # the exchange's time is the market's
    assert (Decimal(row["bid1Price"]), Decimal(row["ask1Price"])) == (expected.bid, expected.ask)


def test_speed_zero_stands_still_until_advanced():
    with still(world({"BTCUSDT": walk()})) as paper:
        before, start = paper.quote("BTCUSDT"), paper.now_ms()
        answer, _ = get(f"{paper.url}/v5/market/tickers?category=linear&symbol=BTCUSDT")
        assert paper.quote("BTCUSDT") == before and answer["time"] == start
        paper.advance(5000)
        assert paper.now_ms() == start + 5000 and paper.quote("BTCUSDT") != before


def test_signed_requests_are_checked_against_the_wall_clock_while_the_market_runs_ahead():
    with still(world({"BTCUSDT": walk()})) as paper:
        paper.advance(HOUR_MS)  # the market is an hour ahead of every caller's clock
        assert paper.now_ms() - paper.server_ms() >= HOUR_MS - 1000
        answer = raw_session(paper).get_positions(
            category="linear", symbol="BTCUSDT"
        )  # pybit: wall-clock stamp
        assert answer["retCode"] == 0 and answer["time"] >= paper.server_ms() + HOUR_MS - 1000
        query = "category=linear&symbol=BTCUSDT"
        stamp = str(paper.now_ms())  # a caller that stamped with the market's time is off by an hour
        headers = {
            "X-BAPI-API-KEY": paper.api_key,
            "X-BAPI-TIMESTAMP": stamp,
            "X-BAPI-RECV-WINDOW": "5000",
            "X-BAPI-SIGN": sign(paper.api_secret, stamp, paper.api_key, "5000", query),
        }
        refused, _ = get(f"{paper.url}/v5/position/list?{query}", headers)
    assert refused["retCode"] == 10002  # error.mdx: the request's timestamp is outside the recv window


def test_a_rate_limit_reset_time_is_in_the_callers_frame_not_the_markets():
    with still(world({"BTCUSDT": walk()})) as paper:
        paper.advance(HOUR_MS)
        paper.add_fault("/v5/market/tickers", "rate_limit")
        answer, headers = get(f"{paper.url}/v5/market/tickers?category=linear&symbol=BTCUSDT")
        reset = int(headers["X-Bapi-Limit-Reset-Timestamp"])
        assert answer["retCode"] == 10006 and 0 < reset - paper.server_ms() <= 1000


def test_the_streams_push_a_move_nobody_asked_for():
    wall = Wall(wall_clock_ms())
    paper = start_paper_exchange(world({"BTCUSDT": walk(seed=4)}), speed=1, wall_clock=wall)
    with paper, connect(f"{paper.ws_url}/v5/public/linear") as ws:
        ws.send(json.dumps({"op": "subscribe", "req_id": "1", "args": ["tickers.BTCUSDT"]}))
        first = _next(ws, lambda m: m.get("type") == "snapshot")["data"]["bid1Price"]
        wall.ms += 30_000  # thirty steps fall due; no request is made: the server's ticker plays them
        moved = _next(ws, lambda m: m.get("data", {}).get("bid1Price") not in (None, first))
    assert Decimal(moved["data"]["bid1Price"]) == paper.quote("BTCUSDT").bid


def _next(ws: Any, match: Any) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while True:
        message = json.loads(ws.recv(timeout=max(deadline - time.monotonic(), 0.001)))
        if match(message):
            return message


def test_advancing_the_market_backwards_is_refused():
    with still(world()) as paper, pytest.raises(ValueError):
        paper.advance(-1)
