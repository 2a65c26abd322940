from __future__ import annotations

from datetime import timedelta

import anyio
import pytest

from pilot.store import ConfirmationRecord, InvalidTransition, Store, new_confirmation_id
from tests.clocks import FakeClock

from .support import T0

pytestmark = pytest.mark.anyio

LATER = T0 + timedelta(seconds=10)


async def park(store: Store, ttl_seconds: int = 300) -> str:
    confirmation_id = new_confirmation_id()
    await store.confirmations.park(
        confirmation_id=confirmation_id,
        tool="place_order",
        action={"plan_id": "plan_x"},
        summary="Buy 0.01 BTCUSDT at market",
        now=T0,
        ttl_seconds=ttl_seconds,
    )
    return confirmation_id


async def race(count: int, attempt) -> list[ConfirmationRecord | None]:
    results: list[ConfirmationRecord | None] = []

    async def one() -> None:
        results.append(await attempt())

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
    return results


async def test_parked_action_is_pending_with_its_summary(store: Store) -> None:
    record = await store.confirmations.get(await park(store))
    assert (record.status, record.tool, record.action) == ("pending", "place_order", {"plan_id": "plan_x"})
    assert record.summary == "Buy 0.01 BTCUSDT at market"


async def test_a_confirmation_is_decided_once(store: Store) -> None:
    cid = await park(store)
    results = await race(20, lambda: store.confirmations.decide(cid, approve=True, actor="alice", now=LATER))
    decided = [result for result in results if result is not None]
    assert len(decided) == 1
    assert (decided[0].status, decided[0].decided_by, decided[0].decided_at) == ("approved", "alice", LATER)
    assert await store.confirmations.decide(cid, approve=False, actor="bob", now=LATER) is None


async def test_an_approval_is_claimed_for_execution_once(store: Store) -> None:
    cid = await park(store)
    await store.confirmations.decide(cid, approve=True, actor="alice", now=LATER)
    results = await race(20, lambda: store.confirmations.claim_approved(cid, now=LATER))
    assert [result.status for result in results if result is not None] == ["executing"]
    await store.confirmations.record_result(cid, {"order_id": "o-1"}, now=LATER)
    record = await store.confirmations.get(cid)
    assert (record.status, record.result) == ("executed", {"order_id": "o-1"})
    assert await store.confirmations.claim_approved(cid, now=LATER) is None


async def test_rejected_or_pending_confirmation_cannot_be_claimed(store: Store) -> None:
    pending, rejected = await park(store), await park(store)
    await store.confirmations.decide(rejected, approve=False, actor="alice", now=LATER)
    assert await store.confirmations.claim_approved(pending, now=LATER) is None
    assert await store.confirmations.claim_approved(rejected, now=LATER) is None


async def test_expired_confirmation_cannot_be_decided_and_is_listed_as_expired(
    store: Store, ticks: FakeClock
) -> None:
    cid = await park(store, ttl_seconds=60)
    assert (await store.confirmations.get(cid, now=LATER)).status == "pending"
    ticks.advance(60)
    expiry = T0 + timedelta(seconds=60)
    assert await store.confirmations.decide(cid, approve=True, actor="alice", now=expiry) is None
    assert [record.status for record in await store.confirmations.list(now=expiry)] == ["expired"]
    assert await store.confirmations.list(status="pending", now=expiry) == []
    assert (await store.confirmations.get(cid)).status == "pending"  # as stored: expiry is read with `now`


async def test_approval_is_not_run_after_the_confirmation_expires(store: Store, ticks: FakeClock) -> None:
    cid = await park(store, ttl_seconds=60)
    await store.confirmations.decide(cid, approve=True, actor="alice", now=LATER)
    ticks.advance(60)
    ticks.step(-3600)  # a wall clock set back does not lengthen it
    assert await store.confirmations.claim_approved(cid, now=T0 + timedelta(seconds=60)) is None


async def test_only_a_pending_confirmation_can_be_cancelled(store: Store) -> None:
    pending, approved = await park(store), await park(store)
    await store.confirmations.decide(approved, approve=True, actor="alice", now=LATER)
    assert (await store.confirmations.cancel(pending, now=LATER)).status == "cancelled"
    assert await store.confirmations.cancel(approved, now=LATER) is None
    assert await store.confirmations.cancel(new_confirmation_id(), now=LATER) is None


async def test_result_needs_an_executing_confirmation(store: Store) -> None:
    cid = await park(store)
    with pytest.raises(InvalidTransition):
        await store.confirmations.record_result(cid, {"order_id": "o-1"}, now=LATER)


async def test_list_filters_by_status(store: Store) -> None:
    first, second = await park(store), await park(store)
    await store.confirmations.decide(second, approve=False, actor="alice", now=LATER)
    assert [r.confirmation_id for r in await store.confirmations.list(status="pending", now=LATER)] == [first]
    assert [r.confirmation_id for r in await store.confirmations.list(status="rejected")] == [second]


def test_confirmation_ids_carry_at_least_128_random_bits() -> None:
    confirmation_id = new_confirmation_id()
    assert confirmation_id.startswith("cfm_") and len(confirmation_id) >= len("cfm_") + 22
