"""`pilot serve` as an MCP host launches it: a subprocess over stdio, with its embedded paper exchange."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from pilot.app.answers import entry_kinds
from pilot.store import open_store
from tests.scenarios import ARTICLE, policy_with

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
POLICY = policy_with(allowedMarkets=["BTCUSDT", "ETHUSDT"])


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
        smuggled = await client.call_tool("place_order", {"plan_id": planned["plan_id"], "qty": "1"})
        positions = await call(client, "get_positions", {"symbol": "BTCUSDT"})

    assert placed["status"] == "filled" and placed["fill"]["filled_qty"] == "0.00031"
    assert again["violations"][0]["rule"] == "planAlreadyUsed"
    assert smuggled.is_error and smuggled.structured_content["field"] == "qty"
    assert smuggled.structured_content["violations"][0]["rule"] == "invalidArgument"
    assert [(row["symbol"], row["size"]) for row in positions["data"]] == [("BTCUSDT", "-0.00031")]
    async with await open_store(tmp_path / "journal" / "pilot.db") as store:
        sent = await store.journal.entries(kind=entry_kinds.ORDER_SENT)
        assert [e.plan_id for e in sent] == [planned["plan_id"]]
        assert (await store.journal.verify()).ok


def _scenario_holding_creates(tmp_path: Path, held_ms: int) -> Path:
    """The packaged world, with BTCUSDT at the article's filters, and every create held `held_ms` first."""
    from importlib import resources

    scenario = json.loads(resources.files("pilot.paper").joinpath("scenarios/default.json").read_text())
    for instrument in scenario["instruments"]:
        if instrument["symbol"] == "BTCUSDT" and instrument["category"] == "linear":
            instrument.update(tickSize="0.1", qtyStep="0.00001", minOrderQty="0.00001", minNotionalValue="1")
    scenario["prices"]["BTCUSDT"] = {"bid": "80220", "ask": "80220.1", "mark": "80220"}
    scenario["latencyMs"] = {"/v5/order/create": held_ms}
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    return path


async def test_a_client_that_quits_while_place_order_waits_leaves_the_send_journaled(tmp_path):
    """Issue 11: serve exited cleanly with order.sent and no outcome; now it finishes the send first."""
    import anyio

    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(POLICY))
    params = serve(home)
    params.args += ["--scenario", str(_scenario_holding_creates(tmp_path, 1500))]
    async with Client(params) as client:
        planned = await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"})
        with anyio.move_on_after(0.5):  # the client stops waiting and quits while the create is held
            await client.call_tool("place_order", {"plan_id": planned["plan_id"]})
    async with await open_store(home / "journal" / "pilot.db") as store:
        sent = await store.journal.entries(kind=entry_kinds.ORDER_SENT)
        outcomes = await store.journal.entries(kind=entry_kinds.ORDER_OUTCOME)
        plan = await store.plans.get(planned["plan_id"])
    assert [e.plan_id for e in sent] == [planned["plan_id"]]
    assert [(e.plan_id, e.data["status"]) for e in outcomes] == [(planned["plan_id"], "filled")]
    assert plan is not None and plan.outcome is not None and plan.outcome["status"] == "filled"


def test_requests_written_before_stdin_closes_are_all_answered(tmp_path):
    """A shell pipeline writes its requests and closes stdin at once; the SDK alone would cancel what was
    still being handled. Every exchange read is held here for 300 ms, so plan_order is still running then."""
    import subprocess

    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    scenario = json.loads(ARTICLE.read_text())
    scenario["latencyMs"] = {"*": 300}
    (tmp_path / "slow.json").write_text(json.dumps(scenario))
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "plan_order",
                "arguments": {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"},
            },
        },
    ]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pilot",
            "serve",
            "--home",
            str(tmp_path),
            "--scenario",
            str(tmp_path / "slow.json"),
        ],
        input="".join(json.dumps(request) + "\n" for request in requests).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3]
    assert answers[3]["result"]["structuredContent"]["status"] == "ok"
