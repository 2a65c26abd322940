"""The human's commands: JSON with stable keys from every one, exit codes 0/1/2, and no traceback for a mistake."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.desk import DEFAULT_POLICY
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.app.runtime.runtime import Runtime

from .conftest import pilot, pilot_json

pytestmark = pytest.mark.anyio

# Every command's --format json document, by the keys it always has.
KEYS = {
    ("kill-switch", "status"): {"home", "on", "asked", "changed", "by", "reason", "since", "journal_seq"},
    ("journal",): {"home", "entries"},
    ("journal", "--card"): {"home", "cards"},
    ("journal", "verify"): {"home", "ok", "count", "first_broken_seq", "reason", "unsealed", "anchored"},
    ("token", "list"): {"home", "tokens"},
    ("doctor",): {"home", "exchange", "ok", "checks"},
    ("policy", "check"): {
        "policy",
        "valid",
        "version",
        "trading_state",
        "daily_order_cap",
        "plan_ttl_seconds",
    }
    | {"confirm", "markets", "agents"},
    ("keys", "show"): {"home", "keys"},
    ("init",): {"home", "policy_created", "journal_created", "policy", "valid", "version", "trading_state"}
    | {"daily_order_cap", "plan_ttl_seconds", "confirm", "markets", "agents"},
}


@pytest.mark.parametrize("command", list(KEYS), ids=" ".join)
async def test_every_command_speaks_json_with_stable_keys(home: Path, command: tuple[str, ...]) -> None:
    document = await pilot_json(*command, "--home", str(home))

    assert set(document) == KEYS[command]


async def test_the_kill_switch_asked_twice_changes_nothing_and_keeps_its_time(
    home: Path, runtime: Runtime
) -> None:
    first = await pilot_json("kill-switch", "on", "--reason", "going to bed", "--home", str(home))
    again = await pilot_json("kill-switch", "on", "--reason", "still in bed", "--home", str(home))
    off = await pilot_json("kill-switch", "off", "--home", str(home))
    off_again = await pilot_json("kill-switch", "off", "--home", str(home))

    assert (first["on"], first["changed"], again["on"], again["changed"]) == (True, True, True, False)
    assert again["since"] == first["since"] and again["reason"] == "going to bed"
    assert again["journal_seq"] == first["journal_seq"]
    assert (off["changed"], off_again["changed"], off_again["since"]) == (True, False, off["since"])
    entries = await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH)
    assert [e.data["on"] for e in entries] == [True, False]


async def test_the_agent_turning_an_on_switch_on_again_does_not_reset_since(
    home: Path, runtime: Runtime
) -> None:
    from pilot.app.human.kill_switch import activate_kill_switch

    first = await pilot_json("kill-switch", "on", "--home", str(home))
    await activate_kill_switch(runtime, "the agent insists")
    status = await pilot_json("kill-switch", "status", "--home", str(home))

    assert status["on"] and status["since"] == first["since"] and status["by"] == "human"


async def test_a_reason_up_to_the_limit_is_kept_whole_and_a_longer_one_refused(
    home: Path, runtime: Runtime
) -> None:
    longest = "x" * REASON_LIMIT
    kept = await pilot_json("kill-switch", "on", "--reason", longest, "--home", str(home))
    refused = await pilot(
        "kill-switch", "off", "--reason", longest + "y", "--home", str(home), "--format", "json"
    )

    assert kept["reason"] == longest
    assert refused.exit_code == 2 and json.loads(refused.stdout)["error"]["code"] == "reason_too_long"
    assert await runtime.kill_switch_on()  # nothing was cut, nothing was switched


async def test_a_second_token_of_the_same_name_is_refused_with_the_fix(home: Path, runtime: Runtime) -> None:
    issued = await pilot_json("token", "issue", "inspector", "--home", str(home))
    again = await pilot("token", "issue", "inspector", "--home", str(home))
    as_json = await pilot("token", "issue", "inspector", "--home", str(home), "--format", "json")

    assert issued["token"].startswith("pilot_") and issued["name"] == "inspector"
    assert again.exit_code == 2 and "Traceback" not in again.output
    assert "pilot token revoke inspector" in again.stderr  # the fix is the command that frees the name
    assert json.loads(as_json.stdout)["error"]["code"] == "token_exists"
    assert await runtime.store.tokens.verify(issued["token"]) == "inspector"  # the first still works


async def test_a_fix_names_the_home_it_was_given_so_it_runs_as_printed(home: Path, runtime: Runtime) -> None:
    # Run from anywhere (here: a checkout that is a home of its own), the fix must act on HOME, not the cwd.
    await pilot_json("token", "issue", "inspector", "--home", str(home))
    taken = await pilot("token", "issue", "inspector", "--home", str(home), "--format", "json")
    fix = json.loads(taken.stdout)["error"]["fix"]
    command = shlex.split(re.findall(r"`pilot ([^`]*)`", fix)[0])

    followed = await pilot(*command, "--format", "json")

    assert followed.exit_code == 0, followed.output
    assert json.loads(followed.stdout)["home"] == str(home)
    assert await runtime.store.tokens.list() == []  # revoked in HOME, as the fix said


async def test_revoking_a_token_that_is_not_there_exits_2(home: Path) -> None:
    await pilot_json("token", "issue", "inspector", "--home", str(home))

    revoked = await pilot_json("token", "revoke", "inspector", "--home", str(home))
    again = await pilot("token", "revoke", "inspector", "--home", str(home), "--format", "json")

    assert revoked == {"home": str(home), "name": "inspector", "revoked": True}
    assert again.exit_code == 2 and json.loads(again.stdout)["error"]["code"] == "no_such_token"


@pytest.mark.parametrize("name", ["", "two words", "x" * 65, "tab\there"])
async def test_a_token_name_that_is_not_a_plain_name_is_refused(home: Path, name: str) -> None:
    result = await pilot("token", "issue", name, "--home", str(home), "--format", "json")

    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "bad_token_name"


async def test_init_prints_the_limits_it_set_with_the_confirmation_threshold(tmp_path: Path) -> None:
    text = await pilot("init", "--home", str(tmp_path / "text"))
    document = await pilot_json("init", "--home", str(tmp_path / "json"))

    assert text.exit_code == 0
    assert "above $50" in text.stdout and "BTCUSDT" in text.stdout and "150" in text.stdout
    assert document["policy_created"] and document["journal_created"] and document["valid"]
    assert document["confirm"]["above_notional_usd"] == "50"
    assert document["markets"]["BTCUSDT"]["max_notional_usd"] == "150"
    assert document["markets"]["ETHUSDT"]["max_order_notional_usd"] == "100"
    assert json.loads((tmp_path / "json" / "policy.json").read_text()) == json.loads(DEFAULT_POLICY)


async def test_the_check_shows_each_agents_budget_as_it_binds(home: Path) -> None:
    policy = json.loads((home / "policy.json").read_text())
    policy["agents"] = {
        "scout": {"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": 10, "dailyOrderCap": 3},
        "big": {"maxNotionalUsd": 100000, "dailyLossLimitUsd": 20},
    }
    (home / "policy.json").write_text(json.dumps(policy))

    text = await pilot("policy", "check", "--home", str(home))
    agents = (await pilot_json("policy", "check", "--home", str(home)))["agents"]

    assert text.exit_code == 0 and "scout" in text.stdout and "big" in text.stdout
    scout, big = agents["scout"], agents["big"]
    assert scout["allowedMarkets"] == ["BTCUSDT"]
    assert scout["maxNotionalUsd"] == {
        "agent": "10",
        "account": str(policy["maxNotionalUsd"]),
        "binds": "agent",
    }
    assert scout["dailyOrderCap"] == {"agent": 3, "account": policy["dailyOrderCap"], "binds": "both"}
    assert big["maxNotionalUsd"]["binds"] == "account" and big["allowedMarkets"] == policy["allowedMarkets"]
    account_day = policy.get("dailyLossLimitUsd")
    assert big["dailyLossLimitUsd"]["binds"] == (
        "agent" if account_day is None or account_day > 20 else "account"
    )


async def test_a_check_that_fails_exits_1_and_a_usage_error_exits_2(home: Path) -> None:
    (home / "policy.json").write_text('{"maxLeverage": 3,}')

    checked = await pilot("policy", "check", "--home", str(home), "--format", "json")
    usage = await pilot("journal", "--home", str(home), "--limit", "0")

    assert checked.exit_code == 1
    [problem] = json.loads(checked.stdout)["problems"]
    assert problem["path"] == "line 1 column 18" and "comma" in problem["problem"]
    assert usage.exit_code == 2


async def test_a_home_that_cannot_be_created_is_one_line_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")

    result = await pilot("init", "--home", str(tmp_path / "a-file" / "home"), "--format", "json")

    assert result.exit_code == 2 and "Traceback" not in result.output
    assert json.loads(result.stdout)["error"]["code"] == "os_error"
