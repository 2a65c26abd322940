"""Human confirmation the model cannot give itself: an MCP form on both protocol eras, the CLI queue, or refusal."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult

from pilot.app.answers import entry_kinds
from pilot.app.human.desk import receipt_cards
from pilot.app.service.parked import run_approved
from pilot.server import build_server

from .conftest import BTC_SHORT, CREATE, call, next_of, write_policy

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])
CONFIRM_ALL = {"confirm": {"aboveNotionalUsd": 1, "actions": []}}


def answering(action: str, content: dict[str, Any] | None) -> Any:
    seen: list[str] = []

    async def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params.message)
        return ElicitResult(action=action, content=content)

    callback.seen = seen  # type: ignore[attr-defined]
    return callback


@pytest.mark.parametrize(
    ("venue", "mode"), [("bybit", "auto"), ("bybit", "legacy"), ("okx", "auto")], indirect=["venue"]
)
async def test_a_ticked_form_approves_and_the_order_is_sent(venue_runtime, venue, mode):
    """Both protocol eras on Bybit's wire; on OKX's, the current one (the era is the client's, not the
    venue's)."""
    runtime, paper = venue_runtime, venue.paper
    venue.write_policy(runtime.home.path, **CONFIRM_ALL)
    human = answering("accept", {"approve": True})
    async with Client(build_server(runtime), mode=mode, elicitation_callback=human) as client:
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))
        assert plan["needs_confirmation"] is True and plan["order"]["qty"] == "0.00031"
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled"
    assert paper.request_count(CREATE) == 1
    assert len(human.seen) == 1 and f"0.00031 {venue.sym('BTCUSDT')}" in human.seen[0]
    verdicts = [e.data["verdict"] for e in await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)]
    assert verdicts == ["approved"]


@MODES
@pytest.mark.parametrize(
    ("action", "content"),
    [("accept", {"approve": False}), ("accept", {}), ("decline", None), ("cancel", None)],
)
async def test_anything_but_an_explicit_ticked_accept_declines_and_nothing_is_sent(
    runtime, paper, mode, action, content
):
    write_policy(runtime.home.path, **CONFIRM_ALL)
    async with Client(
        build_server(runtime), mode=mode, elicitation_callback=answering(action, content)
    ) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        again = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "declined"
    assert again["violations"][0]["rule"] == "planAlreadyUsed"
    assert paper.request_count(CREATE) == 0


async def test_a_client_without_forms_is_refused_when_the_cli_channel_is_off(runtime, paper):
    """Planned while a human could be reached (the CLI channel on), placed after a human turned it off."""
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 1, "actions": [], "cliChannel": True})
    async with Client(build_server(runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        write_policy(runtime.home.path, **CONFIRM_ALL)
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "refused"
    assert placed["violations"][0]["rule"] == "confirmationChannelUnavailable"
    assert next_of(placed, placed["violations"][0])["human"]
    assert paper.request_count(CREATE) == 0


async def test_a_client_without_forms_is_offered_the_largest_size_no_human_must_approve(runtime, paper):
    """No dead end: plan_order knows this client cannot ask a human, and sizes the order under the threshold."""
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 10, "actions": []})
    async with Client(build_server(runtime)) as client:
        refused = await call(client, "plan_order", BTC_SHORT)  # $24.87 needs a human above $10
        plan = await call(client, "plan_order", refused["next_safe_action"]["args"])
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert [v["rule"] for v in refused["violations"]] == ["confirm.aboveNotionalUsd"]
    assert refused["next_safe_action"]["args"]["qty"] == "0.00012"  # $9.63 at the worst fill
    assert plan["status"] == "ok" and plan["can_confirm"] is False and plan["needs_confirmation"] is False
    assert placed["status"] == "filled"


async def test_the_cli_channel_parks_the_order_and_the_server_sends_it_once_after_approval(
    venue_runtime, venue
):
    """On Bybit's wire and on OKX's."""
    runtime, paper = venue_runtime, venue.paper
    venue.write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    async with Client(build_server(runtime)) as client:
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        assert parked["status"] == "pending_confirmation"
        confirmation_id = parked["confirmation_id"]
        status = await call(client, "get_confirmation_status", {"confirmation_id": confirmation_id})
        assert status["data"]["status"] == "pending"
        assert await run_approved(runtime) == []  # nothing runs before a human decides
        assert paper.request_count(CREATE) == 0

        decided = await runtime.store.confirmations.decide(
            confirmation_id, approve=True, actor="human:cli", now=runtime.now()
        )
        assert decided is not None
        [answer] = await run_approved(runtime)
        assert await run_approved(runtime) == []  # an approval runs once
        status = await call(client, "get_confirmation_status", {"confirmation_id": confirmation_id})
    assert answer["status"] == "filled"
    assert status["data"]["status"] == "executed"
    assert paper.request_count(CREATE) == 1


async def test_a_rejected_or_withdrawn_confirmation_never_sends(runtime, paper):
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    async with Client(build_server(runtime)) as client:
        first = await call(
            client, "place_order", {"plan_id": (await call(client, "plan_order", BTC_SHORT))["plan_id"]}
        )
        second = await call(
            client, "place_order", {"plan_id": (await call(client, "plan_order", BTC_SHORT))["plan_id"]}
        )
        await runtime.store.confirmations.decide(
            first["confirmation_id"], approve=False, actor="human:cli", now=runtime.now()
        )
        withdrawn = await call(client, "cancel_confirmation", {"confirmation_id": second["confirmation_id"]})
        assert withdrawn["status"] == "done"
        assert (
            await runtime.store.confirmations.decide(
                second["confirmation_id"], approve=True, actor="human:cli", now=runtime.now()
            )
            is None
        )
    assert await run_approved(runtime) == []
    assert paper.request_count(CREATE) == 0


async def test_an_approval_is_judged_against_the_policy_at_that_moment(runtime, paper):
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    async with Client(build_server(runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    write_policy(runtime.home.path, maxNotionalUsd=10, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    await runtime.store.confirmations.decide(
        parked["confirmation_id"], approve=True, actor="human:cli", now=runtime.now()
    )
    [answer] = await run_approved(runtime)
    assert answer["status"] == "refused"
    assert {v["rule"] for v in answer["violations"]} >= {"maxNotionalUsd"}
    assert paper.request_count(CREATE) == 0


async def test_set_leverage_named_in_confirm_actions_needs_a_human(runtime, paper):
    write_policy(runtime.home.path, confirm={"actions": ["set_leverage"]})
    async with Client(build_server(runtime)) as client:
        answer = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "1"})
    assert answer["status"] == "refused"
    assert paper.request_count("/v5/position/set-leverage") == 0


@MODES
@pytest.mark.parametrize(
    ("action", "content", "status", "sent"),
    [("accept", {"approve": True}, "done", 1), ("decline", None, "declined", 0)],
)
async def test_set_leverage_named_in_confirm_actions_asks_with_a_form(
    runtime, paper, mode, action, content, status, sent
):
    write_policy(runtime.home.path, confirm={"actions": ["set_leverage"]})
    human = answering(action, content)
    async with Client(build_server(runtime), mode=mode, elicitation_callback=human) as client:
        answer = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "1"})
    assert answer["status"] == status
    assert len(human.seen) == 1 and "BTCUSDT leverage to 1x" in human.seen[0]
    assert paper.request_count("/v5/position/set-leverage") == sent


async def test_a_cancel_from_a_client_without_forms_is_parked_and_run_once_after_approval(runtime, paper):
    write_policy(runtime.home.path, confirm={"actions": ["cancel_order"], "cliChannel": True})
    async with Client(build_server(runtime)) as client:
        resting = {
            "symbol": "BTCUSDT",
            "side": "buy",
            "qty": "0.0001",
            "order_type": "limit",
            "price": "70000",
        }
        placed = await call(
            client, "place_order", {"plan_id": (await call(client, "plan_order", resting))["plan_id"]}
        )
        parked = await call(client, "cancel_order", {"symbol": "BTCUSDT", "order_id": placed["order_id"]})
        assert parked["status"] == "pending_confirmation"
        assert parked["next_safe_action"]["tool"] == "get_confirmation_status"
        assert paper.request_count("/v5/order/cancel") == 0
        await runtime.store.confirmations.decide(
            parked["confirmation_id"], approve=True, actor="human:cli", now=runtime.now()
        )
        [answer] = await run_approved(runtime)
    assert answer["status"] == "done"
    assert paper.request_count("/v5/order/cancel") == 1 and paper.open_orders() == []


async def test_a_close_under_a_place_order_rule_asks_no_one_and_its_receipt_says_so(runtime, paper):
    """confirm.actions names place_order only: a close needs no human, and nothing claims one was asked."""
    write_policy(runtime.home.path, confirm={"actions": ["place_order"], "cliChannel": False})
    human = answering("accept", {"approve": True})
    async with Client(build_server(runtime), elicitation_callback=human) as client:
        opened = await call(client, "plan_order", BTC_SHORT)
        assert (await call(client, "place_order", {"plan_id": opened["plan_id"]}))["status"] == "filled"
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
    assert closed["status"] == "filled"
    assert len(human.seen) == 1  # the place, not the close
    plans = await runtime.store.journal.entries(kind=entry_kinds.PLAN)
    close_plan = plans[-1]
    assert close_plan.data["needs_confirmation"] is False
    asked = await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION, plan_id=close_plan.plan_id)
    assert asked == []
    [card] = await receipt_cards(runtime, card=close_plan.plan_id)
    assert card.checks.needs_confirmation is False and card.confirmations == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("cancel_order", {"symbol": "BTCUSDT", "order_id": "no-such-order"}),
        ("set_leverage", {"symbol": "BTCUSDT", "leverage": "2"}),
        ("close_position", {"symbol": "BTCUSDT"}),
    ],
)
async def test_every_tool_without_a_way_to_ask_refuses_with_the_channel_code(runtime, paper, tool, args):
    write_policy(runtime.home.path, confirm={"actions": ["cancel_order", "set_leverage", "close_position"]})
    async with Client(build_server(runtime)) as client:  # no form capability, CLI channel off
        if tool == "close_position":
            plan = await call(client, "plan_order", BTC_SHORT)
            assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "filled"
        answer = await call(client, tool, args)
    assert answer["status"] == "refused"
    assert [v["rule"] for v in answer["violations"]] == ["confirmationChannelUnavailable"]
    assert answer["next_safe_action"]["tool"] is None and answer["next_safe_action"]["human"]
    assert paper.request_count("/v5/order/cancel") == paper.request_count("/v5/position/set-leverage") == 0
    verdicts = [e.data["verdict"] for e in await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)]
    assert verdicts == ["unavailable"]


@pytest.mark.parametrize("switch", ["cliChannel", "consoleChannel"])
async def test_either_channel_outside_the_client_parks_an_order_and_get_policy_shows_both(
    runtime, paper, switch
):
    """Issue 22: get_policy left out the console channel the CLI shows, and whether a human is reachable
    outside the client was decided in two places; with either switch on, a client without forms parks."""
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 1, "actions": [], switch: True})
    async with Client(build_server(runtime)) as client:  # no elicitation: this client shows no forms
        shown = (await call(client, "get_policy"))["data"]["confirm"]
        plan = await call(client, "plan_order", BTC_SHORT)
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert (shown["cli_channel"], shown["console_channel"]) == (
        switch == "cliChannel",
        switch == "consoleChannel",
    )
    assert plan["status"] == "ok" and placed["status"] == "pending_confirmation"
    assert paper.request_count(CREATE) == 0
