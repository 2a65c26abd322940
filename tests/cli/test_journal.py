"""`pilot journal`: listing, receipt cards for filled and refused orders, and the chain check."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pilot.app.place import place_order
from pilot.app.plan import plan_order
from pilot.app.runtime import Home, Runtime

from .conftest import btc, pilot, pilot_json, planned_ok

pytestmark = pytest.mark.anyio


async def _refused_then_filled(runtime: Runtime) -> str:
    refused = await plan_order(runtime, btc(qty="0.0005"))  # about $40, over the $25 cap
    assert refused.status == "refused"
    plan_id = await planned_ok(runtime)
    answer = await place_order(runtime, plan_id)
    assert answer.status == "filled", answer
    return plan_id


async def test_entries_list_as_json_and_filter_by_kind_prefix(home: Path, runtime: Runtime) -> None:
    plan_id = await _refused_then_filled(runtime)

    everything = await pilot_json("journal", "--home", str(home))
    orders = await pilot_json("journal", "--home", str(home), "--kind", "order")
    one_plan = await pilot_json("journal", "--home", str(home), "--plan", plan_id)
    newest = await pilot_json("journal", "--home", str(home), "--limit", "1")

    assert [e["kind"] for e in everything] == ["plan", "plan", "order.sent", "order.outcome"]
    assert [e["kind"] for e in orders] == ["order.sent", "order.outcome"]
    assert {e["plan_id"] for e in one_plan} == {plan_id} and len(one_plan) == 3
    assert [e["seq"] for e in newest] == [4]
    assert everything[0]["summary"].startswith("refused: maxOrderNotionalUsd")


async def test_time_bounds_select_entries_in_since_until(home: Path, runtime: Runtime) -> None:
    await _refused_then_filled(runtime)
    entries = await pilot_json("journal", "--home", str(home))
    second_at = entries[1]["at"]

    later = await pilot_json("journal", "--home", str(home), "--since", second_at)
    earlier = await pilot_json("journal", "--home", str(home), "--until", second_at)

    assert [e["seq"] for e in later] == [2, 3, 4]
    assert [e["seq"] for e in earlier] == [1]


async def test_card_of_a_filled_order_shows_what_was_checked_sent_filled_and_sealed(
    home: Path, runtime: Runtime
) -> None:
    plan_id = await _refused_then_filled(runtime)

    [card] = await pilot_json("journal", "--home", str(home), "--card", plan_id)

    assert card["card"] == plan_id and card["status"] == "filled"
    assert card["asked"]["symbol"] == "BTCUSDT" and card["asked"]["qty"] == "0.0002"
    assert card["facts"]["bid"] and card["facts"]["policy_version"].startswith("sha256:")
    assert card["checks"]["passed"] and card["checks"]["violations"] == []
    assert card["checks"]["position_notional_usd"] and card["checks"]["liquidation_distance_pct"]
    assert card["sent"]["client_order_id"].startswith("pilot-") and card["sent"]["qty"] == "0.0002"
    assert card["exchange"]["fill"]["filled_qty"] == "0.0002" and card["exchange"]["fill"]["avg_price"]
    assert card["refusals"] == []
    last = (await runtime.store.journal.entries(plan_id=plan_id))[-1]
    assert card["seal"] == {"seq": last.seq, "hash": last.hash, "entries": [2, 3, 4]}


async def test_a_refused_plan_gets_a_card_with_its_numbers_and_next_safe_action(
    home: Path, runtime: Runtime
) -> None:
    await _refused_then_filled(runtime)

    cards = await pilot_json("journal", "--home", str(home), "--card", "--last", "2")
    [by_seq] = await pilot_json("journal", "--home", str(home), "--card", "seq-1")

    refused = cards[0]
    assert refused == by_seq
    assert refused["card"] == "seq-1" and refused["status"] == "refused" and refused["plan_id"] is None
    assert {v["rule"] for v in refused["checks"]["violations"]} == {"maxOrderNotionalUsd", "maxNotionalUsd"}
    assert all(v["limit"] == "25" and v["attempted"] for v in refused["checks"]["violations"])
    [refusal] = refused["refusals"]
    assert refusal["stage"] == "plan"
    assert refusal["next_safe_action"]["tool"] == "plan_order"
    assert refusal["next_safe_action"]["args"]["qty"] == "0.00031"
    assert refused["sent"] is None and refused["exchange"] is None
    assert refused["seal"]["seq"] == 1
    assert cards[1]["status"] == "filled"


async def test_markdown_cards_and_an_unknown_plan(home: Path, runtime: Runtime) -> None:
    plan_id = await _refused_then_filled(runtime)

    markdown = await pilot("journal", "--home", str(home), "--card", plan_id, "--format", "markdown")
    unknown = await pilot("journal", "--home", str(home), "--card", "plan_nope")

    assert markdown.exit_code == 0 and plan_id in markdown.output
    assert unknown.exit_code == 1


async def test_verify_counts_an_intact_chain(home: Path, runtime: Runtime) -> None:
    await _refused_then_filled(runtime)

    report = await pilot_json("journal", "--home", str(home), "verify")

    assert report == {"ok": True, "count": 4, "first_broken_seq": None, "reason": None}


async def test_an_edited_row_breaks_verify_naming_its_seq(home: Path, runtime: Runtime) -> None:
    await _refused_then_filled(runtime)
    with sqlite3.connect(Home(home).database_path) as raw:
        raw.execute("DROP TRIGGER journal_no_update")
        raw.execute("UPDATE journal SET data = replace(data, '0.0002', '0.0020') WHERE seq = 3")

    result = await pilot("journal", "verify", "--home", str(home), "--format", "json")
    text = await pilot("journal", "--home", str(home), "verify")

    assert result.exit_code == 1
    assert '"first_broken_seq": 3' in result.output and '"reason": "hash_mismatch"' in result.output
    assert text.exit_code == 1


async def test_a_home_without_a_journal_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    result = await pilot("journal", "--home", str(tmp_path))

    assert result.exit_code == 2
    assert not Home(tmp_path).database_path.exists()
