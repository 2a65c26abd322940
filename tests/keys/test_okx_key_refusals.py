"""`pilot keys add` (and `replace`) with an OKX key that OKX refuses: each cause gets its own code and a fix
that names what to run, never one generic "check the key".

Through the CLI, the OKX adapter and the OKX front (tests/okx_front) standing in for OKX demo trading and for
OKX's real account (`standing_in_for_okx_demo`, `standing_in_for_okx_live`). The front refuses a wrong key
(50111), passphrase (50105), signature (50113) and a request from the other environment (50101) as OKX does;
the codes it has no state for (50119: no such key at this host, 50110: an IP off the key's list) are its
rules' answers, in OKX's envelope with the HTTP 401 OKX sends them with (docs-v5 "Error Code").

Assertions are on codes and on the commands a fix names (its arguments), never on its words.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pilot.cli import main
from tests.okx_front import OkxFront, Rule, standing_in_for_okx
from tests.okx_front.endpoints import error
from tests.scenarios import ARTICLE

CONFIG = "/api/v5/account/config"  # the permission read `pilot keys add` makes


@pytest.fixture
def front() -> Iterator[OkxFront]:
    """The front standing in for OKX demo trading and for every real-account host at once."""
    with standing_in_for_okx(ARTICLE) as stub:
        yield stub


def pilot(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def practice_home(tmp_path: Path) -> Path:
    home = tmp_path / "practice"
    assert pilot("init", "--home", str(home)).exit_code == 0
    return home


def live_home(tmp_path: Path) -> Path:
    home = tmp_path / "live-okx"
    assert pilot("init", "--live", "--exchange", "okx", "--home", str(home)).exit_code == 0
    return home


def keys(
    verb: str, home: Path, environment: str, front: OkxFront, *, host: str | None = None, **typed: str
) -> Result:
    """`pilot keys VERB` with the front's key, secret and passphrase, any of them replaced by `typed`."""
    lines = [typed.get(name, getattr(front, name)) for name in ("api_key", "api_secret", "passphrase")]
    where = ["--host", host] if host else []
    return pilot(
        "keys",
        verb,
        "--exchange",
        environment,
        *where,
        "--stdin",
        "--home",
        str(home),
        "--format",
        "json",
        input="\n".join(lines) + "\n",
    )


def refusal(result: Result) -> tuple[str, list[list[str]]]:
    """The code of a refused command and the `pilot ...` commands its fix names, split into arguments (the
    `--home` the CLI adds to each left out)."""
    assert result.exit_code == 2, result.output
    failure = json.loads(result.stdout)["error"]
    named = [shlex.split(command) for command in re.findall(r"`(pilot [^`]+)`", failure["fix"])]
    return failure["code"], [without_home(command) for command in named]


def without_home(command: list[str]) -> list[str]:
    if "--home" not in command:
        return command
    at = command.index("--home")
    return command[:at] + command[at + 2 :]


def stored(home: Path) -> list[object]:
    if not (home / "keys.db").exists():
        return []
    return sqlite3.connect(home / "keys.db").execute("SELECT key_id FROM exchange_keys").fetchall()


def hosts_named(commands: list[list[str]]) -> set[str]:
    return {command[i + 1] for command in commands for i, arg in enumerate(command[:-1]) if arg == "--host"}


ADD_DEMO = ["pilot", "keys", "add", "--exchange", "okx-demo"]
ADD_LIVE = ["pilot", "keys", "add", "--exchange", "okx", "--host", "www.okx.com"]


@pytest.mark.parametrize(
    ("typed", "code"),
    [
        ({"api_key": "okxTypoKey0a1b2c3d4e5f6a7b8c9d0e1f2a3b"}, "key_invalid"),  # 50111
        ({"api_secret": "OKXWRONGSECRET0123456789ABCDEF0123456789"}, "key_secret_wrong"),  # 50113
        ({"passphrase": "not-the-passphrase"}, "key_passphrase_wrong"),  # 50105
    ],
)
def test_a_key_secret_or_passphrase_typed_wrong_is_named_and_the_fix_runs_the_same_command_again(
    tmp_path: Path, master_key_file: Path, front: OkxFront, typed: dict[str, str], code: str
) -> None:
    home = practice_home(tmp_path)
    refused, commands = refusal(keys("add", home, "okx-demo", front, **typed))
    assert (refused, commands) == (code, [ADD_DEMO])
    assert len(front.seen(CONFIG)) == 1 and stored(home) == []


def test_a_passphrase_typed_wrong_at_replace_names_replace(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    home = practice_home(tmp_path)
    assert keys("add", home, "okx-demo", front).exit_code == 0
    refused, commands = refusal(keys("replace", home, "okx-demo", front, passphrase="not-the-passphrase"))
    assert (refused, commands) == (
        "key_passphrase_wrong",
        [["pilot", "keys", "replace", "--exchange", "okx-demo"]],
    )
    assert len(stored(home)) == 1  # the old key stays


def test_a_real_account_key_given_as_okx_demo_points_to_a_demo_key_or_a_live_okx_home(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    home = practice_home(tmp_path)
    front.live = True  # the key is a real-account key: OKX answers 50101 to a demo request
    refused, commands = refusal(keys("add", home, "okx-demo", front))
    assert refused == "key_wrong_environment"
    assert ADD_DEMO in commands and ADD_LIVE in commands
    (init,) = [command for command in commands if command[:2] == ["pilot", "init"]]
    assert {"--live", "--exchange", "okx"} <= set(init)
    assert stored(home) == []


def test_a_demo_key_given_as_okx_points_to_a_real_account_key_or_okx_demo(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    home = live_home(tmp_path)
    refused, commands = refusal(keys("add", home, "okx", front, host="www.okx.com"))  # front.live False
    assert refused == "key_wrong_environment"
    assert commands[0] == ADD_LIVE and any(command[:5] == ADD_DEMO for command in commands)
    assert stored(home) == []


@pytest.mark.parametrize("host", ["www.okx.com", "eea.okx.com"])
def test_a_key_okx_does_not_know_at_its_host_is_sent_to_the_other_sites_hosts(
    tmp_path: Path, master_key_file: Path, front: OkxFront, host: str
) -> None:
    home = live_home(tmp_path)
    front.live = True
    front.add(Rule("GET", CONFIG, error(50119, "API key doesn't exist"), status=401))
    refused, commands = refusal(keys("add", home, "okx", front, host=host))
    assert refused == "key_unknown_on_host"
    assert hosts_named(commands) == {"www.okx.com", "us.okx.com", "eea.okx.com"}
    assert commands[-1] == [*ADD_LIVE[:-1], host]  # and, if the host is right, the same command again
    assert all(command[:5] == ADD_LIVE[:5] for command in commands)
    assert stored(home) == []


@pytest.mark.parametrize(("environment", "host"), [("okx-demo", None), ("okx", "us.okx.com")])
def test_an_ip_off_the_keys_list_says_so_and_the_fix_runs_the_same_command_again(
    tmp_path: Path, master_key_file: Path, front: OkxFront, environment: str, host: str | None
) -> None:
    home = live_home(tmp_path) if host else practice_home(tmp_path)
    front.live = bool(host)
    front.add(
        Rule(
            "GET", CONFIG, error(50110, "Your IP is not included in your API key's IP whitelist."), status=401
        )
    )
    refused, commands = refusal(keys("add", home, environment, front, host=host))
    expected = ["pilot", "keys", "add", "--exchange", environment, *(["--host", host] if host else [])]
    assert (refused, commands) == ("key_ip_not_allowed", [expected])
    assert stored(home) == []


def test_host_given_to_okx_demo_is_refused_naming_host_before_okx_is_asked(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    home = practice_home(tmp_path)
    refused = keys("add", home, "okx-demo", front, host="www.okx.com")
    failure = json.loads(refused.stdout)["error"]
    assert (refused.exit_code, failure["code"]) == (2, "invalid_key_input")
    flags = set(re.findall(r"--[a-z]+", failure["message"] + failure["fix"]))
    assert "--host" in flags and "--url" not in flags  # the flag that was given, not the paper exchange's
    assert front.seen() == [] and stored(home) == []


@pytest.mark.parametrize(
    ("given", "meant"), [("my.okx.com", "eea.okx.com"), ("https://okx.com", "www.okx.com")]
)
def test_an_okx_website_given_as_host_is_refused_naming_its_api_host(
    tmp_path: Path, master_key_file: Path, front: OkxFront, given: str, meant: str
) -> None:
    home = live_home(tmp_path)
    refused = keys("add", home, "okx", front, host=given)
    failure = json.loads(refused.stdout)["error"]
    assert (refused.exit_code, failure["code"]) == (2, "invalid_key_input")
    assert re.findall(r"--host (\S+?)[.`\s]*$", failure["fix"]) == [meant]
    assert front.seen() == [] and stored(home) == []
