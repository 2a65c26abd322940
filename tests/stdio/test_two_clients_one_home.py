"""Two MCP clients on one paper home (issue 39, item 4): each launches its own `pilot serve` over stdio, as
Claude Code and Claude Desktop would, and both trade on one account.

The first server starts the home's paper exchange in a process of its own; the second finds it; a client
that restarts its server finds it again, account and all. The exchange stops itself once no server has used
it for a while (pilot.paper.sharing.IdleWatch, checked here on an injected clock), and `pilot sim stop`
stops it at once (tests/conftest.py's no_paper_exchange_left does so after every test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from pilot.app.answers import entry_kinds
from pilot.app.service.boot import StartupError, open_runtime
from pilot.cli import main
from pilot.core.errors import ErrorCode
from pilot.paper import serving_url
from pilot.paper.sharing import IdleWatch, UserHold, log_path, rotate_log, stop_serving
from pilot.paper.state import read_holder
from pilot.store import open_store
from tests.scenarios import ARTICLE, policy_with

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with the article's world and two trading agents, each credential in a file of its own."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "policy.json").write_text(
        json.dumps(policy_with(allowedMarkets=["BTCUSDT"], maxNotionalUsd=100))
    )
    assert CliRunner().invoke(main, ["init", "--home", str(folder)]).exit_code == 0
    for name in ("code", "desktop"):
        args = ["agent", "add", name, "--role", "trade", "--token-file", str(tmp_path / name), "--home"]
        result = CliRunner().invoke(main, [*args, str(folder)])
        assert result.exit_code == 0, result.output
    return folder


def client(home: Path, agent: str) -> Client:
    """What a client's config says: `pilot serve --home HOME`, the agent's credential file in its env."""
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "pilot", "serve", "--home", str(home), "--scenario", str(ARTICLE)],
            env={"PILOT_AGENT_TOKEN_FILE": str(home.parent / agent)},
            cwd=str(REPO),
        )
    )


async def call(session: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await session.call_tool(tool, args or {})
    assert not result.is_error, result.content
    return result.structured_content


async def trade(session: Client) -> str:
    planned = await call(session, "plan_order", SHORT)
    placed = await call(session, "place_order", {"plan_id": planned["plan_id"]})
    return str(placed["status"])


async def account(session: Client) -> tuple[list[tuple[str, str]], Any]:
    positions = await call(session, "get_positions", {"symbol": "BTCUSDT"})
    wallet = await call(session, "get_balances")
    return [(row["symbol"], row["size"]) for row in positions["data"]], wallet["data"]


def exchange_pid(home: Path) -> int:
    pid = read_holder(home / "paper" / "state.json").get("pid")
    assert isinstance(pid, int)
    return pid


async def test_two_stdio_clients_on_one_paper_home_both_trade_and_see_one_account(home: Path) -> None:
    async with client(home, "code") as code, client(home, "desktop") as desktop:
        assert [await trade(code), await trade(desktop)] == ["filled", "filled"]
        seen_by_code, seen_by_desktop = await account(code), await account(desktop)
        first_exchange = exchange_pid(home)

    assert seen_by_code == seen_by_desktop
    assert seen_by_code[0] == [("BTCUSDT", "-0.00062")]  # both shorts on one account
    assert first_exchange != os.getpid()  # a process of its own, not the test's
    async with await open_store(home / "journal" / "pilot.db") as store:
        sent = await store.journal.entries(kind=entry_kinds.ORDER_SENT)
    assert sorted(entry.actor for entry in sent) == ["agent:code", "agent:desktop"]

    async with client(home, "code") as restarted:  # a client restarting its server finds the same exchange
        assert (await account(restarted))[0] == [("BTCUSDT", "-0.00062")]
        assert exchange_pid(home) == first_exchange


async def test_a_stopped_exchange_is_started_again_by_the_next_server_account_and_all(home: Path) -> None:
    async with client(home, "code") as code:
        assert await trade(code) == "filled"
    stopped = await anyio.to_thread.run_sync(stop_serving, home / "paper" / "state.json")
    assert isinstance(stopped, int) and serving_url(home / "paper" / "state.json") is None

    async with client(home, "desktop") as desktop:
        assert (await account(desktop))[0] == [("BTCUSDT", "-0.00031")]
        assert exchange_pid(home) != stopped


def test_the_exchange_is_unused_only_after_the_grace_with_no_server_holding_a_share(tmp_path: Path) -> None:
    state = tmp_path / "paper" / "state.json"
    now = [100.0]
    watch = IdleWatch(state, grace_seconds=60, clock=lambda: now[0])
    server = UserHold(state)
    server.acquire()
    assert not watch.unused()  # a server holds its share
    server.release()
    assert not watch.unused()  # idle from now on
    now[0] += 59.9
    assert not watch.unused()
    server.acquire()  # a client restarted its server within the grace: idle no more
    now[0] += 600
    assert not watch.unused()
    server.release()
    assert not watch.unused()
    now[0] += 60
    assert watch.unused()


def test_pilot_sim_with_idle_exit_stops_by_itself_when_no_server_comes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(policy_with()))
    command = [sys.executable, "-m", "pilot", "sim", "--home", str(home), "--idle-exit", "0"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert b"listening on http://127.0.0.1:" in done.stdout  # it served, then found nobody and stopped
    assert serving_url(home / "paper" / "state.json") is None


def test_pilot_sim_stop_says_when_none_serves(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(policy_with()))
    result = CliRunner().invoke(main, ["sim", "stop", "--home", str(home), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["stopped"] is None


async def test_a_server_whose_scenario_the_running_exchange_does_not_take_is_refused_with_its_code(
    home: Path, tmp_path: Path
) -> None:
    """The first server started the home's exchange on the article's scenario; a server given a scenario
    with another key would be refused every request: it does not start (paper_scenario_mismatch, with the
    fix), and one given the same scenario, or the same key in another file, attaches."""
    other = json.loads(ARTICLE.read_text())
    other["apiKeys"][0] |= {"key": "anotherPaperKey01", "secret": "anotherPaperSecret000000000000001"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    same_key = json.loads(ARTICLE.read_text()) | {"description": "the same key in a file of its own"}
    (tmp_path / "same.json").write_text(json.dumps(same_key))
    async with client(home, "code") as code:
        assert await trade(code) == "filled"
        with pytest.raises(StartupError) as refused:
            async with open_runtime(home, scenario=tmp_path / "other.json", shared_paper=True, streams=False):
                pass
        async with open_runtime(
            home, scenario=tmp_path / "same.json", shared_paper=True, streams=False
        ) as same:
            assert (await same.exchange.get_position("linear", "BTCUSDT")).size == Decimal("-0.00031")
    assert refused.value.code == ErrorCode.PAPER_SCENARIO_MISMATCH and refused.value.fix


def test_the_exchanges_log_is_rotated_past_its_limit_while_the_exchange_writes_on(tmp_path: Path) -> None:
    """HOME/paper/exchange.log, which the exchange writes through a descriptor opened for appending when it
    was started: past the limit it is kept as exchange.log.1 and starts empty, and what the exchange writes
    next lands at its new start; below the limit it is left alone."""
    log = tmp_path / "paper" / "exchange.log"
    log.parent.mkdir()
    writer = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(writer, b"x" * 99)
        assert not rotate_log(log, limit=100) and log.stat().st_size == 99
        os.write(writer, b"y")
        assert rotate_log(log, limit=100)
        os.write(writer, b"next")
    finally:
        os.close(writer)
    assert log.read_bytes() == b"next"
    assert (tmp_path / "paper" / "exchange.log.1").read_bytes() == b"x" * 99 + b"y"
    assert log_path(tmp_path / "paper" / "state.json") == log


@pytest.mark.parametrize("credential", ["pilot_not_this_homes_credential", ""])
def test_a_server_given_a_credential_not_this_homes_stops_in_one_line_with_its_code(
    home: Path, credential: str
) -> None:
    # Found by a hostile walk: the credential was checked inside the server's task group, so a bad one
    # ended in an exception group's traceback instead of Pilot's one line with its code and fix.
    (home.parent / "bad").write_text(credential)
    command = [sys.executable, "-m", "pilot", "serve", "--home", str(home), "--scenario", str(ARTICLE)]
    env = {**os.environ, "PILOT_AGENT_TOKEN_FILE": str(home.parent / "bad")}
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2  # a usage or environment error, as every CliError exits
    assert b"Traceback" not in done.stderr and b"fix: " in done.stderr
