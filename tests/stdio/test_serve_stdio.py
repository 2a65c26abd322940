"""`pilot serve` as an MCP host launches it: a subprocess over stdio, with its embedded paper exchange."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import INVALID_PARAMS

from pilot.app import kinds
from pilot.store import open_store
from tests.scenarios import ARTICLE

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
POLICY = {
    "allowedMarkets": ["BTCUSDT", "ETHUSDT"],
    "maxNotionalUsd": 25,
    "maxOrderNotionalUsd": 25,
    "maxLeverage": 3,
    "minLiquidationDistancePct": 20,
    "dailyOrderCap": 20,
    "maxSlippagePct": 0.5,
    "planTtlSeconds": 60,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve(home: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pilot", "serve", "--home", str(home), "--scenario", str(ARTICLE)],
        cwd=str(REPO),
    )


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(tool, args or {})
    assert not result.is_error, result.content
    return result.structured_content


async def test_the_refused_to_filled_flow_works_over_stdio(tmp_path):
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    async with Client(serve(tmp_path)) as client:
        refused = await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0005"})
        assert refused["violations"][0]["rule"] == "maxOrderNotionalUsd"
        suggestion = refused["next_safe_action"]
        assert suggestion["args"]["qty"] == "0.00031"
        planned = await call(client, suggestion["tool"], suggestion["args"])
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        again = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        with pytest.raises(MCPError) as caught:
            await client.call_tool("place_order", {"plan_id": planned["plan_id"], "qty": "1"})
        positions = await call(client, "get_positions", {"symbol": "BTCUSDT"})

    assert placed["status"] == "filled" and placed["fill"]["filled_qty"] == "0.00031"
    assert again["violations"][0]["rule"] == "planAlreadyUsed"
    assert caught.value.error.code == INVALID_PARAMS
    assert [(row["symbol"], row["size"]) for row in positions["data"]] == [("BTCUSDT", "-0.00031")]
    async with await open_store(tmp_path / "journal" / "pilot.db") as store:
        sent = await store.journal.entries(kind=kinds.ORDER_SENT)
        assert [e.plan_id for e in sent] == [planned["plan_id"]]
        assert (await store.journal.verify()).ok
