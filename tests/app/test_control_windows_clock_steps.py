"""The pre-trade controls' windows are real time on the store's clock (pilot.store.monotonic), as a plan's life
is (issue 25): a wall clock that steps forward or back by an hour (`clock.step`) neither lifts a throttle,
a cooldown, a rolling drawdown latch or a session's limit early, nor holds the dead-man's switch back, nor fires
it early. `clock.advance` is time passing (tests/clocks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from pilot.app.service.dead_man import stdio_ended
from pilot.app.service.upkeep import upkeep
from pilot.server import build_server

from .conftest import call, write_policy
from .test_pre_trade_controls_mcp import BUY, RESTING, ROOMY, placed, rules

pytestmark = pytest.mark.anyio
HOUR = 3600


def resting(paper: Any) -> int:
    return len([o for o in paper.orders() if o.leaves_qty > 0])


async def test_a_wall_clock_step_neither_lifts_the_throttle_nor_counts_a_message_twice(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, maxOrderMessagesPerMinute=1, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, BUY))["status"] == "filled"
        clock.step(HOUR)  # by the wall clock, the message is an hour old
        assert rules(await call(client, "plan_order", BUY)) == ["maxOrderMessagesPerMinute"]
        clock.step(-2 * HOUR)  # by the wall clock, it is an hour ahead
        assert rules(await call(client, "plan_order", BUY)) == ["maxOrderMessagesPerMinute"]
        clock.advance(60)
        assert (await call(client, "plan_order", BUY))["status"] == "ok"


async def test_a_wall_clock_step_forward_does_not_end_a_cooldown(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, cooldown={"afterLosses": 1, "minutes": 30}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, BUY))["status"] == "filled"
        paper.set_prices("BTCUSDT", bid="79000", ask="79000.1", mark="79000")
        assert (await call(client, "close_position", {"symbol": "BTCUSDT"}))["status"] == "filled"
        assert rules(await call(client, "plan_order", BUY)) == ["cooldown"]
        clock.step(HOUR)
        refused = await call(client, "plan_order", BUY)
        assert rules(refused) == ["cooldown"]
        assert refused["next_safe_action"]["retry_after"] > clock.now().isoformat()  # told on the wall now
        clock.advance(30 * 60)
        assert (await call(client, "plan_order", BUY))["status"] == "ok"


async def test_a_rolling_drawdown_latch_holds_its_window_of_real_time(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, maxDrawdownUsd=3, drawdownWindowHours=1, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "1"}))[
            "status"
        ] == "done"
        assert (await placed(client, BUY))["status"] == "filled"
        paper.set_prices("BTCUSDT", bid="60000", ask="60000.1", mark="60000")
        assert "maxDrawdownUsd" in rules(await call(client, "plan_order", {**BUY, "qty": "0.0001"}))
        clock.step(2 * HOUR)  # the window has passed by the wall clock only
        assert "maxDrawdownUsd" in rules(await call(client, "plan_order", {**BUY, "qty": "0.0001"}))
        clock.advance(HOUR)  # it has passed: the peak is counted afresh, from what is left
        assert (await call(client, "plan_order", {**BUY, "qty": "0.0001"}))["status"] == "ok"


async def test_a_session_lasts_its_minutes_of_real_time(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, maxSessionMinutes=5)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await call(client, "plan_order", BUY))["status"] == "ok"
        clock.step(-HOUR)
        clock.advance(5 * 60)
        assert rules(await call(client, "plan_order", BUY)) == ["maxSessionMinutes"]
    await stdio_ended(runtime)


@pytest.mark.parametrize("step", [HOUR, -HOUR])
async def test_the_dead_man_s_switch_counts_real_silence_whatever_the_wall_clock_does(
    runtime, paper, tmp_path, clock, step
):
    write_policy(tmp_path, deadManSwitch={"afterSeconds": 30}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, RESTING))["status"] == "open"
    clock.step(step)
    clock.advance(29)
    await upkeep(runtime)
    assert resting(paper) == 1  # 29 s of silence, whichever way the wall clock went
    clock.advance(2)
    await upkeep(runtime)
    assert resting(paper) == 0
