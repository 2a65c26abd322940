"""Every refusal's `human` line is true for the state it describes: it names what holds trading (policy.json,
the kill switch, the loss limit's latch, an invalid policy) and asks a human to change only that, with the
reason the human (or the agent) gave when it was set; a symbol the exchange does not list is pointed at the
listed market it most likely meant, saying whether policy.json allows it.

Asserted on the structured fields (`held_by`'s sources, who and why; `did_you_mean`,
`did_you_mean_allowed`) and on the human line being made of exactly the blocking holds' lifts, through a
real MCP client on the paper exchange, which starts with a 0.0003 BTC short with its stop at 82000.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from pilot.cli import main
from pilot.core.facts import TradingState
from pilot.core.holds import Hold, HoldSource
from pilot.paper import start_paper_exchange
from tests.scenarios import article_scenario

from .conftest import call, next_of, write_policy

pytestmark = pytest.mark.anyio

OPEN_ETH = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.001"}
REDUCE_BTC = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "reduce_only": True}
# What lifts each hold, as the code declares it: a human line holds exactly those of the blocking holds.
LIFTS = {
    (source, state): Hold(source, state).lift
    for source in HoldSource
    for state in (TradingState.REDUCING, TradingState.HALTED)
}


@pytest.fixture
def paper() -> Any:
    scenario = article_scenario()
    scenario["positions"] = [
        {
            "symbol": "BTCUSDT",
            "side": "Sell",
            "size": "0.0003",
            "avgPrice": "80220",
            "leverage": "2",
            "stopLoss": "82000",
        }
    ]
    with start_paper_exchange(scenario) as exchange:
        yield exchange


async def human(*args: str) -> None:
    """The human's own command line, on the same home."""
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, list(args)))
    assert result.exit_code == 0, result.output


def trading_state_refusal(answer: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The tradingState violation's holds, and the human line of its next action."""
    assert answer["status"] == "refused", answer
    [violation] = [v for v in answer["violations"] if v["rule"] == "tradingState"]
    return violation["held_by"], next_of(answer, violation)["human"]


def says_only(human_line: str, held: list[dict[str, Any]]) -> bool:
    """The human line asks for what lifts each hold in `held`, and for nothing that lifts another."""
    named = {(HoldSource(h["source"]), TradingState(h["state"])) for h in held}
    return all(LIFTS[key] in human_line for key in named) and not any(
        lift in human_line for key, lift in LIFTS.items() if key[0] not in {source for source, _ in named}
    )


async def test_the_kill_switch_alone_names_only_the_switch_with_the_humans_reason(server, runtime):
    home = str(runtime.home.path)
    await human("kill-switch", "on", "--reason", "leaving for lunch", "--home", home)
    async with Client(server, raise_exceptions=True) as client:
        answer = await call(client, "plan_order", OPEN_ETH)
        policy = (await call(client, "get_policy"))["data"]
    held, human_line = trading_state_refusal(answer)
    assert [(h["source"], h["state"], h["by"], h["reason"]) for h in held] == [
        ("killSwitch", "reducing", "human", "leaving for lunch")
    ]
    assert held[0]["at"] and says_only(human_line, held)
    assert [(h["source"], h["reason"]) for h in policy["held_by"]] == [("killSwitch", "leaving for lunch")]


async def test_the_agents_own_switch_is_named_as_the_agents_with_its_reason(server):
    async with Client(server, raise_exceptions=True) as client:
        await call(client, "activate_kill_switch", {"reason": "the fills look wrong"})
        answer = await call(client, "plan_order", OPEN_ETH)
    held, _ = trading_state_refusal(answer)
    assert [(h["source"], h["by"], h["reason"]) for h in held] == [
        ("killSwitch", "agent", "the fills look wrong")
    ]


@pytest.mark.parametrize(
    ("policy_state", "switch", "sources"),
    [
        ("reducing", False, {HoldSource.POLICY}),
        ("reducing", True, {HoldSource.POLICY, HoldSource.KILL_SWITCH}),
        ("halted", True, {HoldSource.POLICY, HoldSource.KILL_SWITCH}),
    ],
)
async def test_an_order_that_grows_names_every_hold_and_only_those(
    server, runtime, policy_state, switch, sources
):
    write_policy(runtime.home.path, tradingState=policy_state)
    if switch:
        await human("kill-switch", "on", "--reason", "desk closed", "--home", str(runtime.home.path))
    async with Client(server, raise_exceptions=True) as client:
        answer = await call(client, "plan_order", OPEN_ETH)
    held, human_line = trading_state_refusal(answer)
    assert {HoldSource(h["source"]) for h in held} == sources
    assert says_only(human_line, held)


async def test_a_reducing_order_while_halted_names_the_policy_not_the_kill_switch(server, runtime):
    """The kill switch lets a reducing order through: only policy.json's halted stops it, so only that is asked."""
    write_policy(runtime.home.path, tradingState="halted")
    await human("kill-switch", "on", "--reason", "desk closed", "--home", str(runtime.home.path))
    async with Client(server, raise_exceptions=True) as client:
        answer = await call(client, "plan_order", REDUCE_BTC)
    held, human_line = trading_state_refusal(answer)
    assert [(h["source"], h["state"]) for h in held] == [("policy", "halted")]
    assert says_only(human_line, held)


async def test_a_raised_leverage_and_a_widened_stop_under_the_kill_switch_name_only_the_switch(
    server, runtime
):
    await human("kill-switch", "on", "--reason", "news at 14:00", "--home", str(runtime.home.path))
    async with Client(server, raise_exceptions=True) as client:
        leverage = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "3"})
        stop = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "83000"})
    for answer in (leverage, stop):
        held, human_line = trading_state_refusal(answer)
        assert [(h["source"], h["reason"]) for h in held] == [("killSwitch", "news at 14:00")]
        assert says_only(human_line, held)


async def test_an_invalid_policy_is_named_as_invalid_not_as_a_trading_state_to_set(server, runtime):
    (runtime.home.path / "policy.json").write_text('{"maxNotionalUsd": "lots"}')
    async with Client(server, raise_exceptions=True) as client:
        leverage = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "3"})
    held, human_line = trading_state_refusal(leverage)
    assert [h["source"] for h in held] == ["invalidPolicy"]
    assert says_only(human_line, held)


async def test_the_daily_loss_limits_latch_is_named_with_when_it_lifts(server, runtime, paper):
    write_policy(runtime.home.path, dailyLossLimitUsd=1)
    paper.set_prices("BTCUSDT", bid="90000", ask="90000.1", mark="90000")  # the short loses about $3
    async with Client(server, raise_exceptions=True) as client:
        first = await call(client, "plan_order", OPEN_ETH)  # the loss is seen, and the latch journaled
        answer = await call(client, "plan_order", OPEN_ETH)
    assert first["status"] == "refused"
    held, human_line = trading_state_refusal(answer)
    assert [(h["source"], h["by"]) for h in held] == [("lossLimit", "pilot")]
    assert held[0]["until"].endswith("00:00:00+00:00")
    assert says_only(human_line, held)


@pytest.mark.parametrize(("allowed", "meant_allowed"), [(["BTCUSDT", "ETHUSDT"], False), (None, True)])
async def test_an_unlisted_symbol_names_the_listed_market_and_whether_it_is_allowed(
    server, runtime, allowed, meant_allowed
):
    if allowed is not None:
        write_policy(runtime.home.path, allowedMarkets=allowed)
    async with Client(server, raise_exceptions=True) as client:
        answer = await call(client, "plan_order", {"symbol": "SOLUSD", "side": "buy", "qty": "1"})
    [violation] = answer["violations"]
    assert violation["rule"] == "allowedMarkets"
    assert (violation["did_you_mean"], violation["did_you_mean_allowed"]) == ("SOLUSDT", meant_allowed)
    step = next_of(answer, violation)
    assert step["tool"] is None
    # what only a human can change names the listed market, never the unlisted symbol asked for
    assert ("SOLUSDT" in step["human"]) is not meant_allowed and "add SOLUSD " not in step["human"]


async def test_a_listed_symbol_not_allowed_asks_for_itself_to_be_allowed(server, runtime):
    write_policy(runtime.home.path, allowedMarkets=["BTCUSDT", "ETHUSDT"])
    async with Client(server, raise_exceptions=True) as client:
        answer = await call(client, "plan_order", {"symbol": "SOLUSDT", "side": "buy", "qty": "1"})
    [violation] = [v for v in answer["violations"] if v["rule"] == "allowedMarkets"]
    assert "did_you_mean" not in violation
    assert "SOLUSDT" in next_of(answer, violation)["human"]
