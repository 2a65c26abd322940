"""Use cases for exchange keys: add, replace, delete, show, and load for the server with fresh checks.

Each use case opens the home's key table (`HOME/keys.db`, or the PostgreSQL store the home is on), does one
thing and closes it. Time arrives as `now` from the
caller; the only outside call is `read_key_info`, which asks the exchange what a key may do.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from pilot.app.runtime.runtime import Home
from pilot.exchange.adapters import connect_exchange, key_refusal
from pilot.exchange.errors import ExchangeError, ExchangeRejected
from pilot.exchange.models import ApiKeyInfo
from pilot.keys.credentials import Credentials, checked_address, key_hint, new_credentials, parse_environment
from pilot.keys.environments import Environment
from pilot.keys.errors import (
    KeyAlreadyStored,
    KeyPermissionsRejected,
    KeyRefused,
    KeyUnreadable,
    NoKeyStored,
    PermissionCheckFailed,
    PermissionCheckUnsupported,
)
from pilot.keys.permissions import check_permissions
from pilot.keys.vault import SealBroken, Vault, associated_data
from pilot.keys.vault_files import check_master_key, vault_for_reading, vault_for_writing
from pilot.store import StoreLocation
from pilot.store.keystore import ActiveKeyExists, KeyStore, PermissionCheck, StoredKey, open_keystore

KEYS_DATABASE = "keys.db"
PERMISSION_CHECK_INTERVAL = timedelta(hours=1)
# A live key is read again this often while serving (and at every start): a box ticked on Bybit's page
# stops growing orders at the next send after it is seen.
LIVE_CHECK_INTERVAL = timedelta(minutes=5)

KeyInfoReader = Callable[[Credentials], Awaitable[ApiKeyInfo]]


@dataclass(frozen=True, slots=True)
class KeySummary:
    """What may be shown about a stored key: never the secret, at most the API key's last four characters."""

    key_id: str
    environment: str
    key_hint: str
    base_url: str | None
    added_at: datetime
    check: PermissionCheck

    @property
    def accepted(self) -> bool:
        return not self.check.disallowed


async def read_key_info_from_exchange(credentials: Credentials) -> ApiKeyInfo:
    """Ask the exchange what the key may do (Bybit's /v5/user/query-api, OKX's /api/v5/account/config)."""
    exchange = connect_exchange(
        credentials.environment.value,
        api_key=credentials.api_key,
        api_secret=credentials.api_secret,
        passphrase=credentials.passphrase,
        base_url=credentials.base_url,
    )
    try:
        return await exchange.get_api_key_info()
    finally:
        await exchange.close()


async def check_ready_to_store(
    home: Path, environment: str, *, base_url: str | None = None, replacing: bool = False
) -> None:
    """Raise now what `add_key` or `replace_key` would raise before the exchange is asked anything.

    The CLI calls it before prompting, so nobody types a secret only to hear that the environment
    already has a key or the master key file is unusable. Nothing is created.
    """
    environment = parse_environment(environment)
    checked_address(environment, base_url)
    stored = await _active_keys(home)
    current = next((key for key in stored if key.environment == environment), None)
    if current is not None and not replacing:
        raise KeyAlreadyStored(environment, current.key_id, host_of(current.base_url))
    if current is None and replacing:
        raise NoKeyStored(environment)
    check_master_key(home, has_stored_keys=bool(stored))


async def add_key(
    home: Path,
    environment: str,
    api_key: str,
    api_secret: str,
    *,
    now: datetime,
    base_url: str | None = None,
    passphrase: str | None = None,
    read_key_info: KeyInfoReader = read_key_info_from_exchange,
) -> KeySummary:
    """Store a key for an environment that has none, after the exchange confirms its permissions fit.
    `passphrase` is OKX's third secret (required for okx-demo, refused elsewhere): sealed with the others.

    Raises:
        KeyAlreadyStored: the environment has an active key (use `replace_key`).
        KeyPermissionsRejected: the key may do something outside the allowlist; nothing is stored.
        PermissionCheckFailed: the exchange refused the key or could not be reached; nothing is stored.
            PermissionCheckUnsupported when the environment does not serve the check (bybit-demo).
        MasterKeyError: the master key file is unusable.
    """
    credentials = new_credentials(parse_environment(environment), api_key, api_secret, base_url, passphrase)
    async with _keystore(home) as store:
        current = await store.active(credentials.environment)
        if current is not None:
            raise KeyAlreadyStored(credentials.environment, current.key_id, host_of(current.base_url))
        vault = vault_for_writing(home, has_stored_keys=bool(await store.all_active()))
        stored = await _checked_and_sealed(vault, credentials, read_key_info, now, verb="add")
        try:
            await store.insert(stored)
        except ActiveKeyExists:
            raise KeyAlreadyStored(credentials.environment, "(added meanwhile)") from None
    return _summary(stored)


async def replace_key(
    home: Path,
    environment: str,
    api_key: str,
    api_secret: str,
    *,
    now: datetime,
    base_url: str | None = None,
    passphrase: str | None = None,
    read_key_info: KeyInfoReader = read_key_info_from_exchange,
) -> KeySummary:
    """Swap the environment's active key for a new one; the old one is retired and its ciphertext erased.

    The old key stays in place if the new one is rejected or cannot be checked.
    """
    credentials = new_credentials(parse_environment(environment), api_key, api_secret, base_url, passphrase)
    async with _keystore(home) as store:
        current = await _active_or_raise(store, credentials.environment)
        vault = vault_for_writing(home, has_stored_keys=True)
        stored = await _checked_and_sealed(vault, credentials, read_key_info, now, verb="replace")
        await store.replace(current.key_id, stored, at=now)
    return _summary(stored)


async def delete_key(home: Path, environment: str, *, now: datetime) -> str:
    """Retire the environment's active key, erase its ciphertext and return its key id.

    Needs no master key, so a key whose master key is lost can still be removed.
    """
    environment = parse_environment(environment)
    async with _existing_keystore(home, environment) as store:
        current = await _active_or_raise(store, environment)
        await store.retire(current.key_id, at=now)
    return current.key_id


async def show_keys(home: Path) -> list[KeySummary]:
    """Describe every active key. Reads no secret and needs no master key."""
    return [_summary(stored) for stored in await _active_keys(home)]


async def ensure_fresh_permissions(
    home: Path,
    environment: str,
    *,
    now: datetime,
    read_key_info: KeyInfoReader = read_key_info_from_exchange,
) -> KeySummary:
    """Re-check the key's permissions on the exchange if the last check is over an hour old (5 minutes live),
    as dated by the wall clock: for a one-off check outside a server. A running server reads its key again on
    its own timer, on the store's clock (pilot.app.service.key_watch). A check that was answered is recorded.

    Raises:
        KeyPermissionsRejected: the key may now do more than the allowlist permits.
        PermissionCheckFailed: a check was due and the exchange could not answer it (the key is not used
            until one passes); PermissionCheckUnsupported when the environment no longer serves it.
    """
    stored, _ = await _fresh_key(home, parse_environment(environment), now, read_key_info)
    return _summary(stored)


async def read_permissions_now(
    home: Path,
    environment: str,
    *,
    now: datetime,
    read_key_info: KeyInfoReader = read_key_info_from_exchange,
) -> KeySummary:
    """Ask the exchange what the stored key may do now, whenever the last check was, and record the answer.
    A key found to do more than the allowlist permits is recorded as refused (`accepted` False), not raised:
    every process serving the home reads that verdict (`key_standing`) before its next growing send.

    Raises:
        NoKeyStored, KeyUnreadable, MasterKeyError; PermissionCheckFailed (PermissionCheckUnsupported) when
            the exchange did not answer (nothing is recorded).
    """
    parsed = parse_environment(environment)
    async with _existing_keystore(home, parsed) as store:
        stored = await _active_or_raise(store, parsed)
        check = await _check(_unseal(vault_for_reading(home), stored), read_key_info, now)
        await store.record_check(stored.key_id, check)
    return _summary(replace(stored, check=check))


async def key_standing(home: Path, environment: str) -> KeySummary:
    """The stored key as its last check left it (any process's), without asking the exchange.

    Raises:
        NoKeyStored: no active key for the environment.
    """
    parsed = parse_environment(environment)
    async with _existing_keystore(home, parsed) as store:
        return _summary(await _active_or_raise(store, parsed))


def refuse_if_rejected(summary: KeySummary) -> None:
    """Raise KeyPermissionsRejected when the key's last check found it may do more than trade."""
    _raise_if_rejected(Environment(summary.environment), summary.check, summary.base_url)


async def load_exchange_credentials(
    home: Path,
    environment: str,
    *,
    now: datetime,
    read_key_info: KeyInfoReader = read_key_info_from_exchange,
) -> Credentials:
    """Return the environment's decrypted credentials, re-checking permissions first if the check is stale.

    Raises:
        NoKeyStored: no active key for the environment; the message says how to add one.
        KeyUnreadable, MasterKeyError, KeyPermissionsRejected, PermissionCheckFailed.
    """
    _, credentials = await _fresh_key(home, parse_environment(environment), now, read_key_info, at_start=True)
    return credentials


async def key_is_main_account(
    home: Path, environment: str, *, read_key_info: KeyInfoReader = read_key_info_from_exchange
) -> bool | None:
    """Ask the exchange whether the environment's stored key is the main account's (None: it did not say).

    Raises:
        NoKeyStored, KeyUnreadable, MasterKeyError; PermissionCheckFailed when the exchange does not answer.
    """
    parsed = parse_environment(environment)
    async with _existing_keystore(home, parsed) as store:
        stored = await _active_or_raise(store, parsed)
    credentials = _unseal(vault_for_reading(home), stored)
    try:
        return (await read_key_info(credentials)).is_master
    except ExchangeError:
        raise PermissionCheckFailed(parsed, "the exchange could not be reached") from None


async def _fresh_key(
    home: Path,
    environment: Environment,
    now: datetime,
    read_key_info: KeyInfoReader,
    *,
    at_start: bool = False,
) -> tuple[StoredKey, Credentials]:
    async with _existing_keystore(home, environment) as store:
        stored = await _active_or_raise(store, environment)
        credentials = _unseal(vault_for_reading(home), stored)
        if (at_start and environment.live) or not _is_fresh(stored.check, now, environment):
            check = await _check(credentials, read_key_info, now)
            await store.record_check(stored.key_id, check)
            stored = replace(stored, check=check)
    _raise_if_rejected(environment, stored.check, stored.base_url)
    return stored, replace(credentials, read_only=stored.check.read_only)


def _is_fresh(check: PermissionCheck, now: datetime, environment: Environment) -> bool:
    # A check dated in the future (clock moved back) counts as stale rather than as fresh forever.
    interval = LIVE_CHECK_INTERVAL if environment.live else PERMISSION_CHECK_INTERVAL
    return check.checked_at <= now < check.checked_at + interval


async def _checked_and_sealed(
    vault: Vault, credentials: Credentials, read_key_info: KeyInfoReader, now: datetime, *, verb: str
) -> StoredKey:
    check = await _check(credentials, read_key_info, now, verb=verb)
    _raise_if_rejected(credentials.environment, check, credentials.base_url)
    secrets = {"api_key": credentials.api_key, "api_secret": credentials.api_secret}
    if credentials.passphrase is not None:  # OKX's: sealed with the key and secret, under the same seal
        secrets["passphrase"] = credentials.passphrase
    secret = json.dumps(secrets).encode()
    return StoredKey(
        key_id=credentials.key_id,
        environment=credentials.environment,
        base_url=credentials.base_url,
        key_hint=key_hint(credentials.api_key),
        sealed=vault.seal(secret, _associated(credentials.key_id, credentials.environment)),
        added_at=now,
        check=check,
    )


async def _check(
    credentials: Credentials, read_key_info: KeyInfoReader, now: datetime, *, verb: str | None = None
) -> PermissionCheck:
    """What the exchange says the key may do, judged. `verb`: the `pilot keys` command storing it (add,
    replace), None for a stored key's check; a refusal of the key itself names it in its fix."""
    # `from None` everywhere: the adapter's exception must not ride along in a traceback.
    try:
        info = await read_key_info(credentials)
    except ExchangeRejected as error:
        if error.unsupported:  # bybit-demo's 10032: no answer will come, the key stays unused
            raise PermissionCheckUnsupported(credentials.environment) from None
        refusal = key_refusal(credentials.environment.value, error.ret_code)
        if refusal is not None:  # the key itself: its host, demo or live, its IP list, a secret as typed
            # the paper exchange's fix names its --url, a live key's its host
            paper = credentials.environment is Environment.PAPER
            host = credentials.base_url if paper else host_of(credentials.base_url)
            raise KeyRefused(credentials.environment, refusal, error.ret_code, host=host, verb=verb) from None
        reason = f"the exchange refused the key (retCode {error.ret_code})"
        raise PermissionCheckFailed(credentials.environment, reason) from None
    except ExchangeError:
        raise PermissionCheckFailed(credentials.environment, "the exchange could not be reached") from None
    verdict = check_permissions(info, live=credentials.environment.live, now=now)
    return PermissionCheck(
        checked_at=now,
        read_only=verdict.read_only,
        permissions=verdict.granted,
        disallowed=verdict.disallowed,
        ip_bound=verdict.ip_bound,
        main_account=verdict.main_account,
    )


def _raise_if_rejected(environment: Environment, check: PermissionCheck, base_url: str | None) -> None:
    if check.disallowed:
        raise KeyPermissionsRejected(environment, check.disallowed, host_of(base_url))


def host_of(base_url: str | None) -> str | None:
    """The host a live key was given (https://eea.okx.com: eea.okx.com), for the commands a fix names; None for
    a key with no address, or the paper exchange's (its --url is not a --host)."""
    if not base_url or not base_url.startswith("https://"):
        return None
    return urlsplit(base_url).hostname


def _unseal(vault: Vault, stored: StoredKey) -> Credentials:
    environment = Environment(stored.environment)
    try:
        secret = json.loads(vault.open(stored.sealed, _associated(stored.key_id, environment)))
    except SealBroken:
        raise KeyUnreadable(stored.key_id) from None
    return Credentials(
        environment=environment,
        key_id=stored.key_id,
        api_key=secret["api_key"],
        api_secret=secret["api_secret"],
        base_url=stored.base_url,
        read_only=stored.check.read_only,
        passphrase=secret.get("passphrase"),
    )


def _associated(key_id: str, environment: Environment) -> bytes:
    return associated_data(key_id, environment.value, environment.exchange)


def _summary(stored: StoredKey) -> KeySummary:
    return KeySummary(
        key_id=stored.key_id,
        environment=stored.environment,
        key_hint=stored.key_hint,
        base_url=stored.base_url,
        added_at=stored.added_at,
        check=stored.check,
    )


async def _active_or_raise(store: KeyStore, environment: Environment) -> StoredKey:
    stored = await store.active(environment)
    if stored is None:
        raise NoKeyStored(environment)
    return stored


async def _active_keys(home: Path) -> list[StoredKey]:
    if not _keys_stored(home):
        return []
    async with _keystore(home) as store:
        return await store.all_active()


def _keys_location(home: Path) -> Path | StoreLocation:
    """The home's key table: HOME/keys.db beside its SQLite journal, or its PostgreSQL store's."""
    location = Home(home).store()
    return location if location.url is not None else home / KEYS_DATABASE


def _keys_stored(home: Path) -> bool:
    """Whether the home may hold keys (reading must not create an empty keys.db as a side effect)."""
    where = _keys_location(home)
    return not isinstance(where, Path) or where.exists()


@asynccontextmanager
async def _keystore(home: Path) -> AsyncIterator[KeyStore]:
    store = await open_keystore(_keys_location(home))
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def _existing_keystore(home: Path, environment: Environment) -> AsyncIterator[KeyStore]:
    if not _keys_stored(home):
        raise NoKeyStored(environment)
    async with _keystore(home) as store:
        yield store
