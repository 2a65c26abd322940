"""Streaming never goes off unseen: a message Pilot cannot read is journaled with its topic and what it fed is
read again while the stream stays on; a private stream that stays down is journaled with why, and
`pilot doctor` and the console say both. Real streams from the paper exchange on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.facts.stream_health import stream_trouble
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import journal_stream_troubles
from pilot.app.service.doctor import check_streams
from pilot.console.overview import overview
from pilot.exchange.stream_events import PRIVATE
from pilot.paper import PaperExchange
from tests.app.conftest import FakeClock
from tests.app.test_streams_runtime import in_sync, streamed_runtime, streams, until

pytestmark = pytest.mark.anyio
A_POSITION_PILOT_CANNOT_READ = {
    "id": "paper-x",
    "topic": "position",
    "creationTime": 1,
    "data": [{"symbol": "BTCUSDT", "side": "Buy", "size": "0.1", "entryPrice": "not a number"}],
}


@pytest.fixture
async def runtime(tmp_path: Path, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    async with streamed_runtime(tmp_path, paper, clock) as opened:
        journal_stream_troubles(opened.exchange, opened.store, clock)  # as `pilot serve` wires it
        yield opened


async def entries(runtime: Runtime, kind: str) -> list[dict[str, object]]:
    return [entry.data for entry in await runtime.store.journal.entries(kind=kind)]


async def test_an_unreadable_message_is_journaled_and_its_facts_read_again_with_the_stream_on(
    runtime: Runtime, paper: PaperExchange
) -> None:
    hub = streams(runtime).hub
    resyncs = hub.resyncs
    paper.streams.push_raw("/v5/private", json.dumps(A_POSITION_PILOT_CANNOT_READ))
    await until(runtime, lambda: hub.resyncs > resyncs and in_sync(runtime))
    await until(runtime, lambda: not hub._reports)
    noted = await entries(runtime, entry_kinds.STREAM_UNREADABLE)
    assert [(n["channel"], n["topic"], n["count"]) for n in noted] == [(PRIVATE, "position", 1)]
    assert await entries(runtime, entry_kinds.STREAM_STATE) == []  # never down: read again at once
    trouble = await stream_trouble(runtime.store.journal, runtime.clock.now())
    assert trouble is not None and trouble.down is None and "position" in trouble.unreadable[0]
    checks = await check_streams(runtime.home.store(), runtime.home.path, runtime.clock.now())
    assert [(c.name, c.ok) for c in checks] == [("streams", False)]
    view = await overview(runtime, None)
    assert view.streams == trouble.lines()


async def test_a_private_stream_that_stays_down_is_journaled_with_why_and_up_again(
    runtime: Runtime, paper: PaperExchange
) -> None:
    hub = streams(runtime).hub
    hub.down_after_s = 0.0  # the grace a reconnection gets, here none
    paper.stream_faults.unavailable = True
    paper.drop_streams()
    await until(runtime, lambda: hub.private_down is not None)
    await until(runtime, lambda: not hub._reports)
    (down,) = await entries(runtime, entry_kinds.STREAM_STATE)
    assert (down["channel"], down["state"], down["reason"]) == (PRIVATE, "down", "the connection ended")
    trouble = await stream_trouble(runtime.store.journal, runtime.clock.now())
    assert trouble is not None and trouble.down is not None and "the connection ended" in trouble.down
    assert (await overview(runtime, None)).streams == trouble.lines()
    paper.stream_faults.unavailable = False
    await until(runtime, lambda: hub.private_down is None and in_sync(runtime))
    await until(runtime, lambda: not hub._reports)
    assert [e["state"] for e in await entries(runtime, entry_kinds.STREAM_STATE)] == ["down", "up"]
    assert await stream_trouble(runtime.store.journal, runtime.clock.now()) is None
    assert await check_streams(runtime.home.store(), runtime.home.path, runtime.clock.now()) == []
