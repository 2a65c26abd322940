"""The paper account's log: what a crash at any moment leaves on disk loads as exactly the account then.

The oracle is the whole snapshot (pilot.paper.state.snapshot), written apart from the log's change
tracking: after each step the files (snapshot and log, as a crash would leave them) are loaded into a fresh
engine, and its snapshot must equal the running exchange's.
"""

from __future__ import annotations

import json
import random
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

from pybit.exceptions import InvalidRequestError

from pilot.paper import PaperExchange
from pilot.paper.engine import Engine
from pilot.paper.scenario import load_scenario
from pilot.paper.state import snapshot
from pilot.paper.state_log import StateLog, log_path
from tests.exchange.conftest import raw_session
from tests.paper.conftest import still, walk, with_funding, world

DAY_MS = 86_400_000


def loaded_after_a_crash(paper: PaperExchange, document: dict[str, Any], into: Path) -> dict[str, Any]:
    """The account a restart would load from the files as they are now (copied while the exchange runs)."""
    assert paper.state_path is not None
    with paper._lock:  # the exchange writes under this lock: the copy is what a crash now would leave
        live = snapshot(paper._engine)
        into.mkdir(exist_ok=True)
        copy = into / "paper.json"
        shutil.copy(paper.state_path, copy)
        shutil.copy(log_path(paper.state_path), log_path(copy))
    engine = Engine(load_scenario(document), paper.now_ms)
    engine.market.start(paper.now_ms())  # as PaperExchange does before it loads
    StateLog(copy).load(engine)
    restored = snapshot(engine)
    assert restored == live
    return restored


def test_every_write_is_logged_so_a_crash_after_it_loads_the_same_account(tmp_path: Path) -> None:
    document = with_funding(world({"BTCUSDT": walk(seed=3)}, ackLagReads=0), "0.0001")
    with still(document, state_path=tmp_path / "paper.json") as paper:
        session = raw_session(paper)
        crash = tmp_path / "crash"

        def order(**params: Any) -> str:
            answer = session.place_order(category="linear", **params)
            return answer["result"]["orderId"]

        order(symbol="BTCUSDT", side="Buy", orderType="Market", qty="0.002", stopLoss="70000")
        loaded_after_a_crash(paper, document, crash)
        resting = order(symbol="BTCUSDT", side="Buy", orderType="Limit", qty="0.001", price="70000")
        order(symbol="ETHUSDT", side="Sell", orderType="Limit", qty="0.01", price="9000")
        session.place_order(category="spot", symbol="ETHUSDT", side="Buy", orderType="Market", qty="50")
        loaded_after_a_crash(paper, document, crash)
        session.amend_order(category="linear", symbol="BTCUSDT", orderId=resting, price="71000")
        session.set_trading_stop(
            category="linear",
            symbol="BTCUSDT",
            tpslMode="Partial",
            stopLoss="72000",
            slSize="0.001",
            positionIdx=0,
        )
        order(
            symbol="SOLUSDT", side="Buy", orderType="Market", qty="1", triggerPrice="200", triggerDirection=1
        )
        loaded_after_a_crash(paper, document, crash)
        session.cancel_order(category="linear", symbol="BTCUSDT", orderId=resting)
        paper.set_prices("ETHUSDT", bid="9100", ask="9100.01")  # the resting ETH sell fills
        paper.set_prices("BTCUSDT", bid="71500", ask="71500.1")  # the partial stop triggers
        loaded_after_a_crash(paper, document, crash)
        paper.advance(DAY_MS + 1)  # funding rows; the cancelled order falls out of history at the next create
        order(symbol="BTCUSDT", side="Buy", orderType="Market", qty="0.001")
        restored = loaded_after_a_crash(paper, document, crash)
        assert resting not in {o["order_id"] for o in restored["orders"]}
        assert any(e["exec_type"] == "Funding" for e in restored["executions"])
        assert restored["closed_pnl"]


def test_a_log_line_cut_short_by_a_crash_is_ignored_and_the_rest_loads(tmp_path: Path) -> None:
    document = world()
    state = tmp_path / "paper.json"
    with still(document, state_path=state) as paper:
        session = raw_session(paper)
        session.place_order(category="linear", symbol="BTCUSDT", side="Buy", orderType="Market", qty="0.001")
        expected = loaded_after_a_crash(paper, document, tmp_path / "crash")
        session.place_order(category="linear", symbol="BTCUSDT", side="Buy", orderType="Market", qty="0.001")
        copy = tmp_path / "crash" / "paper.json"
        shutil.copy(state, copy)
        text = log_path(state).read_bytes()
    log_path(copy).write_bytes(text[: text.rstrip(b"\n").rfind(b"\n") + 1] + text.splitlines()[-1][:40])
    engine = Engine(load_scenario(document), lambda: 0)
    engine.market.start(0)
    StateLog(copy).load(engine)
    assert snapshot(engine)["orders"] == expected["orders"]


def test_a_log_the_snapshot_already_holds_is_not_applied_twice(tmp_path: Path) -> None:
    """A crash between writing the new snapshot and starting its log leaves the old log: it is ignored."""
    document = world()
    state = tmp_path / "paper.json"
    with still(document, state_path=state) as paper:
        session = raw_session(paper)
        session.place_order(category="linear", symbol="BTCUSDT", side="Buy", orderType="Market", qty="0.001")
        old_log = log_path(state).read_bytes()
        assert len(old_log.splitlines()) == 2  # the header and one write
    assert len(log_path(state).read_bytes().splitlines()) == 1  # a clean stop folded it in
    log_path(state).write_bytes(old_log)
    with still(document, state_path=state) as paper:
        assert len(paper.executions()) == 1
        assert json.loads(state.read_text())["generation"] == 3  # start, stop, start


def test_a_crash_after_any_of_many_mixed_writes_loads_the_same_account(tmp_path: Path) -> None:
    """Seeded mixed traffic (market and resting orders, amends, cancels, stops, moves, lagging acks)."""
    draw = random.Random(26)
    document = with_funding(world({"BTCUSDT": walk(seed=5)}, ackLagReads=1), "0.0001")
    with still(document, state_path=tmp_path / "paper.json") as paper:
        session = raw_session(paper)
        for step in range(60):
            mid = paper.quote("BTCUSDT").mark
            side = draw.choice(["Buy", "Sell"])
            choice = draw.randrange(7)
            try:
                if choice == 0:
                    session.place_order(
                        category="linear", symbol="BTCUSDT", side=side, orderType="Market", qty="0.001"
                    )
                elif choice == 1:
                    away = mid * (Decimal("0.99") if side == "Buy" else Decimal("1.01"))
                    session.place_order(
                        category="linear",
                        symbol="BTCUSDT",
                        side=side,
                        orderType="Limit",
                        qty="0.001",
                        price=str(away.quantize(Decimal("0.1"))),
                    )
                elif choice == 2 and paper.open_orders():
                    target = draw.choice(paper.open_orders())
                    session.cancel_order(
                        category=target.category, symbol=target.symbol, orderId=target.order_id
                    )
                elif choice == 3 and paper.open_orders():
                    target = draw.choice(paper.open_orders())
                    session.amend_order(
                        category=target.category, symbol=target.symbol, orderId=target.order_id, qty="0.002"
                    )
                elif choice == 4 and paper.position("BTCUSDT").size:
                    long = paper.position("BTCUSDT").size > 0
                    stop = mid * (Decimal("0.98") if long else Decimal("1.02"))
                    session.set_trading_stop(
                        category="linear",
                        symbol="BTCUSDT",
                        tpslMode="Full",
                        positionIdx=0,
                        stopLoss=str(stop.quantize(Decimal("0.1"))),
                    )
                elif choice == 5:
                    paper.advance(draw.choice([1_000, 60_000, 3_600_000]))
                else:
                    session.get_open_orders(category="linear", symbol="BTCUSDT")  # counts down ack lags
                    session.place_order(
                        category="spot", symbol="BTCUSDT", side="Buy", orderType="Market", qty="20"
                    )
            except InvalidRequestError:
                pass  # a definite refusal changes nothing; the files must still match
            loaded_after_a_crash(paper, document, tmp_path / f"crash-{step % 2}")
        assert len(paper.executions()) >= 10 and len(paper.orders()) >= 20
