"""Every tool answer names the environment it is about, so paper is never mistaken for demo or testnet."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from mcp import Client

from pilot.app.runtime.runtime import Runtime
from pilot.server import build_server

from .conftest import BTC_SHORT, call

pytestmark = pytest.mark.anyio
# One valid call per tool. A new tool must be added here, or the first test fails.
CALLS: dict[str, dict[str, Any]] = {
    "get_ticker": {"symbol": "BTCUSDT"},
    "get_orderbook": {"symbol": "BTCUSDT", "depth": 2},
    "get_instrument_rules": {"symbol": "BTCUSDT"},
    "get_balances": {},
    "get_positions": {},
    "get_open_orders": {},
    "get_policy": {},
    "plan_order": BTC_SHORT,
    "place_order": {"plan_id": "plan_" + "A" * 32},
    "close_position": {"symbol": "BTCUSDT"},
    "cancel_order": {"symbol": "BTCUSDT", "order_link_id": "nobody"},
    "set_leverage": {"symbol": "BTCUSDT", "leverage": "2"},
    "get_confirmation_status": {"confirmation_id": "cfm_" + "A" * 32},
    "cancel_confirmation": {"confirmation_id": "cfm_" + "A" * 32},
    "get_order_history": {"symbol": "BTCUSDT"},
    "get_fills": {},
    "get_closed_pnl": {},
    "set_trading_stop": {"symbol": "BTCUSDT", "take_profit": "90000"},
    "plan_amend": {"symbol": "BTCUSDT", "order_id": "nobody", "qty": "0.001"},
    "cancel_all_orders": {"symbol": "BTCUSDT"},
    "activate_kill_switch": {"reason": "last: it changes the trading state"},
}


@pytest.mark.parametrize("environment", ["paper", "bybit-testnet"])
async def test_every_tool_answer_names_the_environment_of_its_runtime(runtime: Runtime, environment: str):
    named = replace(runtime, environment=environment)
    async with Client(build_server(named)) as client:
        tools = (await client.list_tools()).tools
        answers = {tool: await call(client, tool, args) for tool, args in CALLS.items()}
    assert {tool.name for tool in tools} == set(CALLS)
    for tool in tools:
        assert "environment" in (tool.output_schema or {}).get("properties", {}), tool.name
    assert {tool: answer["environment"] for tool, answer in answers.items()} == dict.fromkeys(
        CALLS, environment
    )


async def test_a_replayed_answer_names_the_environment_too(runtime: Runtime):
    async with Client(build_server(runtime)) as client:
        args = {"reason": "once", "idempotency_key": "key-1"}
        first = await call(client, "activate_kill_switch", args)
        again = await call(client, "activate_kill_switch", args)
    assert first["environment"] == again["environment"] == "paper"


async def test_every_tool_answers_on_each_venue_naming_its_environment_and_its_venue(venue_runtime, venue):
    """Every tool, once, through each venue's adapter (Bybit's wire, OKX's over the OKX front): each answers,
    names the runtime's environment, and a plan's facts name the venue they were read from."""
    async with Client(build_server(venue_runtime)) as client:
        answers = {tool: await call(client, tool, venue.args(args)) for tool, args in CALLS.items()}
    assert {answer["environment"] for answer in answers.values()} == {venue.environment}
    assert answers["plan_order"]["status"] == "ok"
    assert answers["plan_order"]["snapshot"]["venue"] == {"bybit": "Bybit", "okx": "OKX"}[venue.name]
    assert answers["get_ticker"]["status"] == "ok" and answers["get_instrument_rules"]["status"] == "ok"
