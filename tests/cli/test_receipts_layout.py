"""Receipts a human can read: at 80 columns and piped, full ids (any unique prefix accepted), one entry per
event, a parking journaled as pending, and a filled order's card showing the way it went."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.approvals import ClientChannel, NoFormPossible
from pilot.app.human.desk import decide
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.parked import run_approved

from .conftest import btc, edit_policy, pilot, pilot_json, planned_ok

pytestmark = pytest.mark.anyio

CLI_CHANNEL = {
    "aboveNotionalUsd": None,
    "actions": ["place_order"],
    "cliChannel": True,
    "pendingTtlSeconds": 300,
}
BOX = "│╭╰─"


async def _refused_then_parked_approved_filled(home: Path, runtime: Runtime) -> str:
    edit_policy(home, confirm=CLI_CHANNEL)
    assert (await plan_order(runtime, btc(qty="0.0005"))).status == "refused"
    plan_id = await planned_ok(runtime)
    parked = await place_order(runtime, plan_id, ClientChannel(NoFormPossible()))
    assert parked.status == "pending_confirmation" and parked.confirmation_id
    await decide(runtime, parked.confirmation_id, approve=True)
    [result] = await run_approved(runtime)
    assert result["status"] == "filled"
    return plan_id


async def text_of(*args: str, columns: int | None) -> str:
    """What a human sees: stdout at `columns` wide (None: piped, where no width is known)."""
    result = await pilot(*args, env={"COLUMNS": str(columns)} if columns else {"COLUMNS": None})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("columns", [80, 120, None], ids=["80 columns", "120 columns", "piped"])
async def test_the_journal_list_fits_and_never_wraps_a_summary_one_word_per_line(
    home: Path, runtime: Runtime, columns: int | None
) -> None:
    plan_id = await _refused_then_parked_approved_filled(home, runtime)

    text = await text_of("journal", "--home", str(home), columns=columns)

    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= (columns or 80)
    assert plan_id in text  # the whole id, never cut
    summary_at = lines[1].index("summary")
    cells: list[list[str]] = []  # each entry's summary, line by line
    for line in lines[2:]:
        if line[:summary_at].strip():
            cells.append([])
        cells[-1].append(line[summary_at:].strip())
    for cell in cells:  # one word per line would take as many lines as words; two or more share each line
        assert len(cell) <= len(" ".join(cell).split()) // 2 + 1, cell


async def test_one_event_is_one_entry_in_the_list_and_every_row_stays_in_json(
    home: Path, runtime: Runtime
) -> None:
    await _refused_then_parked_approved_filled(home, runtime)

    text = await text_of("journal", "--home", str(home), columns=120)
    rows = (await pilot_json("journal", "--home", str(home)))["entries"]

    listed = [int(line.split()[0]) for line in text.splitlines()[2:] if re.match(r"\s*\d+ ", line)]
    parking = [
        row["seq"] for row in rows if row["kind"] in (entry_kinds.PLACE_PENDING, entry_kinds.CONFIRMATION)
    ]
    assert [row["seq"] for row in rows] == list(range(1, len(rows) + 1))  # every row, in JSON
    assert len(listed) == len(rows) - 3  # the parking told three times and the approval twice, once each
    assert text.count("parked") == 1 and "(also seq" in text
    assert {seq for seq in parking if seq not in listed} <= set(parking)


async def test_a_parking_is_journaled_pending_and_the_filled_card_shows_its_path_without_refused(
    home: Path, runtime: Runtime
) -> None:
    plan_id = await _refused_then_parked_approved_filled(home, runtime)

    [card] = (await pilot_json("journal", "--home", str(home), "--card", plan_id))["cards"]
    text = await text_of("journal", "--home", str(home), "--card", plan_id, columns=80)

    assert await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED) == []
    assert len(await runtime.store.journal.entries(kind=entry_kinds.PLACE_PENDING)) == 1
    assert [step["step"] for step in card["path"]] == ["planned", "parked", "approved", "sent", "filled"]
    assert card["refusals"] == [] and [c["verdict"] for c in card["confirmations"]] == ["parked", "approved"]
    assert "planned → parked → approved → sent → filled" in text
    assert not any(line.lstrip("│ ").startswith("refused") for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, None], ids=["80 columns", "piped"])
async def test_a_card_fits_and_wraps_under_its_own_column(
    home: Path, runtime: Runtime, columns: int | None
) -> None:
    plan_id = await _refused_then_parked_approved_filled(home, runtime)

    text = await text_of("journal", "--home", str(home), "--card", "--last", "2", columns=columns)

    lines = text.splitlines()
    assert max(len(line) for line in lines) <= (columns or 80)
    assert plan_id in text and "seq-1" in text
    body = [line for line in lines if line.startswith("│")]
    label = re.match(r"│ (home\s+)", body[0])  # first, which money: practice or LIVE
    assert label is not None
    width = len(label.group(1))  # the label column and the space after it
    for line in body:  # a line wrapped inside a section starts under its text, never under the label
        assert re.fullmatch(r"[a-z]*\s*", line[2 : 2 + width]), line


async def test_any_unique_prefix_names_a_plan_and_an_unknown_one_is_a_usage_error(
    home: Path, runtime: Runtime
) -> None:
    plan_id = await _refused_then_parked_approved_filled(home, runtime)

    [card] = (await pilot_json("journal", "--home", str(home), "--card", plan_id[:10]))["cards"]
    listed = (await pilot_json("journal", "--home", str(home), "--plan", plan_id[:10]))["entries"]
    unknown = await pilot("journal", "--home", str(home), "--card", "plan_zzzz")
    everything = await pilot("journal", "--home", str(home), "--card", "plan_")  # one plan: still unique

    assert card["plan_id"] == plan_id and {row["plan_id"] for row in listed} == {plan_id}
    assert unknown.exit_code == 2 and "Traceback" not in unknown.output
    assert everything.exit_code == 0
