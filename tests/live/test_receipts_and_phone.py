"""What a human reads after the fact or away from the desk says LIVE on a live home and names the agent:
the receipt cards (`pilot journal --card`, from the journal's own first entry), the phone's approval
messages (Telegram and ntfy, loopback stubs in their real wire format, tests/push_stubs.py), `pilot confirm
show`, and the form the client shows. Through real MCP sessions (a named agent's) against the paper exchange
standing in for Bybit mainnet."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import ElicitResult

from pilot.app.human.agent_desk import add_agent
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import open_runtime
from pilot.app.service.pushing import PhoneService
from pilot.console.serving import serving
from pilot.keys.channel_secrets import store_secret
from pilot.paper import PaperExchange
from pilot.server import build_server
from tests.app.conftest import call
from tests.push_stubs import NtfyStub, TelegramStub

from .conftest import LIVE_POLICY, pilot
from .test_live_server import stopped_order, turn_on

pytestmark = pytest.mark.anyio
TOKEN = "7000000001:AAH-test-token-for-the-stub-only"
NTFY_TOKEN = "tk_live-topic-token"
ANN = 1111
LIVE_MARK = "LIVE"  # the environment's name for real money, as every answer's `environment` carries it


async def as_agent(runtime: Runtime, name: str) -> Client:
    """A client whose calls are agent `name`'s, as `pilot serve` over stdio takes it from the credential."""
    runtime.credential = await add_agent(runtime, name, "trade")
    return Client(build_server(runtime))


async def test_a_live_homes_receipts_say_live_with_the_venue_and_name_the_agent(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    async with (
        open_runtime(live_home, exchange="bybit") as runtime,
        await as_agent(runtime, "scalper") as client,
    ):
        plan = await call(client, "plan_order", stopped_order(mainnet))
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled", placed
    shown = await anyio.to_thread.run_sync(
        lambda: pilot("journal", "--card", "--home", str(live_home), "--format", "json")
    )
    [card] = json.loads(shown.stdout)["cards"]
    assert card["home"] == {"kind": "live", "environment": "bybit", "venue": "Bybit"}
    assert card["agent"] == "scalper" and card["status"] == "filled"
    assert {step["actor"] for step in card["path"]} == {"agent:scalper"}


@pytest.fixture
async def phone_stubs(live_home: Path) -> AsyncIterator[tuple[TelegramStub, NtfyStub]]:
    telegram, ntfy = TelegramStub(TOKEN, started={ANN}), NtfyStub(token=NTFY_TOKEN)
    async with serving(telegram.app) as telegram_url, serving(ntfy.app) as ntfy_url:
        telegram.url, ntfy.url = telegram_url, ntfy_url  # type: ignore[attr-defined]
        store_secret(live_home, "telegram", TOKEN)
        store_secret(live_home, "ntfy", NTFY_TOKEN)
        yield telegram, ntfy


async def test_a_live_homes_phone_approvals_say_live_and_name_the_agent_that_asked(
    live_home: Path, mainnet: PaperExchange, phone_stubs: tuple[TelegramStub, NtfyStub]
):
    telegram, ntfy = phone_stubs
    confirm = {
        **LIVE_POLICY["confirm"],
        "aboveNotionalUsd": 1,
        "consoleChannel": True,
        "telegram": {"approvers": [ANN]},
        "ntfy": {"topic": "pilot-live7", "server": ntfy.url},  # type: ignore[attr-defined]
    }
    (live_home / "policy.json").write_text(json.dumps({**LIVE_POLICY, "confirm": confirm}))
    await turn_on(live_home)
    async with open_runtime(live_home, exchange="bybit") as runtime:
        async with await as_agent(runtime, "scalper") as client:
            plan = await call(client, "plan_order", stopped_order(mainnet))
            parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        phone = PhoneService(api=telegram.url)  # type: ignore[attr-defined]
        try:
            await phone.round(runtime)
        finally:
            await phone.close(runtime)
        record = await runtime.store.confirmations.get(parked["confirmation_id"])
    assert parked["status"] == "pending_confirmation" and parked["environment"] == "bybit LIVE", parked
    assert record is not None and record.action["agent"] == "scalper"
    [message] = telegram.sent_to(ANN)
    first_line = message["text"].splitlines()[0]
    assert LIVE_MARK in first_line and "scalper" in message["text"]
    assert parked["confirmation_id"] in message["text"]
    [published] = [one["body"] for one in ntfy.published]
    assert published["priority"] == 5 and "live" in published["tags"]
    assert LIVE_MARK in published["title"] and "scalper" in published["message"]
    assert mainnet.request_count("/v5/order/create") == 0  # parked: nothing sent before a human decides
    shown = await anyio.to_thread.run_sync(
        lambda: pilot("confirm", "show", parked["confirmation_id"], "--home", str(live_home))
    )
    assert shown.exit_code == 0 and LIVE_MARK in shown.stdout.splitlines()[0] and "scalper" in shown.stdout


async def test_a_live_homes_approval_form_opens_with_live_before_a_human_ticks_it(
    live_home: Path, mainnet: PaperExchange
):
    seen: list[str] = []

    async def human(context: Any, params: Any) -> ElicitResult:
        seen.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    policy = {**LIVE_POLICY, "confirm": {**LIVE_POLICY["confirm"], "aboveNotionalUsd": 1}}
    (live_home / "policy.json").write_text(json.dumps(policy))
    await turn_on(live_home)
    async with (
        open_runtime(live_home, exchange="bybit") as runtime,
        Client(build_server(runtime), elicitation_callback=human) as client,
    ):
        plan = await call(client, "plan_order", stopped_order(mainnet))
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled", placed
    [form] = seen
    assert LIVE_MARK in form.splitlines()[0]
