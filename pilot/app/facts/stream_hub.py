"""The stream hub: runs the cache (pilot.app.facts.stream_cache) on the event loop, fed by a stream client's
threads; reads the account again over REST whenever the private channel needs it, and pings every channel."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

from pilot.app.facts.stream_cache import Resync, StreamFacts, to_ms
from pilot.app.road.clock import Clock
from pilot.app.road.ports import ExchangeReader
from pilot.exchange.errors import ExchangeError
from pilot.exchange.stream_events import StreamEvent

CLOSE_SECONDS = 5.0


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
    ) -> None:
        self.facts = facts
        self.rest = rest
        self.clock = clock
        self.max_age_ms = max_age_ms
        self.ping_every_ms = ping_every_ms
        self.client: StreamControl | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.resyncs = 0

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
        """Stop the loops and the client's connections (the client's close is bounded: see StreamControl)."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_SECONDS)
        self._tasks.clear()
        client, self.client = self.client, None
        if client is not None:
            await asyncio.to_thread(client.close)

    async def _ping_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ping_every_ms / 1000)
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
