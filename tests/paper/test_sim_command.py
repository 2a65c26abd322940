"""`pilot sim` offers moving markets to a human, and `pilot sim rehearse` shows an agent's stop triggering on
one: planned and placed through Pilot's own order path, closed by the exchange's system at the stop."""

from __future__ import annotations

import asyncio
import json
import signal
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from pilot.app.human.desk import init_home
from pilot.app.service.boot import open_runtime
from pilot.cli import main
from pilot.cli.sim import DEFAULT_TAPE, moving_scenario
from tests.paper.conftest import still, world


def test_the_rehearsal_shows_the_agents_stop_triggering_and_its_fill():
    result = CliRunner().invoke(main, ["sim", "rehearse", "--speed", "0", "--format", "json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert (done["plan"]["status"], done["placed"]["status"], done["triggered"]) == ("ok", "filled", True)
    trigger = done["trigger"]
    assert trigger["stop_order_type"] == "StopLoss" and Decimal(trigger["mark_price"]) <= Decimal("3000")
    (fill,) = done["fills"]
    assert fill["side"] == "Sell" and fill["qty"] == "0.01" and Decimal(fill["price"]) < Decimal("3000")
    assert Decimal(done["closed_pnl"]) < 0  # the crash went through the stop: a loss, as on Bybit
    assert trigger["time_ms"] - done["opened_ms"] == 75 * 60_000  # the tape's 31st point, 2.5 min apart


def test_a_stop_the_market_never_reaches_ends_the_rehearsal_with_exit_1():
    result = CliRunner().invoke(
        main, ["sim", "rehearse", "--speed", "0", "--stop", "1000", "--hours", "1", "--format", "json"]
    )
    assert result.exit_code == 1 and json.loads(result.stdout)["triggered"] is False


def test_the_switches_put_walks_tapes_and_funding_into_the_scenario():
    scenario = moving_scenario(None, ("btcusdt=2",), ("ETHUSDT",), "0.0003", seed=5)
    btc, eth = scenario.prices["BTCUSDT"].walk, scenario.prices["ETHUSDT"].tape
    assert btc is not None and (btc.start, btc.volatility_pct, btc.step_ms, btc.seed) == (
        Decimal("80220.05"),
        Decimal(2),
        1000,
        5,
    )
    assert eth is not None and eth.file == DEFAULT_TAPE and eth.points[0] == Decimal("3100.005")
    assert {i.funding_rate for i in scenario.instruments if i.category == "linear"} == {Decimal("0.0003")}
    assert moving_scenario("moving", (), (), None, 1).prices["ETHUSDT"].tape is not None


def test_a_bad_switch_is_a_usage_error_before_anything_starts():
    result = CliRunner().invoke(main, ["sim", "--walk", "BTCUSDT=fast"])
    assert result.exit_code == 2
    result = CliRunner().invoke(main, ["sim", "--tape", "BTCUSDT=no-such-tape.json", "--format", "json"])
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "bad_scenario"


@pytest.mark.anyio
async def test_the_embedded_exchange_of_pilot_serve_takes_a_moving_scenario(tmp_path):
    from importlib import resources

    moving = Path(str(resources.files("pilot.paper").joinpath("scenarios", "moving.json")))
    await init_home(tmp_path)
    async with open_runtime(tmp_path, scenario=moving, streams=False) as runtime:
        touch = await runtime.exchange.get_touch("linear", "ETHUSDT")
    assert abs(touch.ask - Decimal("3100.01")) < Decimal("100")  # the tape's first bar, scaled to ETH
    state = json.loads((tmp_path / "paper" / "state.json").read_text())
    assert set(state["market"]["paths"]) == {
        "BTCUSDT",
        "ETHUSDT",
        "SOLUSDT",
    }  # paths kept in the home's account


def test_ctrl_c_reaches_pilot_sims_main_thread_never_the_exchanges():
    # A process-directed SIGINT goes to any thread that does not block it; taken by the exchange's thread it
    # only trips Python's flag, and `pilot sim`'s main thread, blocked in a lock's wait, never stopped.
    paper = still(world())
    try:
        blocked = asyncio.run_coroutine_threadsafe(_signals_blocked_here(), paper._server.loop).result(5)
    finally:
        paper.stop()
    assert {signal.SIGINT, signal.SIGTERM} <= blocked


async def _signals_blocked_here() -> set[signal.Signals]:
    return signal.pthread_sigmask(signal.SIG_BLOCK, set())
