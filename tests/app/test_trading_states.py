"""Trading states, as in NautilusTrader: active trades; reducing only shrinks a position; halted only cancels.

The effective state is the strictest of policy.json's tradingState and the kill switch (on means
reducing). Every tool is tried in every state over a real MCP client on the paper exchange, which starts
with a 0.0003 BTC short at leverage 2 and an ETH buy resting on the book: on Bybit's wire and on OKX's (the
OKX front over it).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.cli import main
from pilot.paper import start_paper_exchange
from tests.scenarios import article_scenario

from .conftest import CREATE, Venue, call

pytestmark = pytest.mark.anyio
STATES = ("active", "reducing", "kill_switch", "halted")
# Every state on Bybit's wire; on OKX's (twice as slow a test) the two that refuse most, whose refusals and
# what still goes through must be the same there.
EVERY_STATE = pytest.mark.parametrize(
    ("venue", "state"),
    [*(("bybit", state) for state in STATES), ("okx", "kill_switch"), ("okx", "halted")],
    indirect=["venue"],
)
LEVERAGE = "/v5/position/set-leverage"
CANCEL = "/v5/order/cancel"

# What each kind of action comes to in each state: a status when it goes through, else the rule refusing it.
GROWS = {
    "active": "filled",
    "reducing": "tradingState",
    "kill_switch": "tradingState",
    "halted": "tradingState",
}
SHRINKS = {"active": "filled", "reducing": "filled", "kill_switch": "filled", "halted": "tradingState"}
RAISES_LEVERAGE = {state: "done" if outcome == "filled" else outcome for state, outcome in GROWS.items()}
LOWERS_LEVERAGE = {state: "done" if outcome == "filled" else outcome for state, outcome in SHRINKS.items()}

OPEN_ETH = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.001"}
REDUCE_BTC = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "reduce_only": True}
RESTING_ETH = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.005", "order_type": "limit", "price": "3000"}


@pytest.fixture
def server(venue_server: Any) -> Any:
    return venue_server


@pytest.fixture
def runtime(venue_runtime: Any) -> Any:
    return venue_runtime


@pytest.fixture
def paper() -> Any:
    scenario = article_scenario()
    scenario["positions"] = [
        {"symbol": "BTCUSDT", "side": "Sell", "size": "0.0003", "avgPrice": "80220", "leverage": "2"}
    ]
    with start_paper_exchange(scenario) as exchange:
        yield exchange


async def enter(state: str, client: Any, home: Path, venue: Venue) -> None:
    """Move to `state` the way it happens for real: the human edits policy.json, or the agent hits the switch."""
    if state in ("reducing", "halted"):
        venue.write_policy(home, tradingState=state)
    elif state == "kill_switch":
        assert (await call(client, "activate_kill_switch", {"reason": "test"}))["status"] == "done"


def outcome(answer: dict[str, Any]) -> str:
    """The status when the action went through, else the rule that refused it."""
    if answer["status"] == "refused":
        return answer["violations"][0]["rule"]
    return answer["status"]


async def plan_and_place(client: Any, order: dict[str, Any]) -> dict[str, Any]:
    planned = await call(client, "plan_order", order)  # order in the venue's spelling (venue.args)
    if planned["status"] != "ok":
        return planned
    return await call(client, "place_order", {"plan_id": planned["plan_id"]})


async def human(*args: str) -> None:
    """The human's own command line (`pilot ...`), run as a separate process would, on the same home."""
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, list(args)))
    assert result.exit_code == 0, result.output


@EVERY_STATE
async def test_an_order_that_opens_a_position_goes_through_only_while_active(
    server, paper, runtime, state, venue
):
    async with Client(server, raise_exceptions=True) as client:
        await enter(state, client, runtime.home.path, venue)
        answer = await plan_and_place(client, venue.args(OPEN_ETH))
    assert outcome(answer) == GROWS[state]
    assert paper.request_count(CREATE) == (1 if state == "active" else 0)
    if state != "active":
        assert answer["next_safe_action"]["tool"] is None and answer["next_safe_action"]["human"]
        assert answer["snapshot"]["trading_state"] == ("reducing" if state == "kill_switch" else state)


@EVERY_STATE
async def test_a_reduce_only_order_goes_through_unless_halted(server, paper, runtime, state, venue):
    async with Client(server, raise_exceptions=True) as client:
        await enter(state, client, runtime.home.path, venue)
        answer = await plan_and_place(client, venue.args(REDUCE_BTC))
    assert outcome(answer) == SHRINKS[state]
    assert paper.request_count(CREATE) == (0 if state == "halted" else 1)
    assert paper.position("BTCUSDT").size == Decimal("-0.0003" if state == "halted" else "-0.0002")


@EVERY_STATE
async def test_close_position_goes_through_unless_halted(server, paper, runtime, state, venue):
    async with Client(server, raise_exceptions=True) as client:
        await enter(state, client, runtime.home.path, venue)
        answer = await call(client, "close_position", {"symbol": venue.sym("BTCUSDT")})
    assert outcome(answer) == SHRINKS[state]
    assert paper.request_count(CREATE) == (0 if state == "halted" else 1)
    assert (paper.position("BTCUSDT").size == 0) is (state != "halted")


@EVERY_STATE
async def test_cancel_order_works_in_every_state(server, paper, runtime, state, venue):
    async with Client(server, raise_exceptions=True) as client:
        resting = await plan_and_place(client, venue.args(RESTING_ETH))  # placed while active
        assert resting["status"] == "open"
        await enter(state, client, runtime.home.path, venue)
        answer = await call(
            client, "cancel_order", {"symbol": venue.sym("ETHUSDT"), "order_id": resting["order_id"]}
        )
    assert answer["status"] == "done"
    assert paper.request_count(CANCEL) == 1 and paper.open_orders() == []


@EVERY_STATE
async def test_lowering_leverage_works_unless_halted(server, paper, runtime, state, venue):
    async with Client(server, raise_exceptions=True) as client:
        await enter(state, client, runtime.home.path, venue)
        answer = await call(client, "set_leverage", {"symbol": venue.sym("BTCUSDT"), "leverage": "1"})
    assert outcome(answer) == LOWERS_LEVERAGE[state]
    assert paper.request_count(LEVERAGE) == (0 if state == "halted" else 1)


@EVERY_STATE
async def test_raising_leverage_works_only_while_active(server, paper, runtime, state, venue):
    async with Client(server, raise_exceptions=True) as client:
        await enter(state, client, runtime.home.path, venue)
        answer = await call(client, "set_leverage", {"symbol": venue.sym("BTCUSDT"), "leverage": "3"})
    assert outcome(answer) == RAISES_LEVERAGE[state]
    assert paper.request_count(LEVERAGE) == (1 if state == "active" else 0)
    assert paper.position("BTCUSDT").leverage == (3 if state == "active" else 2)


@EVERY_STATE
async def test_plans_made_while_active_are_judged_again_in_the_state_at_send(
    server, paper, runtime, state, venue
):
    async with Client(server, raise_exceptions=True) as client:
        opening = await call(client, "plan_order", venue.args(OPEN_ETH))
        reducing = await call(client, "plan_order", venue.args(REDUCE_BTC))
        assert opening["status"] == reducing["status"] == "ok"
        await enter(state, client, runtime.home.path, venue)
        opened = await call(client, "place_order", {"plan_id": opening["plan_id"]})
        reduced = await call(client, "place_order", {"plan_id": reducing["plan_id"]})
    assert (outcome(opened), outcome(reduced)) == (GROWS[state], SHRINKS[state])
    sent = (state == "active") + (state != "halted")
    assert paper.request_count(CREATE) == sent
    assert len(await runtime.store.journal.entries(kind=entry_kinds.ORDER_SENT)) == sent
    refusals = await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED)
    assert [e.data["violations"][0]["rule"] for e in refusals] == ["tradingState"] * (2 - sent)


@EVERY_STATE
async def test_reads_work_in_every_state_and_report_the_effective_state(server, paper, runtime, state, venue):
    async with Client(server, raise_exceptions=True) as client:
        await enter(state, client, runtime.home.path, venue)
        policy = await call(client, "get_policy")
        positions = await call(client, "get_positions", {"symbol": venue.sym("BTCUSDT")})
        orders = await call(client, "get_open_orders")
    assert policy["data"]["trading_state"] == ("reducing" if state == "kill_switch" else state)
    assert policy["data"]["kill_switch"] is (state == "kill_switch")
    assert positions["status"] == orders["status"] == "ok"
    assert positions["data"][0]["size"] == "-0.0003"


@pytest.mark.parametrize("venue", ["bybit"], indirect=True)  # the state is Pilot's own: no wire in it
@pytest.mark.parametrize(
    ("policy_state", "switch", "effective"),
    [
        ("active", False, "active"),
        ("active", True, "reducing"),
        ("reducing", False, "reducing"),
        ("reducing", True, "reducing"),
        ("halted", False, "halted"),
        ("halted", True, "halted"),
    ],
)
async def test_the_effective_state_is_the_strictest_of_policy_and_kill_switch(
    server, paper, runtime, policy_state, switch, effective, venue
):
    venue.write_policy(runtime.home.path, tradingState=policy_state)
    async with Client(server, raise_exceptions=True) as client:
        if switch:
            switched = await call(client, "activate_kill_switch", {"reason": "test"})
            assert switched["status"] == "done"
        policy = await call(client, "get_policy")
        planned = await call(client, "plan_order", venue.args(REDUCE_BTC))
    assert policy["data"]["trading_state"] == planned["snapshot"]["trading_state"] == effective
    assert policy["data"]["policy_trading_state"] == policy_state
    assert planned["status"] == ("refused" if effective == "halted" else "ok")


async def test_only_the_human_turns_the_switch_off_and_every_change_is_journaled_with_who(
    server, paper, runtime, venue
):
    home = str(runtime.home.path)
    async with Client(server, raise_exceptions=True) as client:
        await call(client, "activate_kill_switch", {"reason": "agent saw losses"})
        refused = await call(client, "plan_order", venue.args(OPEN_ETH))
        await human("kill-switch", "off", "--home", home, "--reason", "reviewed")
        opened = await plan_and_place(client, venue.args(OPEN_ETH))
        await human("kill-switch", "on", "--home", home, "--reason", "end of day")
        after = await call(client, "get_policy")
    assert outcome(refused) == "tradingState" and opened["status"] == "filled"
    assert after["data"]["trading_state"] == "reducing"
    switches = await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH)
    assert [(e.data["on"], e.data["by"], e.actor, e.data["reason"]) for e in switches] == [
        (True, "agent", "agent", "agent saw losses"),
        (False, "human", "human", "reviewed"),
        (True, "human", "human", "end of day"),
    ]
    assert paper.request_count(CREATE) == 1
