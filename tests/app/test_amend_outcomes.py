"""An amend's three outcomes, never blurred: refused by Pilot (nothing sent), rejected, or sent and done."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from mcp import Client

from pilot.app.runtime.runtime import Home, assemble_runtime
from pilot.keys.errors import PermissionCheckFailed
from pilot.server import build_server
from pilot.store import open_store
from tests.venue import connect_adapter

from .conftest import call, write_policy

pytestmark = pytest.mark.anyio
AMEND = "/v5/order/amend"
RESTING_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": "70000"}


class KeyCheck:
    """The gate's key check as the vault runs it: it raises a KeysError once the exchange cannot answer."""

    def __init__(self) -> None:
        self.failing = False

    async def __call__(self, now: datetime) -> None:
        if self.failing:
            raise PermissionCheckFailed("paper", "the exchange did not answer")


async def test_an_amend_the_gate_refuses_answers_refused_with_its_violation_and_sends_nothing(
    tmp_path, paper, clock
):
    """Issue 22: the amend's answer mapped the gate's own refusal to "rejected" and dropped its violations."""
    write_policy(tmp_path)
    check = KeyCheck()
    adapter = connect_adapter(paper)
    store = await open_store(Home(tmp_path).database_path)
    runtime = assemble_runtime(tmp_path, store, adapter, clock, key_check=check)
    try:
        async with Client(build_server(runtime), raise_exceptions=True) as client:
            planned = await call(client, "plan_order", RESTING_BUY)
            placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
            amend = {"symbol": "BTCUSDT", "order_id": placed["order_id"], "qty": "0.0002"}
            grown = await call(client, "plan_amend", amend)
            check.failing = True
            refused = await call(client, "place_order", {"plan_id": grown["plan_id"]})
    finally:
        await store.close()
        await adapter.close()
    assert placed["status"] == "open" and grown["status"] == "ok"
    assert refused["status"] == "refused" and refused.get("sent") is None
    assert [v["rule"] for v in refused["violations"]] == ["apiKeyPermissions"]
    assert paper.request_count(AMEND) == 0
    assert paper.open_orders("BTCUSDT")[0].qty == Decimal("0.0001")


async def test_an_amend_up_is_charged_only_what_it_adds_to_the_order_s_margin(venue_runtime, venue, tmp_path):
    """Found by the random worlds: the amended order was judged against an available balance that still
    held the resting order's own margin, so an amend up was cut below the size the order already had. On
    Bybit's wire and on OKX's."""
    venue.write_policy(tmp_path, maxNotionalUsd=20_000, maxOrderNotionalUsd=20_000, maxLeverage=20)
    async with Client(build_server(venue_runtime), raise_exceptions=True) as client:
        big = venue.args({**RESTING_BUY, "qty": "0.1"})  # $7000 at 10x: $700 of the $1000 held by the order
        planned = await call(client, "plan_order", big)
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert placed["status"] == "open", placed
        grown = await call(
            client,
            "plan_amend",
            {"symbol": venue.sym("BTCUSDT"), "order_id": placed["order_id"], "qty": "0.12"},
        )
    assert grown["status"] == "ok", grown["violations"]
