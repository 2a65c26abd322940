"""Funding: at each funding time (the interval's grid from midnight UTC, instruments-info `fundingInterval`,
480 minutes by default) a position settles size x mark x rate, as execType "Funding" rows of
/v5/execution/list in Bybit's shape and signs (ccxt/ccxt ts/src/test/static/response/bybit.json at
04890d69ab3b: `fetchFundingHistory`'s recorded LTCUSDT rows: a long at a positive rate has a positive
execFee, at a negative rate a negative one; `fetchLedger`'s SETTLEMENT row: the long's balance went down).
The wallet moves by the opposite of execFee."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from decimal import Decimal

import pytest
from websockets.sync.client import connect

from tests.exchange.conftest import raw_session
from tests.paper.conftest import still, with_funding, world

EIGHT_HOURS = 8 * 3_600_000


def hold(session, side: str, qty: str = "0.01") -> None:
    session.place_order(category="linear", symbol="BTCUSDT", side=side, orderType="Market", qty=qty)


def funding_rows(session) -> list[dict]:
    rows = session.get_executions(category="linear", symbol="BTCUSDT")["result"]["list"]
    return [row for row in rows if row["execType"] == "Funding"]


@pytest.mark.parametrize(
    ("side", "rate", "paid"),
    [
        ("Buy", "0.0001", True),
        ("Sell", "0.0001", False),
        ("Buy", "-0.0003", False),
        ("Sell", "-0.0003", True),
    ],
)
def test_a_funding_time_settles_size_times_mark_times_rate_with_bybits_signs(side, rate, paid):
    with still(with_funding(world(), rate)) as paper:
        session = raw_session(paper)
        hold(session, side)
        wallet = paper.balance("USDT")
        due = paper.next_funding_ms("BTCUSDT")
        assert due % EIGHT_HOURS == 0 and due > paper.now_ms()  # 00:00, 08:00 or 16:00 UTC
        paper.advance(due - paper.now_ms() - 1)
        assert funding_rows(session) == []  # a millisecond early: nothing yet
        paper.advance(1)
        (row,) = funding_rows(session)
    mark = Decimal("80220.0")  # the default scenario's BTC mark
    fee = (Decimal("0.01") if side == "Buy" else Decimal("-0.01")) * mark * Decimal(rate)
    assert Decimal(row["execFee"]) == fee and (fee > 0) == paid
    assert paper.balance("USDT") == wallet - fee
    assert (row["execPrice"], row["execQty"], Decimal(row["execValue"])) == (
        "80220.00",
        "0.010",
        Decimal("0.01") * mark,
    )
    assert (row["feeRate"], row["side"], int(row["execTime"])) == (rate, side, due)
    assert (row["orderType"], row["stopOrderType"], row["createType"], row["orderLinkId"]) == (
        "UNKNOWN",
        "UNKNOWN",
        "",
        "",
    )
    assert (row["orderPrice"], row["isMaker"], row["closedSize"]) == ("0", False, "0.000")


def test_funding_goes_on_at_every_interval_and_only_while_a_position_is_held():
    with still(with_funding(world(), "0.0001", interval_min=60)) as paper:
        session = raw_session(paper)
        paper.advance(paper.next_funding_ms("BTCUSDT") - paper.now_ms())
        assert funding_rows(session) == []  # nothing held: nothing settles
        hold(session, "Buy")
        paper.advance(2 * 3_600_000)
        times = [int(row["execTime"]) for row in funding_rows(session)]
        assert len(times) == 2 and times[0] - times[1] == 3_600_000  # newest first, an hour apart
        assert sum(Decimal(r["execFee"]) for r in funding_rows(session)) == 2 * Decimal("0.01") * Decimal(
            "80220.0"
        ) * Decimal("0.0001")


def test_the_ticker_and_instruments_info_show_the_scenarios_funding():
    with still(with_funding(world(), "0.0002", interval_min=240)) as paper:
        session = raw_session(paper)
        ticker = session.get_tickers(category="linear", symbol="BTCUSDT")["result"]["list"][0]
        info = session.get_instruments_info(category="linear", symbol="BTCUSDT")["result"]["list"][0]
        due = paper.next_funding_ms("BTCUSDT")
    assert (ticker["fundingRate"], int(ticker["nextFundingTime"]), ticker["fundingIntervalHour"]) == (
        "0.0002",
        due,
        "4",
    )
    assert info["fundingInterval"] == 240  # an integer, minutes (market_instrument.mdx)


def test_the_position_realised_pnl_carries_the_funding():
    with still(with_funding(world(), "0.0001")) as paper:
        session = raw_session(paper)
        hold(session, "Buy")
        before = paper.position("BTCUSDT").cum_realised_pnl
        paper.advance(paper.next_funding_ms("BTCUSDT") - paper.now_ms())
        (row,) = funding_rows(session)
        assert paper.position("BTCUSDT").cum_realised_pnl == before - Decimal(row["execFee"])


def receive(ws, match) -> dict:
    """The next message that `match`es, within five seconds (a bounded receive, not a sleep)."""
    deadline = time.monotonic() + 5
    while True:
        message = json.loads(ws.recv(timeout=max(deadline - time.monotonic(), 0.001)))
        if match(message):
            return message


def test_the_private_stream_pushes_the_funding_row_to_a_client_that_signed_in_wall_clock_time():
    with still(with_funding(world(), "0.0001")) as paper:
        hold(raw_session(paper), "Buy")
        paper.advance(paper.next_funding_ms("BTCUSDT") - paper.now_ms() - 1000)  # the market is hours ahead
        with connect(f"{paper.ws_url}/v5/private") as ws:
            expires = paper.server_ms() + 10_000  # as pybit sets it: the caller's clock, not the market's
            signature = hmac.new(paper.api_secret.encode(), f"GET/realtime{expires}".encode(), hashlib.sha256)
            ws.send(json.dumps({"op": "auth", "args": [paper.api_key, expires, signature.hexdigest()]}))
            assert receive(ws, lambda m: m.get("op") == "auth")["success"] is True
            ws.send(json.dumps({"op": "subscribe", "req_id": "s", "args": ["execution"]}))
            receive(ws, lambda m: m.get("op") == "subscribe")
            paper.advance(1000)
            pushed = receive(
                ws,
                lambda m: (
                    m.get("topic") == "execution" and any(r["execType"] == "Funding" for r in m["data"])
                ),
            )["data"]
    (row,) = [r for r in pushed if r["execType"] == "Funding"]
    assert (row["category"], row["side"], Decimal(row["execFee"])) == (
        "linear",
        "Buy",
        Decimal("0.01") * Decimal("80220.0") * Decimal("0.0001"),
    )
