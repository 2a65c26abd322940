"""bybit-demo does not serve the key read: demo.mdx lists the endpoints demo trading answers, and
/v5/user/query-api is not among them (the rest get retCode 10032). Pilot then says so, with what a human
can do, and never uses the key unchecked: not when adding it, not at the hourly recheck.

The answer is replayed from tests/fixtures/bybit/query_api_demo_unsupported.json through the real adapter
on loopback (the allowlist keeps a bybit-demo adapter on api-demo.bybit.com, so the reader is a paper one
aimed at the stub); the CLI is run against a loopback stub in front of the paper exchange.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from pilot.app.human.exchange_keys import (
    add_key,
    ensure_fresh_permissions,
    load_exchange_credentials,
    show_keys,
)
from pilot.cli import main
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.models import ApiKeyInfo
from pilot.keys.credentials import Credentials
from pilot.keys.errors import PermissionCheckFailed, PermissionCheckUnsupported
from pilot.paper import PaperExchange, start_paper_exchange
from tests.interposer import Answer, Interposer, Rule
from tests.scenarios import article_scenario
from tests.venue import connect_adapter

from .fakes import FakeKeyInfo

pytestmark = pytest.mark.anyio
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bybit" / "query_api_demo_unsupported.json"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KEY, SECRET = "DEMOKEY1234567890ab", "demo-secret-0123456789abcdef"
ADD = ("keys", "add", "--exchange", "paper", "--stdin", "--format", "json")
NARROW = ApiKeyInfo(read_only=False, permissions={"ContractTrade": ("Order", "Position")}, ips=("1.2.3.4",))


@pytest.fixture
def demo() -> Iterator[ReplayServer]:
    with ReplayServer.from_path(FIXTURE) as stub:
        yield stub


def reader_on(url: str) -> Callable[[Credentials], Awaitable[ApiKeyInfo]]:
    """Read a key's permissions through the real adapter, from the stub at `url`."""

    async def read(credentials: Credentials) -> ApiKeyInfo:
        adapter = connect_adapter(url, credentials.api_key, credentials.api_secret)
        try:
            return await adapter.get_api_key_info()
        finally:
            await adapter.close()

    return read


async def test_adding_a_demo_key_the_exchange_cannot_check_says_so_and_stores_nothing(
    home: Path, master_key_file: Path, demo: ReplayServer
) -> None:
    with pytest.raises(PermissionCheckUnsupported) as unsupported:
        await add_key(home, "bybit-demo", KEY, SECRET, now=NOW, read_key_info=reader_on(demo.url))
    assert isinstance(unsupported.value, PermissionCheckFailed)  # the check's fail-closed meaning stays
    assert unsupported.value.code == "key_permission_check_unsupported" and unsupported.value.fix
    assert await show_keys(home) == []
    assert len(demo.requests("/v5/user/query-api")) == 1


async def test_a_demo_key_whose_hourly_recheck_is_unsupported_is_not_used(
    home: Path, master_key_file: Path, demo: ReplayServer
) -> None:
    await add_key(home, "bybit-demo", KEY, SECRET, now=NOW, read_key_info=FakeKeyInfo({KEY: NARROW}))
    later = NOW + timedelta(hours=2)
    for use in (ensure_fresh_permissions, load_exchange_credentials):
        with pytest.raises(PermissionCheckUnsupported):
            await use(home, "bybit-demo", now=later, read_key_info=reader_on(demo.url))
    assert len(demo.requests("/v5/user/query-api")) == 2  # asked each time: never a silent pass


@pytest.fixture
def paper() -> Iterator[PaperExchange]:
    with start_paper_exchange(article_scenario()) as exchange:
        yield exchange


def test_pilot_keys_add_answers_an_unsupported_check_with_its_code_and_fix_never_a_traceback(
    home: Path, master_key_file: Path, paper: PaperExchange
) -> None:
    home.mkdir()
    (home / "policy.json").write_text("{}")
    answer = json.loads(FIXTURE.read_text())["exchanges"][0]["answer"]
    with Interposer(paper, [Rule("GET", "/v5/user/query-api", Answer(answer))]) as front:
        added = CliRunner().invoke(
            main,
            [*ADD, "--url", front.url, "--home", str(home)],
            input=f"{paper.api_key}\n{paper.api_secret}\n",
        )
    assert added.exit_code == 2, added.output  # a CliError: code and fix, no traceback
    error = json.loads(added.stdout)["error"]
    assert error["code"] == "key_permission_check_unsupported" and error["fix"]
    shown = CliRunner().invoke(main, ["keys", "show", "--home", str(home), "--format", "json"])
    assert json.loads(shown.stdout)["keys"] == []
