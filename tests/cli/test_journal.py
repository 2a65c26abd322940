"""`pilot journal`: listing, receipt cards for filled and refused orders, the chain check and anchors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Home, Runtime
from pilot.store import canonical_json
from pilot.store.chain import entry_hash

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

    everything = (await pilot_json("journal", "--home", str(home)))["entries"]
    orders = (await pilot_json("journal", "--home", str(home), "--kind", "order"))["entries"]
    one_plan = (await pilot_json("journal", "--home", str(home), "--plan", plan_id))["entries"]
    by_prefix = (await pilot_json("journal", "--home", str(home), "--plan", plan_id[:9]))["entries"]
    newest = (await pilot_json("journal", "--home", str(home), "--limit", "1"))["entries"]

    assert [e["kind"] for e in everything] == ["plan", "plan", "order.sent", "order.outcome"]
    assert [e["kind"] for e in orders] == ["order.sent", "order.outcome"]
    assert {e["plan_id"] for e in one_plan} == {plan_id} and len(one_plan) == 3 and by_prefix == one_plan
    assert [e["seq"] for e in newest] == [4]
    assert everything[0]["summary"].startswith("refused: maxOrderNotionalUsd")


async def test_time_bounds_select_entries_in_since_until(home: Path, runtime: Runtime) -> None:
    await _refused_then_filled(runtime)
    entries = (await pilot_json("journal", "--home", str(home)))["entries"]
    second_at = entries[1]["at"]

    later = (await pilot_json("journal", "--home", str(home), "--since", second_at))["entries"]
    earlier = (await pilot_json("journal", "--home", str(home), "--until", second_at))["entries"]

    assert [e["seq"] for e in later] == [2, 3, 4]
    assert [e["seq"] for e in earlier] == [1]


async def test_card_of_a_filled_order_shows_what_was_checked_sent_filled_and_sealed(
    home: Path, runtime: Runtime
) -> None:
    plan_id = await _refused_then_filled(runtime)

    [card] = (await pilot_json("journal", "--home", str(home), "--card", plan_id))["cards"]
    [by_prefix] = (await pilot_json("journal", "--home", str(home), "--card", plan_id[:12]))["cards"]

    assert card == by_prefix
    assert card["card"] == plan_id and card["status"] == "filled"
    assert card["home"] == {"kind": "practice", "environment": None, "venue": None} and card["agent"] is None
    assert [step["step"] for step in card["path"]] == ["planned", "sent", "filled"]
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

    cards = (await pilot_json("journal", "--home", str(home), "--card", "--last", "2"))["cards"]
    [by_seq] = (await pilot_json("journal", "--home", str(home), "--card", "seq-1"))["cards"]

    refused = cards[0]
    assert refused == by_seq
    assert refused["card"] == "seq-1" and refused["status"] == "refused" and refused.get("plan_id") is None
    assert {v["rule"] for v in refused["checks"]["violations"]} == {"maxOrderNotionalUsd", "maxNotionalUsd"}
    assert all(v["limit"] == "25" and v["attempted"] for v in refused["checks"]["violations"])
    [refusal] = refused["refusals"]
    assert refusal["stage"] == "plan"
    assert refusal["next_safe_action"]["tool"] == "plan_order"
    assert refusal["next_safe_action"]["args"]["qty"] == "0.00031"
    assert refused.get("sent") is None and refused.get("exchange") is None
    assert refused["seal"]["seq"] == 1
    assert cards[1]["status"] == "filled"


async def test_the_last_cards_are_those_whose_latest_step_is_newest(home: Path, runtime: Runtime) -> None:
    # An order planned first and carried out after two later refusals (as one approved later is) is among
    # the last two cards; the older of the refusals is not.
    plan_id = await planned_ok(runtime)
    for _ in range(2):
        assert (await plan_order(runtime, btc(qty="0.0005"))).status == "refused"
    assert (await place_order(runtime, plan_id)).status == "filled"

    cards = (await pilot_json("journal", "--home", str(home), "--card", "--last", "2"))["cards"]
    everything = (await pilot_json("journal", "--home", str(home), "--card", "--last", "9"))["cards"]

    assert [card["card"] for card in cards] == ["seq-3", plan_id]  # oldest first by their latest step
    assert [card["card"] for card in everything] == ["seq-2", "seq-3", plan_id]
    assert [card["seal"]["seq"] for card in cards] == [3, 5]


async def test_markdown_cards_and_an_unknown_plan(home: Path, runtime: Runtime) -> None:
    plan_id = await _refused_then_filled(runtime)

    markdown = await pilot("journal", "--home", str(home), "--card", plan_id, "--format", "markdown")
    unknown = await pilot("journal", "--home", str(home), "--card", "plan_nope", "--format", "json")

    assert markdown.exit_code == 0 and plan_id in markdown.output
    assert unknown.exit_code == 2 and json.loads(unknown.stdout)["error"]["code"] == "unknown_id"


async def test_verify_counts_an_intact_chain(home: Path, runtime: Runtime) -> None:
    await _refused_then_filled(runtime)

    report = await pilot_json("journal", "--home", str(home), "verify")

    assert report == {
        "home": str(home),
        "ok": True,
        "count": 4,
        "first_broken_seq": None,
        "reason": None,
        "unsealed": 0,
        "anchored": True,  # checked against the journal's own anchor, outside the home
    }


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


async def test_a_deleted_tail_fails_verify_by_the_journals_own_anchor_and_by_one_kept_elsewhere(
    home: Path, runtime: Runtime
) -> None:
    """Before issue 25 verify alone said "intact" for a deleted tail; the anchor the store keeps beside the
    journal key (outside the home) now catches it, and the next command that opens the journal journals it
    (the kill switch, turned on by Pilot)."""
    await _refused_then_filled(runtime)
    anchor = (await pilot_json("journal", "--home", str(home), "anchor"))["anchor"]
    with sqlite3.connect(Home(home).database_path) as raw:
        raw.execute("DROP TRIGGER journal_no_delete")
        raw.execute("DELETE FROM journal WHERE seq >= 3")  # the send and its fill are gone
    raw.close()

    alone = await pilot("journal", "--home", str(home), "verify", "--format", "json")
    anchored = await pilot("journal", "--home", str(home), "verify", "--anchor", anchor, "--format", "json")
    kinds = [entry["kind"] for entry in (await pilot_json("journal", "--home", str(home)))["entries"]]

    # Opening restored the dropped trigger and journaled it, at seq 3: where the store had anchored the
    # journal (its last durable entry, the send). The next command found that and said so.
    assert kinds == ["plan", "plan", "store.repaired", "killswitch"]
    for found in (alone, anchored):
        assert found.exit_code == 1
        assert json.loads(found.stdout) == {
            "home": str(home),
            "ok": False,
            "count": 2,
            "first_broken_seq": 3,
            "reason": "anchor_mismatch",
            "unsealed": 0,
            "anchored": False,
        }


async def test_an_anchor_matches_while_the_journal_only_grows(home: Path, runtime: Runtime) -> None:
    await _refused_then_filled(runtime)
    anchor = await pilot("journal", "--home", str(home), "anchor")
    for state in ("on", "off"):
        await pilot("kill-switch", state, "--home", str(home))

    printed = anchor.stdout.splitlines()[0]
    result = await pilot_json("journal", "--home", str(home), "verify", "--anchor", printed)

    assert anchor.exit_code == 0 and printed.startswith("4:")
    assert (result["ok"], result["anchored"], result["count"]) == (True, True, 6)


async def test_a_malformed_anchor_is_a_usage_error(home: Path) -> None:
    result = await pilot("journal", "--home", str(home), "verify", "--anchor", "4:nothex")
    assert result.exit_code == 2


async def test_an_empty_journal_has_nothing_to_anchor(home: Path) -> None:
    assert (await pilot("journal", "--home", str(home), "anchor")).exit_code == 1


async def test_a_forged_kill_switch_off_fails_verify_and_is_not_obeyed(home: Path, runtime: Runtime) -> None:
    await pilot("kill-switch", "on", "--home", str(home))
    with sqlite3.connect(Home(home).database_path) as raw:
        seq, prev_hash = raw.execute("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
        data = {"on": False, "by": "human", "reason": "forged"}
        at = "2026-01-01T00:00:00.000000+00:00"
        digest = entry_hash(seq + 1, at, "killswitch", "human", None, data, prev_hash)
        raw.execute(
            "INSERT INTO journal (seq, at, kind, actor, plan_id, data, prev_hash, hash, seal)"
            " VALUES (?, ?, 'killswitch', 'human', NULL, ?, ?, ?, ?)",
            (seq + 1, at, canonical_json(data), prev_hash, digest, digest),
        )
    raw.close()

    result = await pilot("journal", "--home", str(home), "verify", "--format", "json")
    status = await pilot("kill-switch", "status", "--home", str(home))

    assert result.exit_code == 1 and json.loads(result.stdout)["reason"] == "seal_mismatch"
    assert await runtime.kill_switch_on()
    assert status.exit_code == 0


@pytest.mark.parametrize("command", [("journal",), ("journal", "verify"), ("journal", "anchor")])
async def test_a_damaged_database_exits_2_with_its_code_and_no_traceback(
    home: Path, command: tuple[str, ...]
) -> None:
    database = Home(home).database_path
    for leftover in (database.with_name("pilot.db-wal"), database.with_name("pilot.db-shm")):
        leftover.unlink(missing_ok=True)
    database.write_bytes(b"not a database at all\n" * 200)

    text = await pilot(*command, "--home", str(home))
    result = await pilot(*command, "--home", str(home), "--format", "json")

    assert text.exit_code == result.exit_code == 2
    assert "Traceback" not in text.output and text.stdout == ""
    assert json.loads(result.stdout)["error"]["code"] == "store_corrupt"


async def test_a_missing_journal_key_exits_2_with_one_line_and_creates_no_key(
    home: Path, user_home: Path
) -> None:
    await pilot("kill-switch", "on", "--home", str(home))
    key = user_home / ".config" / "pilot" / "journal.key"
    key.unlink()

    result = await pilot("journal", "verify", "--home", str(home))

    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output
    assert "PILOT_JOURNAL_KEY_FILE" in result.output
    assert not key.exists()
