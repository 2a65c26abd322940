"""OKX demo keys: a key, a secret and the passphrase chosen with the key, stored sealed together and checked
like Bybit's (read and trade only, never withdraw; bound to an IP or warned about). The permission read goes
through the real OKX adapter to the OKX front (tests/okx_front: OKX's /api/v5/account/config on loopback)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from pilot.app.human.exchange_keys import add_key, load_exchange_credentials
from pilot.cli.keys import command
from pilot.exchange.models import ApiKeyInfo
from pilot.exchange.okx.adapter import OkxExchange
from pilot.keys.credentials import Credentials
from pilot.keys.errors import InvalidKeyInput, KeyPermissionsRejected
from pilot.paper import start_paper_exchange
from tests.okx_front import OkxFront
from tests.scenarios import ARTICLE

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def front() -> Iterator[OkxFront]:
    with start_paper_exchange(ARTICLE) as paper, OkxFront(paper) as stub:
        yield stub


def on_front(front: OkxFront):  # type: ignore[no-untyped-def]
    """The permission read as `pilot keys add` makes it, through the OKX adapter, at the front's address."""

    async def read(credentials: Credentials) -> ApiKeyInfo:
        adapter = OkxExchange.connect(
            credentials.environment.value,
            api_key=credentials.api_key,
            api_secret=credentials.api_secret,
            passphrase=credentials.passphrase,
            base_url=front.url,
        )
        try:
            return await adapter.get_api_key_info()
        finally:
            await adapter.close()

    return read


async def add(home: Path, front: OkxFront, passphrase: str | None = None):  # type: ignore[no-untyped-def]
    return await add_key(
        home,
        "okx-demo",
        front.api_key,
        front.api_secret,
        now=NOW,
        passphrase=front.passphrase if passphrase is None else passphrase,
        read_key_info=on_front(front),
    )


async def test_an_okx_demo_key_is_stored_with_its_passphrase_sealed_and_loads_back(
    home: Path, master_key_file: Path, front: OkxFront
) -> None:
    summary = await add(home, front)
    loaded = await load_exchange_credentials(home, "okx-demo", now=NOW, read_key_info=on_front(front))
    assert (loaded.api_key, loaded.api_secret, loaded.passphrase) == (
        front.api_key,
        front.api_secret,
        front.passphrase,
    )
    assert summary.check.permissions == ("OKX.read_only", "OKX.trade") and summary.check.ip_bound
    for text in (repr(loaded), str(loaded)):
        assert front.passphrase not in text and front.api_secret not in text
    stored = sqlite3.connect(home / "keys.db").execute("SELECT * FROM exchange_keys").fetchall()
    assert not any(front.passphrase.encode() in bytes(str(row), "utf-8") for row in stored)


async def test_a_key_that_may_withdraw_is_refused_and_nothing_is_stored(
    home: Path, master_key_file: Path, front: OkxFront
) -> None:
    front.perm = "read_only,trade,withdraw"
    with pytest.raises(KeyPermissionsRejected) as refused:
        await add(home, front)
    assert refused.value.disallowed == ("OKX.withdraw",)
    assert (
        not (home / "keys.db").exists()
        or not sqlite3.connect(home / "keys.db").execute("SELECT * FROM exchange_keys").fetchall()
    )


async def test_an_okx_key_without_its_passphrase_is_refused_before_the_exchange_is_asked(
    home: Path, master_key_file: Path, front: OkxFront
) -> None:
    with pytest.raises(InvalidKeyInput):
        await add(home, front, passphrase="")
    with pytest.raises(InvalidKeyInput):  # and a Bybit key takes none
        await add_key(
            home, "bybit-testnet", "K" * 20, "S" * 30, now=NOW, passphrase="x", read_key_info=on_front(front)
        )
    assert front.seen() == []


def test_the_cli_asks_an_okx_key_for_three_lines_and_refuses_two_before_any_request(
    home: Path, master_key_file: Path
) -> None:
    """With --stdin, okx-demo reads the key, the secret and the passphrase; a missing third line is refused
    as an empty passphrase, before anything is sent (okx-demo's address is OKX's own: nothing is reached)."""
    home.mkdir()
    (home / "policy.json").write_text("{}")
    result = CliRunner().invoke(
        command,
        ["add", "--exchange", "okx-demo", "--stdin", "--home", str(home), "--format", "json"],
        input="okxkey000000000000000\nokxsecret0000000000000\n",
    )
    assert result.exit_code == 2  # a human's input to fix (pilot.cli.output): nothing was sent or stored
    assert "okxsecret" not in result.output and not (home / "keys.db").exists()
