"""Issue 27 through a real MCP client on the paper exchange: each pre-trade control refuses with its code, its
numbers and a next action that works (or says what only a human can change, and when waiting helps), and
what only shrinks a position keeps working under it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.service.dead_man import stdio_ended
from pilot.app.service.upkeep import upkeep
from pilot.cli import main
from pilot.server import build_server

from .conftest import CREATE, call, next_of, open_test_runtime, write_policy

pytestmark = pytest.mark.anyio
BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0002"}
CANCEL = "/v5/order/cancel"
ROOMY = {"maxNotionalUsd": 200, "maxOrderNotionalUsd": 200}  # caps that leave these small orders alone


def rules(answer: dict[str, Any]) -> list[str]:
    return [v["rule"] for v in answer.get("violations") or []]


async def placed(client: Any, order: dict[str, Any]) -> dict[str, Any]:
    plan = await call(client, "plan_order", order)
    assert plan["status"] == "ok", plan
    return await call(client, "place_order", {"plan_id": plan["plan_id"]})


async def test_a_limit_price_past_the_collar_is_planned_again_at_its_edge(runtime, paper, tmp_path):
    write_policy(tmp_path, priceCollarPct=1)  # mark 80220: a buy may bid at most 81022.2
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", {**BUY, "order_type": "limit", "price": "82000"})
        assert rules(refused) == ["priceCollar"]
        assert (
            refused["violations"][0]["limit"] == "81022.2"
            and refused["violations"][0]["attempted"] == "82000"
        )
        fix = refused["next_safe_action"]
        assert fix["tool"] == "plan_order" and fix["args"]["price"] == "81022.2"
        assert (await call(client, "plan_order", fix["args"]))["status"] == "ok"
        # the side where a mistake costs nothing is free: a buy far below the mark rests
        assert (await call(client, "plan_order", {**BUY, "order_type": "limit", "price": "40000"}))[
            "status"
        ] == "ok"
        # a stop far beyond the collar on a growing order is moved to its edge
        far = await call(client, "plan_order", {**BUY, "stop_loss": "60000"})
        assert rules(far) == ["priceCollar.stopLoss"]
        assert far["next_safe_action"]["args"]["stop_loss"] == "79417.8"  # 1 % below the mark, on the tick
        assert (await call(client, "plan_order", far["next_safe_action"]["args"]))["status"] == "ok"
    assert paper.request_count(CREATE) == 0


async def test_a_stop_moved_away_past_the_collar_is_moved_to_its_edge_and_a_closer_one_always_passes(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, priceCollarPct=1, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, {**BUY, "stop_loss": "79500"}))["status"] == "filled"
        refused = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "70000"})
        assert rules(refused) == ["priceCollar.stopLoss"]
        fix = refused["next_safe_action"]
        assert fix["tool"] == "set_trading_stop" and fix["args"]["stop_loss"] == "79417.8"
        assert (await call(client, "set_trading_stop", fix["args"]))["status"] == "done"
        closer = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "80000"})
        assert closer["status"] == "done"


async def test_the_throttle_counts_every_process_of_the_home_and_says_when_to_call_again(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, maxOrderMessagesPerSecond=2, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, BUY))["status"] == "filled"
        # another server on the same home sends the second message of this second
        async with (
            open_test_runtime(tmp_path, paper, clock) as other,
            Client(build_server(other), raise_exceptions=True) as elsewhere,
        ):
            assert (await placed(elsewhere, BUY))["status"] == "filled"
        refused = await call(client, "plan_order", BUY)
        assert rules(refused) == ["maxOrderMessagesPerSecond"]
        wait = refused["next_safe_action"]
        assert wait["tool"] is None and wait["retry_after"] and wait["human"]
        assert refused["violations"][0]["limit"] == "2" and refused["violations"][0]["attempted"] == "3"
        # a reducing order and a cancel are messages too: the exchange counts them
        close = await call(client, "close_position", {"symbol": "BTCUSDT"})
        assert close["status"] == "refused" and rules(close) == ["maxOrderMessagesPerSecond"]
        clock.advance(1)
        assert (await placed(client, {**BUY, "side": "sell", "reduce_only": True}))["status"] == "filled"
    assert paper.request_count(CREATE) == 3


async def test_a_cancel_past_the_throttle_waits_and_goes_through_after(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, maxOrderMessagesPerMinute=1, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        rest = await placed(client, {**BUY, "order_type": "limit", "price": "70000"})
        assert rest["status"] == "open"
        args = {"symbol": "BTCUSDT", "order_id": rest["order_id"]}
        refused = await call(client, "cancel_order", args)
        assert refused["status"] == "refused" and rules(refused) == ["maxOrderMessagesPerMinute"]
        assert refused["next_safe_action"]["retry_after"]
        clock.advance(60)
        assert (await call(client, "cancel_order", args))["status"] == "done"
    assert paper.request_count(CANCEL) == 1


async def test_a_second_resting_order_past_the_market_cap_is_refused_and_a_market_order_is_not(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxRestingOrdersPerMarket=1, **ROOMY)
    resting = {**BUY, "order_type": "limit", "price": "70000"}
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, resting))["status"] == "open"
        refused = await call(client, "plan_order", resting)
        assert rules(refused) == ["maxRestingOrdersPerMarket"]
        assert refused["violations"][0]["limit"] == "1" and refused["violations"][0]["attempted"] == "2"
        assert refused["next_safe_action"]["tool"] is None and refused["next_safe_action"]["human"]
        assert (await call(client, "plan_order", BUY))["status"] == "ok"  # a market order never rests


async def test_a_drawdown_from_the_day_s_peak_turns_trading_reducing_until_a_human_resets_it(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxDrawdownUsd=3, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "1"}))[
            "status"
        ] == "done"
        assert (await placed(client, BUY))["status"] == "filled"  # the equity's peak is read: about $1000
        paper.set_prices("BTCUSDT", bid="60000", ask="60000.1", mark="60000")  # about $4 lost
        refused = await call(client, "plan_order", {**BUY, "qty": "0.0001"})
        drawn = next(v for v in refused["violations"] if v["rule"] == "maxDrawdownUsd")
        assert drawn["limit"] == "3" and Decimal(drawn["attempted"]) > 3
        assert (
            next_of(refused, drawn)["retry_after"].endswith("00:00:00+00:00")
            and "drawdown reset" in next_of(refused, drawn)["human"]
        )
        latched = await runtime.store.journal.entries(kind=entry_kinds.DRAWDOWN)
        assert (
            len(latched) == 1
            and latched[0].data["on"] is True
            and Decimal(latched[0].data["drawdown_usd"]) > 3
        )
        # reducing still works; a raise of leverage does not (trading is reducing)
        assert (await placed(client, {**BUY, "side": "sell", "reduce_only": True}))["status"] == "filled"
        raised = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"})
        assert raised["status"] == "refused" and rules(raised) == ["tradingState"]
        reset = await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, ["drawdown", "reset", "--home", str(tmp_path)])
        )
        assert reset.exit_code == 0, reset.output
        again = await call(client, "plan_order", {**BUY, "qty": "0.0001"})
        assert again["status"] == "ok", again


async def test_after_losing_trades_in_a_row_growing_orders_wait_out_the_cooldown(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, cooldown={"afterLosses": 1, "minutes": 30}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, BUY))["status"] == "filled"
        paper.set_prices("BTCUSDT", bid="79000", ask="79000.1", mark="79000")
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
        assert closed["status"] == "filled"  # a loss, closed by a reducing order: never refused by a cooldown
        refused = await call(client, "plan_order", BUY)
        assert rules(refused) == ["cooldown"]
        wait = refused["next_safe_action"]
        assert wait["tool"] is None and wait["retry_after"] and wait["human"]
        started = await runtime.store.journal.entries(kind=entry_kinds.COOLDOWN)
        assert len(started) == 1 and started[0].data["losses"] == 1
        clock.advance(29 * 60)
        assert rules(await call(client, "plan_order", BUY)) == ["cooldown"]
        clock.advance(61)
        assert (await call(client, "plan_order", BUY))["status"] == "ok"
        assert len(await runtime.store.journal.entries(kind=entry_kinds.COOLDOWN)) == 1  # same loss, once


async def test_the_day_s_turnover_cuts_the_order_then_says_when_room_comes_back(runtime, paper, tmp_path):
    write_policy(tmp_path, maxTurnoverUsdPerDay=30, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, BUY))["status"] == "filled"  # about $16
        cut = await call(client, "plan_order", BUY)
        assert rules(cut) == ["maxTurnoverUsdPerDay"]
        assert cut["next_safe_action"]["tool"] == "plan_order"
        smaller = cut["next_safe_action"]["args"]
        assert Decimal(smaller["qty"]) < Decimal("0.0002")
        assert (await placed(client, smaller))["status"] == "filled"
        over = await call(client, "plan_order", BUY)
        nothing = over["next_safe_action"]
        assert nothing["tool"] is None and nothing["nothing_fits"]["rule"] == "maxTurnoverUsdPerDay"
        assert nothing["retry_after"].endswith("00:00:00+00:00")
        # what only shrinks the position is never capped
        assert (await call(client, "close_position", {"symbol": "BTCUSDT"}))["status"] == "filled"


async def test_past_valid_until_only_reducing_actions_pass_and_the_answer_says_who_extends_it(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, validUntil=(clock.now()).isoformat())
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", BUY)
        assert rules(refused) == ["validUntil"]
        assert "validUntil" in refused["next_safe_action"]["human"]
        assert (await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "1"}))[
            "status"
        ] == "done"
        raised = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"})
        assert raised["status"] == "refused" and rules(raised) == ["tradingState"]
    await stdio_ended(runtime)
    write_policy(tmp_path, maxSessionMinutes=5)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await call(client, "plan_order", BUY))["status"] == "ok"
        clock.advance(5 * 60)
        session = await call(client, "plan_order", BUY)
        assert rules(session) == ["maxSessionMinutes"]
        assert "new session" in session["next_safe_action"]["human"]
    await stdio_ended(runtime)  # the client's connection closed: the next one is a new session
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await call(client, "plan_order", BUY))["status"] == "ok"


async def test_self_trade_prevention_goes_with_every_create(runtime, paper, tmp_path):
    write_policy(tmp_path, selfTradePrevention="CancelMaker")
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        answer = await placed(client, {**BUY, "order_type": "limit", "price": "70000"})
        assert answer["sent"]["smp_type"] == "CancelMaker"
        orders = await call(client, "get_open_orders", {"symbol": "BTCUSDT"})
    assert [o.smp_type for o in paper.orders()] == ["CancelMaker"]
    assert orders["status"] == "ok"


# --- the dead-man's switch -------------------------------------------------------------------------------

RESTING = {**BUY, "order_type": "limit", "price": "70000"}


async def test_a_silent_agent_s_resting_orders_are_cancelled_and_trading_turns_reducing(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, deadManSwitch={"afterSeconds": 30, "reducing": True}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, RESTING))["status"] == "open"
        assert (await placed(client, {**RESTING, "side": "sell", "price": "90000", "reduce_only": False}))[
            "status"
        ] == "open"
        clock.advance(29)
        await upkeep(runtime)
        assert len([o for o in paper.orders() if o.leaves_qty > 0]) == 2  # not yet
        clock.advance(2)
        await upkeep(runtime)
        assert [o for o in paper.orders() if o.leaves_qty > 0] == []
        fired = await runtime.store.journal.entries(kind=entry_kinds.DEAD_MAN)
        assert len(fired) == 1 and fired[0].data["why"] == "idle" and fired[0].data["idle_seconds"] >= 30
        assert len(fired[0].data["orders"]) == 2
        cancels = await runtime.store.journal.entries(kind=entry_kinds.ACTION)
        assert [e.data.get("origin") for e in cancels if e.data.get("phase") == "sent"] == ["dead_man"] * 2
        refused = await call(client, "plan_order", BUY)
        assert rules(refused) == ["tradingState"]  # the kill switch, which only a human turns off
        await upkeep(runtime)
        assert len(await runtime.store.journal.entries(kind=entry_kinds.DEAD_MAN)) == 1  # once a silence
    off = await anyio.to_thread.run_sync(
        lambda: CliRunner().invoke(main, ["kill-switch", "off", "--home", str(tmp_path)])
    )
    assert off.exit_code == 0, off.output


async def test_the_last_session_ending_cancels_at_once_and_leaves_other_orders_alone(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, deadManSwitch={"onSessionEnd": True}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await placed(client, RESTING))["status"] == "open"
        assert (await placed(client, BUY))["status"] == "filled"
        closing = await placed(client, {**RESTING, "side": "sell", "price": "90000", "reduce_only": True})
        assert closing["status"] == "open"  # reduce-only: it can only close, so it stays
    await stdio_ended(runtime)
    left = [o for o in paper.orders() if o.leaves_qty > 0]
    assert [o.reduce_only for o in left] == [True]
    fired = await runtime.store.journal.entries(kind=entry_kinds.DEAD_MAN)
    assert fired[0].data["why"] == "session_end" and not fired[0].data["reducing"]
    assert (await runtime.journal_state()).kill_switch_on is False


async def test_the_dead_man_s_cancels_wait_for_the_throttle(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, deadManSwitch={"afterSeconds": 10}, maxOrderMessagesPerSecond=1, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        for price in ("70000", "69000"):
            assert (await placed(client, {**RESTING, "price": price}))["status"] == "open"
            clock.advance(1)
    clock.advance(10)
    await upkeep(runtime)
    assert len([o for o in paper.orders() if o.leaves_qty > 0]) == 1  # one message this second
    await upkeep(runtime)
    assert len([o for o in paper.orders() if o.leaves_qty > 0]) == 1
    clock.advance(1)
    await upkeep(runtime)
    assert [o for o in paper.orders() if o.leaves_qty > 0] == []
    assert len(await runtime.store.journal.entries(kind=entry_kinds.DEAD_MAN)) == 1
