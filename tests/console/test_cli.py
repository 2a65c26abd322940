"""`pilot console token`: a login secret shown once and kept only as a hash, apart from the agents' tokens."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from pilot.app.human.desk import init_home
from pilot.console.login import secret_matches, secret_path
from tests.cli.conftest import pilot

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_secret_is_shown_once_and_only_its_hash_is_kept(tmp_path: Path) -> None:
    await init_home(tmp_path)

    first = await pilot("console", "token", "--home", str(tmp_path), "--format", "json")
    second = await pilot("console", "token", "--home", str(tmp_path))

    assert first.exit_code == 0 and second.exit_code == 0, (first.output, second.output)
    old = json.loads(first.stdout)["secret"]
    new = second.stdout.strip()
    stored = secret_path(tmp_path).read_text()
    assert old not in stored and new not in stored
    assert stat.S_IMODE(secret_path(tmp_path).stat().st_mode) == 0o600
    assert secret_matches(tmp_path, new) and not secret_matches(tmp_path, old)  # a new secret replaces it


async def test_the_console_will_not_start_without_a_secret(tmp_path: Path) -> None:
    await init_home(tmp_path)

    result = await pilot("console", "--home", str(tmp_path), "--port", "0")

    assert result.exit_code == 2 and "pilot console token" in result.output


async def test_pilot_console_serves_the_login_page_on_loopback(tmp_path: Path) -> None:
    import asyncio
    import re
    import sys
    import urllib.request

    await init_home(tmp_path)
    await pilot("console", "token", "--home", str(tmp_path))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pilot", "console", "--home", str(tmp_path), "--port", "0",
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        url = None
        async with asyncio.timeout(30):
            while url is None:
                line = (await process.stderr.readline()).decode()
                assert line, "pilot console stopped before it served"
                found = re.search(r"http://127\.0\.0\.1:\d+/", line)
                url = found.group(0) if found else None
        with urllib.request.urlopen(url + "login", timeout=10) as answer:
            assert answer.status == 200 and b"console secret" in answer.read()
    finally:
        process.terminate()
        async with asyncio.timeout(30):
            await process.wait()


@pytest.mark.parametrize(
    ("made_with", "exchange", "code"),
    [
        (["init"], "bybit-demo", "no_key_stored"),
        (["init", "--live", "--exchange", "okx"], "okx-demo", "live_home_only_okx"),
    ],
)
async def test_a_console_that_cannot_open_its_venue_says_so_as_serve_does(
    tmp_path: Path, made_with: list[str], exchange: str, code: str
) -> None:
    """No key stored, a venue the home refuses: one error with its code and fix, exit 2 (it ended in the web
    app's start-up traceback), before any page is served."""
    home = tmp_path / "home"
    assert (await pilot(*made_with, "--home", str(home))).exit_code == 0
    await pilot("console", "token", "--home", str(home))
    args = ["console", "--exchange", exchange, "--home", str(home), "--port", "0", "--format", "json"]
    result = await pilot(*args)
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"]["code"] == code


async def test_a_console_reading_a_paper_exchange_elsewhere_serves_its_pages(tmp_path: Path) -> None:
    """--paper-url: the venue opened first, then the pages, read through it."""
    import asyncio
    import re
    import sys
    import urllib.request

    from pilot.paper import start_paper_exchange

    await init_home(tmp_path)
    await pilot("console", "token", "--home", str(tmp_path))
    with start_paper_exchange() as paper:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pilot", "console", "--home", str(tmp_path), "--port", "0",
            "--exchange", "paper", "--paper-url", paper.url, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert process.stderr is not None
            url = None
            async with asyncio.timeout(30):
                while url is None:
                    line = (await process.stderr.readline()).decode()
                    assert line, "pilot console stopped before it served"
                    found = re.search(r"http://127\.0\.0\.1:\d+/", line)
                    url = found.group(0) if found else None
            answer = await asyncio.to_thread(urllib.request.urlopen, url + "login", timeout=10)
            with answer:
                assert answer.status == 200
        finally:
            process.terminate()
            async with asyncio.timeout(30):
                await process.wait()
