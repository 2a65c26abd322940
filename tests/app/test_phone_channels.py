"""Approvals on the phone: the Telegram bot and ntfy, each against a loopback stub of its service's HTTP API in
its real wire format (tests/push_stubs.py), with the real paper exchange and a real MCP client as the agent.

What is held: each channel is off until policy.json names it; a parked order reaches each approver once; only
an approver's press on the message Pilot sent them, with the button Pilot made, decides, journaled as the
human via telegram; every other press is refused and journaled; no answer before the expiry is a no; ntfy's
button opens the console's page for the action; and nothing the agent can call reaches any of it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.service.pushing import PhoneService
from pilot.app.service.upkeep import upkeep
from pilot.console.serving import serving
from pilot.keys.channel_secrets import store_secret
from pilot.server import build_server
from tests.push_stubs import NtfyStub, TelegramStub

from .conftest import BTC_SHORT, CREATE, call, write_policy

pytestmark = pytest.mark.anyio
TOKEN = "7000000001:AAH-test-token-for-the-stub-only"
ANN, BOB, MALLORY = 1111, 2222, 3333  # two approvers, and someone who is not one
ASK_A_HUMAN = {"aboveNotionalUsd": 1, "consoleChannel": True}


@pytest.fixture
async def telegram(runtime: Any) -> AsyncIterator[TelegramStub]:
    stub = TelegramStub(TOKEN, started={ANN, BOB, MALLORY})
    async with serving(stub.app) as url:
        stub.url = url  # type: ignore[attr-defined]
        store_secret(runtime.home.path, "telegram", TOKEN)
        yield stub


@pytest.fixture
async def phone(runtime: Any, telegram: TelegramStub) -> AsyncIterator[PhoneService]:
    service = PhoneService(api=telegram.url)  # type: ignore[attr-defined]
    yield service
    await service.close(runtime)


async def parked_order(runtime: Any) -> dict[str, Any]:
    """The agent plans and places an order a human must approve; its client shows no form: it is parked."""
    async with Client(build_server(runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert parked["status"] == "pending_confirmation", parked
    return parked


def with_telegram(runtime: Any, **confirm: Any) -> None:
    write_policy(runtime.home.path, confirm={**ASK_A_HUMAN, "telegram": {"approvers": [ANN, BOB]}, **confirm})


async def test_an_approvers_press_decides_as_the_human_via_telegram_and_the_order_is_sent(
    runtime, paper, telegram, phone
):
    with_telegram(runtime)
    parked = await parked_order(runtime)
    await phone.round(runtime)
    await phone.round(runtime)  # a second round pushes nothing again

    assert [len(telegram.sent_to(chat)) for chat in (ANN, BOB, MALLORY)] == [1, 1, 0]
    assert parked["confirmation_id"] in telegram.sent_to(ANN)[0]["text"]
    assert set(telegram.buttons(ANN)) == {"Approve", "Reject"}
    assert "telegram" in parked["next_safe_action"]["human"].lower()

    telegram.press(ANN, telegram.buttons(ANN)["Approve"])
    assert await phone.listen(runtime, wait_seconds=0)

    record = await runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.status == "approved" and record.decided_by == "human:telegram"
    decided = await runtime.store.journal.latest(entry_kinds.CONFIRMATION)
    assert decided is not None and decided.actor == "human"
    assert (decided.data["via"], decided.data["approver"]) == ("telegram", str(ANN))
    assert paper.request_count(CREATE) == 0  # the press only approved; the server sends, judged again
    await upkeep(runtime)
    assert paper.request_count(CREATE) == 1

    await phone.round(runtime)  # both approvers' messages now say how it ended, without buttons
    assert all(telegram.buttons(chat) == {} for chat in (ANN, BOB))
    assert telegram.sent_to(BOB)[0]["text"].startswith("Approved by telegram")


async def test_a_reject_press_means_it_never_runs(runtime, paper, telegram, phone):
    with_telegram(runtime)
    parked = await parked_order(runtime)
    await phone.round(runtime)
    telegram.press(BOB, telegram.buttons(BOB)["Reject"])
    await phone.listen(runtime, wait_seconds=0)
    await upkeep(runtime)
    record = await runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.status == "rejected" and paper.request_count(CREATE) == 0


@pytest.mark.parametrize(
    "forgery",
    [
        "someone not an approver presses a real button",
        "an approver presses a button Pilot never made",
        "an approver presses another approver's button",
        "an approver presses a real token on another message",
    ],
)
async def test_every_press_but_an_approvers_on_pilots_own_message_is_refused_and_journaled(
    runtime, paper, telegram, phone, forgery
):
    with_telegram(runtime)
    parked = await parked_order(runtime)
    await phone.round(runtime)
    approve = telegram.buttons(ANN)["Approve"]
    if forgery == "someone not an approver presses a real button":
        telegram.press(MALLORY, approve, chat_id=ANN)
    elif forgery == "an approver presses a button Pilot never made":
        telegram.press(ANN, "a.guessed-token-0000000000")
    elif forgery == "an approver presses another approver's button":
        telegram.press(BOB, approve, chat_id=ANN)
    else:  # a message someone else sent with the bot, carrying a copied token
        telegram._sendMessage({"chat_id": ANN, "text": "approve?"})
        telegram.press(ANN, approve)
    await phone.listen(runtime, wait_seconds=0)

    record = await runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.status == "pending"
    refused = await runtime.store.journal.latest(entry_kinds.CONFIRMATION)
    assert refused is not None and refused.data["event"] == "press_refused" and refused.actor == "pilot"
    assert telegram.answers[-1]["text"].startswith("Not accepted")
    await upkeep(runtime)
    assert paper.request_count(CREATE) == 0


async def test_no_answer_before_the_expiry_is_a_no_and_the_message_says_so(
    runtime, paper, telegram, phone, clock
):
    with_telegram(runtime, pendingTtlSeconds=60)
    parked = await parked_order(runtime)
    await phone.round(runtime)
    approve = telegram.buttons(ANN)["Approve"]

    clock.advance(61)
    await phone.round(runtime)
    telegram.press(ANN, approve)  # too late
    await phone.listen(runtime, wait_seconds=0)
    await upkeep(runtime)

    record = await runtime.store.confirmations.get(parked["confirmation_id"], now=runtime.now())
    assert record is not None and record.status == "expired" and paper.request_count(CREATE) == 0
    assert telegram.sent_to(ANN)[0]["text"].startswith("Timed out") and telegram.buttons(ANN) == {}
    [expired] = [
        e
        for e in await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)
        if e.data.get("event") == "expired"
    ]
    assert expired.data["denied"] is True and expired.data["channel"] == "telegram"


async def test_the_channel_is_off_until_policy_json_names_it(runtime, telegram, phone):
    write_policy(runtime.home.path, confirm=ASK_A_HUMAN)  # a token is stored, but no approvers are named
    await parked_order(runtime)
    await phone.round(runtime)
    assert telegram.calls == [] and not await phone.listen(runtime, wait_seconds=0)


async def test_two_servers_on_one_home_push_each_action_once(runtime, telegram, phone):
    with_telegram(runtime)
    await parked_order(runtime)
    other = PhoneService(api=telegram.url)  # type: ignore[attr-defined]
    try:
        await other.round(runtime)
        await phone.round(runtime)
    finally:
        await other.close(runtime)
    assert [len(telegram.sent_to(chat)) for chat in (ANN, BOB)] == [1, 1]


async def test_nothing_the_agent_can_call_shows_a_buttons_token(runtime, telegram, phone):
    with_telegram(runtime)
    parked = await parked_order(runtime)
    await phone.round(runtime)
    tokens = [data.split(".", 1)[1] for data in telegram.buttons(ANN).values()]
    async with Client(build_server(runtime)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        seen = json.dumps(
            [
                await call(client, "get_confirmation_status", {"confirmation_id": parked["confirmation_id"]}),
                await call(client, "get_policy"),
            ]
        )
    journal = json.dumps([e.data for e in await runtime.store.journal.entries()])
    assert not any(token in seen or token in journal for token in tokens)  # the journal keeps hashes only
    assert not any("approve" in name or "telegram" in name for name in names)


async def test_ntfy_gets_a_notification_whose_button_opens_the_consoles_page(runtime):
    ntfy = NtfyStub(token="tk_topic-token")
    async with serving(ntfy.app) as url:
        write_policy(
            runtime.home.path,
            confirm={
                **ASK_A_HUMAN,
                "consoleUrl": "https://desk.example:8765",
                "ntfy": {"topic": "pilot-x7", "server": url},
            },
        )
        parked = await parked_order(runtime)
        service = PhoneService()
        try:
            await service.round(
                runtime
            )  # no token stored: the protected topic refuses (403), nothing journaled
            assert ntfy.published == [] and not await _pushed(runtime, "ntfy")
            store_secret(runtime.home.path, "ntfy", "tk_topic-token")
            await service.round(runtime)
            await service.round(runtime)  # once only
        finally:
            await service.close(runtime)
    [sent] = ntfy.published
    link = f"https://desk.example:8765/approvals/{parked['confirmation_id']}"
    assert sent["body"]["topic"] == "pilot-x7" and sent["headers"]["authorization"] == "Bearer tk_topic-token"
    assert sent["body"]["actions"] == [
        {"action": "view", "label": "Approve or reject", "url": link, "clear": True}
    ]
    [pushed] = await _pushed(runtime, "ntfy")
    assert pushed.data["url"] == link and pushed.actor == "pilot"


async def test_a_push_that_fails_is_tried_again_and_the_rest_still_goes(runtime, telegram, phone):
    with_telegram(runtime)
    telegram.started.discard(BOB)  # Bob never sent /start: Telegram refuses to write to him first (403)
    await parked_order(runtime)
    await phone.round(runtime)  # Ann's message goes and is journaled; Bob's fails, said once in the log
    assert [len(telegram.sent_to(chat)) for chat in (ANN, BOB)] == [1, 0]
    telegram.started.add(BOB)
    await phone.round(runtime)
    assert [len(telegram.sent_to(chat)) for chat in (ANN, BOB)] == [1, 1]


async def _pushed(runtime: Any, channel: str) -> list[Any]:
    entries = await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)
    return [e for e in entries if e.data.get("event") == "pushed" and e.data.get("channel") == channel]
