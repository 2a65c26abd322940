from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from pilot.store import IdempotencyBegin, InvalidTransition, Store, open_store

from .support import T0

pytestmark = pytest.mark.anyio

ARGS = {"plan_id": "plan_x", "note": {"a": 1, "b": Decimal("2.5")}}


async def test_first_use_of_a_key_is_new(store: Store) -> None:
    assert await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0) == IdempotencyBegin(
        "new"
    )


async def test_finished_call_with_the_same_args_replays_the_first_answer(store: Store) -> None:
    await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    await store.idempotency.complete("k1", {"order_id": "o-1", "qty": Decimal("1")}, now=T0)
    reordered = {"note": {"b": Decimal("2.5"), "a": 1}, "plan_id": "plan_x"}
    again = await store.idempotency.begin("k1", tool="place_order", args=reordered, now=T0)
    assert again == IdempotencyBegin("replay", response={"order_id": "o-1", "qty": "1"})


async def test_same_key_with_other_args_or_tool_conflicts_and_names_the_first_tool(store: Store) -> None:
    await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    other_args = await store.idempotency.begin("k1", tool="place_order", args={"plan_id": "y"}, now=T0)
    other_tool = await store.idempotency.begin("k1", tool="cancel_order", args=ARGS, now=T0)
    assert other_args == other_tool == IdempotencyBegin("conflict", first_tool="place_order")


async def test_same_call_while_the_first_runs_is_in_progress(store: Store) -> None:
    await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    assert (
        await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    ).status == "in_progress"


async def test_one_of_many_concurrent_callers_owns_the_key_across_store_instances(db_path: Path) -> None:
    stores = [await open_store(db_path) for _ in range(3)]
    statuses: list[str] = []

    async def begin(store: Store) -> None:
        statuses.append((await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)).status)

    async with anyio.create_task_group() as group:
        for index in range(30):
            group.start_soon(begin, stores[index % 3])
    await stores[0].idempotency.complete("k1", {"ok": True}, now=T0)
    replay = await stores[2].idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    for store in stores:
        await store.close()
    assert sorted(statuses) == ["in_progress"] * 29 + ["new"]
    assert replay.response == {"ok": True}


async def test_abandoned_key_can_be_used_afresh_but_a_completed_one_cannot(store: Store) -> None:
    await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    assert await store.idempotency.abandon("k1") is True
    assert (await store.idempotency.begin("k1", tool="cancel_order", args={}, now=T0)).status == "new"
    await store.idempotency.complete("k1", {"ok": True}, now=T0)
    assert await store.idempotency.abandon("k1") is False
    assert (await store.idempotency.begin("k1", tool="cancel_order", args={}, now=T0)).status == "replay"


async def test_a_key_completes_only_once(store: Store) -> None:
    await store.idempotency.begin("k1", tool="place_order", args=ARGS, now=T0)
    await store.idempotency.complete("k1", {"first": True}, now=T0)
    with pytest.raises(InvalidTransition):
        await store.idempotency.complete("k1", {"second": True}, now=T0)
    with pytest.raises(InvalidTransition):
        await store.idempotency.complete("never-begun", {}, now=T0)
