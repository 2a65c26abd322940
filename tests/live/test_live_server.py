"""A live home's server through real MCP sessions against the loopback stand-in for Bybit mainnet: it starts
only when it may, sets and verifies DCP, says LIVE in every answer and in tools/list, stops growing orders
when the key widens or the agent pulls the kill switch, and DCP fires on the paper exchange once Pilot's
connection is gone for the window."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.human.desk import open_desk
from pilot.app.human.going_live import phrase, turn_live_on
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import StartupError, open_runtime
from pilot.app.service.upkeep import upkeep
from pilot.cli.output import CliError
from pilot.paper import PaperExchange
from pilot.server import build_server
from tests.app.conftest import call
from tests.clocks import FakeClock

from .conftest import KEYS, TRADE, pilot

pytestmark = pytest.mark.anyio


async def turn_on(home: Path) -> None:
    async with open_desk(home) as desk:
        await turn_live_on(desk, phrase(desk), at_terminal=True)


async def journal(runtime: Runtime, kind: str) -> list[dict[str, Any]]:
    return [entry.data for entry in await runtime.store.journal.entries(kind=kind)]


def stopped_order(paper: PaperExchange, qty: str = "0.00031") -> dict[str, Any]:
    """A short BTC order with a stop 1 % above the ask: well inside the $5 per-trade loss."""
    stop = (paper.quote("BTCUSDT").ask * Decimal("1.01")).quantize(Decimal("0.1"))
    return {"symbol": "BTCUSDT", "side": "sell", "qty": qty, "stop_loss": str(stop)}


async def test_a_live_home_does_not_start_until_a_human_turns_it_on(live_home: Path, mainnet: PaperExchange):
    with pytest.raises(StartupError) as off:
        async with open_runtime(live_home, exchange="bybit"):
            pass
    assert off.value.code == "live_off"
    assert mainnet.request_count("/v5/order/disconnected-cancel-all") == 0


async def test_a_live_home_without_the_limits_it_needs_will_not_start(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    (live_home / "policy.json").write_text(
        json.dumps({"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": 25, "maxOrderNotionalUsd": 25})
    )
    with pytest.raises(StartupError) as missing:
        async with open_runtime(live_home, exchange="bybit"):
            pass
    assert missing.value.code == "live_limits_missing"
    assert "dailyLossLimitUsd" in str(missing.value) and "deadManSwitch.afterSeconds" in str(missing.value)
    assert mainnet.request_count("/v5/order/create") == 0


async def test_a_live_home_trades_bybit_only_and_a_practice_home_never_reaches_mainnet(
    live_home: Path, tmp_path: Path, mainnet: PaperExchange
):
    with pytest.raises(StartupError) as paper:
        async with open_runtime(live_home, exchange="paper"):
            pass
    assert paper.value.code == "live_home_only_bybit"
    shown = CliError(paper.value.code, str(paper.value), paper.value.fix)
    shown.runnable_where(str(live_home))  # as `pilot serve --home LIVE` prints it
    assert f"pilot init --home {live_home}" not in str(shown.fix)  # practice goes in another folder
    practice = tmp_path / "practice"
    pilot("init", "--home", str(practice))
    with pytest.raises(StartupError) as mainnet_refused:
        async with open_runtime(practice, exchange="bybit"):
            pass
    assert mainnet_refused.value.code == "practice_home"
    assert mainnet.request_count("/v5/user/query-api") == 1  # the one `pilot keys add` made for the live home


async def test_a_live_server_sets_and_verifies_dcp_and_every_answer_and_tool_says_live(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    async with open_runtime(live_home, exchange="bybit") as runtime, Client(build_server(runtime)) as client:
        assert mainnet.dcp.windows == {"DERIVATIVES": 60, "SPOT": 60}
        events = [entry["event"] for entry in await journal(runtime, "dcp")]
        assert events[:2] == ["set", "verified"]
        tools = (await client.list_tools()).tools
        assert all((tool.description or "").endswith("[LIVE bybit]") for tool in tools)
        order = stopped_order(mainnet)
        plan = await call(client, "plan_order", order)
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        answers = [plan, placed, await call(client, "get_positions"), await call(client, "get_policy")]
    assert placed["status"] == "filled", placed
    assert {answer["environment"] for answer in answers} == {"bybit LIVE"}
    assert mainnet.request_count("/v5/order/create") == 1


async def test_a_key_widened_while_serving_stops_growing_orders_but_not_shrinking_ones(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    clock = FakeClock(datetime.now(UTC))
    async with (
        open_runtime(live_home, exchange="bybit", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        first = await call(client, "plan_order", stopped_order(mainnet, "0.0001"))
        opened = await call(client, "place_order", {"plan_id": first["plan_id"]})
        assert opened["status"] == "filled", opened
        mainnet.set_key_permissions(KEYS["narrow"]["key"], {**TRADE, "Wallet": ["Withdraw"]})
        clock.advance(301)  # the next send reads the key again (every 5 minutes while live)
        plan = await call(client, "plan_order", stopped_order(mainnet, "0.0001"))
        assert plan["status"] == "ok", plan
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
    assert refused["status"] == "refused" and refused["violations"][0]["rule"] == "apiKeyPermissions", refused
    assert closed["status"] == "filled", closed
    assert mainnet.request_count("/v5/order/create") == 2  # the opening order and the close, nothing else


async def test_the_server_reads_the_key_again_on_its_own_timer_and_journals_each_change_once(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    clock = FakeClock(datetime.now(UTC))
    reads = lambda: mainnet.request_count("/v5/user/query-api")  # noqa: E731
    async with (
        open_runtime(live_home, exchange="bybit", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        opened = await call(client, "place_order", {"plan_id": (await plan(client, mainnet))["plan_id"]})
        assert opened["status"] == "filled", opened
        raised = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"})
        started = reads()
        mainnet.set_key_permissions(KEYS["narrow"]["key"], {**TRADE, "Wallet": ["Withdraw"]})
        clock.advance(299)
        await upkeep(runtime)
        assert reads() == started  # not yet five minutes on the store's clock
        clock.advance(1)
        await upkeep(runtime)  # no order was sent: the timer alone reads the key
        assert reads() == started + 1
        refused = await call(client, "place_order", {"plan_id": (await plan(client, mainnet))["plan_id"]})
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
        mainnet.leave_order(*_far_bid(mainnet))
        cancelled = await call(client, "cancel_order", {"symbol": "BTCUSDT", "order_link_id": "left-by-hand"})
        higher = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "3"})
        lowered = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "1"})
        assert reads() == started + 1  # refused at once, on the verdict the timer recorded
        for _ in range(2):
            clock.advance(300)
            await upkeep(runtime)
        assert reads() == started + 3
        widened = await journal(runtime, "key.check")
        mainnet.set_key_permissions(KEYS["narrow"]["key"], TRADE)  # the box unticked again
        clock.advance(300)
        await upkeep(runtime)
        again = await call(client, "place_order", {"plan_id": (await plan(client, mainnet))["plan_id"]})
        checks = await journal(runtime, "key.check")
    assert refused["status"] == "refused" and refused["violations"][0]["rule"] == "apiKeyPermissions", refused
    assert closed["status"] == "filled" and again["status"] == "filled", (closed, again)
    assert cancelled["status"] == "done" and mainnet.open_orders() == [], cancelled  # cancels still go
    assert raised["status"] == lowered["status"] == "done", (raised, lowered)  # and a lower leverage
    assert higher["status"] == "refused" and higher["violations"][0]["rule"] == "apiKeyPermissions", higher
    assert [(c["verdict"], c.get("disallowed")) for c in widened] == [("refused", ["Wallet.Withdraw"])]
    assert [c["verdict"] for c in checks] == ["refused", "accepted"]
    assert mainnet.request_count("/v5/order/create") == 3  # opened, closed, and again once the key narrowed


async def test_a_key_bybit_cannot_be_asked_about_stops_growing_orders_until_a_read_passes(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    clock = FakeClock(datetime.now(UTC))
    reads = lambda: mainnet.request_count("/v5/user/query-api")  # noqa: E731
    async with (
        open_runtime(live_home, exchange="bybit", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        opened = await call(client, "place_order", {"plan_id": (await plan(client, mainnet))["plan_id"]})
        mainnet.add_fault("/v5/user/query-api", "http_5xx", every=True)
        clock.advance(300)
        await upkeep(runtime)
        started = reads()
        clock.advance(29)
        await upkeep(runtime)
        assert reads() == started  # a failed read is tried again 30 s later, not every second
        clock.advance(1)
        await upkeep(runtime)
        assert reads() == started + 1
        refused = await call(client, "place_order", {"plan_id": (await plan(client, mainnet))["plan_id"]})
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
        unchecked = await journal(runtime, "key.check")
        mainnet.clear_faults()
        clock.advance(30)
        await upkeep(runtime)
        again = await call(client, "place_order", {"plan_id": (await plan(client, mainnet))["plan_id"]})
        checks = await journal(runtime, "key.check")
    assert opened["status"] == "filled" and closed["status"] == "filled", (opened, closed)
    assert refused["status"] == "refused" and refused["violations"][0]["rule"] == "apiKeyPermissions", refused
    assert [(c["verdict"], c.get("code")) for c in unchecked] == [
        ("unchecked", "key_permission_check_failed")
    ]
    assert [c["verdict"] for c in checks] == ["unchecked", "accepted"] and again["status"] == "filled", again


async def test_a_widening_one_server_finds_stops_growing_orders_in_every_server_of_the_home_at_once(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    clock = FakeClock(datetime.now(UTC))
    async with AsyncExitStack() as stack:
        finder = await stack.enter_async_context(open_runtime(live_home, exchange="bybit", clock=clock))
        clock.advance(200)
        other = await stack.enter_async_context(open_runtime(live_home, exchange="bybit", clock=clock))
        client = await stack.enter_async_context(Client(build_server(other)))
        mainnet.set_key_permissions(KEYS["narrow"]["key"], {**TRADE, "Wallet": ["AccountTransfer"]})
        clock.advance(100)
        reads = mainnet.request_count("/v5/user/query-api")
        await upkeep(finder)  # the first server's timer reads the key; the other's is 200 s from due
        planned = await plan(client, mainnet)
        refused = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert mainnet.request_count("/v5/user/query-api") == reads + 1  # the other read no key of its own
        clock.advance(200)
        await upkeep(other)  # its own timer finds the same: no second entry
        assert mainnet.request_count("/v5/user/query-api") == reads + 2
        checks = await journal(other, "key.check")
    assert refused["status"] == "refused" and refused["violations"][0]["rule"] == "apiKeyPermissions", refused
    assert [(c["verdict"], c["disallowed"]) for c in checks] == [("refused", ["Wallet.AccountTransfer"])]
    assert mainnet.request_count("/v5/order/create") == 0


async def plan(client: Client, paper: PaperExchange) -> dict[str, Any]:
    planned = await call(client, "plan_order", stopped_order(paper, "0.0001"))
    assert planned["status"] == "ok", planned
    return planned


async def test_the_agent_can_turn_live_off_with_the_kill_switch_and_no_tool_turns_it_back_on(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    async with open_runtime(live_home, exchange="bybit") as runtime, Client(build_server(runtime)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert not {name for name in names if "live" in name}
        await call(client, "activate_kill_switch", {"reason": "the agent stops"})
        plan = await call(client, "plan_order", stopped_order(mainnet))
    assert plan["status"] == "refused"
    holds = {hold["source"] for v in plan["violations"] for hold in v.get("held_by") or ()}
    assert {"killSwitch", "liveOff"} <= holds, plan
    async with open_desk(live_home) as desk:
        await desk.store.journal.append(
            "killswitch", {"on": False, "by": "human"}, now=desk.now(), actor="human"
        )
    with pytest.raises(StartupError) as off:  # a human types the phrase again before it trades
        async with open_runtime(live_home, exchange="bybit"):
            pass
    assert off.value.code == "live_off"


async def test_dcp_cancels_every_resting_order_once_pilots_connection_is_gone_for_the_window(
    live_home: Path, mainnet: PaperExchange
):
    await turn_on(live_home)
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(open_runtime(live_home, exchange="bybit"))
        resting = mainnet.leave_order(*_far_bid(mainnet))
        mainnet.advance(120_000)  # while Pilot's connection lives, DCP holds off however long
        assert mainnet.open_orders() and not mainnet.dcp.fired
    # the server stopped: its `dcp` connection is gone, and Bybit's clock runs the window down
    assert mainnet.dcp.wait_unwatched(timeout_s=10)  # the exchange saw the connection end
    mainnet.advance(59_000)
    assert [o.order_id for o in mainnet.open_orders()] == [resting.order_id]
    mainnet.advance(1_000)
    assert mainnet.open_orders() == [] and sorted(p for p, _ in mainnet.dcp.fired) == ["DERIVATIVES", "SPOT"]
    assert mainnet.orders()[-1].cancel_type == "CancelByDCP"


def _far_bid(paper: PaperExchange) -> tuple[str, dict[str, Any]]:
    bid = paper.quote("BTCUSDT").bid
    price = (bid * Decimal("0.9")).quantize(Decimal("0.1"))
    return "linear", {
        "symbol": "BTCUSDT",
        "side": "Buy",
        "orderType": "Limit",
        "qty": "0.001",
        "price": str(price),
        "orderLinkId": "left-by-hand",
    }
