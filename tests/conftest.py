"""Shared test setup: hypothesis profiles (CI runs at least 500 examples per property), a private user home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.full_disk import Disk, small_disk

settings.register_profile(
    "ci",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "thorough",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def user_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs as a user whose home directory is a fresh temp folder, never the real one.

    The journal key (and the vault's master key, unless a test names one) defaults to ~/.config/pilot/, so
    it lands here. HOME is one of the few variables an MCP host passes to `pilot serve`, so a server the test
    starts as a subprocess finds the same key as the test itself.
    """
    home = tmp_path_factory.mktemp("user-home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PILOT_JOURNAL_KEY_FILE", raising=False)
    monkeypatch.delenv("PILOT_MASTER_KEY_FILE", raising=False)
    monkeypatch.delenv("PILOT_STORE", raising=False)  # every home on its own SQLite file unless a test says
    return home


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    """A small disk to put a Pilot home on, filled and freed at will (root only: skipped elsewhere)."""
    with small_disk(tmp_path) as mounted:
        yield mounted


@pytest.fixture(autouse=True)
def no_paper_exchange_left(tmp_path: Path, user_home: Path) -> Iterator[None]:
    """Stop any home paper exchange a `pilot serve` of this test started in its own process (it would stop
    itself a minute after its last server; a test does not leave it that minute), in its temp folder or
    its user's home (the pages' `~/pilot-home`)."""
    yield
    from pilot.paper.sharing import stop_serving, users_path
    from pilot.paper.state import read_holder

    name = users_path(Path("state.json")).name
    for users in [*tmp_path.rglob(name), *user_home.rglob(name)]:
        state = users.with_name("state.json")
        if read_holder(state).get("pid") not in (None, os.getpid()):
            stop_serving(state)
