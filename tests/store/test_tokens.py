from __future__ import annotations

from pathlib import Path

import pytest

from pilot.store import DuplicateRecord, Store, open_store

from .support import T0

pytestmark = pytest.mark.anyio


async def test_issued_token_verifies_to_its_name(store: Store) -> None:
    token = await store.tokens.issue("laptop", now=T0)
    assert token.startswith("pilot_")
    assert await store.tokens.verify(token) == "laptop"
    assert await store.tokens.verify(token + "x") is None
    assert await store.tokens.verify("") is None


async def test_token_is_stored_only_as_a_hash(db_path: Path) -> None:
    async with await open_store(db_path) as store:
        token = await store.tokens.issue("laptop", now=T0)
        assert await store.tokens.verify(token) == "laptop"
    on_disk = b"".join(path.read_bytes() for path in db_path.parent.iterdir())
    assert token.encode() not in on_disk
    assert token.removeprefix("pilot_").encode() not in on_disk


async def test_revoked_token_no_longer_verifies(store: Store) -> None:
    token = await store.tokens.issue("laptop", now=T0)
    assert await store.tokens.revoke("laptop") is True
    assert await store.tokens.verify(token) is None
    assert await store.tokens.revoke("laptop") is False


async def test_a_name_holds_one_token_until_revoked(store: Store) -> None:
    await store.tokens.issue("laptop", now=T0)
    with pytest.raises(DuplicateRecord):
        await store.tokens.issue("laptop", now=T0)
    await store.tokens.revoke("laptop")
    await store.tokens.issue("laptop", now=T0)


async def test_list_shows_names_and_issue_times_never_tokens(store: Store) -> None:
    await store.tokens.issue("server", now=T0)
    await store.tokens.issue("laptop", now=T0)
    assert await store.tokens.list() == [("laptop", T0), ("server", T0)]
