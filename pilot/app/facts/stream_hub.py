"""The stream hub: runs the cache (pilot.app.facts.stream_cache) on the event loop, fed by a stream client's
threads; reads the account again over REST whenever the private channel needs it, and pings every channel.

It also says what goes wrong, so that nothing switches streaming off unseen (`report`, the journal's
"stream.*" entries, read back by `pilot doctor` and the console: pilot.app.facts.stream_health):

* a message that could not be read, with its channel and topic: the first of each topic, then at most one
  entry a minute per topic with how many came since (the cache reads what it fed again: stream_cache);
* the private stream down: out of sync for DOWN_AFTER_SECONDS (a reconnection or a resync takes less), with
  why (refused, the connection ended, never connected, a message it could not read); and up again after.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pilot.app.answers import entry_kinds
from pilot.app.facts.stream_cache import Resync, StreamFacts, Sync, to_ms
from pilot.app.road.clock import Clock
from pilot.app.road.ports import ExchangeReader
from pilot.exchange.errors import ExchangeError
from pilot.exchange.stream_events import PRIVATE, Connected, Refused, StreamEvent, Unreadable

CLOSE_SECONDS = 5.0
DOWN_AFTER_SECONDS = 10.0  # the private channel out of sync this long is down (journaled)
UNREADABLE_EVERY_SECONDS = 60.0  # at most one journal entry per topic this often for unreadable messages
Report = Callable[[str, dict[str, Any]], Awaitable[None]]  # (entry kind, data): journal it
log = logging.getLogger(__name__)


class StreamControl(Protocol):
    """What the hub needs from a stream client (pilot.exchange.bybit.stream.BybitStreams)."""

    def ping(self) -> int:
        """Send a ping on every channel; its id (the private pong carries it back)."""
        ...

    def close(self) -> None:
        """Close for good, within a bound (seconds), so it may run on a worker thread the loop waits for;
        nothing reconnects after it returns."""
        ...


class StreamHub:
    """Runs the cache on the event loop: events hop here from the client's threads; the private channel is
    read again over REST whenever it needs it; the channels are pinged every `ping_every_ms`.

    `resync_reader` is the REST reader; `max_age_ms` reads the policy's maxFactAgeMs.
    """

    def __init__(
        self,
        facts: StreamFacts,
        rest: ExchangeReader,
        clock: Clock,
        max_age_ms: Callable[[], int],
        *,
        ping_every_ms: int = 100,
        down_after_s: float = DOWN_AFTER_SECONDS,
    ) -> None:
        self.facts = facts
        self.rest = rest
        self.clock = clock
        self.max_age_ms = max_age_ms
        self.ping_every_ms = ping_every_ms
        self.down_after_s = down_after_s
        self.client: StreamControl | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.resyncs = 0
        self.report: Report | None = None  # set once the journal is open (pilot.app.service.boot)
        self.private_down: str | None = None  # why, while the private stream is down (journaled)
        self._why = "it has not connected yet"  # why the private channel is out of sync, if it is
        self._out_since: float | None = None  # loop time it went out of sync (None: in sync)
        self._unreadable: dict[tuple[str, str], tuple[float, int]] = {}  # -> (last journaled, count since)
        self._reports: set[asyncio.Task[None]] = set()

    def now_ms(self) -> int:
        return to_ms(self.clock.now())

    def attach(self, client: StreamControl) -> None:
        """Start the resync and ping loops for `client` (call on the event loop)."""
        self.loop = asyncio.get_running_loop()
        self.client = client
        for work in (self._resync_loop(), self._ping_loop()):
            task = asyncio.create_task(work)
            self._tasks.add(task)

    def receive(self, event: StreamEvent) -> None:
        """The client's sink: safe from any thread."""
        received = self.now_ms()
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self.apply, event, received)

    def apply(self, event: StreamEvent, received_ms: int) -> None:
        self.facts.apply(event, received_ms)
        self._changed.set()
        if event.channel == PRIVATE and isinstance(event, Connected):
            self._why = "it connected but has not come in sync since (subscriptions, the account's read)"
        elif event.channel == PRIVATE and isinstance(event, Refused):
            self._why = event.reason
        if isinstance(event, Unreadable):
            if event.channel == PRIVATE:
                self._why = f"a {event.topic} message could not be read"
            self._note_unreadable(event)

    def _note_unreadable(self, event: Unreadable) -> None:
        """Journal a message that could not be read: the first of its topic, then once a minute at most."""
        now = asyncio.get_running_loop().time()
        key = (event.channel, event.topic)
        last, count = self._unreadable.get(key, (None, 0))
        count += 1
        if last is not None and now - last < UNREADABLE_EVERY_SECONDS:
            self._unreadable[key] = (last, count)
            return
        self._unreadable[key] = (now, 0)
        then = (
            "the account is read again over REST" if event.channel == PRIVATE else "its market is read again"
        )
        data = {"channel": event.channel, "topic": event.topic, "count": count, "then": then}
        self._record(entry_kinds.STREAM_UNREADABLE, data)

    def watch(self) -> None:
        """Journal the private stream down once it has been out of sync for down_after_s, and up again."""
        now = asyncio.get_running_loop().time()
        if self.facts.channel(PRIVATE).sync is Sync.IN_SYNC:
            self._out_since = None
            if self.private_down is not None:
                self.private_down = None
                self._record(entry_kinds.STREAM_STATE, {"channel": PRIVATE, "state": "up"})
            return
        if self._out_since is None:
            self._out_since = now
        if self.private_down is None and now - self._out_since >= self.down_after_s:
            self.private_down = self._why
            data = {"channel": PRIVATE, "state": "down", "reason": self._why}
            self._record(entry_kinds.STREAM_STATE, data)

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        if self.report is None:
            log.warning("stream: %s %s", kind, data)
            return
        task = asyncio.create_task(self._send_report(kind, data))
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    async def _send_report(self, kind: str, data: dict[str, Any]) -> None:
        try:
            if self.report is not None:
                await self.report(kind, data)
        except Exception:  # the journal's own failures are its own to report; a stream note never raises
            log.warning("stream: could not journal %s %s", kind, data)

    async def changed(self, timeout_s: float) -> bool:
        """Wait until an event arrives (True) or `timeout_s` passes (False)."""
        self._changed.clear()
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result when a cancel and the
            # event arrive in the same turn, and the cancelled loop ran on until close() gave up on it
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Stop the loops and the client's connections (the client's close is bounded: see StreamControl);
        a private stream journaled down is journaled closed, so nobody reads it as down after the server."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_SECONDS)
        self._tasks.clear()
        if self.private_down is not None:
            self.private_down = None
            await self._send_report(entry_kinds.STREAM_STATE, {"channel": PRIVATE, "state": "closed"})
        if self._reports:
            await asyncio.wait(list(self._reports), timeout=CLOSE_SECONDS)
        client, self.client = self.client, None
        if client is not None:
            await asyncio.to_thread(client.close)

    async def _ping_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ping_every_ms / 1000)
            self.watch()
            if self.client is not None:
                await asyncio.to_thread(self.client.ping)

    async def _resync_loop(self) -> None:
        while True:
            if not self.facts.resync_wanted():
                await self.changed(1.0)
                continue
            await self.resync()

    async def resync(self) -> None:
        """Read the account over REST for the private channel, then confirm it with a ping."""
        generation = self.facts.begin_resync()
        self.resyncs += 1
        read = await read_account(self.rest, self.facts.markets)
        if self.client is None:
            return
        ping_id = await asyncio.to_thread(self.client.ping)
        if not self.facts.finish_resync(generation, read, ping_id) and read is None:
            await asyncio.sleep(1.0)  # REST failed: try again in a second, the stream is untrusted meanwhile


async def read_account(rest: ExchangeReader, markets: dict[str, tuple[str, ...]]) -> Resync | None:
    """The private facts over REST, for a resynchronisation; None when a read failed."""
    try:
        balance, listed, positions = await asyncio.gather(
            rest.get_balance(),
            asyncio.gather(*(rest.get_open_orders(category) for category in markets)),
            asyncio.gather(*(rest.get_position("linear", symbol) for symbol in markets.get("linear", ()))),
        )
    except ExchangeError:
        return None
    orders = tuple(order for category in listed for order in category)
    return Resync(positions={p.symbol: p for p in positions}, balance=balance, open_orders=orders)
