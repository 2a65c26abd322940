"""What only a store on a server promises: decisions on the server's clock, a host role that cannot change the
past, and a home moved from SQLite arriving whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from pilot.app.runtime.runtime import Home
from pilot.app.service.moving import MoveRefused, move_home
from pilot.store import STORE_MOVED, StoreError, StoreLocation, new_plan_id, open_store
from pilot.store.keystore import open_keystore
from pilot.store.roles import grant_host_role
from tests.clocks import FakeClock

from ..support import T0
from .conftest import drop_schema, fresh_schema, server_url
from .test_records_contract import stored_key

pytestmark = pytest.mark.anyio


@pytest.fixture
def server_store(home: Path) -> object:
    base = server_url()
    schema, url = fresh_schema(base)
    yield StoreLocation.parse(url)
    drop_schema(base, schema)


async def test_a_claim_and_a_lease_are_decided_on_the_server_s_clock_not_a_host_s(
    server_store: StoreLocation, home: Path
) -> None:
    server = await open_store(server_store, home=home)  # the server's clock
    try:
        behind = server.clock.read().plus(-timedelta(minutes=10))
        host = await open_store(server_store, home=home, clock=FakeClock(T0, behind))  # a host 10 min behind
        try:
            plan_id = new_plan_id()
            plan = await host.plans.create(plan_id=plan_id, payload={}, now=T0, ttl_seconds=60)
            assert host.plans.alive(plan)  # by its own clock it lives
            assert await host.leases.try_acquire("send-turn", "slow", now=T0, ttl=timedelta(minutes=2))
        finally:
            await host.close()
        assert (await server.plans.claim(plan_id, now=T0)).status == "expired"
        assert await server.leases.try_acquire("send-turn", "on time", now=T0, ttl=timedelta(minutes=2))
        reading = server.clock.read()
        with psycopg.connect(server_store.url or "") as conn:
            row = conn.execute("SELECT pilot_boot(), pilot_micros()").fetchone()
        assert row is not None and row[0] == reading.boot and abs(row[1] - reading.micros) < 250_000
    finally:
        await server.close()


@pytest.fixture
def host_role(server_store: StoreLocation) -> object:
    role = "pilot_host_" + (server_store.url or "").rsplit("contract_", 1)[1][:12]
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    yield role
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


def as_role(location: StoreLocation, role: str) -> StoreLocation:
    url = location.url or ""
    return StoreLocation.parse(url.replace("postgresql://postgres@", f"postgresql://{role}@", 1))


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE journal SET kind = 'x'",
        "DELETE FROM journal",
        "TRUNCATE journal",
        "DELETE FROM plans",
        "DROP TRIGGER journal_no_delete ON journal",
        "ALTER TABLE journal DISABLE TRIGGER ALL",
    ],
)
async def test_a_host_s_role_serves_but_cannot_change_the_past(
    server_store: StoreLocation, home: Path, host_role: str, statement: str
) -> None:
    owner = await open_store(server_store, home=home)
    await owner.journal.append("kill_switch", {"on": True}, now=T0, actor="human")
    await owner.close()
    await grant_host_role(server_store, host_role)
    host = await open_store(as_role(server_store, host_role), home=home)
    try:
        await host.journal.append("order.sent", {"n": 1}, now=T0)
        plan_id = new_plan_id()
        await host.plans.create(plan_id=plan_id, payload={}, now=T0, ttl_seconds=60)
        assert (await host.plans.claim(plan_id, now=T0)).status == "claimed"
        assert await host.leases.try_acquire("send-turn", "h", now=T0, ttl=timedelta(minutes=2))
        await host.agents.beat("h", now=T0, sessions=1)
        assert (await host.journal.verify()).count == 2
    finally:
        await host.close()
    url = as_role(server_store, host_role).url or ""
    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


async def test_a_host_role_granted_before_the_heartbeats_table_keeps_serving_once_the_owner_upgrades(
    server_store: StoreLocation, home: Path, host_role: str
) -> None:
    await (await open_store(server_store, home=home)).close()
    await grant_host_role(server_store, host_role)
    with psycopg.connect(server_store.url or "", autocommit=True) as conn:  # the store as issue 28 left it
        conn.execute("DROP TABLE agents")
        conn.execute("ALTER TABLE tokens DROP COLUMN role")  # v3's, which came after
        conn.execute("DELETE FROM schema_version WHERE version >= 2")
    await (await open_store(server_store, home=home)).close()  # the owner's open brings it up to date
    host = await open_store(as_role(server_store, host_role), home=home)
    try:
        await host.agents.beat("h", now=T0, sessions=1)
        assert [row.holder for row in await host.agents.all()] == ["h"]
    finally:
        await host.close()


async def test_a_process_on_another_host_is_gone_when_its_session_ends_and_not_before(
    server_store: StoreLocation, home: Path
) -> None:
    store = await open_store(server_store, home=home)
    host = await open_store(server_store, home=home)
    try:
        await host.agents.beat("another-host:4242:serve", now=T0, sessions=1)
        (row,) = await store.agents.all()
        assert not row.gone  # no pid on this machine says anything about a process on another host
        await host.close()
        (row,) = await store.agents.all()
        assert row.gone and row.sessions == 1
    finally:
        await host.close()
        await store.close()


async def test_a_home_moved_from_sqlite_arrives_whole_with_its_chain_and_keys(
    server_store: StoreLocation, home: Path
) -> None:
    (home / "policy.json").write_text("{}")
    sqlite = await open_store(Home(home).database_path)
    for index in range(30):
        await sqlite.journal.append("order.sent", {"i": index}, now=T0)
    plan_id = new_plan_id()
    await sqlite.plans.create(plan_id=plan_id, payload={"order": {}}, now=T0, ttl_seconds=60)
    await sqlite.plans.claim(plan_id, now=T0)
    await sqlite.tokens.issue("claude", now=T0)
    head = await sqlite.journal.mark()
    await sqlite.close()
    keys = await open_keystore(home / "keys.db")
    await keys.insert(stored_key("k1"))
    await keys.close()

    moved = await move_home(home, server_store, now=datetime(2025, 3, 2, tzinfo=UTC))

    assert moved.copied == {
        "journal": 30,
        "plans": 1,
        "confirmations": 0,
        "idempotency": 0,
        "tokens": 1,
        "exchange_keys": 1,
    }
    assert (moved.chain.ok, moved.chain.count, moved.moved_seq) == (True, 30, 31)
    assert Home(home).store() == server_store
    arrived = await open_store(Home(home).store(), home=home)
    try:
        entries = await arrived.journal.entries()
        assert (entries[29].seq, entries[29].hash) == (head.seq, head.hash)
        assert entries[30].kind == STORE_MOVED
        assert (await arrived.journal.verify()).ok
        assert (await arrived.plans.claim(plan_id, now=T0)).status == "already_used"
    finally:
        await arrived.close()
    keystore = await open_keystore(server_store)
    try:
        active = await keystore.active("bybit-demo")
        assert active is not None and active.sealed == b"\x01sealed-bytes"
    finally:
        await keystore.close()
    with pytest.raises(MoveRefused):  # once moved, there is nothing to move
        await move_home(home, server_store, now=T0)


async def test_a_move_into_a_store_that_holds_records_moves_nothing(
    server_store: StoreLocation, home: Path
) -> None:
    (home / "policy.json").write_text("{}")
    other = await open_store(server_store, home=home)
    await other.journal.append("note", {}, now=T0)
    await other.close()
    sqlite = await open_store(Home(home).database_path)
    await sqlite.journal.append("order.sent", {}, now=T0)
    await sqlite.close()
    with pytest.raises(StoreError):
        await move_home(home, server_store, now=T0)
    assert Home(home).store().url is None
