"""Sends of separate plans at once: each is judged on the facts the previous send left, so no cap breaks."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from .conftest import CREATE, call

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("policy", "rule"),
    [({"dailyOrderCap": 1}, "dailyOrderCap"), ({}, "maxNotionalUsd")],
)
async def test_concurrent_sends_of_separate_plans_cannot_break_a_cap_together(
    venue_server, venue, venue_runtime, policy, rule
):
    """On Bybit's wire and on OKX's."""
    paper = venue.paper
    venue.write_policy(venue_runtime.home.path, **policy)
    answers: list[dict[str, Any]] = []
    async with Client(venue_server, raise_exceptions=True) as client:
        # each plan passes alone: $16 of a $25 position cap, and no order sent yet today
        order = venue.args({"symbol": "BTCUSDT", "side": "sell", "qty": "0.0002"})
        plans = [await call(client, "plan_order", order) for _ in range(3)]
        assert {plan["status"] for plan in plans} == {"ok"}

        async def place(plan_id: str) -> None:
            answers.append(await call(client, "place_order", {"plan_id": plan_id}))

        async with anyio.create_task_group() as tasks:
            for plan in plans:
                tasks.start_soon(place, plan["plan_id"])

    assert sorted(answer["status"] for answer in answers) == ["filled", "refused", "refused"]
    assert {a["violations"][0]["rule"] for a in answers if a["status"] == "refused"} == {rule}
    assert paper.request_count(CREATE) == 1
