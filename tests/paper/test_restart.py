"""A restarted paper exchange continues the same path: quotes, each path's position (a walk's generator, a
tape's point), its schedule, the next funding times and the exchange's time are in the state file."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from tests.exchange.conftest import raw_session
from tests.paper.conftest import CRASH_TAPE, still, tape, walk, with_funding, world

MOVING = {"BTCUSDT": walk(seed=21), "ETHUSDT": tape(CRASH_TAPE, start="3100", barMs=60_000)}


def marks(paper) -> tuple[Decimal, Decimal]:
    return paper.quote("BTCUSDT").mark, paper.quote("ETHUSDT").mark


def test_a_restart_continues_the_same_path_and_the_same_time(tmp_path: Path):
    document = world(MOVING)
    with still(document) as straight:
        straight.advance(600_000)
        halfway = marks(straight)
        straight.advance(650_500)
        expected = marks(straight)
    state = tmp_path / "paper.json"
    with still(document, state_path=state) as first:
        first.advance(600_000)
        assert marks(first) == halfway
        stopped_at = first.now_ms()
    with still(document, state_path=state) as second:
        assert second.now_ms() == stopped_at and marks(second) == halfway
        second.advance(650_500)
        assert marks(second) == expected
        assert second.now_ms() == stopped_at + 650_500


def test_the_next_funding_time_and_the_funding_rows_survive_a_restart(tmp_path: Path):
    document = with_funding(world(MOVING), "0.0001")
    state = tmp_path / "paper.json"
    with still(document, state_path=state) as first:
        raw_session(first).place_order(
            category="linear", symbol="SOLUSDT", side="Buy", orderType="Market", qty="1"
        )
        first.advance(first.next_funding_ms("SOLUSDT") - first.now_ms())
        (funding,) = [e for e in first.executions() if e.exec_type == "Funding"]
        due = first.next_funding_ms("SOLUSDT")
    with still(document, state_path=state) as second:
        assert second.next_funding_ms("SOLUSDT") == due
        rows = raw_session(second).get_executions(category="linear", symbol="SOLUSDT")["result"]["list"]
        assert [r["execId"] for r in rows if r["execType"] == "Funding"] == [funding.exec_id]


def test_a_state_file_saved_before_prices_moved_with_time_still_loads(tmp_path: Path):
    """Files written before this change kept a walk as {"walks": {symbol: {mid, rng}}} and no market time."""
    document = world({"BTCUSDT": {"walk": {"start": "80000", "volatilityPct": "0.5", "seed": 7}}})
    with still(document) as reference:
        reference.tick()
        reference.tick()
        expected = reference.quote("BTCUSDT")
    state = tmp_path / "paper.json"
    with still(document, state_path=state) as first:
        first.tick()
    data = json.loads(state.read_text())
    walked = data.pop("market")["paths"]["BTCUSDT"]
    data["walks"] = {"BTCUSDT": {"mid": walked["mid"], "rng": walked["rng"]}}
    state.write_text(json.dumps(data))
    with still(document, state_path=state) as restored:
        restored.tick()
        assert restored.quote("BTCUSDT") == expected
