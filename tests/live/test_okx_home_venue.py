"""A home refuses a venue it never trades before anyone types a key, and every fix on the way to a live OKX home
names OKX: its keys command the host (`--host www.okx.com`), its `pilot init --live` the venue
(`--exchange okx`). `pilot doctor` on a live OKX home asked about another venue points to the one it trades
instead of a key that could never be used.

Through the CLI, against the OKX front standing in for OKX demo and OKX's real account (nothing is reached);
assertions are on codes and the commands a fix names (their arguments), never on words.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from pilot.app.human.desk import open_desk
from pilot.app.human.going_live import phrase, turn_live_on
from pilot.app.service.boot import StartupError, open_runtime
from tests.okx_front import OkxFront, Rule, standing_in_for_okx
from tests.okx_front.endpoints import error
from tests.scenarios import ARTICLE

from .conftest import error_code, pilot

INIT_LIVE_OKX = ["pilot", "init", "--live", "--exchange", "okx"]
CONFIG = "/api/v5/account/config"  # the key's permission read
ADD_OKX = ["pilot", "keys", "add", "--exchange", "okx", "--host", "www.okx.com"]


@pytest.fixture
def front() -> Iterator[OkxFront]:
    with standing_in_for_okx(ARTICLE) as stub:
        yield stub


def commands(fix: str) -> list[list[str]]:
    """The `pilot ...` commands a fix names, split into arguments, each cut before its `--home`."""
    named = [shlex.split(command) for command in re.findall(r"`(pilot [^`]+)`", fix)]
    return [command[: command.index("--home")] if "--home" in command else command for command in named]


def refused_fix(result: Result) -> list[list[str]]:
    return commands(json.loads(result.stdout)["error"]["fix"])


def home_of(tmp_path: Path, *init: str) -> Path:
    home = tmp_path / "home"
    made = pilot("init", *init, "--home", str(home))
    assert made.exit_code == 0, made.output
    return home


@pytest.mark.parametrize(
    ("environment", "other_home"),
    [
        ("okx-demo", ["pilot", "init", "--exchange", "okx-demo"]),  # a practice home of that venue
        ("bybit-demo", ["pilot", "init", "--exchange", "bybit-demo"]),
        ("bybit", ["pilot", "init", "--live"]),  # a live Bybit home
    ],
)
def test_a_live_okx_home_refuses_another_environments_key_before_any_prompt(
    tmp_path: Path, master_key_file: Path, front: OkxFront, environment: str, other_home: list[str]
) -> None:
    home = home_of(tmp_path, "--live", "--exchange", "okx")
    host = ["--host", "api.bybit.com"] if environment == "bybit" else []
    # No --stdin and no input: a prompt would abort (exit 1); a refusal before it exits 2 with its code.
    refused = pilot("keys", "add", "--exchange", environment, *host, "--home", str(home), "--format", "json")
    assert refused.exit_code == 2 and error_code(refused) == "live_home_only_okx", refused.output
    assert refused_fix(refused) == [ADD_OKX, other_home]
    assert front.seen() == [] and not (home / "keys.db").exists()


def test_a_practice_home_keeps_taking_okx_demo_keys_even_with_its_journal_unreadable(
    tmp_path: Path, master_key_file: Path, front: OkxFront, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_of(tmp_path)
    monkeypatch.setenv("PILOT_JOURNAL_KEY_FILE", str(tmp_path / "another" / "journal.key"))  # not its key
    added = pilot(
        "keys",
        "add",
        "--exchange",
        "okx-demo",
        "--stdin",
        "--home",
        str(home),
        "--format",
        "json",
        input=f"{front.api_key}\n{front.api_secret}\n{front.passphrase}\n",
    )
    assert added.exit_code == 0, added.output


def test_every_way_to_a_live_okx_home_names_okx_in_its_init_command(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    practice = home_of(tmp_path)
    key = pilot(
        "keys",
        "add",
        "--exchange",
        "okx",
        "--host",
        "www.okx.com",
        "--home",
        str(practice),
        "--format",
        "json",
    )
    assert error_code(key) == "practice_home" and refused_fix(key) == [INIT_LIVE_OKX]
    bybit = tmp_path / "live-bybit"
    assert pilot("init", "--live", "--home", str(bybit)).exit_code == 0
    again = pilot("init", "--live", "--exchange", "okx", "--home", str(bybit), "--format", "json")
    assert error_code(again) == "live_home_only_bybit" and refused_fix(again) == [INIT_LIVE_OKX]


@pytest.mark.anyio
async def test_a_practice_home_asked_to_serve_okx_names_okx_in_its_init_command(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    practice = await asyncio.to_thread(home_of, tmp_path)
    with pytest.raises(StartupError) as serve:
        async with open_runtime(practice, exchange="okx"):
            pass
    assert serve.value.code == "practice_home" and commands(serve.value.fix or "") == [INIT_LIVE_OKX]


def doctor(home: Path, exchange: str) -> dict[str, dict[str, object]]:
    result = pilot("doctor", "--exchange", exchange, "--home", str(home), "--format", "json")
    assert result.exit_code == 1, result.output
    return {check["name"]: check for check in json.loads(result.stdout)["checks"]}


@pytest.mark.parametrize("exchange", ["paper", "okx-demo", "bybit"])
def test_doctor_on_a_live_okx_home_asked_about_another_venue_points_to_okx_not_to_its_key(
    tmp_path: Path, master_key_file: Path, front: OkxFront, exchange: str
) -> None:
    home = home_of(tmp_path, "--live", "--exchange", "okx")
    checks = doctor(home, exchange)
    assert "key" not in checks and "exchange" not in checks  # another venue's key fix would mislead
    fix = commands(str(checks["home"]["fix"]))
    assert fix[:2] == [["pilot", "doctor", "--exchange", "okx"], ADD_OKX] and checks["home"]["ok"] is False


def test_doctor_on_a_live_okx_home_without_its_key_names_the_host_in_the_keys_command(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    home = home_of(tmp_path, "--live", "--exchange", "okx")
    checks = doctor(home, "okx")
    assert checks["key"]["ok"] is False and commands(str(checks["key"]["fix"])) == [ADD_OKX]
    practice = tmp_path / "practice"
    assert pilot("init", "--home", str(practice)).exit_code == 0
    assert commands(str(doctor(practice, "okx")["home"]["fix"])) == [INIT_LIVE_OKX]


@pytest.mark.anyio
async def test_a_stored_live_okx_key_refused_at_start_says_why_and_needs_nothing_stored_again(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    """The same causes on a stored key's check (a live home reads its key at every start): the IP the key was
    bound to is no longer this machine's (50110). Once it is on the key's list, a start passes."""
    front.live = True
    home = await asyncio.to_thread(home_of, tmp_path, "--live", "--exchange", "okx")
    secrets = f"{front.api_key}\n{front.api_secret}\n{front.passphrase}\n"
    added = await asyncio.to_thread(
        pilot,
        "keys",
        "add",
        "--exchange",
        "okx",
        "--host",
        "www.okx.com",
        "--stdin",
        "--home",
        str(home),
        input=secrets,
    )
    assert added.exit_code == 0, added.output
    async with open_desk(home) as desk:
        await turn_live_on(desk, phrase(desk), at_terminal=True)
    moved = Rule(
        "GET", CONFIG, error(50110, "Your IP is not included in your API key's IP whitelist."), status=401
    )
    front.add(moved)
    with pytest.raises(StartupError) as refused:
        async with open_runtime(home, exchange="okx"):
            pass
    assert refused.value.code == "key_ip_not_allowed" and commands(refused.value.fix or "") == []
    front.rules.remove(moved)  # the machine's IP added to the key's list on OKX
    async with open_runtime(home, exchange="okx") as runtime:
        assert runtime.environment == "okx" and runtime.live


def test_a_live_okx_keys_fixes_name_the_host_it_was_given(
    tmp_path: Path, master_key_file: Path, front: OkxFront
) -> None:
    front.live = True
    home = home_of(tmp_path, "--live", "--exchange", "okx")
    secrets = f"{front.api_key}\n{front.api_secret}\n{front.passphrase}\n"

    def add() -> Result:
        where = ["--host", "eea.okx.com", "--stdin", "--home", str(home), "--format", "json"]
        return pilot("keys", "add", "--exchange", "okx", *where, input=secrets)

    replace_eea = ["pilot", "keys", "replace", "--exchange", "okx", "--host", "eea.okx.com"]
    front.perm = "read_only,trade,withdraw"
    wide = add()
    assert error_code(wide) == "key_permissions_rejected" and refused_fix(wide) == [replace_eea]
    front.perm = "read_only,trade"
    assert add().exit_code == 0
    again = add()
    assert error_code(again) == "key_already_stored" and refused_fix(again) == [replace_eea]
