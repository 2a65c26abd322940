"""A live home against a loopback stub standing in for Bybit mainnet: the paper exchange, which answers in
Bybit V5's recorded shapes (query-api as user_apikey-info.mdx's example, DCP as order_dcp.mdx and
account_dcp-info.mdx), reached through `standing_in_for_mainnet` (pilot.exchange.bybit.urls). The home
names api.bybit.com; only the connection goes to 127.0.0.1. Nothing here can reach a real venue: the
stand-in routes every mainnet host to loopback, and a test that ran without it would fail to connect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pilot.cli import main
from pilot.exchange.adapters import standing_in_for_mainnet
from pilot.paper import PaperExchange, start_paper_exchange
from tests.scenarios import article_scenario, policy_with

TRADE = {"ContractTrade": ["Order", "Position"], "Spot": ["SpotTrade"]}
BOUND = ["203.0.113.7"]  # a documentation address (RFC 5737): the key is bound to one IP
KEYS: dict[str, dict[str, Any]] = {
    "narrow": {
        "key": "liveNarrowKey00001",
        "secret": "liveNarrowSecret0000000000000001",
        "permissions": TRADE,
        "ips": BOUND,
        "isMaster": False,
    },
    "withdraw": {
        "key": "liveWideKey0000002",
        "secret": "liveWideSecret000000000000000002",
        "permissions": {**TRADE, "Wallet": ["AccountTransfer", "Withdraw"]},
        "ips": BOUND,
    },
    "unbound": {
        "key": "liveOpenKey0000003",
        "secret": "liveOpenSecret000000000000000003",
        "permissions": TRADE,
        "ips": ["*"],
    },
    "read_only": {
        "key": "liveReadKey0000004",
        "secret": "liveReadSecret000000000000000004",
        "permissions": {},
        "ips": BOUND,
        "readOnly": True,
    },
}
# A live home's limits: per-trade and daily loss, caps on every market, a human above $1000, the dead-man's
# switch (and so DCP) at 60 s.
LIVE_POLICY = policy_with(
    maxLossPerTradeUsd=5,
    dailyLossLimitUsd=20,
    confirm={"aboveNotionalUsd": 1000},
    deadManSwitch={"afterSeconds": 60},
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def master_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "pilot" / "master.key"
    monkeypatch.setenv("PILOT_MASTER_KEY_FILE", str(path))
    return path


@pytest.fixture
def mainnet() -> Iterator[PaperExchange]:
    """The stub standing in for every Bybit mainnet host while the test runs."""
    document = article_scenario()
    document["apiKeys"] = [{"readOnly": False, **spec} for spec in KEYS.values()]
    with start_paper_exchange(document) as paper, standing_in_for_mainnet(paper.url, paper.ws_url):
        yield paper


def pilot(*args: str, input: str | None = None) -> Result:
    """`pilot ARGS` in this process (the stand-in applies), as a human at a shell would type it."""
    return CliRunner().invoke(main, list(args), input=input)


def error_code(result: Result) -> str:
    """The code of a failed command run with --format json."""
    return str(json.loads(result.stdout)["error"]["code"])


@pytest.fixture
def live_home(tmp_path: Path, master_key_file: Path, mainnet: PaperExchange) -> Path:
    """A live home with the live policy and the narrow key stored (live trading still off)."""
    home = tmp_path / "live"
    assert pilot("init", "--live", "--home", str(home)).exit_code == 0
    (home / "policy.json").write_text(json.dumps(LIVE_POLICY))
    key = KEYS["narrow"]
    added = add_key(home, key)
    assert added.exit_code == 0, added.output
    return home


def add_key(home: Path, key: dict[str, Any], host: str = "api.bybit.com") -> Result:
    return pilot(
        "keys",
        "add",
        "--exchange",
        "bybit",
        "--host",
        host,
        "--stdin",
        "--home",
        str(home),
        "--format",
        "json",
        input=f"{key['key']}\n{key['secret']}\n",
    )
