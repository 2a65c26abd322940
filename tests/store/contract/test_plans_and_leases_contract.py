"""Plans and leases on both engines: a plan is used once and only moves forward, lives on the store's clock,
and a claim or lease whose holder is gone is known at once; a lease is one holder's at a time."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from pilot.store import STORE_PLAN_REJECTED, Store, StoreLocation, new_plan_id
from tests.clocks import FakeClock

from ..support import T0
from .helpers import another_host, gone_holder
from .outsider import Outsider

pytestmark = pytest.mark.anyio
TURN = timedelta(minutes=2)


async def planned(store: Store, ttl: int = 60) -> str:
    plan_id = new_plan_id()
    await store.plans.create(plan_id=plan_id, payload={"order": {"qty": "1"}}, now=T0, ttl_seconds=ttl)
    return plan_id


async def test_of_many_hosts_claiming_one_plan_at_once_exactly_one_wins(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    plan_id = await planned(store)
    others = [await another_host(location, home, ticks) for _ in range(3)]
    try:
        results = await asyncio.gather(
            *(
                host.plans.claim(plan_id, now=T0, holder=f"h{index}")
                for index, host in enumerate([store, *others])
            )
        )
    finally:
        for host in others:
            await host.close()
    assert sorted(result.status for result in results) == ["already_used"] * 3 + ["claimed"]


async def test_a_plan_lives_its_time_to_live_on_the_store_s_clock(store: Store, ticks: FakeClock) -> None:
    alive, ended = await planned(store), await planned(store)
    ticks.advance(59)
    assert (await store.plans.claim(alive, now=T0)).status == "claimed"
    ticks.advance(1)
    assert (await store.plans.claim(ended, now=T0)).status == "expired"


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE plans SET status = 'open' WHERE plan_id = ?",
        'UPDATE plans SET payload_json = \'{"order":{"qty":"100"}}\' WHERE plan_id = ?',
        "DELETE FROM plans WHERE plan_id = ?",
    ],
    ids=["reopened", "edited", "deleted"],
)
async def test_a_used_plan_cannot_be_reopened_edited_or_deleted_in_the_database(
    store: Store, outsider: Outsider, statement: str
) -> None:
    plan_id = await planned(store)
    assert (await store.plans.claim(plan_id, now=T0)).status == "claimed"
    with pytest.raises(Exception):  # noqa: B017 - the database's own refusal
        outsider.execute(statement, (plan_id,))
    assert (await store.plans.claim(plan_id, now=T0)).status == "already_used"


async def test_a_plan_written_without_the_journal_key_is_unknown_and_its_use_is_journaled(
    store: Store, outsider: Outsider
) -> None:
    outsider.execute(
        "INSERT INTO plans (plan_id, created_at, expires_at, status, payload_json, seal, boot, expires_micros)"
        " VALUES ('plan_forged', 'x', 'y', 'open', '{}', ?, ?, ?)",
        ("0" * 64, store.clock.read().boot, store.clock.read().micros + 60_000_000),
    )
    assert (await store.plans.claim("plan_forged", now=T0)).status == "not_found"
    assert [entry.plan_id for entry in await store.journal.entries(kind=STORE_PLAN_REJECTED)] == [
        "plan_forged"
    ]


async def test_a_claim_whose_claimer_is_gone_is_abandoned_at_once_and_a_live_one_is_not(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    left, held = await planned(store), await planned(store)
    claimer = await another_host(location, home, ticks)
    await claimer.plans.claim(left, now=T0, holder=gone_holder())
    await claimer.close()  # its session ends (PostgreSQL); its process is gone (SQLite)
    await store.plans.claim(held, now=T0, holder="alive")
    unfinished = {plan.plan_id: plan for plan in await store.plans.unfinished()}
    assert store.plans.abandoned(unfinished[left], timedelta(hours=1))
    live = await store.plans.get(held)
    assert live is not None and not store.plans.abandoned(unfinished[held], timedelta(hours=1))
    ticks.advance(3600)
    assert store.plans.abandoned(unfinished[held], timedelta(hours=1))


async def test_a_lease_is_one_holder_s_until_released_or_run_out(store: Store, ticks: FakeClock) -> None:
    assert await store.leases.try_acquire("turn", "a", now=T0, ttl=TURN)
    assert not await store.leases.try_acquire("turn", "b", now=T0, ttl=TURN)
    assert await store.leases.try_acquire("turn", "a", now=T0, ttl=TURN)  # renewed
    assert await store.leases.holder("turn") == "a"
    assert await store.leases.release("turn", "a")
    assert await store.leases.try_acquire("turn", "b", now=T0, ttl=TURN)
    ticks.advance(119)
    assert not await store.leases.try_acquire("turn", "a", now=T0, ttl=TURN)
    ticks.advance(1)
    assert await store.leases.holder("turn") is None
    assert await store.leases.try_acquire("turn", "a", now=T0, ttl=TURN)


async def test_a_lease_whose_holder_is_gone_is_free_at_once(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    holder = await another_host(location, home, ticks)
    assert await holder.leases.try_acquire("turn", gone_holder(), now=T0, ttl=TURN)
    await holder.close()
    assert await store.leases.try_acquire("turn", "next", now=T0, ttl=TURN)


async def test_of_many_hosts_taking_a_free_lease_at_once_exactly_one_holds_it(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    others = [await another_host(location, home, ticks) for _ in range(3)]
    try:
        taken = await asyncio.gather(
            *(
                host.leases.try_acquire("turn", f"h{i}", now=T0, ttl=TURN)
                for i, host in enumerate([store, *others])
            )
        )
    finally:
        for host in others:
            await host.close()
    assert sorted(taken) == [False, False, False, True]
