"""What the model pays for: tools/list stays under 19 KiB on the wire with every tool documented, and
`--tools read|trade|all` exposes what each says (read: nothing that changes anything)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client

from benchmarks.bench_tools_list import LIMIT_BYTES, tools_list_line
from pilot.app.human.desk import init_home
from pilot.server import build_server
from pilot.server.build import select_tools
from pilot.server.tool_sets import TOOL_SETS
from tests import pages

pytestmark = pytest.mark.anyio

# Every tool a next_safe_action, an option or a check can name (pilot/core, pilot/app): trade must expose them.
NAMED_BY_ANSWERS = {
    "plan_order",
    "place_order",
    "close_position",
    "cancel_order",
    "set_leverage",
    "set_trading_stop",
    "plan_amend",
    "get_open_orders",
    "get_positions",
    "get_confirmation_status",
}


@pytest.fixture
async def fresh_home(tmp_path: Path) -> Path:
    await init_home(tmp_path)
    return tmp_path


@pytest.mark.parametrize("tools", ["all", "trade", "read"])
async def test_tools_list_on_the_wire_is_at_most_19_kib(fresh_home: Path, tools: str) -> None:
    line = tools_list_line(fresh_home, tools)
    listed = json.loads(line)["result"]["tools"]

    assert len(line) <= LIMIT_BYTES, f"tools/list --tools {tools} is {len(line)} bytes"
    assert {tool["name"] for tool in listed} == TOOL_SETS[tools]
    assert abs(documented_kilobytes()[tools] - len(line) / 1000) <= 0.3, (
        "docs/tools.md's figure is out of date"
    )


def documented_kilobytes() -> dict[str, float]:
    """The sizes docs/tools.md states:

    "about 18.8 KB of JSON with `--tools all` (14.2 KB `trade`, 7.6 KB `read`)".
    """
    text = " ".join(pages.text("tools.md").split())
    found = re.search(
        r"about ([\d.]+) KB of JSON with `--tools all` \(([\d.]+) KB `trade`, ([\d.]+) KB `read`\)", text
    )
    assert found is not None, "docs/tools.md's tools/list sizes"
    return dict(zip(("all", "trade", "read"), map(float, found.groups()), strict=True))


async def test_every_tool_is_documented_in_one_concise_paragraph(runtime) -> None:
    async with Client(build_server(runtime), mode="legacy") as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        description = tool.description or ""
        assert 30 <= len(description) <= 300, (tool.name, description)
        assert "\n" not in description and "  " not in description, tool.name
        assert tool.output_schema is not None and "status" in tool.output_schema["properties"], tool.name
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert "title" not in schema, (tool.name, name)
            described = schema.get("description") or "enum" in schema or schema.get("type") == "boolean"
            assert described or "default" in schema, (tool.name, name)
        assert tool.input_schema.get("additionalProperties") is False, tool.name


async def test_read_exposes_no_tool_that_changes_anything(runtime) -> None:
    async with Client(build_server(runtime, tools="read"), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        refused = await client.call_tool("plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"})
    assert {tool.name for tool in tools} == TOOL_SETS["read"]
    assert all(tool.annotations is not None and tool.annotations.read_only_hint for tool in tools)
    assert refused.is_error  # not exposed, so not callable
    assert await runtime.store.journal.entries() == []


async def test_trade_exposes_every_tool_its_answers_can_name_and_all_exposes_every_tool(runtime) -> None:
    async with Client(build_server(runtime, tools="trade"), mode="legacy") as client:
        trade = {tool.name for tool in (await client.list_tools()).tools}
    async with Client(build_server(runtime), mode="legacy") as client:
        everything = {tool.name for tool in (await client.list_tools()).tools}
    assert NAMED_BY_ANSWERS <= trade < everything
    assert everything == TOOL_SETS["all"] and len(everything) == 21


def test_tools_can_also_be_chosen_by_name_and_an_unknown_one_is_refused() -> None:
    assert select_tools("get_policy, plan_order,place_order") == {"get_policy", "plan_order", "place_order"}
    with pytest.raises(ValueError, match="approve_everything"):
        select_tools("plan_order,approve_everything")
