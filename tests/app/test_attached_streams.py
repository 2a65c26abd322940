"""`pilot serve --paper-url URL` streams too: it asks the paper exchange where its WebSocket side is.

A `pilot sim` answers GET /pilot/streams with its ws://127.0.0.1:PORT; a venue that does not (an older sim,
a recording served back) or names a place off loopback is read over REST only, and with `--streams` asked
for explicitly Pilot does not start. Asserted on state: the runtime's reader and each fact's source.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from click.testing import CliRunner

from pilot.app.facts.streaming_reader import StreamingReader
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import StartupError, open_runtime
from pilot.cli import main
from pilot.exchange.stream_events import PRIVATE
from pilot.paper import PaperExchange
from tests.app.conftest import FakeClock, write_policy
from tests.app.test_streams_runtime import FACT_READS, SELL, reads
from tests.exchange.test_bybit_stream import envelope, venue_answering
from tests.scenarios import ARTICLE

pytestmark = pytest.mark.anyio
NOT_A_STREAMING_SIM = {
    "an older sim": (envelope({}, code=10017), 404),
    "a place off loopback": (envelope({"url": "ws://192.0.2.7:9000"}), 200),
}


async def until_in_sync(runtime: Runtime, timeout: float = 10.0) -> None:
    """Wait (bounded, on stream events) until every channel may be judged on."""
    reader = runtime.exchange
    assert isinstance(reader, StreamingReader)
    deadline = asyncio.get_running_loop().time() + timeout
    while not all(reader.facts.usable(c, reader.hub.now_ms(), 300) for c in ("linear", "spot", PRIVATE)):
        left = deadline - asyncio.get_running_loop().time()
        assert left > 0, "the streams did not get in sync in time"
        await reader.hub.changed(min(left, 0.5))


async def judged_on_streams(runtime: Runtime) -> None:
    """Once in sync, a plan's every fact comes from the streams (none from REST)."""
    await until_in_sync(runtime)
    plan = await plan_order(runtime, SELL)
    assert plan.status == "ok" and plan.snapshot is not None and plan.snapshot.fact_sources is not None
    assert set(plan.snapshot.fact_sources.values()) == {"stream"}


async def test_a_server_attached_to_a_paper_exchange_judges_on_its_streams(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock
) -> None:
    write_policy(tmp_path)
    async with open_runtime(tmp_path, paper_url=paper.url, scenario=ARTICLE, clock=clock) as runtime:
        assert isinstance(runtime.exchange, StreamingReader)
        await until_in_sync(runtime)
        before = reads(paper, FACT_READS)
        await judged_on_streams(runtime)
        assert reads(paper, FACT_READS) == before
    assert paper.request_count("/pilot/streams") == 1


@pytest.mark.parametrize("streams, record", [(False, False), (None, True)])
async def test_no_streams_when_told_so_or_when_recording(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock, streams: bool | None, record: bool
) -> None:
    """A recording must hold every fact a session read, so --record reads over REST unless --streams."""
    write_policy(tmp_path)
    recording = tmp_path / "recording" if record else None
    async with open_runtime(
        tmp_path, paper_url=paper.url, scenario=ARTICLE, clock=clock, streams=streams, record_dir=recording
    ) as runtime:
        assert not isinstance(runtime.exchange, StreamingReader)
    assert paper.request_count("/pilot/streams") == 0


@pytest.mark.parametrize("venue", sorted(NOT_A_STREAMING_SIM))
async def test_a_venue_that_names_no_loopback_stream_is_read_over_rest(
    tmp_path: Path, clock: FakeClock, venue: str
) -> None:
    write_policy(tmp_path)
    with venue_answering(*NOT_A_STREAMING_SIM[venue]) as url:
        async with open_runtime(tmp_path, paper_url=url, scenario=ARTICLE, clock=clock) as runtime:
            assert not isinstance(runtime.exchange, StreamingReader)
        with pytest.raises(StartupError) as refused:
            async with open_runtime(tmp_path, paper_url=url, scenario=ARTICLE, clock=clock, streams=True):
                pass
    assert refused.value.code == "no_streams" and refused.value.fix


async def test_pilot_serve_says_no_streams_and_serves_unless_they_were_asked_for(tmp_path: Path) -> None:
    write_policy(tmp_path)
    with venue_answering(*NOT_A_STREAMING_SIM["an older sim"]) as url:
        args = ["serve", "--home", str(tmp_path), "--paper-url", url, "--scenario", str(ARTICLE)]
        served = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, args))  # stdin ends at once
        refused = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, [*args, "--streams"]))
    assert served.exit_code == 0, served.output
    assert refused.exit_code == 2, refused.output


@contextlib.contextmanager
def pilot_sim(*args: str) -> Iterator[dict[str, Any]]:
    """`pilot sim --format json` in its own process: what it printed; stopped with SIGTERM at exit.

    SIGTERM, not Ctrl+C's SIGINT: a suite started in the background (`./test &`) starts every child with SIGINT
    ignored, and `pilot sim` then rightly keeps ignoring it. Its stderr goes to a file and faulthandler is on:
    if SIGTERM does not stop it, SIGABRT makes it write where each of its threads stands.
    """
    with tempfile.TemporaryFile(mode="w+") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "pilot", "sim", "--format", "json", *args],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=os.environ | {"PYTHONFAULTHANDLER": "1"},
        )
        try:
            assert process.stdout is not None
            lines = [process.stdout.readline()]
            while lines[-1] and lines[-1].rstrip() != "}":  # one JSON object, indented
                lines.append(process.stdout.readline())
            yield json.loads("".join(lines))
        finally:
            stopped_by_sigterm(process, errors)


def stopped_by_sigterm(process: subprocess.Popen[str], errors: IO[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        process.wait(timeout=10)
        errors.seek(0)
        pytest.fail(f"pilot sim did not stop on SIGTERM; its threads:\n{errors.read()}")
    finally:
        if process.stdout is not None:
            process.stdout.close()


async def test_a_pilot_sim_process_says_where_its_streams_are_and_an_attached_server_uses_them(
    tmp_path: Path, clock: FakeClock
) -> None:
    write_policy(tmp_path)
    with pilot_sim("--scenario", str(ARTICLE)) as printed:
        assert printed["ws_url"].startswith("ws://127.0.0.1:") and printed["url"].startswith(
            "http://127.0.0.1:"
        )
        async with open_runtime(tmp_path, paper_url=printed["url"], scenario=ARTICLE, clock=clock) as runtime:
            assert isinstance(runtime.exchange, StreamingReader)
            await judged_on_streams(runtime)
