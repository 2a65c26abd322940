"""`pilot keys` end to end: the real CLI, the real paper exchange on loopback, real SQLite in tmp_path."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pilot.app.human.exchange_keys import add_key, load_exchange_credentials
from pilot.cli import main
from pilot.cli.keys import command
from pilot.paper import PaperExchange, start_paper_exchange
from tests.scenarios import article_scenario

NARROW_KEY, NARROW_SECRET = "paperNarrowKey0001", "paperNarrowSecret000000000000000001"
WIDE_KEY, WIDE_SECRET = "paperWideKey000002", "paperWideSecret00000000000000000002"
NEXT_KEY, NEXT_SECRET = "paperNextKey000003", "paperNextSecret00000000000000000003"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ALL_PLAINTEXT = (NARROW_KEY, NARROW_SECRET, WIDE_KEY, WIDE_SECRET, NEXT_KEY, NEXT_SECRET)


def scenario() -> dict[str, Any]:
    document = article_scenario()
    trade = {"ContractTrade": ["Order", "Position"], "Spot": ["SpotTrade"]}
    document["apiKeys"] = [
        {"key": NARROW_KEY, "secret": NARROW_SECRET, "readOnly": False, "permissions": trade},
        {
            "key": WIDE_KEY,
            "secret": WIDE_SECRET,
            "readOnly": False,
            "permissions": {**trade, "Wallet": ["AccountTransfer", "Withdraw"]},
        },
        {"key": NEXT_KEY, "secret": NEXT_SECRET, "readOnly": True, "permissions": {}},
    ]
    return document


@pytest.fixture
def paper() -> Iterator[PaperExchange]:
    with start_paper_exchange(scenario()) as exchange:
        yield exchange


class Keys:
    """Runs `pilot keys ...` against one home and paper exchange, keeping every output it saw."""

    def __init__(self, home: Path, paper: PaperExchange) -> None:
        self.home, self.paper, self.outputs = home, paper, []

    def __call__(self, *args: str, input: str | None = None) -> Result:
        options = ["--home", str(self.home)]
        if args[0] in {"add", "replace"}:
            options += ["--exchange", "paper", "--url", self.paper.url]
        elif args[0] == "delete":
            options += ["--exchange", "paper", "--yes"]
        result = CliRunner().invoke(command, [*args, *options], input=input)
        self.outputs.append(result.output + (result.stderr or ""))
        return result


@pytest.fixture
def keys(home: Path, master_key_file: Path, paper: PaperExchange) -> Keys:
    home.mkdir()
    (home / "policy.json").write_text("{}")  # a home: the CLI acts only on one
    return Keys(home, paper)


def test_a_narrow_key_typed_at_the_prompt_is_accepted_and_shown_without_the_secret(keys: Keys) -> None:
    added = keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    assert added.exit_code == 0, added.output
    assert "ContractTrade.Order, ContractTrade.Position, Spot.SpotTrade" in added.output
    shown = keys("show")
    assert shown.exit_code == 0
    assert "paper: key-" in shown.output and "(key ending 0001)" in shown.output
    assert "read and trade" in shown.output


def test_a_key_and_secret_can_come_from_stdin_for_scripts(keys: Keys) -> None:
    added = keys("add", "--stdin", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    assert added.exit_code == 0, added.output
    assert "API key" not in added.output  # no prompt when reading stdin


def test_a_key_with_transfer_and_withdraw_permissions_is_rejected_naming_them(keys: Keys) -> None:
    added = keys("add", input=f"{WIDE_KEY}\n{WIDE_SECRET}\n")
    assert added.exit_code == 2
    assert "Wallet.AccountTransfer, Wallet.Withdraw" in added.output
    assert "No keys stored." in keys("show").output


def refused_code(keys: Keys, typed: str) -> str:
    """`pilot keys add` run as a human runs it (through the CLI's error handling) with `typed` on stdin, as JSON:
    the code it was refused with."""
    args = [
        "keys",
        "add",
        "--exchange",
        "paper",
        "--url",
        keys.paper.url,
        "--stdin",
        "--home",
        str(keys.home),
    ]
    added = CliRunner().invoke(main, [*args, "--format", "json"], input=typed)
    assert added.exit_code == 2, added.output
    failure = json.loads(added.stdout)["error"]
    # the command its fix names runs as printed: the paper exchange's address is in it
    (again,) = re.findall(r"`(pilot keys add [^`]*)`", failure["fix"])
    assert ["--url", keys.paper.url] == again.split()[5:7], again
    return str(failure["code"])


def test_a_key_the_exchange_does_not_know_is_refused(keys: Keys) -> None:
    typed = "unknownKey00000009\nunknownSecret0000000000009\n"
    assert refused_code(keys, typed) == "key_unknown_on_host"  # the exchange's 10003
    assert "No keys stored." in keys("show").output


def test_a_secret_that_is_not_the_keys_is_refused_as_such(keys: Keys) -> None:
    assert (
        refused_code(keys, f"{NARROW_KEY}\nnotTheSecret000000000000000001\n") == "key_secret_wrong"
    )  # 10004
    assert "No keys stored." in keys("show").output


def test_replace_and_delete_change_what_show_lists(keys: Keys) -> None:
    keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    replaced = keys("replace", input=f"{NEXT_KEY}\n{NEXT_SECRET}\n")
    assert replaced.exit_code == 0, replaced.output
    assert "(key ending 0003)" in keys("show").output and "read-only" in keys("show").output
    deleted = keys("delete")
    assert deleted.exit_code == 0 and "Deleted key-" in deleted.output
    assert "No keys stored." in keys("show").output


def test_the_key_and_secret_are_never_written_to_disk_printed_or_logged(
    keys: Keys, tmp_path: Path, paper: PaperExchange, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    keys("add", input=f"{WIDE_KEY}\n{WIDE_SECRET}\n")  # rejected
    keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    keys("show")
    keys("add", input=f"{NEXT_KEY}\n{NEXT_SECRET}\n")  # refused: one key per environment
    paper.add_fault("/v5/user/query-api", "http_5xx")
    keys("replace", input=f"{NEXT_KEY}\n{NEXT_SECRET}\n")  # the exchange fails
    keys("replace", input=f"{NEXT_KEY}\n{NEXT_SECRET}\n")
    keys("show")
    keys("delete")
    assert sum("  fix: " in output for output in keys.outputs) == 3
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name == "keys.db" for path in files)
    for text in ALL_PLAINTEXT:
        for output in [*keys.outputs, caplog.text]:
            assert text not in output
        for path in files:
            assert text.encode() not in path.read_bytes(), path


def test_add_refuses_before_asking_for_a_secret_when_the_environment_has_a_key(keys: Keys) -> None:
    keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    again = keys("add", input=f"{NEXT_KEY}\n{NEXT_SECRET}\n")
    assert again.exit_code == 2 and "pilot keys replace --exchange paper" in again.output
    assert "API key" not in again.output


def test_a_master_key_readable_by_others_stops_add_before_the_prompt(
    keys: Keys, master_key_file: Path
) -> None:
    keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    keys("delete")
    master_key_file.chmod(0o640)
    refused = keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n")
    assert refused.exit_code == 2 and "API key" not in refused.output
    assert str(master_key_file) in refused.output and "chmod 600" in refused.output


def test_show_and_delete_on_an_empty_home_create_nothing(keys: Keys, home: Path) -> None:
    assert keys("show").stdout == "No keys stored.\n"
    deleted = keys("delete")
    assert deleted.exit_code == 2 and "pilot keys add --exchange paper" in deleted.output
    assert sorted(path.name for path in home.iterdir()) == ["policy.json"]


def test_keys_outside_a_home_refuse_and_create_nothing(tmp_path: Path, master_key_file: Path) -> None:
    outside = tmp_path / "not-a-home"
    outside.mkdir()
    shown = CliRunner().invoke(command, ["show", "--home", str(outside)])
    assert shown.exit_code == 2 and "pilot init" in shown.output
    assert list(outside.iterdir()) == []


def test_mainnet_is_not_an_environment_the_cli_accepts(keys: Keys, home: Path) -> None:
    result = CliRunner().invoke(command, ["add", "--exchange", "bybit-mainnet", "--home", str(home)])
    assert result.exit_code == 2 and "bybit-demo" in result.output


@pytest.mark.anyio
async def test_the_server_loads_the_key_and_rechecks_it_on_the_exchange_after_an_hour(
    home: Path, master_key_file: Path, paper: PaperExchange
) -> None:
    added = await add_key(home, "paper", NARROW_KEY, NARROW_SECRET, now=NOW, base_url=paper.url)
    fresh = await load_exchange_credentials(home, "paper", now=NOW + timedelta(minutes=30))
    assert (fresh.key_id, fresh.api_key, fresh.base_url) == (added.key_id, NARROW_KEY, paper.url)
    assert paper.request_count("/v5/user/query-api") == 1
    await load_exchange_credentials(home, "paper", now=NOW + timedelta(minutes=61))
    assert paper.request_count("/v5/user/query-api") == 2
