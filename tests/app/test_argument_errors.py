"""A call with a bad argument is answered as a tool result with isError and a refusal's body (the field, the
problem and the fixed call), on both protocol eras, so the model reads it and corrects itself; nothing is
judged, journaled or sent."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from pilot.server import build_server

from .conftest import BTC_SHORT, total_requests

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])

# (tool, arguments, the field named, the fixed arguments or None when only the caller knows)
CASES: list[tuple[str, dict[str, Any], str, dict[str, Any] | None]] = [
    # a number for an amount, as `--tool-arg qty=0.001` sends it: the same call with the string
    ("plan_order", {**BTC_SHORT, "qty": 0.00031}, "qty", BTC_SHORT),
    (
        "set_leverage",
        {"symbol": "BTCUSDT", "leverage": 2},
        "leverage",
        {"symbol": "BTCUSDT", "leverage": "2"},
    ),
    # an enum in the wrong case: the value it must have been; a value that is no enum: no guess
    ("plan_order", {**BTC_SHORT, "side": "Sell"}, "side", BTC_SHORT),
    (
        "plan_order",
        {**BTC_SHORT, "order_type": "MARKET"},
        "order_type",
        {**BTC_SHORT, "order_type": "market"},
    ),
    (
        "get_ticker",
        {"symbol": "BTCUSDT", "category": "Linear"},
        "category",
        {"symbol": "BTCUSDT", "category": "linear"},
    ),
    ("plan_order", {**BTC_SHORT, "side": "short"}, "side", None),
    ("plan_order", {**BTC_SHORT, "symbol": "btcusdt"}, "symbol", BTC_SHORT),
    # an argument the tool does not take: the call without it
    ("plan_order", {**BTC_SHORT, "leverage": "3"}, "leverage", BTC_SHORT),
    ("get_policy", {"verbose": True}, "verbose", {}),
    # a missing argument: only the caller knows the value
    ("plan_order", {"symbol": "BTCUSDT", "qty": "0.00031"}, "side", None),
    ("get_ticker", {}, "symbol", None),
    ("cancel_order", {"symbol": "BTCUSDT"}, "order_id", None),  # checked before any form is shown
    # a whole number out of range: the nearest in range; a reason too long: no cut is guessed
    ("get_orderbook", {"symbol": "BTCUSDT", "depth": 500}, "depth", {"symbol": "BTCUSDT", "depth": 200}),
    # a whole number as a string, or a switch (pydantic's lax int read true as a depth of 1)
    ("get_orderbook", {"symbol": "BTCUSDT", "depth": "5"}, "depth", {"symbol": "BTCUSDT", "depth": 5}),
    ("get_orderbook", {"symbol": "BTCUSDT", "depth": True}, "depth", None),
    ("get_orderbook", {"symbol": "BTCUSDT", "depth": "٥"}, "depth", None),  # another script's 5: no guess
    ("get_orderbook", {"symbol": "BTCUSDT", "depth": 5.0}, "depth", {"symbol": "BTCUSDT", "depth": 5}),
    ("activate_kill_switch", {"reason": "x" * 201}, "reason", None),
    # a switch as a string or a number (found by a hostile walk: "yes" cancelled the stops too): JSON's
    # true or false only; "true" can only have meant true, "yes" or 1 is no guess of ours
    ("cancel_all_orders", {"include_stops": "yes"}, "include_stops", None),
    ("cancel_all_orders", {"include_stops": "true"}, "include_stops", {"include_stops": True}),
    ("plan_order", {**BTC_SHORT, "reduce_only": 1}, "reduce_only", None),
    ("plan_order", {**BTC_SHORT, "reduce_only": "false"}, "reduce_only", {**BTC_SHORT, "reduce_only": False}),
]


@MODES
@pytest.mark.parametrize(("tool", "args", "field", "fixed"), CASES)
async def test_a_bad_argument_is_an_error_result_naming_the_field_and_the_fixed_call(
    runtime, paper, mode, tool, args, field, fixed
):
    before = total_requests(paper)
    async with Client(build_server(runtime), mode=mode) as client:
        result = await client.call_tool(tool, args)
    body = result.structured_content

    assert result.is_error
    assert (body["status"], body["field"], body["environment"]) == ("refused", field, "paper")
    [violation] = body["violations"]
    assert violation["rule"] == "invalidArgument" and violation["limit"] and violation["attempted"]
    assert body["next_safe_action"]["tool"] == tool
    assert body["next_safe_action"].get("args") == fixed
    assert body["next_safe_action"]["text"]
    assert total_requests(paper) == before
    assert await runtime.store.journal.entries() == []


@MODES
async def test_the_fixed_call_is_a_call_that_goes_through(runtime, paper, mode):
    async with Client(build_server(runtime), mode=mode) as client:
        first = await client.call_tool("plan_order", {**BTC_SHORT, "qty": 0.00031, "side": "Sell"})
        fix = first.structured_content["next_safe_action"]
        second = await client.call_tool(fix["tool"], fix["args"])
        fix = second.structured_content["next_safe_action"]
        third = await client.call_tool(fix["tool"], fix["args"])
    assert first.is_error and second.is_error  # one problem at a time, each with its fix
    assert not third.is_error and third.structured_content["status"] == "ok"


async def test_the_error_text_is_the_same_json_as_the_structured_body(runtime):
    import json

    async with Client(build_server(runtime)) as client:
        result = await client.call_tool("place_order", {"plan_id": "plan_x", "qty": "1"})
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
