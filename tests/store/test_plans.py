from __future__ import annotations

from collections import Counter
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from pilot.store import (
    ClaimResult,
    DuplicateRecord,
    InvalidTransition,
    Store,
    iso_utc,
    new_plan_id,
    open_store,
)
from tests.clocks import FakeClock

from .support import T0, claim_plan, run_in_processes

pytestmark = pytest.mark.anyio

PAYLOAD = {"order": {"symbol": "BTCUSDT", "qty": Decimal("0.010")}, "snapshot": {"bid": Decimal("100")}}


async def create_plan(store: Store, ttl_seconds: int = 60) -> str:
    plan_id = new_plan_id()
    await store.plans.create(plan_id=plan_id, payload=PAYLOAD, now=T0, ttl_seconds=ttl_seconds)
    return plan_id


async def claim_concurrently(stores: list[Store], plan_id: str, claimers: int) -> Counter[str]:
    results: list[ClaimResult] = []

    async def claim(store: Store) -> None:
        results.append(await store.plans.claim(plan_id, now=T0))

    async with anyio.create_task_group() as group:
        for index in range(claimers):
            group.start_soon(claim, stores[index % len(stores)])
    return Counter(result.status for result in results)


async def test_created_plan_reads_back_its_payload_as_canonical_json(store: Store) -> None:
    plan_id = await create_plan(store)
    plan = await store.plans.get(plan_id)
    assert plan.payload == {"order": {"symbol": "BTCUSDT", "qty": "0.010"}, "snapshot": {"bid": "100"}}
    assert (plan.status, plan.created_at, plan.expires_at) == ("open", T0, T0 + timedelta(seconds=60))


async def test_plan_redeems_once_under_concurrency(store: Store) -> None:
    plan_id = await create_plan(store)
    assert await claim_concurrently([store], plan_id, 50) == Counter(claimed=1, already_used=49)


async def test_plan_redeems_once_across_connections(store: Store, db_path: Path) -> None:
    plan_id = await create_plan(store)
    others = [await open_store(db_path) for _ in range(4)]
    try:
        outcome = await claim_concurrently([store, *others], plan_id, 50)
    finally:
        for other in others:
            await other.close()
    assert outcome == Counter(claimed=1, already_used=49)


def test_plan_redeems_once_across_processes(db_path: Path) -> None:
    plan_id = anyio.run(_create_in_fresh_store, db_path)
    statuses = run_in_processes(claim_plan, [(str(db_path), plan_id, iso_utc(T0))] * 4)
    assert Counter(statuses) == Counter(claimed=1, already_used=3)


async def _create_in_fresh_store(db_path: Path) -> str:
    async with await open_store(db_path) as store:
        return await create_plan(store)


async def test_unknown_plan_is_not_found(store: Store) -> None:
    assert await store.plans.claim(new_plan_id(), now=T0) == ClaimResult("not_found", None)


async def test_plan_expires_once_its_time_to_live_has_passed_on_the_stores_clock(
    store: Store, ticks: FakeClock
) -> None:
    plan_id = await create_plan(store, ttl_seconds=30)
    ticks.advance(30)
    result = await store.plans.claim(plan_id, now=T0 + timedelta(seconds=30))
    assert (result.status, result.plan.status) == ("expired", "open")


async def test_plan_is_claimable_until_just_before_expiry(store: Store, ticks: FakeClock) -> None:
    plan_id = await create_plan(store, ttl_seconds=30)
    ticks.advance(30 - 1e-6)
    result = await store.plans.claim(plan_id, now=T0 + timedelta(seconds=30, microseconds=-1))
    assert result.status == "claimed"


@pytest.mark.parametrize("step", [-3600, -5, 5, 3600])
async def test_the_wall_clock_stepping_neither_lengthens_nor_shortens_a_plans_life(
    store: Store, ticks: FakeClock, step: int
) -> None:
    expired, alive = await create_plan(store, ttl_seconds=30), await create_plan(store, ttl_seconds=60)
    ticks.advance(31)
    ticks.step(step)
    assert (await store.plans.claim(expired, now=ticks.now())).status == "expired"
    assert (await store.plans.claim(alive, now=ticks.now())).status == "claimed"


async def test_used_plan_reports_the_outcome_recorded_so_far(store: Store) -> None:
    plan_id = await create_plan(store)
    await store.plans.claim(plan_id, now=T0)
    assert (await store.plans.claim(plan_id, now=T0)).plan.outcome is None
    await store.plans.record_outcome(plan_id, {"result": "unknown"}, now=T0 + timedelta(seconds=1))
    await store.plans.record_outcome(plan_id, {"result": "filled", "qty": Decimal("0.01")}, now=T0)
    again = await store.plans.claim(plan_id, now=T0 + timedelta(seconds=2))
    assert (again.status, again.plan.status) == ("already_used", "done")
    assert again.plan.outcome == {"result": "filled", "qty": "0.01"}


async def test_used_plan_stays_used_after_it_would_have_expired(store: Store) -> None:
    plan_id = await create_plan(store, ttl_seconds=5)
    await store.plans.claim(plan_id, now=T0)
    assert (await store.plans.claim(plan_id, now=T0 + timedelta(hours=1))).status == "already_used"


async def test_outcome_cannot_be_recorded_for_an_unclaimed_plan(store: Store) -> None:
    plan_id = await create_plan(store)
    with pytest.raises(InvalidTransition):
        await store.plans.record_outcome(plan_id, {"result": "filled"}, now=T0)
    with pytest.raises(InvalidTransition):
        await store.plans.record_outcome(new_plan_id(), {}, now=T0)


async def test_plan_survives_restart_and_is_claimable_once(db_path: Path) -> None:
    async with await open_store(db_path) as store:
        plan_id = await create_plan(store)
    async with await open_store(db_path) as store:
        assert (await store.plans.claim(plan_id, now=T0)).status == "claimed"
    async with await open_store(db_path) as store:
        assert (await store.plans.claim(plan_id, now=T0)).status == "already_used"


async def test_plan_id_cannot_be_reused(store: Store) -> None:
    plan_id = await create_plan(store)
    with pytest.raises(DuplicateRecord):
        await store.plans.create(plan_id=plan_id, payload={}, now=T0, ttl_seconds=60)


def test_plan_ids_carry_192_random_bits() -> None:
    ids = {new_plan_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(plan_id.startswith("plan_") and len(plan_id) == len("plan_") + 32 for plan_id in ids)
