"""`pilot serve --record DIR`: a session's exchange traffic, redacted, replays to the same conclusions.

The session runs as an MCP host runs it (a subprocess over stdio), attached with `--paper-url` to the home's
paper account served by the test, as `pilot sim --home` would; the replay serves the recording on loopback
to a Runtime on the same home, and every tool the session called answers the same again.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from pilot.app.runtime.runtime import Home
from pilot.app.service.boot import open_runtime
from pilot.exchange.bybit.recording import load
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.models import OrderRequest
from pilot.paper import start_paper_exchange
from pilot.server import build_server
from tests.scenarios import article_scenario
from tests.venue import connect_adapter

from .test_serve_stdio import POLICY, REPO, call

pytestmark = pytest.mark.anyio
SESSION: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_policy", {}),
    ("get_positions", {}),
    ("get_open_orders", {"symbol": "BTCUSDT"}),
    ("get_balances", {}),
    ("get_ticker", {"symbol": "ETHUSDT"}),
    ("plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0005"}),  # refused: over the $25 cap
    ("plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.005"}),  # passes
)
CHANGES_EVERY_RUN = ("plan_id", "expires_at")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def conclusions(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without what a new plan always changes (its id and its expiry)."""
    return {key: value for key, value in answer.items() if key not in CHANGES_EVERY_RUN}


async def play(client: Client) -> list[dict[str, Any]]:
    return [conclusions(await call(client, tool, args)) for tool, args in SESSION]


async def test_a_session_recorded_by_pilot_serve_replays_to_the_same_conclusions(tmp_path):
    home, recording = tmp_path / "home", tmp_path / "recording"
    home.mkdir()
    (home / "policy.json").write_text(json.dumps(POLICY))
    scenario = article_scenario()
    scenario["positions"] = [{"symbol": "BTCUSDT", "side": "Sell", "size": "0.0002", "avgPrice": "80000"}]
    scenario_file = tmp_path / "scenario.json"
    scenario_file.write_text(json.dumps(scenario))

    with start_paper_exchange(scenario, state_path=Home(home).paper_state_path) as sim:
        resting = OrderRequest("linear", "BTCUSDT", "Buy", Decimal("0.0001"), Decimal("79000"), "GTC", "rest")
        direct = connect_adapter(sim)
        await direct.create_order(resting)
        await direct.close()
        serve = StdioServerParameters(
            command=sys.executable,
            args=[
                *("-m", "pilot", "serve", "--home", str(home), "--scenario", str(scenario_file)),
                *("--paper-url", sim.url, "--record", str(recording)),
            ],
            cwd=str(REPO),
        )
        async with Client(serve) as client:
            live = await play(client)
        secret = sim.api_secret

    _, exchanges = load(recording)
    assert exchanges and all(secret not in path.read_text() for path in recording.iterdir())
    with ReplayServer.from_path(recording) as stub:
        async with (
            open_runtime(home, scenario=scenario_file, paper_url=stub.url) as runtime,
            Client(build_server(runtime)) as client,
        ):
            replayed = await play(client)
        assert not stub.requests("/v5/order/create")
    assert replayed == live
    assert [answer["status"] for answer in live] == ["ok"] * 5 + ["refused", "ok"]
    assert [row["size"] for row in live[1]["data"]] == ["-0.0002"] and len(live[2]["data"]) == 1
