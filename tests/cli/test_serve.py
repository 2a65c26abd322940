"""`pilot serve`: a host other than loopback only with --allow-remote, refused in one line before anything starts."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import pilot

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "pilot.example"])
async def test_a_host_beyond_loopback_without_allow_remote_is_one_line_and_nothing_starts(tmp_path, host):
    home = tmp_path / "home"
    result = await pilot("serve", "--home", str(home), "--transport", "http", "--host", host)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not home.exists()  # refused before the home, the store or the paper exchange was opened


@pytest.mark.parametrize("seconds", ["0", "-5", "soon"])
async def test_the_session_idle_time_must_be_a_positive_number_of_seconds(tmp_path, seconds):
    result = await pilot(
        "serve", "--home", str(tmp_path), "--transport", "http", "--session-idle-seconds", seconds
    )
    assert result.exit_code == 2 and "Traceback" not in result.output


# --- what `pilot serve` says, as a process an MCP host or a human starts ----------------------------------

import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import anyio  # noqa: E402
import httpx2  # noqa: E402
from anyio.abc import Process  # noqa: E402

from pilot.app.human.desk import init_home  # noqa: E402

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Lines:
    """A process's stderr, read line by line as it arrives."""

    def __init__(self, process: Process) -> None:
        assert process.stderr is not None
        self.stream, self.buffer, self.seen = process.stderr, b"", []

    async def until(self, done: Any, limit: float = 30) -> list[str]:
        with anyio.fail_after(limit):
            while not done(self.seen):
                chunk = await self.stream.receive()
                self.buffer += chunk
                *complete, self.buffer = self.buffer.split(b"\n")
                self.seen.extend(line.decode() for line in complete)
        return self.seen

    async def rest(self) -> list[str]:
        try:
            async for chunk in self.stream:
                self.buffer += chunk
        except anyio.EndOfStream:
            pass
        self.seen.extend(line.decode() for line in self.buffer.split(b"\n") if line)
        return self.seen


def _serve(home: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "pilot", "serve", "--home", str(home), *options]


@pytest.fixture
async def made_home(tmp_path: Path) -> Path:
    await init_home(tmp_path / "home")
    return tmp_path / "home"


async def test_stdio_says_on_stderr_which_home_exchange_and_tools_it_serves(made_home: Path) -> None:
    done = subprocess.run(
        _serve(made_home, "--tools", "read"),
        input=(json.dumps(INITIALIZE) + "\n").encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    stderr = done.stderr.decode()

    assert json.loads(done.stdout.splitlines()[0])["id"] == 1  # stdout is the protocol alone
    assert "MCP over stdio" in stderr and f"home:      {made_home}" in stderr
    assert "exchange:  paper (the home's, shared" in stderr and "tools:     read (11)" in stderr


@pytest.mark.parametrize("quiet", [False, True], ids=["access lines", "--quiet"])
async def test_http_prints_a_banner_then_one_access_line_per_request(made_home: Path, quiet: bool) -> None:
    options = ["--transport", "http", "--port", "0", *(["--quiet"] if quiet else [])]
    process = await anyio.open_process(_serve(made_home, *options), stdin=subprocess.DEVNULL)
    try:
        lines = Lines(process)
        banner = await lines.until(lambda seen: any("Press Ctrl+C" in line for line in seen))
        url = re.search(r"on (http://\S+/mcp)", "\n".join(banner)).group(1)  # type: ignore[union-attr]
        token = await _issue_token(made_home)
        async with httpx2.AsyncClient(timeout=10) as http:
            refused = await http.post(url, json=INITIALIZE, headers=HEADERS)
            answered = await http.post(
                url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"}
            )
            metadata = await http.get(
                url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"),
                headers={"Authorization": f"Bearer {token}"},
            )
        if not quiet:
            await lines.until(lambda seen: sum(" POST /mcp " in line for line in seen) == 2)
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            everything = await lines.rest()
            await process.wait()
    finally:
        if process.returncode is None:  # a failed step must not leave the server running
            process.kill()
        await process.aclose()

    text = "\n".join(banner)
    assert f"home:      {made_home}" in text and "exchange:  paper" in text
    assert "pilot token issue NAME --home" in text
    assert (refused.status_code, answered.status_code) == (401, 200)
    assert "resource_metadata" not in refused.headers["www-authenticate"]
    assert "pilot token issue" in refused.json()["error_description"]
    assert metadata.status_code == 404  # no OAuth is served, so no OAuth metadata either
    access = [line for line in everything if " POST /mcp " in line]
    if quiet:
        assert access == []
    else:
        assert len(access) == 2 and " 401 " in access[0] and " 200 " in access[1]
        assert "initialize" in access[1] and "pilot_" not in "\n".join(everything)  # never a token
    assert not any("Traceback" in line for line in everything)


async def _issue_token(home: Path) -> str:
    from pilot.app.human.desk import issue_token, open_desk

    async with open_desk(home) as runtime:
        return await issue_token(runtime, "tester")


@pytest.mark.parametrize("tools", ["everything", "plan_order,approve"])
async def test_an_unknown_tool_set_is_refused_before_anything_starts(made_home: Path, tools: str) -> None:
    result = await pilot("serve", "--home", str(made_home), "--tools", tools)
    assert result.exit_code == 2 and "read, trade, all" in result.output
    assert not (made_home / "paper").exists()


async def test_a_port_in_use_is_one_line_with_the_fix(made_home: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = await pilot("serve", "--home", str(made_home), "--transport", "http", "--port", port)
    assert result.exit_code == 2 and "--port" in result.output and "Traceback" not in result.output
