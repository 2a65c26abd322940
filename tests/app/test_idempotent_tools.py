"""Idempotency keys on the state-changing tools: the same key and arguments replay, other arguments conflict."""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds

from .conftest import BTC_SHORT, CREATE, call, plan_and_place, total_requests

pytestmark = pytest.mark.anyio


def _conflict(answer: dict) -> bool:
    return answer["status"] == "refused" and answer["violations"][0]["rule"] == "idempotencyConflict"


async def test_close_position_with_a_used_key_replays_its_first_answer_without_the_exchange(
    venue_server, venue, venue_runtime
):
    """On Bybit's wire and on OKX's (the OKX front carries every request out on the paper exchange, whose
    counts are asserted)."""
    paper, runtime = venue.paper, venue_runtime
    async with Client(venue_server, raise_exceptions=True) as client:
        await plan_and_place(client, venue.args(BTC_SHORT))
        args = {"symbol": venue.sym("BTCUSDT"), "qty": "0.0001", "idempotency_key": "close-1"}
        first = await call(client, "close_position", args)
        seen = total_requests(paper)
        replay = await call(client, "close_position", args)
        assert total_requests(paper) == seen
        conflict = await call(client, "close_position", {**args, "qty": "0.0002"})
        assert total_requests(paper) == seen
    assert first["status"] == "filled" and replay == first
    assert _conflict(conflict)
    assert paper.request_count(CREATE) == 2 and paper.position("BTCUSDT").size == Decimal("-0.00021")
    assert len(await runtime.store.journal.entries(kind=entry_kinds.REPLAY)) == 1


async def test_set_leverage_with_a_used_key_replays_and_other_arguments_conflict(venue_server, venue):
    paper = venue.paper
    async with Client(venue_server, raise_exceptions=True) as client:
        args = {"symbol": venue.sym("BTCUSDT"), "leverage": "2", "idempotency_key": "lev-1"}
        first = await call(client, "set_leverage", args)
        seen = total_requests(paper)
        replay = await call(client, "set_leverage", args)
        conflict = await call(client, "set_leverage", {**args, "leverage": "3"})
        assert total_requests(paper) == seen
    assert first["status"] == "done" and replay == first
    assert _conflict(conflict)
    assert paper.request_count("/v5/position/set-leverage") == 1


async def test_activate_kill_switch_with_a_used_key_replays_and_writes_once(server, paper, runtime):
    async with Client(server, raise_exceptions=True) as client:
        args = {"reason": "drawdown", "idempotency_key": "stop-1"}
        first = await call(client, "activate_kill_switch", args)
        replay = await call(client, "activate_kill_switch", args)
        conflict = await call(client, "activate_kill_switch", {**args, "reason": "other"})
    assert first["status"] == "done" and replay == first
    assert _conflict(conflict)
    assert len(await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH)) == 1
    assert total_requests(paper) == 0


async def test_a_key_used_by_one_tool_conflicts_on_another(server, paper):
    async with Client(server, raise_exceptions=True) as client:
        await call(client, "activate_kill_switch", {"reason": "x", "idempotency_key": "shared"})
        other = await call(
            client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2", "idempotency_key": "shared"}
        )
    assert _conflict(other)
    assert paper.request_count("/v5/position/set-leverage") == 0
