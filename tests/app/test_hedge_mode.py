"""A symbol held in hedge mode is refused with the human's fix, terminally, never as a read to retry.

Pilot judges one-way positions only: with a Buy leg and a Sell leg it cannot know the position an order
leaves, nor send a one-way order the account would accept. The paper exchange holds BTCUSDT in hedge mode
(Buy 0.01 on positionIdx 1, Sell 0.03 on positionIdx 2), as a Bybit account can.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.runtime.runtime import Runtime
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.server import build_server
from tests.scenarios import article_scenario

from .conftest import BTC_SHORT, CREATE, FakeClock, call, open_test_runtime, venue_on, write_policy

pytestmark = pytest.mark.anyio
LEVERAGE = "/v5/position/set-leverage"
REDUCING_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "reduce_only": True}
ETH_BUY = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.005"}


@pytest.fixture
def hedged() -> Iterator[PaperExchange]:
    scenario = article_scenario()
    scenario["positions"] = [
        {"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "80000", "positionIdx": 1},
        {"symbol": "BTCUSDT", "side": "Sell", "size": "0.03", "avgPrice": "80100", "positionIdx": 2},
    ]
    with start_paper_exchange(scenario) as paper:
        yield paper


@pytest.fixture
async def runtime(tmp_path: Path, hedged: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, hedged, clock) as opened:
        yield opened


def position_mode_refusal(answer: dict[str, Any]) -> dict[str, Any]:
    """The one violation of a hedge-mode refusal, checked to be terminal: no tool, no retry, a human's fix."""
    assert answer["status"] == "refused", answer
    assert [violation["rule"] for violation in answer["violations"]] == ["positionMode"]
    stop = answer["next_safe_action"]
    assert stop["tool"] is None and stop.get("args") is None and stop.get("retry_after") is None
    assert stop["human"]
    return answer["violations"][0]


async def test_every_tool_that_reads_the_position_refuses_a_hedged_symbol_with_the_humans_fix(
    runtime: Runtime, hedged: PaperExchange
):
    async with Client(build_server(runtime)) as client:
        answers = {
            "plan_order": await call(client, "plan_order", BTC_SHORT),
            "plan_order reducing": await call(client, "plan_order", REDUCING_BUY),
            "close_position": await call(client, "close_position", {"symbol": "BTCUSDT"}),
            "set_leverage": await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"}),
            "get_positions": await call(client, "get_positions"),
        }
        policy = (await call(client, "get_policy"))["data"]["markets"]
    for answer in answers.values():
        position_mode_refusal(answer)
    btc, eth = policy["BTCUSDT"], policy["ETHUSDT"]
    assert btc["blocked_by"]["rule"] == "positionMode" and btc["blocked_by"]["next"]["tool"] is None
    assert btc["room"] is None and btc["blocked_by"]["next"]["human"]
    assert eth["blocked_by"] is None and eth["room"] is not None
    assert hedged.request_count(CREATE) == 0 and hedged.request_count(LEVERAGE) == 0


async def test_other_symbols_trade_as_usual_and_the_refusals_are_journaled(runtime: Runtime):
    async with Client(build_server(runtime)) as client:
        refused = await call(client, "plan_order", BTC_SHORT)
        eth = await call(client, "plan_order", ETH_BUY)
        eth_position = await call(client, "get_positions", {"symbol": "ETHUSDT"})
        placed = await call(client, "place_order", {"plan_id": eth["plan_id"]})
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
    position_mode_refusal(refused)
    position_mode_refusal(closed)
    assert (eth["status"], eth_position["status"], placed["status"]) == ("ok", "ok", "filled")
    plans = await runtime.store.journal.entries(kind=entry_kinds.PLAN)
    rules = [[v["rule"] for v in entry.data.get("violations") or []] for entry in plans]
    assert rules == [["positionMode"], []]
    refusals = await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED)
    assert [entry.data["violations"][0]["rule"] for entry in refusals] == ["positionMode"]


async def test_a_spot_order_is_never_refused_for_the_perpetuals_position_mode(
    tmp_path, hedged: PaperExchange, clock: FakeClock
):
    """Spot has no position mode (position.mdx positionIdx is a derivatives field): the coin's hedged
    perpetual counts in maxNotionalUsd with both legs in full (0.01 + 0.03 BTC), a hedge never offsetting."""
    write_policy(tmp_path, maxNotionalUsd=5000, maxOrderNotionalUsd=100)
    async with open_test_runtime(tmp_path, hedged, clock) as opened, Client(build_server(opened)) as client:
        spot = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0002", "category": "spot"}
        planned = await call(client, "plan_order", spot)
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        write_policy(tmp_path, maxNotionalUsd=3000, maxOrderNotionalUsd=100)  # below the legs' 0.04 BTC
        capped = await call(client, "plan_order", spot)
        linear = await call(client, "plan_order", BTC_SHORT)
    assert planned["status"] == "ok", planned["violations"]
    assert planned["snapshot"]["elsewhere_qty"] == "0.04"
    assert placed["status"] == "filled" and hedged.request_count(CREATE) == 1
    assert "maxNotionalUsd" in [v["rule"] for v in capped["violations"]]
    assert "positionMode" not in [v["rule"] for v in capped["violations"]]
    position_mode_refusal(linear)  # the perpetual itself still is


async def test_on_okx_long_short_mode_is_the_account_s_so_every_market_is_refused_with_the_fix(
    hedged: PaperExchange, tmp_path: Path, clock: FakeClock
):
    """OKX's position mode is the account's, not a symbol's: in long/short mode every order must name a leg,
    so every market is refused, terminally, with the human's fix (net mode), and nothing is sent."""
    with venue_on("okx", hedged) as venue:
        venue.endpoint.position_mode = "long_short_mode"  # type: ignore[attr-defined]
        venue.write_policy(tmp_path)
        async with (
            open_test_runtime(tmp_path, venue.endpoint, clock) as runtime,
            Client(build_server(runtime)) as client,
        ):
            answers = [
                await call(client, "plan_order", venue.args(BTC_SHORT)),
                await call(client, "plan_order", venue.args(ETH_BUY)),
                await call(client, "close_position", {"symbol": "BTC-USDT"}),
                await call(client, "set_leverage", {"symbol": "ETH-USDT", "leverage": "2"}),
                await call(client, "get_positions"),
            ]
    for answer in answers:
        position_mode_refusal(answer)
    assert hedged.request_count(CREATE) == 0 and hedged.request_count(LEVERAGE) == 0
