"""Several agents on one account (issue 39): each client's credential names its agent and its role, a
budget of its own in policy.json binds beside the account's, a switch each, and a revoke that stops one.

Through real MCP client sessions: over HTTP (each agent its bearer token) and in memory as `pilot serve`
over stdio does it (the credential the client's configuration carries, looked up on every call)."""

from __future__ import annotations

import socket
from contextlib import AsyncExitStack, asynccontextmanager
from decimal import Decimal
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pilot.app.answers import entry_kinds
from pilot.app.human.agent_desk import add_agent, agents_overview, revoke_agent, switch_agent_by_human
from pilot.app.service.upkeep import upkeep
from pilot.server import build_server, serve_http

from .conftest import BTC_SHORT, CREATE, call, plan_and_place, write_policy

pytestmark = pytest.mark.anyio
BTC_CLOSE = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.00031"}


@asynccontextmanager
async def http_clients(runtime: Any, *tokens: str) -> Any:
    """One MCP client over HTTP per bearer token, on one server."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serve_http, runtime, "127.0.0.1", listener.getsockname()[1], listener)
        async with AsyncExitStack() as stack:
            clients = []
            for token in tokens:
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10)
                )
                clients.append(
                    await stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
                )
            yield clients
        tasks.cancel_scope.cancel()


@asynccontextmanager
async def stdio_like(runtime: Any, credential: str) -> Any:
    """A client whose server takes its agent from the credential, as `pilot serve` over stdio does."""
    runtime.credential = credential
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        yield client


async def test_three_roles_over_http_each_named_in_the_journal(runtime, paper):
    trader = await add_agent(runtime, "trader", "trade")
    scout = await add_agent(runtime, "scout", "read")
    closer = await add_agent(runtime, "closer", "reduce")
    async with http_clients(runtime, trader, scout, closer) as (t, s, c):
        opened = await call(t, "plan_order", BTC_SHORT)
        placed = await call(t, "place_order", {"plan_id": opened["plan_id"]})
        creates = paper.request_count(CREATE)
        read_plan = await call(s, "plan_order", BTC_SHORT)
        read_cancel = await call(s, "cancel_all_orders", {"symbol": "BTCUSDT"})
        read_ticker = await call(s, "get_ticker", {"symbol": "BTCUSDT"})
        assert paper.request_count(CREATE) == creates  # nothing the read-only agent asked was sent
        grow = await call(c, "plan_order", BTC_SHORT)
        close = await call(c, "plan_order", BTC_CLOSE)
        closed = await call(c, "place_order", {"plan_id": close["plan_id"]})
    assert placed["status"] == "filled", placed
    assert [v["rule"] for v in read_plan["violations"]] == ["agentReadOnly"]
    assert read_cancel["status"] == "refused" and read_cancel["violations"][0]["rule"] == "agentReadOnly"
    assert read_ticker["status"] == "ok"
    assert grow["status"] == "refused" and {v["rule"] for v in grow["violations"]} & {
        "reduceOnly",
        "tradingState",
    }
    assert close["status"] == "ok" and close["order"]["reduce_only"] is True
    assert closed["status"] == "filled", closed
    sent = await runtime.store.journal.entries(kind=entry_kinds.ORDER_SENT)
    assert [entry.actor for entry in sent] == ["agent:trader", "agent:closer"]
    refused = await runtime.store.journal.entries(kind=entry_kinds.AGENT_REFUSED)
    assert {(e.data["agent"], e.data["rule"]) for e in refused} == {("scout", "agentReadOnly")}


async def test_an_agents_own_budget_binds_beside_the_accounts_and_says_whose(runtime, tmp_path):
    write_policy(tmp_path, agents={"capped": {"dailyOrderCap": 1, "maxOrderNotionalUsd": 10}})
    capped = await add_agent(runtime, "capped", "trade")
    free = await add_agent(runtime, "free", "trade")
    async with stdio_like(runtime, capped) as client:
        big = await call(client, "plan_order", BTC_SHORT)  # about $20: above the agent's $10, inside the $25
        small = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0001"})
        await call(client, "place_order", {"plan_id": small["plan_id"]})
        second = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0001"})
    async with stdio_like(runtime, free) as client:
        other = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0001"})
    assert big["status"] == "refused"
    assert [(v["rule"], v["budget"]) for v in big["violations"]] == [("maxOrderNotionalUsd", "agent:capped")]
    assert big["violations"][0]["limit"] == "10"
    assert [(v["rule"], v["budget"]) for v in second["violations"]] == [("dailyOrderCap", "agent:capped")]
    assert other["status"] == "ok"  # the account had room; only the capped agent's own budget was spent
    rows = {row.name: row for row in await agents_overview(runtime)}
    assert rows["capped"].orders_today == 1 and rows["free"].orders_today == 0


async def test_what_only_the_agents_budget_refuses_sends_the_human_to_its_budget(runtime, tmp_path):
    # Found walking issue 40 as a user: refused by its own dailyOrderCap of 1 (the account's is 20), the
    # agent was told a human should raise dailyOrderCap, the account's, which would not let it pass.
    write_policy(tmp_path, agents={"capped": {"dailyOrderCap": 1}})
    capped = await add_agent(runtime, "capped", "trade")
    async with stdio_like(runtime, capped) as client:
        small = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0001"})
        await call(client, "place_order", {"plan_id": small["plan_id"]})
        second = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0001"})
    assert [(v["rule"], v["budget"]) for v in second["violations"]] == [("dailyOrderCap", "agent:capped")]
    assert "agents.capped.dailyOrderCap" in second["next_safe_action"]["human"]  # a policy.json path


async def test_one_agents_switch_stops_it_alone_and_revoke_cuts_it_off(runtime, paper):
    first = await add_agent(runtime, "first", "trade")
    second = await add_agent(runtime, "second", "trade")
    resting = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": "50000"}
    async with stdio_like(runtime, first) as client:
        plan = await call(client, "plan_order", resting)
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "open"
        unused = await call(client, "plan_order", resting)
        await switch_agent_by_human(runtime, "first", on=True, reason="look first")
        held = await call(client, "plan_order", resting)
        async with stdio_like(runtime, second) as other:
            passes = await call(other, "plan_order", resting)
        runtime.credential = first
        await switch_agent_by_human(runtime, "first", on=False)
        revoked = await revoke_agent(runtime, "first")
        after = await call(client, "get_positions", {})
        replaced = await call(client, "place_order", {"plan_id": unused["plan_id"]})
    assert held["status"] == "refused"
    assert held["violations"][0]["rule"] == "tradingState"
    assert held["violations"][0]["held_by"][0]["source"] == "agentKillSwitch"
    assert "pilot agent resume first" in held["next_safe_action"]["human"]  # a command, callable as given
    assert passes["status"] == "ok"
    assert len(revoked.cancelled) == 1 and revoked.plans == [unused["plan_id"]]
    assert after["status"] == "refused" and after["violations"][0]["rule"] == "agentRevoked"
    assert replaced["violations"][0]["rule"] == "agentRevoked"
    assert await runtime.exchange.get_open_orders("linear") == []


async def test_one_agents_silence_cancels_its_opening_orders_and_leaves_anothers(
    runtime, paper, tmp_path, clock
):
    """Two agents rest a buy each; the chatty one calls on while the quiet one stays silent past `afterSeconds`
    (the clock moved by hand). Upkeep cancels the quiet agent's order alone and turns its own switch on; the
    home's switch stays off (an agent called), and the other agent still plans."""
    write_policy(tmp_path, deadManSwitch={"afterSeconds": 30, "reducing": True})
    quiet = await add_agent(runtime, "quiet", "trade")
    chatty = await add_agent(runtime, "chatty", "trade")
    resting = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": "50000"}
    async with stdio_like(runtime, quiet) as client:
        plan = await call(client, "plan_order", resting)
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "open"
    async with stdio_like(runtime, chatty) as client:
        plan = await call(client, "plan_order", {**resting, "price": "51000"})
        kept = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        assert kept["status"] == "open"
        clock.advance(20)
        await call(client, "get_positions", {})  # the chatty agent's call, 20 s after the quiet one's last
        clock.advance(11)
        await upkeep(runtime)
        left = [(o.order_id, o.price) for o in paper.orders() if o.leaves_qty > 0]
        fired = await runtime.store.journal.entries(kind=entry_kinds.AGENT_DEAD_MAN)
        still = await call(client, "plan_order", {**resting, "price": "52000"})
        await upkeep(runtime)  # once a silence: nothing of the quiet agent's is left to cancel
    assert [(e.data["agent"], e.data["why"], len(e.data["orders"])) for e in fired] == [("quiet", "idle", 1)]
    assert left == [(kept["order_id"], 51000)]
    state = await runtime.journal_state()
    assert state.agent_switch("quiet") is not None and state.agent_switch("chatty") is None
    assert (
        state.kill_switch_on is False and await runtime.store.journal.entries(kind=entry_kinds.DEAD_MAN) == []
    )
    assert still["status"] == "ok"
    assert len(await runtime.store.journal.entries(kind=entry_kinds.AGENT_DEAD_MAN)) == 1


async def test_an_agents_cap_per_market_counts_its_share_not_anothers_position(runtime, paper, tmp_path):
    """The account may hold $100 of BTC, agent `small` $25 of it. Agent `big` is short $40: `small` still has
    its own $25 (a $16 short passes and fills), and a second $16 would take its own share to $32: refused
    for its budget, while `big` may go on within the account's room."""
    write_policy(
        tmp_path, maxNotionalUsd=100, maxOrderNotionalUsd=100, agents={"small": {"maxNotionalUsd": 25}}
    )
    big = await add_agent(runtime, "big", "trade")
    small = await add_agent(runtime, "small", "trade")
    async with stdio_like(runtime, big) as client:
        assert (await plan_and_place(client, {**BTC_SHORT, "qty": "0.0005"}))["status"] == "filled"
    async with stdio_like(runtime, small) as client:
        room = (await call(client, "get_policy", {}))["data"]["markets"]["BTCUSDT"]["room"]["sell"]
        first = await plan_and_place(client, {**BTC_SHORT, "qty": "0.0002"})
        second = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0002"})
    async with stdio_like(runtime, big) as client:
        more = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0002"})
    assert first["status"] == "filled", first
    assert [(v["rule"], v["budget"]) for v in second["violations"]] == [("maxNotionalUsd", "agent:small")]
    assert (
        Decimal(second["violations"][0]["attempted"]) == Decimal("0.0004") * 80220
    )  # its own two shorts at the bid
    assert more["status"] == "ok"
    assert paper.position("BTCUSDT").size == Decimal("-0.0007")
    # its own room as plan_order judges it: its $25, not the account's $60 left
    assert (room["qty"], room["limited_by"]) == ("0.00031", ["maxNotionalUsd"])


async def test_a_name_revoked_and_given_a_new_credential_trades_again(runtime, paper):
    # Found walking issue 40 as a user: an agentRevoked refusal tells the human to `pilot agent add NAME`
    # again; the new credential was still held by the old one's revoke (its switch on for good).
    old = await add_agent(runtime, "again", "trade")
    await revoke_agent(runtime, "again")
    new = await add_agent(runtime, "again", "trade")
    async with stdio_like(runtime, old) as client:
        cut = await call(client, "plan_order", BTC_SHORT)
    async with stdio_like(runtime, new) as client:
        planned = await call(client, "plan_order", BTC_SHORT)
    assert cut["violations"][0]["rule"] == "agentRevoked"
    assert planned["status"] == "ok", planned


async def test_an_agent_cannot_place_another_agents_plan_and_its_maker_still_can(runtime, paper):
    # Found by a hostile walk: agent b placed agent a's plan id (sent, as b's order). A plan id is its
    # maker's: another agent is told no such plan (nothing says whose), and the plan stays a's to place.
    maker = await add_agent(runtime, "maker", "trade")
    other = await add_agent(runtime, "other", "trade")
    async with stdio_like(runtime, maker) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
    before = paper.request_count(CREATE)
    async with stdio_like(runtime, other) as client:
        taken = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    sent_by_other = paper.request_count(CREATE) - before
    async with stdio_like(runtime, maker) as client:
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert taken["status"] == "refused" and taken["violations"][0]["rule"] == "planNotFound"
    assert sent_by_other == 0
    assert placed["status"] == "filled", placed


async def test_an_agents_own_day_loss_holds_its_stop_moves_and_leverage_and_not_anothers(runtime, paper):
    """An agent's own dailyLossLimitUsd reached holds that agent's risk-widening calls without an order (a
    stop moved away, a higher leverage) as its order judgement does, on the day's loss read at the call;
    closer stops and lower leverage still go, and an agent without that limit is not held."""
    write_policy(
        runtime.home.path,
        maxLossPerTradeUsd=5,
        maxLeverage=10,
        agents={"careful": {"dailyLossLimitUsd": 0.2}},
    )
    careful = await add_agent(runtime, "careful", "trade")
    other = await add_agent(runtime, "other", "trade")
    async with stdio_like(runtime, careful) as client:
        opened = await call(client, "plan_order", {**BTC_CLOSE, "qty": "0.0003", "stop_loss": "79000"})
        assert (await call(client, "place_order", {"plan_id": opened["plan_id"]}))["status"] == "filled"
        assert (await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "3"}))[
            "status"
        ] == "done"
        paper.set_prices("BTCUSDT", bid="79300", ask="79300.1", mark="79300")  # over $0.2 lost, stop not hit

        farther = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "78990"})
        raised = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "5"})
        closer = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "79100"})
        lowered = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"})
    for refused in (farther, raised):
        assert refused["status"] == "refused"
        assert [h["source"] for v in refused["violations"] for h in v.get("held_by", [])] == ["agentDayLoss"]
    assert closer["status"] == "done" and lowered["status"] == "done"
    assert paper.position("BTCUSDT").stop_loss == Decimal("79100")
    assert paper.position("BTCUSDT").leverage == Decimal(2)
    assert (
        await runtime.store.journal.entries(kind=entry_kinds.LOSS_LIMIT) == []
    )  # the account is not latched

    async with stdio_like(runtime, other) as client:
        moved = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "78990"})
    assert moved["status"] == "done" and paper.position("BTCUSDT").stop_loss == Decimal("78990")
