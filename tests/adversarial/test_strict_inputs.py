"""Amounts are ASCII decimal strings and nothing else; the approval box approves only as the JSON boolean true."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult

from pilot.app.answers import entry_kinds
from pilot.server import build_server

from .conftest import BTC_SHORT, CONFIRM_EVERY_ORDER, CREATE, MODES, write_policy

pytestmark = pytest.mark.anyio

# Each is a digit in Python's eyes (`str.isdigit`, regex `\d`) and Decimal() reads it as 0.001 or 0.00031.
NOT_ASCII = [
    "٠.٠٠١",  # Arabic-Indic
    "０.００１",  # fullwidth
    "𝟎.𝟎𝟎𝟎𝟑𝟏",  # mathematical bold
    "०.००१",  # Devanagari
]
PADDED = [" 0.00031", "0.00031 ", "0.00031\n", "\t0.00031", "0.00031\u00a0", "\u20030.00031"]


@pytest.mark.parametrize(
    ("tool", "field", "args"),
    [
        ("plan_order", "qty", {"symbol": "BTCUSDT", "side": "sell"}),
        ("plan_order", "notional_usd", {"symbol": "BTCUSDT", "side": "buy"}),
        ("plan_order", "price", {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "order_type": "limit"}),
        ("set_leverage", "leverage", {"symbol": "BTCUSDT"}),
        ("close_position", "qty", {"symbol": "BTCUSDT"}),
    ],
)
async def test_an_amount_in_other_digits_or_with_spaces_around_it_is_an_invalid_argument_naming_the_field(
    runtime, paper, tool, field, args
):
    refusals = {}
    async with Client(build_server(runtime)) as client:
        for text in NOT_ASCII + PADDED:
            result = await client.call_tool(tool, {**args, field: text})
            body = result.structured_content
            fixed = (body["next_safe_action"].get("args") or {}).get(field)
            refusals[text] = (result.is_error, body["violations"][0]["rule"], body["field"], fixed)
    # Look-alike digits are never read as digits, not even to suggest a call; spaces around ASCII digits
    # are refused too, and the call without them is offered (it is judged afresh like any other).
    assert refusals == {
        **dict.fromkeys(NOT_ASCII, (True, "invalidArgument", field, None)),
        **{text: (True, "invalidArgument", field, text.strip()) for text in PADDED},
    }
    assert paper.request_count(CREATE) == 0
    assert await runtime.store.journal.entries() == []  # nothing was judged, so nothing was journaled


@MODES
@pytest.mark.parametrize("approve", ["true", "True", 1, "yes", "on", None])
async def test_an_approval_box_that_is_not_the_boolean_true_declines_and_nothing_is_sent(
    runtime, paper, mode, approve
):
    write_policy(runtime.home.path, **CONFIRM_EVERY_ORDER)

    async def human(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": approve})

    async with Client(build_server(runtime), mode=mode, elicitation_callback=human) as client:
        plan = await client.call_tool("plan_order", BTC_SHORT)
        placed = await client.call_tool("place_order", {"plan_id": plan.structured_content["plan_id"]})
    assert not placed.is_error
    assert placed.structured_content["status"] == "declined" and placed.structured_content.get("sent") is None
    assert paper.request_count(CREATE) == 0
    verdicts = [e.data["verdict"] for e in await runtime.store.journal.entries(kind=entry_kinds.CONFIRMATION)]
    assert verdicts == ["declined"]
