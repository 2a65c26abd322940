"""policy.json as the human edits it: invalid means reducing only, fixes apply without a restart, and the
daily order cap is counted from the journal and resets at 00:00 UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from mcp import Client

from .conftest import BTC_SHORT, CREATE, call, plan_and_place, write_policy

pytestmark = pytest.mark.anyio
GROWING = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"}


async def test_an_invalid_policy_refuses_growing_orders_but_closing_works_and_a_fix_needs_no_restart(
    server, paper, runtime
):
    async with Client(server, raise_exceptions=True) as client:
        await plan_and_place(client)
        write_policy(runtime.home.path, maxLeverage="lots")

        refused = await call(client, "plan_order", GROWING)
        assert refused["status"] == "refused"
        assert refused["violations"][0]["rule"] == "policy"
        assert refused["next_safe_action"]["tool"] is None
        assert "maxLeverage" in refused["next_safe_action"]["human"]
        assert refused["snapshot"]["policy_version"] == "invalid"

        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
        assert closed["status"] == "filled" and closed["sent"]["reduceOnly"] is True
        assert paper.position("BTCUSDT").size == 0

        write_policy(runtime.home.path)
        fixed = await call(client, "plan_order", GROWING)
    assert fixed["status"] == "ok"
    assert paper.request_count(CREATE) == 2


async def test_a_plan_made_under_a_valid_policy_is_refused_at_send_once_the_file_breaks(
    server, paper, runtime
):
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", GROWING)
        (runtime.home.path / "policy.json").write_text("{not json")
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert refused["status"] == "refused" and refused["violations"][0]["rule"] == "policy"
    assert paper.request_count(CREATE) == 0


async def test_the_daily_order_cap_is_counted_from_the_journal_and_resets_at_midnight_utc(
    server, paper, runtime, clock
):
    clock.moment = datetime(2026, 11, 30, 23, 58, tzinfo=UTC)
    write_policy(runtime.home.path, dailyOrderCap=2)
    async with Client(server, raise_exceptions=True) as client:
        for _ in range(2):
            assert (await plan_and_place(client, GROWING))["status"] == "filled"
        capped = await call(client, "plan_order", GROWING)
        assert capped["status"] == "refused"
        assert [v["rule"] for v in capped["violations"]] == ["dailyOrderCap"]
        assert capped["next_safe_action"]["retry_after"] == "2026-12-01T00:00:00+00:00"
        assert capped["snapshot"]["orders_today"] == 2

        reducing = await call(client, "plan_order", {**GROWING, "side": "buy", "reduce_only": True})
        assert reducing["status"] == "ok"

        clock.advance(120)
        next_day = await call(client, "plan_order", GROWING)
    assert next_day["status"] == "ok" and next_day["snapshot"]["orders_today"] == 0
    assert paper.request_count(CREATE) == 2


async def test_the_daily_order_cap_counts_sends_that_failed_too(server, paper, runtime):
    write_policy(runtime.home.path, dailyOrderCap=1)
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        paper.add_fault(CREATE, "http_5xx")
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))[
            "status"
        ] == "outcome_unknown"
        capped = await call(client, "plan_order", BTC_SHORT)
    # The unknown send also counts as pending exposure, so the position cap is reached as well; the day's
    # cap is the blocker no size can fix, so it decides the next action (wait for 00:00 UTC).
    assert [v["rule"] for v in capped["violations"]] == ["dailyOrderCap", "maxNotionalUsd"]
    assert capped["next_safe_action"]["retry_after"] is not None
