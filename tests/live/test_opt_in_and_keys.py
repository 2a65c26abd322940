"""Going live through the CLI a human uses: a live home from its first entry, the opt-in only at a terminal,
keys admitted only when they can trade and nothing more (each refusal naming its fix)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pilot.exchange.adapters import standing_in_for_mainnet
from pilot.paper import PaperExchange
from tests.venue import modules_naming

from .conftest import KEYS, add_key, error_code, pilot

PILOT = [sys.executable, "-m", "pilot"]


def journal_kinds(home: Path) -> list[tuple[str, dict]]:
    result = pilot("journal", "--home", str(home), "--format", "json")
    assert result.exit_code == 0, result.output
    return [(e["kind"], e["data"]) for e in json.loads(result.stdout)["entries"]]


def test_a_live_home_says_so_from_its_first_entry_and_a_practice_home_never_becomes_live(tmp_path: Path):
    live, practice = tmp_path / "live", tmp_path / "practice"
    made = pilot("init", "--live", "--home", str(live))
    assert made.exit_code == 0
    # Every `pilot serve` it names starts a live home: the paper one it once named too is refused there.
    served = re.findall(r"`(pilot serve [^`]*)`", " ".join(made.stdout.split()))
    assert served and all("--exchange bybit" in command for command in served), served
    assert journal_kinds(live)[0] == ("home", {"kind": "live", "environment": "bybit"})
    assert pilot("init", "--home", str(practice)).exit_code == 0
    pilot("kill-switch", "on", "--home", str(practice))  # the practice journal has an entry now
    refused = pilot("init", "--live", "--home", str(practice), "--format", "json")
    assert refused.exit_code == 2 and error_code(refused) == "practice_home"
    status = json.loads(pilot("live", "status", "--home", str(practice), "--format", "json").stdout)
    assert status["kind"] == "practice"


@pytest.mark.parametrize("made_by", ["pilot init", "a policy.json written by hand"])
@pytest.mark.parametrize("exchange", ["bybit", "okx"])
def test_a_practice_home_whose_journal_is_still_empty_never_becomes_live(
    tmp_path: Path, made_by: str, exchange: str
):
    """`pilot init --live` on a folder that is a practice home already (its journal empty, or not made yet)
    is refused and changes nothing: its policy.json kept, a live home would trade real money on it."""
    home = tmp_path / "practice"
    if made_by == "pilot init":
        assert pilot("init", "--home", str(home)).exit_code == 0
    else:
        home.mkdir()
        (home / "policy.json").write_text(json.dumps({"maxNotionalUsd": 5000}))
    policy, journal = (home / "policy.json").read_text(), (home / "journal").exists()
    refused = pilot("init", "--live", "--exchange", exchange, "--home", str(home), "--format", "json")
    assert refused.exit_code == 2 and error_code(refused) == "practice_home"
    fix = json.loads(refused.stdout)["error"]["fix"]
    (command,) = re.findall(r"`(pilot init [^`]*)`", fix)
    assert ("--exchange okx" in command) is (exchange == "okx") and "--live" in command.split()
    assert (home / "policy.json").read_text() == policy and (home / "journal").exists() is journal
    if journal:
        status = json.loads(pilot("live", "status", "--home", str(home), "--format", "json").stdout)
        assert status["kind"] == "practice"


def test_init_live_again_on_its_own_live_home_changes_nothing(tmp_path: Path):
    home = tmp_path / "live"
    assert pilot("init", "--live", "--exchange", "okx", "--home", str(home)).exit_code == 0
    again = pilot("init", "--live", "--exchange", "okx", "--home", str(home))
    assert again.exit_code == 0, again.output
    assert journal_kinds(home) == [("home", {"kind": "live", "environment": "okx"})]


def test_a_live_home_made_again_where_one_was_deleted_is_refused_and_a_new_folder_works(tmp_path: Path):
    """The first home's journal was anchored outside it; deleted, a new journal there would open rolled back
    (the kill switch its first entry: practice for good). Refused before anything is made; a new folder is
    a live home."""
    home = tmp_path / "live"
    assert pilot("init", "--live", "--home", str(home)).exit_code == 0
    pilot("kill-switch", "on", "--home", str(home))
    shutil.rmtree(home)
    refused = pilot("init", "--live", "--home", str(home), "--format", "json")
    assert refused.exit_code == 2 and error_code(refused) == "journal_gone"
    assert not (home / "journal").exists() and not (home / "policy.json").exists()
    fix = json.loads(refused.stdout)["error"]["fix"]
    (command,) = re.findall(r"`(pilot init [^`]*)`", fix)
    assert "--live" in command.split()
    elsewhere = tmp_path / "live-2"
    assert pilot("init", "--live", "--home", str(elsewhere)).exit_code == 0
    assert journal_kinds(elsewhere)[0] == ("home", {"kind": "live", "environment": "bybit"})


def test_the_opt_in_is_refused_when_standard_input_is_not_a_terminal(live_home: Path):
    for typed in ("", f"trade real money from {live_home.name}\n"):  # piping the right phrase fails too
        result = subprocess.run(
            [*PILOT, "live", "on", "--home", str(live_home), "--format", "json"],
            input=typed,
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(live_home),
        )
        assert result.returncode == 2 and json.loads(result.stdout)["error"]["code"] == "not_a_terminal"
    assert "live" not in [kind for kind, _ in journal_kinds(live_home)]


def test_a_human_at_a_terminal_turns_live_on_by_typing_the_phrase_and_it_is_journaled_as_theirs(
    live_home: Path,
):
    wrong = _at_terminal(live_home, "yes")
    assert wrong[0] == 2 and "live_phrase_mismatch" in wrong[1]
    assert _at_terminal(live_home, f"trade real money from {live_home.name}")[0] == 0
    entries = [data for kind, data in journal_kinds(live_home) if kind == "live"]
    assert entries == [{"on": True, "by": "human", "via": "terminal"}]
    status = json.loads(pilot("live", "status", "--home", str(live_home), "--format", "json").stdout)
    assert (status["kind"], status["live_on"], status["by"]) == ("live", True, "human")
    off = json.loads(pilot("live", "off", "--home", str(live_home), "--format", "json").stdout)
    assert off["live_on"] is False


def test_a_live_home_without_the_limits_it_needs_cannot_be_turned_on_and_says_which(live_home: Path):
    (live_home / "policy.json").write_text(
        json.dumps({"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": 25, "maxOrderNotionalUsd": 25})
    )
    code, output = _at_terminal(live_home, "")
    assert code == 2 and "live_limits_missing" in output
    for field in ("maxLossPerTradeUsd", "dailyLossLimitUsd", "confirm.aboveNotionalUsd", "deadManSwitch"):
        assert field in output


@pytest.mark.parametrize(
    ("name", "refusal", "box"),
    [
        ("withdraw", "Wallet.Withdraw", "Withdrawal"),
        ("unbound", "(no IP binding)", "IP restriction"),
        ("read_only", "(read-only)", "Read-Write"),
    ],
)
def test_a_key_that_cannot_only_trade_is_refused_naming_the_box_to_change(
    tmp_path: Path, master_key_file: Path, mainnet: PaperExchange, name: str, refusal: str, box: str
):
    home = tmp_path / "live"
    pilot("init", "--live", "--home", str(home))
    result = add_key(home, KEYS[name])
    error = json.loads(result.stdout)["error"]
    assert result.exit_code == 2 and error["code"] == "key_permissions_rejected"
    assert refusal in error["message"] and box in error["fix"]
    assert mainnet.request_count("/v5/user/query-api") == 1
    shown = json.loads(pilot("keys", "show", "--home", str(home), "--format", "json").stdout)
    assert shown["keys"] == []


def test_a_narrow_bound_key_is_admitted_on_a_listed_host_and_nothing_else(
    tmp_path: Path, master_key_file: Path, mainnet: PaperExchange
):
    home = tmp_path / "live"
    pilot("init", "--live", "--home", str(home))
    for host in ("api.bybit.co", "https://evil.example", "127.0.0.1"):
        result = add_key(home, KEYS["narrow"], host=host)
        assert result.exit_code == 2 and error_code(result) == "invalid_key_input"
    assert mainnet.request_count("/v5/user/query-api") == 0
    added = add_key(home, KEYS["narrow"], host="api.bybit.eu")
    assert added.exit_code == 0, added.output
    key = json.loads(added.stdout)["key"]
    assert (key["environment"], key["address"], key["not_allowed"]) == ("bybit", "https://api.bybit.eu", [])


def test_a_mainnet_key_is_refused_in_a_practice_home_before_mainnet_is_asked(
    tmp_path: Path, master_key_file: Path, mainnet: PaperExchange
):
    # Found walking going-live.md: a practice home took a mainnet key (asking mainnet about it) though it
    # can never start on bybit; the refusal now comes first, with practice_home's fix.
    home = tmp_path / "practice"
    assert pilot("init", "--home", str(home)).exit_code == 0
    refused = add_key(home, KEYS["narrow"], host="api.bybit.com")
    assert refused.exit_code == 2 and error_code(refused) == "practice_home"
    assert mainnet.request_count("/v5/user/query-api") == 0


def test_the_stand_in_takes_only_loopback_and_cannot_be_reached_from_outside_python(mainnet: PaperExchange):
    with (
        pytest.raises(ValueError),
        standing_in_for_mainnet("https://api.bybit.com", "wss://stream.bybit.com"),
    ):
        pass
    # Nothing in the package sets it (no command, variable, file or tool): a shell's `pilot`, another
    # process, always connects to the Bybit host its key names.
    assert modules_naming("standing_in_for_mainnet") == {"exchange/bybit/urls.py", "exchange/adapters.py"}
    assert modules_naming("import os").isdisjoint({"exchange/bybit/urls.py"})


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PILOT_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}


def _at_terminal(home: Path, typed: str) -> tuple[int, str]:
    """`pilot live on` with a terminal for standard input (a pty), typing `typed` at its prompt."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*PILOT, "live", "on", "--home", str(home), "--format", "json"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=_env(home),
        close_fds=True,
    )
    os.close(follower)
    output = _read_until(leader, process, "Type '")
    if process.poll() is None:
        os.write(leader, (typed + "\n").encode())
    output += _read_until(leader, process, None)
    os.close(leader)
    return process.wait(timeout=60), output


def _read_until(leader: int, process: subprocess.Popen[bytes], marker: str | None) -> str:
    seen, deadline = b"", time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if marker is not None and marker.encode() in seen:
                break
        elif process.poll() is not None:
            break
    return seen.decode(errors="replace")


def test_doctor_says_whether_the_key_is_a_sub_accounts(live_home: Path):
    result = pilot("doctor", "--exchange", "bybit", "--home", str(live_home), "--format", "json")
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert checks["key"]["ok"] and checks["account"]["ok"]
    assert "sub-account" in checks["account"]["detail"]


def test_a_live_home_without_a_key_names_the_command_that_stores_one_and_it_works_as_printed(
    tmp_path: Path, master_key_file: Path, mainnet: PaperExchange
):
    home = tmp_path / "live"
    pilot("init", "--live", "--home", str(home))
    refused = pilot("serve", "--exchange", "bybit", "--home", str(home))
    assert refused.exit_code == 2 and mainnet.request_count("/v5/user/query-api") == 0
    fix = refused.stderr.partition("fix:")[2]
    command = shlex.split(re.findall(r"`([^`]+)`", fix)[0])
    assert command[:3] == ["pilot", "keys", "add"] and "--host" in command
    key = KEYS["narrow"]
    added = pilot(*command[1:], "--stdin", "--format", "json", input=f"{key['key']}\n{key['secret']}\n")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["key"]["address"] == "https://api.bybit.com"


def test_live_off_on_a_practice_home_changes_nothing_and_says_it_is_practice(tmp_path: Path):
    assert pilot("init", "--home", str(tmp_path)).exit_code == 0
    before = journal_kinds(tmp_path)
    refused = pilot("live", "off", "--home", str(tmp_path), "--format", "json")
    assert refused.exit_code == 2 and error_code(refused) == "practice_home"
    assert journal_kinds(tmp_path) == before  # no kill switch, no live entry


def test_every_command_a_doctor_fix_names_runs_from_anywhere(tmp_path: Path):
    """Each `pilot ...` command in a check's fix names the home (from another folder it would find none)."""
    home = tmp_path / "live"
    assert pilot("init", "--live", "--home", str(home)).exit_code == 0
    checked = pilot("doctor", "--home", str(home), "--format", "json")
    fixes = [check["fix"] for check in json.loads(checked.stdout)["checks"] if check.get("fix")]
    commands = [command for fix in fixes for command in re.findall(r"`(pilot [^`]*)`", fix)]
    assert commands and all("--home" in command.split() for command in commands), commands
