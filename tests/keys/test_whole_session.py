"""A whole session with a stored key: add, serve, plan, place, an exchange error, a stale permission check.

The key and secret must never appear in any file, tool output, or log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from mcp import Client

from pilot.app.service.boot import open_runtime
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.server import build_server
from tests.clocks import FakeClock
from tests.scenarios import policy_with

from .test_cli import ALL_PLAINTEXT, NARROW_KEY, NARROW_SECRET, Keys, scenario

pytestmark = pytest.mark.anyio
POLICY = policy_with(allowedMarkets=["BTCUSDT"])
SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}
COVER = {**SHORT, "side": "buy"}
CHECK = "/v5/user/query-api"
CREATE = "/v5/order/create"


@pytest.fixture
def paper() -> Iterator[PaperExchange]:
    with start_paper_exchange(scenario()) as exchange:
        yield exchange


async def plan_and_place(client: Client, outputs: list[str], order: dict) -> dict:
    planned = await client.call_tool("plan_order", order)
    if "plan_id" not in planned.structured_content:
        return planned.structured_content
    placed = await client.call_tool("place_order", {"plan_id": planned.structured_content["plan_id"]})
    outputs += [json.dumps(planned.structured_content), json.dumps(placed.structured_content)]
    return placed.structured_content


async def test_a_whole_session_never_reveals_the_key_and_a_stale_check_runs_before_trading(
    home: Path, master_key_file: Path, tmp_path: Path, paper: PaperExchange, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    keys = Keys(home, paper)
    home.mkdir(parents=True, exist_ok=True)
    (home / "policy.json").write_text(json.dumps(POLICY))
    added = await anyio.to_thread.run_sync(lambda: keys("add", input=f"{NARROW_KEY}\n{NARROW_SECRET}\n"))
    assert added.exit_code == 0  # the CLI runs its own event loop, so it runs in a worker thread here
    outputs = list(keys.outputs)
    clock = FakeClock(datetime.now(UTC))  # the paper exchange signs on real time; Pilot's clock is the test's
    async with open_runtime(home, exchange="paper", paper_url=paper.url, clock=clock) as runtime:
        assert runtime.gate.checks_key
        async with Client(build_server(runtime)) as client:
            assert (await plan_and_place(client, outputs, SHORT))["status"] == "filled"
            paper.add_fault(CREATE, "rate_limit")
            assert (await plan_and_place(client, outputs, COVER))["status"] == "rejected"

            checks = paper.request_count(CHECK)
            clock.step(2 * 3600)  # the wall clock alone moves: no length of time is judged on it
            stepped = await plan_and_place(client, outputs, COVER)
            assert stepped["status"] == "filled", stepped
            assert paper.request_count(CHECK) == checks
            clock.advance(3600)  # an hour on the store's clock: the last permission check is now stale
            assert (await plan_and_place(client, outputs, COVER))["status"] == "filled"
            assert paper.request_count(CHECK) == checks + 1  # re-checked before trading

            paper.add_fault(CHECK, "http_5xx")
            clock.advance(3600)  # due again, and the exchange cannot answer the check
            creates = paper.request_count(CREATE)
            refused = await plan_and_place(client, outputs, SHORT)
            assert refused["violations"][0]["rule"] == "apiKeyPermissions"
            assert paper.request_count(CREATE) == creates  # nothing sent on a failed check
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name == "pilot.db" for path in files)
    for text in ALL_PLAINTEXT:
        for output in [*outputs, caplog.text]:
            assert text not in output
        for path in files:
            assert text.encode() not in path.read_bytes(), path
