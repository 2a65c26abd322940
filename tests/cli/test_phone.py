"""`pilot phone`: the bot token is checked with Telegram before it is stored (sealed, never printed), and
`pilot phone test` writes to each approver; against the loopback Telegram stub (tests/push_stubs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pilot.app.human.phone import TELEGRAM_API_ENV
from pilot.console.serving import serving
from pilot.keys.channel_secrets import load_secret, secret_path
from tests.push_stubs import TelegramStub

from .conftest import edit_policy, pilot

pytestmark = pytest.mark.anyio
TOKEN = "7000000001:AAH-cli-test-token"


async def test_a_token_telegram_accepts_is_stored_sealed_and_the_test_reaches_each_approver(
    home: Path,
) -> None:
    stub = TelegramStub(TOKEN, started={42})
    async with serving(stub.app) as url:
        env = {TELEGRAM_API_ENV: url}
        wrong = await pilot(
            "phone", "telegram-token", "--stdin", "--home", str(home), input="nope\n", env=env
        )
        stored = await pilot(
            "phone", "telegram-token", "--stdin", "--home", str(home), input=TOKEN + "\n", env=env
        )
        edit_policy(home, confirm={"telegram": {"approvers": [42, 43]}})
        tested = await pilot("phone", "test", "--home", str(home), "--format", "json", env=env)

    assert wrong.exit_code == 2 and json.loads(wrong.stdout or "{}") == {} and TOKEN not in wrong.output
    assert stored.exit_code == 0 and "@pilot_test_bot" in stored.output and TOKEN not in stored.output
    assert (
        load_secret(home, "telegram") == TOKEN
        and TOKEN.encode() not in secret_path(home, "telegram").read_bytes()
    )
    results = {r["target"]: r["ok"] for r in json.loads(tested.stdout)["results"]}
    assert tested.exit_code == 1 and results == {"42": True, "43": False}  # 43 never sent /start
    assert [m["text"] for m in stub.sent_to(42)] and stub.sent_to(43) == []


async def test_test_with_no_channel_open_exits_1_with_the_fix(home: Path) -> None:
    result = await pilot("phone", "test", "--home", str(home), "--format", "json")
    assert result.exit_code == 1 and json.loads(result.stdout)["error"]["code"] == "no_phone_channel"


async def test_doctor_names_a_telegram_channel_without_its_token(home: Path) -> None:
    edit_policy(home, confirm={"telegram": {"approvers": [42]}})
    result = await pilot("doctor", "--home", str(home), "--format", "json")
    phone = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "phone"]
    assert (
        result.exit_code == 1 and [c["ok"] for c in phone] == [False] and "telegram-token" in phone[0]["fix"]
    )
