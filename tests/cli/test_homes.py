"""Every command finds its home the same way, says which it acts on, and outside a home refuses and creates nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pilot.app.runtime.runtime import Home

from .conftest import pilot

pytestmark = pytest.mark.anyio

# Every command that acts on a home, with the arguments it needs to get as far as reading it.
ON_A_HOME = [
    ("kill-switch", "on"),
    ("kill-switch", "off"),
    ("kill-switch", "status"),
    ("loss-limit", "status"),
    ("loss-limit", "reset"),
    ("journal",),
    ("journal", "verify"),
    ("journal", "anchor"),
    ("journal", "--card"),
    ("token", "list"),
    ("token", "issue", "inspector"),
    ("token", "revoke", "inspector"),
    ("confirm", "list"),
    ("confirm", "show", "cfm_x"),
    ("confirm", "approve", "cfm_x"),
    ("confirm", "reject", "cfm_x"),
    ("doctor",),
    ("policy", "check"),
    ("keys", "show"),
    ("keys", "delete", "--exchange", "bybit-demo", "--yes"),
    ("serve",),
    ("console",),
    ("console", "token"),
    ("phone", "test"),
    ("phone", "forget", "ntfy"),
    ("phone", "ntfy-token", "--stdin"),
]
SERVING = [("serve",), ("console",)]  # no --format: they serve until stopped


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory that is not a home, with no PILOT_HOME set."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("PILOT_HOME", raising=False)
    return folder


@pytest.mark.parametrize("command", ON_A_HOME, ids=" ".join)
async def test_outside_a_home_every_command_refuses_with_the_fix_and_creates_nothing(
    elsewhere: Path, command: tuple[str, ...]
) -> None:
    result = await pilot(*command, "--format", "json") if command not in SERVING else await pilot(*command)

    assert result.exit_code == 2 and "Traceback" not in result.output
    if command not in SERVING:
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "not_a_home"
        assert "pilot init" in error["fix"] and "--home" in error["fix"]
    assert list(elsewhere.iterdir()) == []  # no journal/, no keys.db, no paper/


@pytest.mark.parametrize("command", ON_A_HOME, ids=" ".join)
async def test_a_home_given_that_is_not_one_is_refused_the_same_way(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    result = await pilot(*command, "--home", str(empty))

    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"pilot init --home {empty}" in result.output
    assert list(empty.iterdir()) == []


async def test_a_home_with_a_journal_but_no_policy_says_so(home: Path) -> None:
    (home / "policy.json").unlink()

    result = await pilot("kill-switch", "status", "--home", str(home), "--format", "json")

    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "not_a_home" and "journal" in error["message"]


async def test_a_home_with_a_policy_but_no_journal_is_told_to_run_init(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text("{}")

    result = await pilot("journal", "--home", str(tmp_path), "--format", "json")

    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "no_journal"
    assert not Home(tmp_path).database_path.exists()


@pytest.mark.parametrize(
    "where",
    [
        ("--home", "{home}", "kill-switch", "status"),
        ("kill-switch", "--home", "{home}", "status"),
        ("kill-switch", "status", "--home", "{home}"),
    ],
    ids=["before the group", "on the group", "on the command"],
)
async def test_home_is_taken_at_every_level_of_a_command(home: Path, where: tuple[str, ...]) -> None:
    result = await pilot(*(part.format(home=home) for part in where), "--format", "json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["home"] == str(home)


async def test_the_innermost_home_wins(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()

    result = await pilot(
        "--home", str(other), "kill-switch", "status", "--home", str(home), "--format", "json"
    )

    assert json.loads(result.stdout)["home"] == str(home)


async def test_pilot_home_and_a_current_directory_holding_a_policy_are_homes(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PILOT_HOME", str(home))
    from_variable = await pilot("kill-switch", "status", "--format", "json")
    monkeypatch.delenv("PILOT_HOME")
    monkeypatch.chdir(home)
    from_directory = await pilot("kill-switch", "status", "--format", "json")

    assert json.loads(from_variable.stdout)["home"] == str(home)
    assert json.loads(from_directory.stdout)["home"] == str(home)


async def test_a_relative_home_is_printed_absolute(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(home.parent)

    result = await pilot("kill-switch", "status", "--home", home.name)

    assert result.exit_code == 0
    assert f"pilot: home {home}\n" in result.stderr
    assert os.path.isabs(result.stderr.split("pilot: home ", 1)[1].splitlines()[0])


async def test_init_makes_the_current_directory_a_home_and_then_commands_find_it(
    elsewhere: Path,
) -> None:
    created = await pilot("init", "--format", "json")
    status = await pilot("kill-switch", "status", "--format", "json")

    assert created.exit_code == 0 and json.loads(created.stdout)["home"] == str(elsewhere)
    assert json.loads(status.stdout)["home"] == str(elsewhere)
    assert Home(elsewhere).database_path.exists()
