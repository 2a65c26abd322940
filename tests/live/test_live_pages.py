"""The console of a live home says LIVE on every page (base.html, which every whole page extends); a
practice home's does not."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest

from tests.console.conftest import serve_console

from .conftest import pilot

pytestmark = pytest.mark.anyio


def page(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    with opener.open(url, timeout=10) as answer:
        return str(answer.read().decode())


@pytest.mark.parametrize("live", [True, False])
async def test_the_console_of_a_live_home_carries_the_live_banner(tmp_path: Path, live: bool):
    home = tmp_path / "home"
    made = await asyncio.to_thread(pilot, "init", *(["--live"] if live else []), "--home", str(home))
    assert made.exit_code == 0
    async with serve_console(home) as url:
        login = await asyncio.to_thread(page, f"{url}/login")
    assert ('class="live-banner"' in login) is live
