"""One key style in every answer: snake_case, whatever the tool and whatever it answered (ok, refused, filled,
an error result). Market symbols used as keys (get_policy's markets) are data, not field names."""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import Client

from pilot.server import build_server

from .conftest import BTC_SHORT, write_policy

pytestmark = pytest.mark.anyio

SNAKE = re.compile(r"[a-z][a-z0-9_]*")
SYMBOL = re.compile(r"[A-Z0-9]{2,30}")


def keys_of(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every (path, key) in a JSON value."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((path, key))
            found.extend(keys_of(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for item in value:
            found.extend(keys_of(item, f"{path}[]"))
    return found


def not_snake(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (path, key)
        for path, key in keys_of(answer)
        if not SNAKE.fullmatch(key) and not (path.endswith(".markets") and SYMBOL.fullmatch(key))
    ]


async def test_every_answer_of_every_tool_is_in_snake_case(runtime, paper) -> None:
    write_policy(runtime.home.path, confirm={"actions": ["set_leverage"], "cliChannel": True})
    resting = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.003", "order_type": "limit", "price": "3000"}
    answers: dict[str, Any] = {}
    async with Client(build_server(runtime)) as client:

        async def call(name: str, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
            result = await client.call_tool(tool, args or {})
            answers[name] = result.structured_content
            return result.structured_content

        for tool in ("get_balances", "get_positions", "get_open_orders", "get_policy"):
            await call(tool, tool)
        for tool in ("get_ticker", "get_orderbook", "get_instrument_rules"):
            await call(tool, tool, {"symbol": "BTCUSDT"})
        await call("plan refused", "plan_order", {**BTC_SHORT, "qty": "0.0005"})
        planned = await call("plan ok", "plan_order", BTC_SHORT)
        await call("place filled", "place_order", {"plan_id": planned["plan_id"]})
        await call("place refused", "place_order", {"plan_id": planned["plan_id"]})
        rest = await call("plan resting", "plan_order", resting)
        placed = await call("place open", "place_order", {"plan_id": rest["plan_id"]})
        await call("open orders", "get_open_orders", {"symbol": "ETHUSDT"})
        await call("cancel", "cancel_order", {"symbol": "ETHUSDT", "order_id": placed["order_id"]})
        parked = await call("leverage parked", "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"})
        await call("status", "get_confirmation_status", {"confirmation_id": parked["confirmation_id"]})
        await call("withdraw", "cancel_confirmation", {"confirmation_id": parked["confirmation_id"]})
        await call("close", "close_position", {"symbol": "BTCUSDT"})
        await call("kill switch", "activate_kill_switch", {"reason": "done"})
        await call("bad argument", "plan_order", {**BTC_SHORT, "qty": 0.001})
        await call("policy after", "get_policy")

    assert answers["place filled"]["status"] == "filled" and answers["place open"]["status"] == "open"
    assert answers["leverage parked"]["status"] == "pending_confirmation"
    assert answers["close"]["status"] == "filled"
    assert {name: not_snake(answer) for name, answer in answers.items() if not_snake(answer)} == {}
    btc = answers["get_policy"]["data"]["markets"]["BTCUSDT"]
    assert btc["max_notional_usd"] == "25" and "maxNotionalUsd" not in btc
    assert answers["place filled"]["sent"]["order_link_id"] == answers["place filled"]["order_link_id"]
    assert answers["plan refused"]["snapshot"]["instrument"]["qty_step"] == "0.00001"
