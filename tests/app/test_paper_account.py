"""A paper account that persists: `pilot serve`'s embedded paper exchange keeps its account in the home.

Positions, balances and orders survive a restart; a confirmation parked by one process is executed by the
next against the same account; two processes cannot embed it at once (the account would fork), and
`--paper-url` attaches to a running `pilot sim` instead (`pilot serve` finds the one serving its home by
itself: tests/stdio/test_two_clients_one_home.py).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from mcp import Client

from pilot.app.runtime.runtime import Home, Runtime
from pilot.app.service.boot import StartupError, open_runtime
from pilot.app.service.parked import run_approved
from pilot.cli import main
from pilot.cli.sim import format_banner
from pilot.paper import start_paper_exchange
from pilot.server import build_server
from tests.scenarios import ARTICLE, policy_with

from .conftest import BTC_SHORT, CREATE, FakeClock, call, plan_and_place

pytestmark = pytest.mark.anyio
RESTING_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0002", "order_type": "limit", "price": "79000"}
SMALL_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0002"}  # $16.04: under a $20 confirmation


def make_home(path: Path, **changes: Any) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "policy.json").write_text(json.dumps(policy_with(**changes)))
    return path


async def pilot(*args: str, answer: str | None = None) -> Result:
    """Run the `pilot` command as the human would, in a worker thread (it runs its own event loop)."""
    return await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, list(args), input=answer))


async def account(runtime: Runtime) -> dict[str, Any]:
    """What the agent sees of the account: positions, balances and open orders."""
    async with Client(build_server(runtime)) as client:
        return {
            tool: (await call(client, tool))["data"]
            for tool in ("get_positions", "get_balances", "get_open_orders")
        }


async def test_positions_balances_and_orders_survive_a_restart_of_pilot_serve(tmp_path, clock: FakeClock):
    home = make_home(tmp_path / "home")
    async with open_runtime(home, scenario=ARTICLE, clock=clock) as first:
        async with Client(build_server(first)) as client:
            assert (await plan_and_place(client, BTC_SHORT))["status"] == "filled"
            assert (await plan_and_place(client, RESTING_BUY))["status"] == "open"
        before = await account(first)
    assert Home(home).paper_state_path.exists()

    async with open_runtime(home, scenario=ARTICLE, clock=clock) as second:
        after = await account(second)
    assert after == before
    assert [row["size"] for row in after["get_positions"]] == ["-0.00031"]
    assert len(after["get_open_orders"]) == 1 and after["get_balances"]["total_equity_usd"] != "1000"


async def test_a_confirmation_parked_by_one_process_is_executed_against_the_same_account_by_the_next(
    tmp_path, clock: FakeClock
):
    home = make_home(
        tmp_path / "home",
        maxNotionalUsd=100,
        maxOrderNotionalUsd=100,
        confirm={"aboveNotionalUsd": 20, "cliChannel": True},
    )
    async with (
        open_runtime(home, scenario=ARTICLE, clock=clock) as first,
        Client(build_server(first)) as client,  # declares no forms: the CLI channel parks
    ):
        assert (await plan_and_place(client, SMALL_SHORT))["status"] == "filled"
        parked = await plan_and_place(client, BTC_SHORT)
    assert parked["status"] == "pending_confirmation"

    approved = await pilot("confirm", "approve", parked["confirmation_id"], "--home", str(home), answer="y\n")
    assert approved.exit_code == 0, approved.output

    async with open_runtime(home, scenario=ARTICLE, clock=clock) as second:  # its start-up runs approvals
        record = await second.store.confirmations.get(parked["confirmation_id"])
        assert await run_approved(second) == []  # once only
        positions = (await account(second))["get_positions"]
    assert record is not None and record.status == "executed"
    assert record.result is not None and record.result["status"] == "filled"
    assert [row["size"] for row in positions] == ["-0.00051"]  # both sells, on one account


def paper_files(home: Path) -> tuple[bytes, bytes]:
    """The paper account on disk: its snapshot and the log of changes after it."""
    state = Home(home).paper_state_path
    return state.read_bytes(), state.with_name(state.name + ".log").read_bytes()


async def test_a_second_process_cannot_embed_the_same_paper_account_and_is_told_how_to_share_it(
    tmp_path, clock: FakeClock
):
    home = make_home(tmp_path / "home")
    async with open_runtime(home, scenario=ARTICLE, clock=clock) as first:
        async with Client(build_server(first)) as client:
            assert (await plan_and_place(client, BTC_SHORT))["status"] == "filled"
        saved = paper_files(home)
        with pytest.raises(StartupError) as refused:
            async with open_runtime(home, scenario=ARTICLE, clock=clock):
                pass
        assert paper_files(home) == saved  # the refused one wrote nothing
        served = await pilot(*["serve", "--home", str(home), "--scenario", str(ARTICLE)])
        reset = await pilot(*["sim", "reset", "--home", str(home)])
        assert paper_files(home) == saved  # nor did the attached serve, nor the refused reset
        assert [row["size"] for row in (await account(first))["get_positions"]] == ["-0.00031"]
    assert "--paper-url" in str(refused.value)
    assert served.exit_code == 0  # `pilot serve` attaches to the exchange serving its home (issue 39)
    assert reset.exit_code == 2

    async with open_runtime(home, scenario=ARTICLE, clock=clock) as after:  # free again once it stopped
        assert [row["size"] for row in (await account(after))["get_positions"]] == ["-0.00031"]


async def test_pilot_serve_attaches_to_a_running_pilot_sim_with_the_scenario_key(tmp_path, clock: FakeClock):
    home = make_home(tmp_path / "home")
    with start_paper_exchange(ARTICLE, state_path=Home(home).paper_state_path) as sim:
        async with (
            open_runtime(home, scenario=ARTICLE, paper_url=sim.url, clock=clock) as one,
            open_runtime(home, scenario=ARTICLE, paper_url=sim.url, clock=clock) as two,
        ):
            async with Client(build_server(one)) as client:
                assert (await plan_and_place(client, BTC_SHORT))["status"] == "filled"
            seen_by_two = (await account(two))["get_positions"]
        assert sim.request_count(CREATE) == 1 and sim.position("BTCUSDT").size == Decimal("-0.00031")
        assert f"--paper-url {sim.url}" in format_banner(sim, home)  # what `pilot sim --home` prints
    assert [row["size"] for row in seen_by_two] == ["-0.00031"]


async def test_sim_reset_for_a_home_starts_its_paper_account_afresh(tmp_path, clock: FakeClock):
    home = make_home(tmp_path / "home")
    async with (
        open_runtime(home, scenario=ARTICLE, clock=clock) as first,
        Client(build_server(first)) as client,
    ):
        assert (await plan_and_place(client, BTC_SHORT))["status"] == "filled"

    reset = await pilot(*["sim", "reset", "--home", str(home)])

    assert reset.exit_code == 0 and not Home(home).paper_state_path.exists()
    async with open_runtime(home, scenario=ARTICLE, clock=clock) as after:
        assert (await account(after))["get_positions"] == []


async def test_a_paper_url_that_is_not_loopback_stops_pilot_serve_with_a_clear_line(tmp_path):
    home = make_home(tmp_path / "home")
    served = await pilot(*["serve", "--home", str(home), "--paper-url", "https://api.bybit.com"])
    with pytest.raises(StartupError):
        async with open_runtime(home, exchange="bybit-demo", paper_url="http://127.0.0.1:1"):
            pass
    assert served.exit_code == 2
