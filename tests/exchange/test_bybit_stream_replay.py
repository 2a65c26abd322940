"""Bybit's own stream messages, replayed through the reader the server uses: what Pilot's facts become.

Every file in tests/fixtures/bybit_streams/ holds messages as Bybit sent or documents them (a live recording,
a documented example, or an adapter's test data: each names its source, commit and, for recordings, when).
They go through `BybitStreams.receive` (the reader pybit hands every message to) into `StreamFacts` (the
cache plan_order and place_order judge on), the way `pilot serve` runs them; no message may come out as
"could not be read", and each fact changes as the message says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.facts.stream_cache import Resync, StreamFacts
from pilot.exchange.bybit.stream import BybitStreams
from pilot.exchange.models import AccountBalance
from pilot.exchange.stream_events import (
    PRIVATE,
    Alive,
    Connected,
    ExecutionUpdate,
    OrderUpdate,
    Refused,
    StreamEvent,
    Subscribed,
    Unreadable,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bybit_streams"
MAX_AGE_MS = 5_000
NOT_READ = {
    "public_trade_docs.json",
    "kline_docs.json",
}  # topics Pilot does not subscribe to (the paper's shapes)


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@dataclass
class Replay:
    """A stream reader and the cache behind it, every channel in sync as after a connection and resync."""

    events: list[StreamEvent] = field(default_factory=list)
    facts: StreamFacts = field(
        default_factory=lambda: StreamFacts({"linear": ("BTCUSDT", "ETHUSDT"), "spot": ("BTCUSDT",)})
    )

    def __post_init__(self) -> None:
        self.reader = BybitStreams(
            "paper",
            api_key="k",
            api_secret="s",
            markets=self.facts.markets,
            sink=self.events.append,
            paper_ws_url="ws://127.0.0.1:1",
        )

    def in_sync(self, at_ms: int) -> None:
        """Bring every channel in sync at exchange time `at_ms` (the private one after an empty REST read)."""
        for channel in ("linear", "spot", PRIVATE):
            self.facts.apply(Connected(channel), at_ms)
            self.facts.apply(Subscribed(channel), at_ms)
        generation = self.facts.begin_resync()
        empty = Resync(positions={}, balance=AccountBalance(Decimal(0), ()), open_orders=())
        assert self.facts.finish_resync(generation, empty, ping_id=1)
        self.facts.apply(Alive(PRIVATE, at_ms, "1"), at_ms)

    def play(self, name: str) -> list[StreamEvent]:
        """Every message of a fixture through the reader into the cache, each received at its own stamp."""
        recorded = fixture(name)
        start = len(self.events)
        for message in recorded["messages"]:
            self.reader.receive(recorded["channel"], json.dumps(message))
        played = self.events[start:]
        for event in played:
            stamp = getattr(event, "exchange_ms", 0)
            self.facts.apply(event, stamp)
        return played


def stamp_of(name: str) -> int:
    message = fixture(name)["messages"][-1]
    return int(message.get("creationTime") or message["ts"])


def test_every_stream_fixture_names_its_source():
    files = sorted(FIXTURES.glob("*.json"))
    assert len(files) >= 12
    for path in files:
        source = json.loads(path.read_text())["source"]
        parts = source.values() if all(isinstance(v, dict) for v in source.values()) else [source]
        for part in parts:
            assert part["repository"] and part["path"] and part["kind"], path.name
            assert part.get("commit") or part.get("recorded"), path.name


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_no_recorded_message_is_unreadable(name: str):
    replay = Replay()
    replay.in_sync(stamp_of(name))
    played = replay.play(name)
    assert not [event for event in played if isinstance(event, Refused)]
    if name not in NOT_READ:
        assert played  # something came of it


@pytest.mark.parametrize(
    "name, symbol, size, entry, leverage, stop",
    [
        ("position_short_entry_price.json", "ETHUSDT", "-0.01", "3641.075", "30", None),
        ("position_long_testnet.json", "BTCUSDT", "0.1", "23032.9", "10", None),
    ],
)
def test_a_recorded_position_push_becomes_the_position_it_says(name, symbol, size, entry, leverage, stop):
    replay = Replay()
    at = stamp_of(name)
    replay.in_sync(at)
    replay.play(name)
    position = replay.facts.position(symbol, at, MAX_AGE_MS)
    assert position is not None
    assert (position.size, position.entry_price, position.leverage, position.stop_loss) == (
        Decimal(size),
        Decimal(entry),
        Decimal(leverage),
        stop,
    )


def test_a_documented_hedge_leg_push_makes_the_symbol_untrusted_not_unreadable():
    replay = Replay()
    at = stamp_of("position_hedge_leg_flat.json")
    replay.in_sync(at)
    replay.play("position_short_entry_price.json")  # an older message: ETHUSDT is known
    replay.play("position_hedge_leg_flat.json")
    assert replay.facts.position("BTCUSDT", at, MAX_AGE_MS) is None  # a hedge leg: read over REST
    assert "BTCUSDT" in replay.facts.hedged
    assert replay.facts.usable(PRIVATE, at, MAX_AGE_MS)  # the channel stays in sync


def test_recorded_order_pushes_become_the_orders_they_say():
    replay = Replay()
    at = stamp_of("order_linear_cancelled.json")
    replay.in_sync(at)
    (update,) = [e for e in replay.play("order_linear_cancelled.json") if isinstance(e, OrderUpdate)]
    order = replay.facts.order_by_link("linear", "client-1")
    assert order is not None and order == update.orders[0]
    assert (order.status, order.qty, order.price, order.cum_exec_qty, order.stop_order_type) == (
        "Cancelled",
        Decimal("0.010"),
        Decimal("30000"),
        Decimal(0),
        "StopLoss",
    )
    assert replay.facts.open_orders("linear", "BTCUSDT", at, MAX_AGE_MS) == []
    (filled,) = [e for e in replay.play("order_option_filled.json") if isinstance(e, OrderUpdate)]
    option = filled.orders[0]
    assert (option.category, option.status, option.avg_price, option.fee_coin, option.cum_exec_fee) == (
        "option",
        "Filled",
        Decimal("75"),
        "MNT",
        Decimal("0.00242968"),
    )


def test_a_spot_order_and_its_fill_are_read_with_the_coin_the_fee_was_paid_in():
    replay = Replay()
    at = stamp_of("order_spot_filled.json")
    replay.in_sync(at)
    (update,) = [e for e in replay.play("order_spot_filled.json") if isinstance(e, OrderUpdate)]
    order = update.orders[0]
    assert (order.category, order.status, order.cum_exec_qty, order.fee_coin, order.tpsl_mode) == (
        "spot",
        "Filled",
        Decimal("0.005"),
        "BTC",  # no cumFeeDetail: the deprecated feeCurrency names it
        "",  # tpslMode null
    )
    assert replay.facts.order_by_link("spot", "spot-client-order-001") == order
    assert replay.facts.open_orders("spot", "BTCUSDT", at, MAX_AGE_MS) == []
    (fills,) = [e for e in replay.play("execution_spot_filled.json") if isinstance(e, ExecutionUpdate)]
    (fill,) = fills.executions
    assert (fill.order_id, fill.exec_qty, fill.exec_fee) == (
        order.order_id,
        Decimal("0.005"),
        Decimal("0.000025"),
    )
    assert replay.facts.usable(PRIVATE, at, MAX_AGE_MS)


@pytest.mark.parametrize(
    "name, exec_id, price, qty, fee, fee_coin",
    [
        (
            "execution_linear_docs.json",
            "0ab1bdf7-4219-438b-b30a-32ec863018f7",
            "95900.1",
            "0.5",
            "26.3725275",
            "USDT",
        ),
        (
            "execution_linear_testnet.json",
            "7e2ae69c-4edf-5800-a352-893d52b446aa",
            "0.3374",
            "25",
            "0.005061",
            "",
        ),
    ],
)
def test_recorded_execution_pushes_are_read_field_by_field(name, exec_id, price, qty, fee, fee_coin):
    replay = Replay()
    replay.in_sync(stamp_of(name))
    (update,) = [e for e in replay.play(name) if isinstance(e, ExecutionUpdate)]
    (fill,) = update.executions
    assert (fill.exec_id, fill.exec_price, fill.exec_qty, fill.exec_fee, fill.fee_coin, fill.exec_type) == (
        exec_id,
        Decimal(price),
        Decimal(qty),
        Decimal(fee),
        fee_coin,
        "Trade",
    )


@pytest.mark.parametrize(
    "name, equity, coin, wallet, streamed",
    [
        ("wallet_docs.json", "10262.91335023", "BTC", "0.00102964", False),  # BTC's value moves: REST
        ("wallet_testnet.json", "27336.17009523", "USDT", "-620.53813709", True),
    ],
)
def test_recorded_wallet_pushes_become_the_balance_they_say(name, equity, coin, wallet, streamed):
    replay = Replay()
    at = stamp_of(name)
    replay.in_sync(at)
    replay.play(name)
    balance = replay.facts.balance
    assert balance is not None
    assert balance.total_equity_usd == Decimal(equity)
    assert {c.coin: c.wallet_balance for c in balance.coins}[coin] == Decimal(wallet)
    # served to a judgement only while nothing in it moves with a market (Bybit pushes no price moves)
    served = replay.facts.account_balance(at, MAX_AGE_MS)
    assert (served is not None) == streamed


def test_a_balance_holding_a_coin_that_moves_with_its_market_is_read_over_rest():
    replay = Replay()
    at = stamp_of("wallet_docs.json")
    replay.in_sync(at)
    replay.play("position_short_entry_price.json")
    replay.play("wallet_testnet.json")  # USDT and USDC only: its value holds between pushes...
    assert replay.facts.account_balance(at, MAX_AGE_MS) is None  # ...but a position is open


def test_documented_public_messages_become_mark_book_and_band():
    replay = Replay()
    replay.in_sync(stamp_of("tickers_linear_docs.json"))
    replay.play("tickers_linear_docs.json")
    assert replay.facts.marks[("linear", "BTCUSDT")] == Decimal("66666.60")
    replay.play("orderbook_snapshot_then_delta.json")
    assert replay.facts.books[("linear", "BTCUSDT")] == (Decimal("27450.00"), Decimal("27451.50"))
    replay.play("price_limit_docs.json")
    assert replay.facts.bands[("linear", "BTCUSDT")] == (Decimal("114450.00"), Decimal("103550.00"))
    replay.play("tickers_spot_testnet.json")  # a spot ticker has no mark: nothing to keep, nothing refused
    assert ("spot", "BTCUSDT") not in replay.facts.marks


def test_an_unreadable_public_message_forgets_only_its_market_and_the_channel_stays_in_sync():
    replay = Replay()
    at = stamp_of("orderbook_snapshot_then_delta.json")
    replay.in_sync(at)
    replay.play("orderbook_snapshot_then_delta.json")
    replay.facts.marks[("linear", "ETHUSDT")] = Decimal("3000")  # another market, known
    garbled = {"topic": "orderbook.50.BTCUSDT", "type": "delta", "ts": at, "data": {"u": "x"}}
    replay.reader.receive("linear", json.dumps(garbled))
    (event,) = replay.events[-1:]
    replay.facts.apply(event, at)
    assert event == Unreadable("linear", "orderbook.50.BTCUSDT")
    assert ("linear", "BTCUSDT") not in replay.facts.books
    assert replay.facts.marks[("linear", "ETHUSDT")] == Decimal("3000")
    assert replay.facts.usable("linear", at, MAX_AGE_MS)


def test_an_unreadable_private_message_has_the_account_read_again():
    replay = Replay()
    at = stamp_of("position_short_entry_price.json")
    replay.in_sync(at)
    replay.reader.receive(PRIVATE, json.dumps({"topic": "wallet", "creationTime": at, "data": [{"coin": 5}]}))
    replay.facts.apply(replay.events[-1], at)
    assert replay.events[-1] == Unreadable(PRIVATE, "wallet")
    assert replay.facts.resync_wanted()  # REST reads what the lost message said; the stream stays on


def test_a_conditional_order_pushed_as_triggered_stays_open():
    """enum.mdx: Triggered is "instantaneous state for conditional orders from Untriggered to New"; a push
    carrying it (the recorded order's row in that state) leaves the order open, never gone."""
    replay = Replay()
    recorded = fixture("order_linear_cancelled.json")["messages"][0]
    at = int(recorded["creationTime"])
    replay.in_sync(at)
    row = recorded["data"][0] | {"orderStatus": "Triggered", "stopOrderType": "Stop", "cancelType": "UNKNOWN"}
    replay.reader.receive(PRIVATE, json.dumps(recorded | {"data": [row]}))
    replay.facts.apply(replay.events[-1], at)
    (order,) = replay.facts.open_orders("linear", "BTCUSDT", at, MAX_AGE_MS)
    assert (order.status, order.qty) == ("Triggered", Decimal("0.010"))
