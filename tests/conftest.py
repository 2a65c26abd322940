"""Shared test setup: hypothesis profiles (CI runs at least 500 examples per property), a private user home."""

from __future__ import annotations

import os
import stat
import sys
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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep pytest-xdist's groups (`--dist loadgroup`, ./test's): xdist (3.8) marks a test of an xdist_group
    by writing `ID@GROUP` to the item's `_nodeid`, but pytest 9.2 reads a node's id from `_id`, so the mark
    was lost and every group's tests spread over every worker (the console's Chromium launched on each, the
    served answers served on each). Runs after xdist's hook, and only where it wrote an id of its own."""
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # a pytest before 9.2 reads `_nodeid` itself
        return
    for item in items:
        wanted = getattr(item, "_nodeid", None)
        if isinstance(wanted, str) and wanted != item.nodeid:
            item._id = coerce_node_id(wanted)


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


@pytest.fixture
def shell_env(tmp_path: Path, user_home: Path) -> dict[str, str]:
    """A PATH whose `pilot` is this checkout's (as `pipx install .` would put one there) and HOME as `~`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "pilot"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pilot "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PILOT_")}
    return {**environment, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(user_home)}


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
