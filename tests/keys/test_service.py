"""Key use cases against real SQLite and a real master key file, with the exchange answered by a fake."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pilot.app.human.exchange_keys import (
    add_key,
    check_ready_to_store,
    delete_key,
    ensure_fresh_permissions,
    load_exchange_credentials,
    replace_key,
    show_keys,
)
from pilot.exchange.errors import ExchangeRejected, ExchangeUnavailable
from pilot.exchange.models import ApiKeyInfo
from pilot.keys.errors import (
    InvalidKeyInput,
    KeyAlreadyStored,
    KeyPermissionsRejected,
    KeyUnreadable,
    MasterKeyError,
    NoKeyStored,
    PermissionCheckFailed,
)

from .fakes import FakeKeyInfo

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY, SECRET = "DEMOKEY1234567890ab", "demo-secret-0123456789abcdef"
NARROW = ApiKeyInfo(read_only=False, permissions={"ContractTrade": ("Order", "Position")}, ips=("1.2.3.4",))
WIDE = ApiKeyInfo(read_only=False, permissions={"ContractTrade": ("Order",), "Wallet": ("AccountTransfer",)})


@pytest.fixture
def exchange() -> FakeKeyInfo:
    return FakeKeyInfo({KEY: NARROW})


async def add(home: Path, exchange: FakeKeyInfo, key: str = KEY, environment: str = "bybit-demo"):
    return await add_key(home, environment, key, SECRET, now=NOW, read_key_info=exchange)


async def test_an_added_key_loads_back_with_its_secret(home: Path, master_key_file: Path, exchange) -> None:
    summary = await add(home, exchange)
    credentials = await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    assert (credentials.api_key, credentials.api_secret) == (KEY, SECRET)
    assert credentials.key_id == summary.key_id and credentials.base_url is None
    assert summary.key_hint == "90ab"
    assert summary.check.permissions == ("ContractTrade.Order", "ContractTrade.Position")


async def test_credentials_never_show_the_key_or_secret(home: Path, master_key_file: Path, exchange) -> None:
    await add(home, exchange)
    credentials = await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    for text in (repr(credentials), str(credentials), f"{credentials}", repr([credentials])):
        assert SECRET not in text and KEY not in text
        assert "90ab" in text


async def test_typed_whitespace_around_the_key_and_secret_is_dropped(
    home: Path, master_key_file: Path
) -> None:
    exchange = FakeKeyInfo({KEY: NARROW})
    await add_key(home, "bybit-demo", f"  {KEY}\n", f"{SECRET}\n", now=NOW, read_key_info=exchange)
    credentials = await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    assert (credentials.api_key, credentials.api_secret) == (KEY, SECRET)


async def test_a_key_with_a_transfer_permission_is_rejected_and_not_stored(
    home: Path, master_key_file: Path
) -> None:
    exchange = FakeKeyInfo({KEY: WIDE})
    with pytest.raises(KeyPermissionsRejected) as rejected:
        await add(home, exchange)
    assert rejected.value.disallowed == ("Wallet.AccountTransfer",)
    assert "Wallet.AccountTransfer" in str(rejected.value)
    assert await show_keys(home) == []


@pytest.mark.parametrize(
    "failure",
    [
        ExchangeRejected("key refused", ret_code=10003, family="auth"),
        ExchangeUnavailable("no answer"),
    ],
)
async def test_a_key_whose_permissions_cannot_be_read_is_not_stored(
    home: Path, master_key_file: Path, failure: Exception
) -> None:
    with pytest.raises(PermissionCheckFailed) as failed:
        await add(home, FakeKeyInfo({KEY: failure}))
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    assert await show_keys(home) == []


async def test_a_second_add_for_the_same_environment_points_to_replace(
    home: Path, master_key_file: Path, exchange
) -> None:
    first = await add(home, exchange)
    with pytest.raises(KeyAlreadyStored) as refused:
        await add(home, exchange)
    assert first.key_id in str(refused.value) and "pilot keys replace" in refused.value.fix


async def test_each_environment_holds_its_own_key(home: Path, master_key_file: Path, exchange) -> None:
    await add(home, exchange, environment="bybit-demo")
    await add(home, exchange, environment="bybit-testnet")
    assert [summary.environment for summary in await show_keys(home)] == ["bybit-demo", "bybit-testnet"]


async def test_replace_swaps_the_key_and_keeps_the_old_one_if_the_new_is_rejected(
    home: Path, master_key_file: Path
) -> None:
    exchange = FakeKeyInfo({KEY: NARROW, "WIDEKEY123456789xyz": WIDE, "NEWKEY1234567890new": NARROW})
    old = await add(home, exchange)
    with pytest.raises(KeyPermissionsRejected):
        await replace_key(home, "bybit-demo", "WIDEKEY123456789xyz", "s", now=NOW, read_key_info=exchange)
    assert [summary.key_id for summary in await show_keys(home)] == [old.key_id]
    new = await replace_key(home, "bybit-demo", "NEWKEY1234567890new", "s2", now=NOW, read_key_info=exchange)
    credentials = await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    assert credentials.key_id == new.key_id != old.key_id
    assert credentials.api_key == "NEWKEY1234567890new"


async def test_replace_without_a_stored_key_points_to_add(
    home: Path, master_key_file: Path, exchange
) -> None:
    with pytest.raises(NoKeyStored, match="pilot keys add"):
        await replace_key(home, "bybit-demo", KEY, SECRET, now=NOW, read_key_info=exchange)


async def test_a_deleted_key_no_longer_loads(home: Path, master_key_file: Path, exchange) -> None:
    added = await add(home, exchange)
    assert await delete_key(home, "bybit-demo", now=NOW) == added.key_id
    with pytest.raises(NoKeyStored) as absent:
        await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    assert "pilot keys add --exchange bybit-demo" in absent.value.fix


async def test_loading_from_an_empty_home_explains_how_to_add_a_key_and_creates_nothing(
    home: Path, master_key_file: Path, exchange
) -> None:
    with pytest.raises(NoKeyStored):
        await load_exchange_credentials(home, "bybit-testnet", now=NOW, read_key_info=exchange)
    assert not home.exists() and not master_key_file.exists()


async def test_permissions_are_rechecked_only_when_the_last_check_is_over_an_hour_old(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange)
    for minutes in (0, 30, 59):
        await ensure_fresh_permissions(
            home, "bybit-demo", now=NOW + timedelta(minutes=minutes), read_key_info=exchange
        )
    assert len(exchange.calls) == 1
    summary = await ensure_fresh_permissions(
        home, "bybit-demo", now=NOW + timedelta(minutes=61), read_key_info=exchange
    )
    assert len(exchange.calls) == 2
    assert summary.check.checked_at == NOW + timedelta(minutes=61)


async def test_a_check_dated_in_the_future_is_redone(home: Path, master_key_file: Path, exchange) -> None:
    await add(home, exchange)
    await ensure_fresh_permissions(home, "bybit-demo", now=NOW - timedelta(minutes=5), read_key_info=exchange)
    assert len(exchange.calls) == 2


async def test_permissions_grown_since_the_last_check_block_loading_and_show_up(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange)
    exchange.answers[KEY] = WIDE
    later = NOW + timedelta(hours=2)
    for _ in range(2):  # the second time from the recorded check, without asking again
        with pytest.raises(KeyPermissionsRejected, match=r"Wallet\.AccountTransfer"):
            await load_exchange_credentials(home, "bybit-demo", now=later, read_key_info=exchange)
    assert len(exchange.calls) == 2
    [summary] = await show_keys(home)
    assert not summary.accepted and summary.check.disallowed == ("Wallet.AccountTransfer",)


async def test_a_due_check_that_cannot_reach_the_exchange_blocks_loading(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange)
    exchange.answers[KEY] = ExchangeUnavailable("down")
    with pytest.raises(PermissionCheckFailed):
        await load_exchange_credentials(
            home, "bybit-demo", now=NOW + timedelta(hours=2), read_key_info=exchange
        )


async def test_a_read_only_key_loads_marked_read_only(home: Path, master_key_file: Path) -> None:
    exchange = FakeKeyInfo({KEY: ApiKeyInfo(read_only=True, permissions={})})
    await add(home, exchange)
    credentials = await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    assert credentials.read_only


async def test_a_ciphertext_copied_into_another_row_does_not_decrypt(
    home: Path, master_key_file: Path, exchange
) -> None:
    exchange.answers["TESTKEY123456789zzz"] = NARROW
    demo = await add(home, exchange, environment="bybit-demo")
    await add(home, exchange, key="TESTKEY123456789zzz", environment="bybit-testnet")
    with sqlite3.connect(home / "keys.db") as db:
        db.execute(
            "UPDATE exchange_keys SET sealed = (SELECT sealed FROM exchange_keys WHERE key_id = ?) "
            "WHERE environment = 'bybit-testnet'",
            (demo.key_id,),
        )
    db.close()
    with pytest.raises(KeyUnreadable):
        await load_exchange_credentials(home, "bybit-testnet", now=NOW, read_key_info=exchange)


async def test_a_key_relabelled_as_another_environment_does_not_decrypt(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange, environment="bybit-testnet")
    with sqlite3.connect(home / "keys.db") as db:
        db.execute("UPDATE exchange_keys SET environment = 'bybit-demo'")
    db.close()
    with pytest.raises(KeyUnreadable):
        await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)


async def test_the_first_add_creates_the_master_key_and_later_adds_reuse_it(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange, environment="bybit-demo")
    first = master_key_file.read_bytes()
    await add(home, exchange, environment="bybit-testnet")
    assert master_key_file.read_bytes() == first


async def test_a_lost_master_key_is_an_error_while_keys_are_stored_never_a_new_key(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange, environment="bybit-demo")
    master_key_file.unlink()
    with pytest.raises(MasterKeyError) as refused:
        await add(home, exchange, environment="bybit-testnet")
    assert str(master_key_file) in str(refused.value)
    with pytest.raises(MasterKeyError):
        await load_exchange_credentials(home, "bybit-demo", now=NOW, read_key_info=exchange)
    assert not master_key_file.exists()


async def test_a_key_whose_master_key_is_lost_can_still_be_deleted_and_added_again(
    home: Path, master_key_file: Path, exchange
) -> None:
    await add(home, exchange)
    master_key_file.unlink()
    await delete_key(home, "bybit-demo", now=NOW)
    await add(home, exchange)
    assert master_key_file.exists()


async def test_a_master_key_inside_the_home_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch, exchange
) -> None:
    monkeypatch.setenv("PILOT_MASTER_KEY_FILE", str(home / "master.key"))
    with pytest.raises(MasterKeyError, match="inside the Pilot home"):
        await add(home, exchange)


@pytest.mark.parametrize(
    ("environment", "url", "problem"),
    [
        ("paper", None, "needs its address"),
        ("paper", "http://example.com:8000", "not a loopback http address"),
        ("paper", "http://127.0.0.1", "not a loopback http address"),
        ("bybit-demo", "http://127.0.0.1:9000", "paper exchange only"),
        ("mainnet", None, "Unknown exchange environment"),
    ],
)
async def test_an_environment_and_address_that_do_not_fit_are_refused_before_any_call(
    home: Path, master_key_file: Path, exchange, environment: str, url: str | None, problem: str
) -> None:
    with pytest.raises(InvalidKeyInput, match=problem):
        await add_key(home, environment, KEY, SECRET, now=NOW, base_url=url, read_key_info=exchange)
    assert exchange.calls == []


@pytest.mark.parametrize(("key", "secret"), [("", SECRET), (KEY, "  "), ("two words", SECRET)])
async def test_an_empty_or_malformed_key_is_refused_without_echoing_it(
    home: Path, master_key_file: Path, exchange, key: str, secret: str
) -> None:
    with pytest.raises(InvalidKeyInput) as refused:
        await add_key(home, "bybit-demo", key, secret, now=NOW, read_key_info=exchange)
    assert "two words" not in str(refused.value)


async def test_the_pre_prompt_check_raises_what_add_and_replace_would_and_creates_nothing(
    home: Path, master_key_file: Path, exchange
) -> None:
    await check_ready_to_store(home, "bybit-demo")
    assert not home.exists() and not master_key_file.exists()
    with pytest.raises(NoKeyStored):
        await check_ready_to_store(home, "bybit-demo", replacing=True)
    with pytest.raises(InvalidKeyInput):
        await check_ready_to_store(home, "paper")
    added = await add(home, exchange)
    with pytest.raises(KeyAlreadyStored, match=added.key_id):
        await check_ready_to_store(home, "bybit-demo")
    await check_ready_to_store(home, "bybit-demo", replacing=True)
    master_key_file.unlink()
    with pytest.raises(MasterKeyError):
        await check_ready_to_store(home, "bybit-testnet")
