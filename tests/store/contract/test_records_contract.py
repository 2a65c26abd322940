"""Idempotency keys, confirmations, tokens, exchange keys, guards and the ledger on both engines."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.runtime.ledger import Ledger
from pilot.store import STORE_REPAIRED, DuplicateRecord, Store, StoreLocation, new_confirmation_id, open_store
from pilot.store.keystore import ActiveKeyExists, PermissionCheck, StoredKey, open_keystore
from tests.clocks import FakeClock

from ..support import T0
from .helpers import another_host
from .outsider import Outsider

pytestmark = pytest.mark.anyio


async def test_an_idempotency_key_is_owned_by_one_call_and_replays_its_answer(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    other = await another_host(location, home, ticks)
    try:
        begun = await asyncio.gather(
            store.idempotency.begin("k1", tool="place_order", args={"plan_id": "p"}, now=T0),
            other.idempotency.begin("k1", tool="place_order", args={"plan_id": "p"}, now=T0),
        )
    finally:
        await other.close()
    assert sorted(result.status for result in begun) == ["in_progress", "new"]
    await store.idempotency.complete("k1", {"status": "filled"}, now=T0)
    replay = await store.idempotency.begin("k1", tool="place_order", args={"plan_id": "p"}, now=T0)
    assert (replay.status, replay.response) == ("replay", {"status": "filled"})
    conflict = await store.idempotency.begin("k1", tool="cancel_order", args={}, now=T0)
    assert (conflict.status, conflict.first_tool) == ("conflict", "place_order")
    assert (await store.idempotency.begin("k2", tool="t", args={}, now=T0)).status == "new"
    assert await store.idempotency.abandon("k2")
    assert (await store.idempotency.begin("k2", tool="t", args={}, now=T0)).status == "new"


async def test_an_approved_confirmation_runs_once_within_its_life_on_the_store_s_clock(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    async def park() -> str:
        confirmation_id = new_confirmation_id()
        await store.confirmations.park(
            confirmation_id=confirmation_id,
            tool="place_order",
            action={"x": 1},
            summary="s",
            now=T0,
            ttl_seconds=300,
        )
        return confirmation_id

    first, late = await park(), await park()
    assert await store.confirmations.decide(first, approve=True, actor="cli", now=T0) is not None
    assert await store.confirmations.decide(first, approve=False, actor="cli", now=T0) is None
    other = await another_host(location, home, ticks)
    try:
        claims = await asyncio.gather(
            store.confirmations.claim_approved(first, now=T0),
            other.confirmations.claim_approved(first, now=T0),
        )
    finally:
        await other.close()
    assert sorted(claim is not None for claim in claims) == [False, True]
    await store.confirmations.record_result(first, {"status": "filled"}, now=T0)
    done = await store.confirmations.get(first)
    assert done is not None and (done.status, done.result) == ("executed", {"status": "filled"})
    ticks.advance(300)
    assert await store.confirmations.decide(late, approve=True, actor="cli", now=T0) is None
    expired = await store.confirmations.get(late, now=T0)
    assert expired is not None and expired.status == "expired"


async def test_a_token_is_stored_as_its_hash_named_once_and_revocable(
    store: Store, outsider: Outsider
) -> None:
    token = await store.tokens.issue("claude", now=T0)
    assert await store.tokens.verify(token) == "claude"
    assert token not in str(outsider.execute("SELECT * FROM tokens"))
    with pytest.raises(DuplicateRecord):
        await store.tokens.issue("claude", now=T0)
    assert [name for name, _ in await store.tokens.list()] == ["claude"]
    assert await store.tokens.revoke("claude")
    assert await store.tokens.verify(token) is None


def stored_key(key_id: str, environment: str = "bybit-demo") -> StoredKey:
    check = PermissionCheck(T0, False, ("ContractTrade:Order",), (), False)
    return StoredKey(key_id, environment, None, "abcd", b"\x01sealed-bytes", T0, check)


async def test_exchange_keys_one_active_per_environment_and_a_retired_one_loses_its_ciphertext(
    engine: str, location: StoreLocation, home: Path
) -> None:
    keystore = await open_keystore(location if engine == "postgresql" else home / "keys.db")
    try:
        await keystore.insert(stored_key("k1"))
        with pytest.raises(ActiveKeyExists):
            await keystore.insert(stored_key("k2"))
        active = await keystore.active("bybit-demo")
        assert active is not None and (active.key_id, active.sealed) == ("k1", b"\x01sealed-bytes")
        await keystore.replace("k1", stored_key("k3"), at=datetime(2025, 3, 2, tzinfo=UTC))
        assert [key.key_id for key in await keystore.all_active()] == ["k3"]
        retired = [row for row in await keystore.rows() if row["key_id"] == "k1"]
        assert retired[0]["sealed"] is None and retired[0]["retired_at"] is not None
    finally:
        await keystore.close()


@pytest.mark.parametrize(
    ("guard", "table", "undo"),
    [
        ("journal_no_delete", "journal", "DELETE FROM journal"),
        ("plans_forward_only", "plans", "UPDATE plans SET status = 'open'"),
    ],
)
async def test_a_guard_dropped_behind_pilot_s_back_is_restored_and_journaled_at_the_next_open(
    store: Store,
    outsider: Outsider,
    location: StoreLocation,
    home: Path,
    ticks: FakeClock,
    guard: str,
    table: str,
    undo: str,
) -> None:
    await store.journal.append("kill_switch", {"on": True}, now=T0)
    await store.plans.create(plan_id="plan_used", payload={}, now=T0, ttl_seconds=60)
    await store.plans.claim("plan_used", now=T0)
    outsider.drop_trigger(guard, table)
    reopened = await open_store(location, home=home, clock=ticks)
    try:
        assert guard in reopened.opened.restored
        repairs = await reopened.journal.entries(kind=STORE_REPAIRED)
        assert len(repairs) == 1 and guard in repairs[0].data["restored"]
    finally:
        await reopened.close()
    with pytest.raises(Exception):  # noqa: B017 - guarded again: the database's own refusal
        outsider.execute(undo)


async def test_the_ledger_reads_on_from_its_mark_what_other_hosts_journal(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    ledger = Ledger(store.journal)
    assert (await ledger.state(T0)).kill_switch_on is False
    other = await another_host(location, home, ticks)
    try:
        await other.journal.append(entry_kinds.KILL_SWITCH, {"on": True}, now=T0, actor="human")
        for index in range(3):
            request = {"orderLinkId": f"pilot-{index}", "category": "linear", "symbol": "BTCUSDT"}
            request |= {"side": "Buy", "qty": "0.001", "price": "80000"}
            await other.journal.append(entry_kinds.ORDER_SENT, {"request": request}, now=T0)
    finally:
        await other.close()
    state = await ledger.state(T0 + timedelta(seconds=1))
    assert state.kill_switch_on and state.sent_today == 3 and len(state.unsettled) == 3
    assert state.mark == (await store.journal.mark()).seq
