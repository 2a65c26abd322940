"""The store's contract, run on both engines: the embedded SQLite file and a PostgreSQL server.

Every test here takes `engine` ("sqlite" or "postgresql") and gets a fresh store of it: a file in a temp home,
or a schema of its own on the server named by PILOT_TEST_POSTGRES (./test and .ci/run start a throwaway
one). Without a server the PostgreSQL half is skipped, saying why, except where PILOT_REQUIRE_POSTGRES is set
(CI), where that is a failure.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from pilot.store import Store, StoreLocation, open_store
from tests.clocks import FakeClock

from ..support import T0
from .outsider import Outsider

ENGINES = ("sqlite", "postgresql")
SERVER_VARIABLE = "PILOT_TEST_POSTGRES"


def server_url() -> str:
    """The test server's URL, or skip (fail, where a server is required) when there is none."""
    url = os.environ.get(SERVER_VARIABLE)
    if url:
        return url
    if os.environ.get("PILOT_REQUIRE_POSTGRES"):
        pytest.fail(f"{SERVER_VARIABLE} is not set, but PILOT_REQUIRE_POSTGRES says a server is required")
    pytest.skip(
        f"no PostgreSQL server for the contract suite: {SERVER_VARIABLE} is not set (./test starts one when "
        "PostgreSQL's binaries are installed: apt-get install postgresql)"
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def fresh_schema(base: str) -> tuple[str, str]:
    """A new, empty schema on the server, and the URL whose connections use it."""
    import psycopg

    schema = "contract_" + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    return schema, f"{base}{separator}options=-csearch_path%3D{schema}"


def drop_schema(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture
def location(engine: str, home: Path) -> Iterator[StoreLocation]:
    """Where the store under test is: the home's SQLite file, or a fresh schema on the test server."""
    if engine == "sqlite":
        yield StoreLocation(path=home / "journal" / "pilot.db")
        return
    base = server_url()
    schema, url = fresh_schema(base)
    try:
        yield StoreLocation.parse(url)
    finally:
        drop_schema(base, schema)


@pytest.fixture
def ticks() -> FakeClock:
    """The store's clock, standing still until a test advances it."""
    return FakeClock(T0)


@pytest.fixture
async def store(location: StoreLocation, home: Path, ticks: FakeClock) -> AsyncIterator[Store]:
    async with await open_store(location, home=home, clock=ticks) as opened:
        yield opened


@pytest.fixture
def outsider(location: StoreLocation) -> Iterator[Outsider]:
    """The database as someone with its file, or a connection to its server, and no journal key sees it."""
    with Outsider.of(location) as raw:
        yield raw
