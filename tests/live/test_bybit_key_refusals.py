"""`pilot keys add` with a key Bybit refuses: each cause its own code and a fix that names what to run.

Through the CLI and the paper exchange standing in for every Bybit mainnet host (`standing_in_for_mainnet`),
which refuses as Bybit does (error.mdx): an unknown key 10003 ("API key is invalid. Check whether the key and
domain are matched"), a request not signed with the key's secret 10004 ("Error sign"). Bybit's 10010
("Unmatched IP") has no state on the stand-in: it is held on the table the adapter reads. Assertions are on
codes and on the commands a fix names, never on its words.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pilot.core.errors import ErrorCode
from pilot.exchange.adapters import key_refusal
from pilot.exchange.bybit.urls import MAINNET_HOSTS
from pilot.paper import PaperExchange

from .conftest import KEYS, add_key, pilot


@pytest.fixture
def home(tmp_path: Path, master_key_file: Path, mainnet: PaperExchange) -> Path:
    made = tmp_path / "live"
    assert pilot("init", "--live", "--home", str(made)).exit_code == 0
    return made


def refusal(result) -> tuple[str, list[list[str]]]:
    """The code of a refused command and the `pilot ...` commands its fix names, split into arguments."""
    assert result.exit_code == 2, result.output
    failure = json.loads(result.stdout)["error"]
    return failure["code"], [shlex.split(found) for found in re.findall(r"`(pilot [^`]+)`", failure["fix"])]


def hosts_named(commands: list[list[str]]) -> set[str]:
    return {command[i + 1] for command in commands for i, arg in enumerate(command[:-1]) if arg == "--host"}


def stored(home: Path) -> str:
    return pilot("keys", "show", "--home", str(home), "--format", "json").stdout


def test_a_key_bybit_does_not_know_at_its_host_is_sent_to_the_other_sites_hosts(home: Path):
    unknown = {"key": "bybitUnknownKey000001", "secret": KEYS["narrow"]["secret"]}
    code, commands = refusal(add_key(home, unknown, host="api.bybit.com"))
    assert code == ErrorCode.KEY_UNKNOWN_ON_HOST
    assert hosts_named(commands) >= set(MAINNET_HOSTS) - {"api.bybit.com"}
    adds = [c for c in commands if c[1:4] == ["keys", "add", "--exchange"] and c[4] == "bybit"]
    assert adds and all("--host" in c for c in adds)
    assert ["pilot", "keys", "add", "--exchange", "bybit-demo", "--home", "PRACTICE_HOME"] in commands
    assert json.loads(stored(home))["keys"] == []


def test_a_secret_that_is_not_the_keys_says_so_and_the_fix_runs_the_same_command_again(home: Path):
    wrong = {**KEYS["narrow"], "secret": "NotTheSecretOfThisKey0000000000000000"}
    code, commands = refusal(add_key(home, wrong, host="api.bybit.com"))
    assert code == ErrorCode.KEY_SECRET_WRONG
    assert ["pilot", "keys", "add", "--exchange", "bybit", "--host", "api.bybit.com"] in [
        c[: c.index("--home")] if "--home" in c else c for c in commands
    ]
    assert json.loads(stored(home))["keys"] == []


@pytest.mark.parametrize("environment", ["bybit", "bybit-demo", "bybit-testnet", "paper"])
def test_bybits_refusals_of_the_key_itself_each_have_their_code(environment: str):
    assert key_refusal(environment, 10003) == ErrorCode.KEY_UNKNOWN_ON_HOST
    assert key_refusal(environment, 10004) == ErrorCode.KEY_SECRET_WRONG
    assert key_refusal(environment, 10010) == ErrorCode.KEY_IP_NOT_ALLOWED
    assert key_refusal(environment, 10005) is None  # a permission refusal: the key's boxes, said elsewhere
