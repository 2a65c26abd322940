"""Price paths: a seeded walk is the same for the same seed and the same exchange time, however it is reached;
a tape replays its recorded klines point by point; what the answers show follows the path (mark and last as
before: the mark is the quote's mid, the last price the mid floored to the tick)."""

from __future__ import annotations

import itertools
import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilot.paper import ScenarioError, load_scenario
from pilot.paper.market import floor_to
from pilot.paper.scenario import WalkSpec
from tests.exchange.conftest import raw_session
from tests.paper.conftest import (
    CRASH_TAPE,
    HOUR_MS,
    HOURLY_TAPE,
    bar_points,
    still,
    tape,
    tape_rows,
    walk,
    world,
)

EXAMPLES = int(os.environ.get("PILOT_SIM_EXAMPLES", "8"))  # bounded: each example starts two exchanges


def quotes_after(document: dict, advances: list[int]) -> list[tuple[Decimal, Decimal]]:
    with still(document) as paper:
        seen = []
        for ms in advances:
            paper.advance(ms)
            quote = paper.quote("BTCUSDT")
            seen.append((quote.bid, quote.ask))
        return seen


def test_a_walk_is_the_same_for_the_same_seed_and_the_same_advances():
    document = world({"BTCUSDT": walk(seed=7)})
    first = quotes_after(document, [1000, 59_000, 600_000])
    assert first == quotes_after(document, [1000, 59_000, 600_000])
    assert len(set(first)) == 3  # it moved each time
    other = quotes_after(world({"BTCUSDT": walk(seed=8)}), [1000, 59_000, 600_000])
    assert other != first


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=120_000), min_size=1, max_size=6))
def test_how_the_time_is_cut_does_not_change_where_the_walk_gets(cuts):
    document = world({"BTCUSDT": walk(seed=3)})
    assert quotes_after(document, cuts)[-1] == quotes_after(document, [sum(cuts)])[-1]


def test_a_walk_without_a_step_interval_keeps_its_old_meaning_it_moves_only_on_tick():
    document = world({"BTCUSDT": {"walk": {"start": "80000", "volatilityPct": "0.5", "seed": 7}}})
    with still(document) as paper:
        before = paper.quote("BTCUSDT")
        paper.advance(HOUR_MS)
        assert paper.quote("BTCUSDT") == before
        paper.tick()
        assert paper.quote("BTCUSDT") != before


def test_volatility_per_time_is_shared_among_the_steps_by_the_square_root_of_time():
    hourly = WalkSpec(Decimal(1), Decimal("1.2"), 1, 1, step_ms=1000, per_ms=HOUR_MS)
    assert hourly.step_volatility_pct == Decimal("0.02")  # 1.2% / sqrt(3600)
    assert WalkSpec(Decimal(1), Decimal("0.5"), 1, 1).step_volatility_pct == Decimal("0.5")  # per step


def test_the_answers_follow_the_walk_and_keep_mark_and_last_apart():
    with still(world({"BTCUSDT": walk(seed=5)})) as paper:
        paper.advance(90_000)
        quote = paper.quote("BTCUSDT")
        row = raw_session(paper).get_tickers(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert (Decimal(row["bid1Price"]), Decimal(row["ask1Price"])) == (quote.bid, quote.ask)
    assert Decimal(row["markPrice"]) == quote.mark == (quote.bid + quote.ask) / 2  # the mark is the mid
    assert Decimal(row["lastPrice"]) == floor_to(quote.mid, Decimal("0.10"))


def test_a_tape_replays_its_recorded_klines_four_points_a_bar(hourly):
    rows = tape_rows(HOURLY_TAPE)
    expected = [point for row in rows for point in bar_points(row)]
    step = int(load_scenario(world({"BTCUSDT": tape()})).prices["BTCUSDT"].tape.step_ms)
    assert step == 900_000  # an hourly bar's four points, at the tape's own pace
    session = raw_session(hourly)
    seen = []
    for index in range(len(expected)):
        if index:
            hourly.advance(step)
        ticker = session.get_tickers(category="linear", symbol="BTCUSDT")["result"]["list"][0]
        seen.append(Decimal(ticker["bid1Price"]))
    # a one-tick-wide quote around each recorded price: the bid is the price less half a tick, floored
    assert seen == [floor_to(price - Decimal("0.05"), Decimal("0.10")) for price in expected]


def test_a_tape_holds_its_last_price_unless_it_loops():
    rows = tape_rows(HOURLY_TAPE)
    last, first = Decimal(rows[-1][4]), Decimal(rows[0][1])
    for loop, after_end in ((False, last), (True, first)):
        with still(world({"BTCUSDT": tape(loop=loop, barMs=4000)})) as paper:
            paper.advance(len(rows) * 4000)  # one point past the end
            assert paper.quote("BTCUSDT").ask == after_end  # the tick-wide quote's ask sits on the price


def test_a_tape_scaled_to_a_start_price_keeps_its_moves_in_proportion():
    rows = tape_rows(CRASH_TAPE)
    with still(world({"ETHUSDT": tape(CRASH_TAPE, start="3100", barMs=4000)})) as paper:
        assert paper.quote("ETHUSDT").ask == Decimal("3100")  # a tick-wide quote below 3100
        paper.advance(3000)  # the first bar's close
        scaled = Decimal(rows[0][4]) * Decimal("3100") / Decimal(rows[0][1])
        assert paper.quote("ETHUSDT").bid == floor_to(scaled - Decimal("0.005"), Decimal("0.01"))


def test_a_saved_bybit_kline_answer_replays_as_a_tape(tmp_path: Path):
    answer = {  # the shape of GET /v5/market/kline (market_kline.mdx): newest first, strings
        "retCode": 0,
        "retMsg": "OK",
        "result": {
            "category": "linear",
            "symbol": "BTCUSDT",
            "list": [
                ["120000", "100", "101", "90", "91", "1", "1"],
                ["60000", "95", "100", "94", "100", "1", "1"],
            ],
        },
        "retExtInfo": {},
        "time": 1,
    }
    (tmp_path / "kline.json").write_text(json.dumps(answer))
    document = world({"BTCUSDT": tape("kline.json", barMs=4000)})
    (tmp_path / "scenario.json").write_text(json.dumps(document))
    with still(tmp_path / "scenario.json") as paper:
        asks = []
        for _ in range(8):
            asks.append(paper.quote("BTCUSDT").ask)
            paper.advance(1000)
    assert asks == [Decimal(v) for v in ("95", "94", "100", "100", "100", "101", "90", "91")]


@pytest.mark.parametrize(
    ("tape_field", "where"),
    [
        ({"file": "no-such-tape.json"}, "prices.BTCUSDT.tape.file"),
        ({"file": HOURLY_TAPE, "barMs": 1, "speed": 2}, "prices.BTCUSDT.tape"),
        ({"file": HOURLY_TAPE, "scale": 2, "start": 1}, "prices.BTCUSDT.tape"),
        ({"file": HOURLY_TAPE, "rewind": True}, "prices.BTCUSDT.tape.rewind"),
    ],
)
def test_a_bad_tape_is_refused_naming_its_place(tape_field, where):
    with pytest.raises(ScenarioError) as refused:
        load_scenario(world({"BTCUSDT": {"tape": tape_field}}))
    assert str(refused.value).startswith(where)


def test_a_price_is_one_of_a_quote_a_walk_or_a_tape():
    with pytest.raises(ScenarioError) as refused:
        load_scenario(world({"BTCUSDT": {**walk(), **tape()}}))
    assert str(refused.value).startswith("prices.BTCUSDT")


@pytest.mark.parametrize("file", [HOURLY_TAPE, CRASH_TAPE])
def test_each_packaged_tape_names_its_recording_and_its_bars_chain(file):
    from importlib import resources

    data = json.loads(resources.files("pilot.paper").joinpath("tapes", file).read_text())
    assert {"repository", "path", "commit"} <= set(data["source"])
    assert len(data["source"]["commit"]) == 40
    rows = tape_rows(file)
    starts = [int(row[0]) for row in rows]
    assert all(b - a == data["intervalMs"] for a, b in itertools.pairwise(starts))
    assert all(row[1] == before[4] for before, row in itertools.pairwise(rows))  # open = last close
