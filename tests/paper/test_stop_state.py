"""TP/SL and conditional orders survive a restart of a paper exchange with a state file; a scenario's
positions[].stopLoss / takeProfit become Full TP/SL orders; tpslOnCreate false still loses the stop.

Sources: SCENARIOS.md ("A paper account that persists", the fields `positions`, `tpslOnCreate`);
trading-stop.mdx (Full TP/SL are orders of the position).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from pilot.paper import start_paper_exchange
from tests.exchange.conftest import raw_session
from tests.paper.stop_world import World, dec, default_scenario, stop_world

RISE = 1


def world(paper) -> World:
    return World(paper, raw_session(paper))


def test_a_restart_continues_with_the_same_stops_and_conditional_orders(tmp_path: Path):
    state = tmp_path / "paper.json"
    with start_paper_exchange(state_path=state) as paper:
        w = world(paper)
        w.create(qty="0.002", stopLoss="79000", takeProfit="85000")
        conditional = w.create(qty="0.001", triggerPrice="81000", triggerDirection=RISE, orderLinkId="later")
        before = {row["orderId"]: row for row in w.realtime()}
    with start_paper_exchange(state_path=state) as paper:
        w = world(paper)
        assert {row["orderId"]: row for row in w.realtime()} == before
        assert dec(w.position()["stopLoss"]) == 79000
        w.move("81000")
        assert w.order(conditional)["orderStatus"] == "Filled"
        assert {dec(row["qty"]) for row in w.legs()["StopLoss"]} == {dec("0.003")}  # the bound pair follows
        w.move("79000")
        assert paper.position("BTCUSDT").size == 0


def test_a_state_file_from_before_stop_orders_keeps_its_stop_as_a_full_stop_order(tmp_path: Path):
    state = tmp_path / "paper.json"
    with start_paper_exchange(state_path=state) as paper:
        world(paper).create(qty="0.002")
    data = json.loads(state.read_text())  # as the earlier paper exchange wrote it: the stop on the position
    [btc] = [p for p in data["positions"] if p["symbol"] == "BTCUSDT"]
    btc["stop_loss"] = "79000"
    for order in data["orders"]:
        for field in ("trigger_price", "tpsl_mode", "create_type", "pair"):
            order.pop(field)
    state.write_text(json.dumps(data))
    with start_paper_exchange(state_path=state) as paper:
        w = world(paper)
        [stop] = w.legs()["StopLoss"]
        assert (dec(stop["triggerPrice"]), dec(stop["qty"]), stop["tpslMode"]) == (
            79000,
            dec("0.002"),
            "Full",
        )
        w.move("78990")
        assert paper.position("BTCUSDT").size == 0


def test_a_scenario_positions_stop_and_target_are_full_tpsl_orders():
    scenario = default_scenario(
        positions=[
            {
                "symbol": "BTCUSDT",
                "side": "Buy",
                "size": "0.002",
                "avgPrice": "80000",
                "leverage": "5",
                "stopLoss": "79000",
                "takeProfit": "85000",
            }
        ]
    )
    with stop_world(scenario) as w:
        legs = w.legs()
        assert {kind: dec(rows[0]["triggerPrice"]) for kind, rows in legs.items()} == {
            "StopLoss": 79000,
            "TakeProfit": 85000,
        }
        assert {dec(rows[0]["qty"]) for rows in legs.values()} == {dec("0.002")}
        w.move("78000")
        assert w.paper.position("BTCUSDT").size == 0


def test_tpsl_on_create_false_accepts_the_stop_and_never_places_it():
    with stop_world(default_scenario(tpslOnCreate=False)) as w:
        order_id = w.create(stopLoss="79000")
        assert dec(w.order(order_id)["stopLoss"]) == Decimal("79000")  # the create carried it
        assert w.legs() == {} and w.position()["stopLoss"] == ""
        w.trading_stop(tpslMode="Full", stopLoss="79000")  # set afterwards, it is placed
        assert sorted(w.legs()) == ["StopLoss"]
