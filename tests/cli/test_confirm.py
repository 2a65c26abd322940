"""`pilot confirm`: parked actions listed and shown always; approved or rejected here only when policy.json opens
the CLI channel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.approvals import ClientChannel, NoFormPossible
from pilot.app.human.desk import decide
from pilot.app.orders.place import place_order
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.parked import run_approved

from .conftest import edit_policy, pilot, pilot_json, planned_ok

pytestmark = pytest.mark.anyio

CLI_CHANNEL = {
    "aboveNotionalUsd": None,
    "actions": ["place_order"],
    "cliChannel": True,
    "pendingTtlSeconds": 300,
}


async def _parked(runtime: Runtime) -> tuple[str, str]:
    """Plan an order the policy wants confirmed, place it from a client with no form: it is parked."""
    plan_id = await planned_ok(runtime)
    answer = await place_order(runtime, plan_id, ClientChannel(NoFormPossible()))
    assert answer.status == "pending_confirmation" and answer.confirmation_id, answer
    return plan_id, answer.confirmation_id


async def test_approve_asks_then_decides_and_journals_as_the_human(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    plan_id, confirmation_id = await _parked(runtime)

    listed = await pilot("confirm", "list", "--home", str(home))
    result = await pilot("confirm", "approve", confirmation_id, "--home", str(home), input="y\n")

    assert listed.exit_code == 0 and result.exit_code == 0, result.output
    assert "Approve?" in result.output
    record = await runtime.store.confirmations.get(confirmation_id)
    assert record is not None and record.status == "approved" and record.decided_by == "human:cli"
    decided = (await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION))[-1]
    assert decided.actor == "human" and decided.plan_id == plan_id
    assert decided.data == {
        "event": "decided",
        "approved": True,
        "confirmation_id": confirmation_id,
        "tool": "place_order",
    }


async def test_an_approved_order_runs_in_the_server_and_its_card_shows_the_cli_channel(
    home: Path, runtime: Runtime
) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    plan_id, confirmation_id = await _parked(runtime)
    await pilot("confirm", "approve", confirmation_id, "--home", str(home), input="y\n")

    [result] = await run_approved(runtime)
    [card] = (await pilot_json("journal", "--home", str(home), "--card", plan_id))["cards"]

    assert result["status"] == "filled"
    assert card["status"] == "filled"
    assert [(c["channel"], c["verdict"]) for c in card["confirmations"]] == [
        ("queue", "parked"),
        ("cli", "approved"),
    ]
    assert [step["step"] for step in card["path"]] == ["planned", "parked", "approved", "sent", "filled"]
    assert card["refusals"] == []
    assert card["sent"]["origin"] == "place_order (approved in the CLI)"


async def test_an_order_approved_on_the_console_has_a_card_that_names_the_console(
    home: Path, runtime: Runtime
) -> None:
    """Found by a new user: the card said "approved in the CLI" for every approval made outside the client."""
    edit_policy(home, confirm={**CLI_CHANNEL, "cliChannel": False, "consoleChannel": True})
    plan_id, confirmation_id = await _parked(runtime)
    decision = await decide(runtime, confirmation_id, approve=True, via="console")
    assert decision.record is not None

    [result] = await run_approved(runtime)
    [card] = (await pilot_json("journal", "--home", str(home), "--card", plan_id))["cards"]

    assert result["status"] == "filled"
    assert ("console", "approved") in [(c["channel"], c["verdict"]) for c in card["confirmations"]]
    assert card["sent"]["origin"] == "place_order (approved in the console)"


async def test_a_parked_order_is_journaled_as_pending_not_as_refused(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    plan_id, confirmation_id = await _parked(runtime)

    [pending] = await runtime.store.journal.entries(kind=entry_kinds.PLACE_PENDING)
    [card] = (await pilot_json("journal", "--home", str(home), "--card", plan_id))["cards"]

    assert await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED) == []
    assert pending.plan_id == plan_id and pending.data["confirmation_id"] == confirmation_id
    assert card["status"] == "pending_confirmation" and card["refusals"] == []
    assert [step["step"] for step in card["path"]] == ["planned", "parked"]


async def test_a_confirmation_is_named_by_any_unique_prefix_of_its_id(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    _, confirmation_id = await _parked(runtime)

    shown = await pilot_json("confirm", "show", confirmation_id[:8], "--home", str(home))
    rejected = await pilot_json("confirm", "reject", confirmation_id[:10], "--home", str(home))

    assert shown["confirmation"]["confirmation_id"] == confirmation_id
    assert rejected == {
        "home": str(home),
        "confirmation_id": confirmation_id,
        "decision": "rejected",
        "journal_seq": rejected["journal_seq"],
    }
    record = await runtime.store.confirmations.get(confirmation_id)
    assert record is not None and record.status == "rejected"


async def test_a_prefix_two_confirmations_share_is_refused_naming_them(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    await _parked(runtime)
    await _parked(runtime)

    result = await pilot("confirm", "show", "cfm_", "--home", str(home), "--format", "json")

    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "ambiguous_id"


async def test_answering_no_leaves_it_pending(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    _, confirmation_id = await _parked(runtime)

    result = await pilot("confirm", "approve", confirmation_id, "--home", str(home), input="n\n")

    assert result.exit_code == 1  # the answer is no
    record = await runtime.store.confirmations.get(confirmation_id)
    assert record is not None and record.status == "pending"


async def test_reject_decides_without_a_prompt(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    _, confirmation_id = await _parked(runtime)

    result = await pilot("confirm", "reject", confirmation_id, "--home", str(home))
    again = await pilot("confirm", "reject", confirmation_id, "--home", str(home))

    assert result.exit_code == 0 and again.exit_code == 2
    record = await runtime.store.confirmations.get(confirmation_id)
    assert record is not None and record.status == "rejected"
    assert (await runtime.store.journal.latest(entry_kinds.CONFIRMATION)).data["approved"] is False  # type: ignore[union-attr]


async def test_approve_refuses_when_the_cli_channel_is_off(home: Path, runtime: Runtime) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)
    _, confirmation_id = await _parked(runtime)
    edit_policy(home, confirm={**CLI_CHANNEL, "cliChannel": False})
    before = len(await runtime.store.journal.entries())

    result = await pilot("confirm", "approve", confirmation_id, "--home", str(home), input="y\n")
    listed = await pilot("confirm", "list", "--home", str(home), "--format", "json")

    assert result.exit_code == 2 and listed.exit_code == 0  # deciding needs the channel, reading does not
    assert "Approve?" not in result.output
    assert [c["confirmation_id"] for c in json.loads(listed.stdout)["confirmations"]] == [confirmation_id]
    record = await runtime.store.confirmations.get(confirmation_id)
    assert record is not None and record.status == "pending"
    assert len(await runtime.store.journal.entries()) == before


async def test_an_unknown_confirmation_exits_2_with_its_code(home: Path) -> None:
    edit_policy(home, confirm=CLI_CHANNEL)

    result = await pilot("confirm", "show", "cfm_nope", "--home", str(home), "--format", "json")

    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "unknown_id"


async def test_list_works_with_only_the_console_channel_open_and_says_where_to_decide(
    home: Path, runtime: Runtime
) -> None:
    edit_policy(home, confirm={**CLI_CHANNEL, "cliChannel": False, "consoleChannel": True})
    _, confirmation_id = await _parked(runtime)

    listed = await pilot_json("confirm", "list", "--home", str(home))
    approved = await pilot("confirm", "approve", confirmation_id, "--home", str(home), input="y\n")

    assert [c["confirmation_id"] for c in listed["confirmations"]] == [confirmation_id]
    assert listed["channels"] == ["console"]
    assert approved.exit_code == 2 and "Approve?" not in approved.output
    [pending] = await runtime.store.journal.entries(kind=entry_kinds.PLACE_PENDING)
    human = pending.data["next_safe_action"]["human"]
    assert f"/approvals/{confirmation_id}" in human and "pilot confirm approve" not in human
