"""Attacks on the human's confirmation: the agent tries to approve its own order, and nothing is ever sent."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.types import ElicitResult

from pilot.app.answers import entry_kinds
from pilot.app.service.parked import run_approved
from pilot.server import build_server

from .conftest import BTC_SHORT, CONFIRM_EVERY_ORDER, CREATE, MODES, write_policy
from .hostile_agent import APPROVING_TOOLS, SMUGGLED_ARGUMENTS, HostileAgent

pytestmark = pytest.mark.anyio


@MODES
async def test_no_tool_approves_rejects_or_writes_policy_and_guessed_names_fail(runtime, paper, mode):
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        names = await agent.tool_names()
        parked = await agent.place((await agent.plan(BTC_SHORT))["plan_id"])
        assert parked.status == "pending_confirmation"
        guesses = await agent.call_approving_tools(parked.answer["confirmation_id"])  # type: ignore[index]
        status = await agent.attempt(
            "get_confirmation_status",
            {"confirmation_id": parked.answer["confirmation_id"]},  # type: ignore[index]
        )
    assert not names & set(APPROVING_TOOLS)
    assert not [name for name in names if any(word in name for word in ("approve", "reject", "deactivate"))]
    assert {name for name in names if "policy" in name} == {"get_policy"}
    assert {name for name in names if "kill" in name} == {"activate_kill_switch"}
    assert all(guess.unknown_tool for guess in guesses), guesses
    assert status.answer["data"]["status"] == "pending"  # type: ignore[index]
    assert await run_approved(runtime) == []  # still nothing for the server to carry out
    assert paper.request_count(CREATE) == 0


@MODES
async def test_a_size_price_side_or_approval_passed_to_place_order_is_invalid_and_the_plan_stays_usable_once(
    runtime, paper, mode
):
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        plan = await agent.plan(BTC_SHORT)
        smuggled = await agent.place_with_smuggled_arguments(plan["plan_id"])
        assert paper.request_count(CREATE) == 0
        placed = await agent.place(plan["plan_id"])
        again = await agent.place(plan["plan_id"])
    assert all(outcome.invalid_argument for outcome in smuggled), smuggled
    assert [outcome.field for outcome in smuggled] == [next(iter(extra)) for extra in SMUGGLED_ARGUMENTS]
    fixed_calls = [outcome.answer["next_safe_action"] for outcome in smuggled]  # type: ignore[index]
    assert [(call["tool"], call["args"]) for call in fixed_calls] == [
        ("place_order", {"plan_id": plan["plan_id"]})
    ] * len(SMUGGLED_ARGUMENTS)
    assert placed.status == "filled" and placed.answer["sent"]["qty"] == "0.00031"  # type: ignore[index]
    assert again.rules == ["planAlreadyUsed"]
    assert paper.request_count(CREATE) == 1
    refused = await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED)
    assert [e.data["violations"][0]["rule"] for e in refused] == ["planAlreadyUsed"]


@MODES
async def test_a_smuggled_approval_does_not_stand_in_for_the_missing_form(runtime, paper, mode):
    # Planned while the CLI channel was on (so a human could be reached); placed after a human turned it off.
    write_policy(runtime.home.path, confirm={**CONFIRM_EVERY_ORDER["confirm"], "cliChannel": True})
    async with Client(build_server(runtime), mode=mode) as client:  # declares no elicitation
        agent = HostileAgent(client)
        plan = await agent.plan(BTC_SHORT)
        write_policy(runtime.home.path, **CONFIRM_EVERY_ORDER)
        smuggled = await agent.place_with_smuggled_arguments(plan["plan_id"])
        placed = await agent.place(plan["plan_id"])
    assert all(outcome.invalid_argument for outcome in smuggled)
    assert placed.rules == ["confirmationChannelUnavailable"]
    assert placed.answer["next_safe_action"]["tool"] is None  # type: ignore[index]
    assert placed.answer["next_safe_action"]["human"]  # type: ignore[index]
    assert paper.request_count(CREATE) == 0
    [asked] = await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)
    assert asked.data["verdict"] == "unavailable" and asked.actor == "pilot"


async def test_a_form_answer_replayed_for_another_plan_or_a_second_time_never_sends_again(runtime, paper):
    """On 2026-07-28 the form comes back as a sealed request_state: the agent replays a human's accept."""
    write_policy(runtime.home.path, **CONFIRM_EVERY_ORDER)

    async def human(context, params):  # the real human accepts exactly once, for the first plan
        return ElicitResult(action="accept", content={"approve": True})

    async with Client(build_server(runtime), elicitation_callback=human) as client:
        agent = HostileAgent(client)
        small = {**BTC_SHORT, "qty": "0.0001"}  # two of them fit under the position cap
        first, second = await agent.plan(small), await agent.plan(small)
        asked = await agent.ask_round(first["plan_id"])
        assert asked.result_type == "input_required" and paper.request_count(CREATE) == 0
        approved = await agent.answer_round(first["plan_id"], asked, request_state=asked.request_state)
        replayed = await agent.answer_round(first["plan_id"], asked, request_state=asked.request_state)
        other_plan = await agent.answer_round(second["plan_id"], asked, request_state=asked.request_state)
        unasked = await agent.answer_round(second["plan_id"], asked)  # an accept nobody was asked for
        assert paper.request_count(CREATE) == 1
        still_usable = await agent.place(second["plan_id"])
    assert approved.status == "filled"
    assert replayed.rules == ["planAlreadyUsed"]
    assert other_plan.invalid_params  # the sealed state is bound to the first request
    assert unasked.asked_again
    assert still_usable.status == "filled"  # the second plan was never spent by the attacks
    assert paper.request_count(CREATE) == 2
    verdicts = [e.data["verdict"] for e in await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)]
    assert verdicts == ["approved", "approved"]  # one human accept per send, nothing else


@MODES
async def test_a_client_that_declares_no_elicitation_is_refused_and_nothing_is_sent(runtime, paper, mode):
    write_policy(runtime.home.path, **CONFIRM_EVERY_ORDER)
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        planned = await agent.attempt("plan_order", BTC_SHORT)  # a $24.87 order needs a human above $1
        closed = await agent.attempt("close_position", {"symbol": "BTCUSDT"})
    assert planned.rules == ["confirm.aboveNotionalUsd"]  # refused at plan: no dead end at place_order
    assert planned.answer["next_safe_action"]["tool"] is None  # type: ignore[index]
    assert planned.answer["next_safe_action"]["human"]  # type: ignore[index] # no order of $1 or less fits
    assert closed.status == "refused"  # nothing to close, and nothing was sent either way
    assert paper.request_count(CREATE) == 0
