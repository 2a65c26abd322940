"""A small HTTP/1.1 keep-alive server on its own thread and event loop, with transport-level fault injection."""

from __future__ import annotations

import asyncio
import contextlib
import decimal
import signal
import threading
from collections.abc import Callable
from typing import Any

from pilot.paper.dispatch import Dispatcher, Reply
from pilot.paper.faults import FaultBook
from pilot.paper.scenario import FaultSpec

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
MAX_HEADER_BYTES = 64 * 1024


def render(reply: Reply) -> bytes:
    lines = [
        f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, 'Error')}",
        f"Content-Type: {reply.content_type}",
        f"Content-Length: {len(reply.body)}",
    ]
    lines += [f"{name}: {value}" for name, value in reply.headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + reply.body


class HttpServer:
    """Serves the dispatcher on 127.0.0.1. `start()` returns once the socket listens; `stop()` joins the thread."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        faults: FaultBook,
        latency_ms: Callable[[str], float],
        clock_ms: Callable[[], int],
        port: int = 0,
        before_request: Callable[[], object] = lambda: None,
    ) -> None:
        self.dispatcher = dispatcher
        self.faults = faults
        self.latency_ms = latency_ms
        self.clock_ms = clock_ms  # the server clock (an injected 10006's reset time is in the callers' frame)
        self.before_request = before_request  # the market catches up with its clock before each answer
        self.port = port
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="paper-exchange", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self.working = 0  # requests read and not yet answered (held by a latency fault, say)

    def _run(self) -> None:
        # Ctrl+C and SIGTERM are for the main thread: a signal the kernel hands to this thread instead only
        # trips Python's flag, and a main thread blocked in a lock's wait (`pilot sim`) would never see it.
        # Threads started from this one inherit the mask.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        self.loop.run_forever()

    def start(self) -> None:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self.loop)
        future.result(timeout=5)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, limit=MAX_HEADER_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        # Tasks inherit the decimal context of whoever started the server (contextvars); the exchange's
        # numbers must not depend on a caller's rounding, so each connection gets Python's default one.
        decimal.setcontext(decimal.Context())
        self._connections.add(task)
        try:
            while await self._one_request(reader, writer):
                pass
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # shutdown: end quietly (start_server's callback would log a cancelled task)
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read, answer (or misbehave), and say whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        self.working += 1
        try:
            return await self._handle(head, reader, writer)
        finally:
            self.working -= 1

    async def _handle(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        body = await reader.readexactly(length) if length else b""
        path, _, query = target.partition("?")
        keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
        fault = self.faults.receive(path)
        delay = self.latency_ms(path) + (fault.delay_ms if fault and fault.kind == "latency" else 0)
        if delay:
            await asyncio.sleep(delay / 1000)
        reply = self._answer(fault, method, path, query, body, headers)
        if fault is not None and fault.kind == "drop":
            return False  # processed, then the connection is closed without a word
        data = render(reply)
        if fault is not None and fault.kind == "drip":
            await self._drip(writer, data, fault.interval_ms)
            return False
        writer.write(data)
        await writer.drain()
        return keep_alive

    def _answer(
        self,
        fault: FaultSpec | None,
        method: str,
        path: str,
        query: str,
        body: bytes,
        headers: dict[str, str],
    ) -> Reply:
        kind = fault.kind if fault else None
        self.before_request()
        if kind in ("http_5xx", "http_4xx"):
            assert fault is not None
            status = fault.status or (503 if kind == "http_5xx" else 429)
            return Reply(status, b"<html><body>error</body></html>", content_type="text/html")
        if kind == "rate_limit":
            now = self.clock_ms()
            return self.dispatcher.rate_limited(now, now + 1000)
        reply = self.dispatcher.handle(method, path, query, body, headers, processing=kind == "processing")
        if kind == "non_json":
            return Reply(200, b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        return reply

    @staticmethod
    async def _drip(writer: asyncio.StreamWriter, data: bytes, interval_ms: float) -> None:
        """Send the answer one byte at a time, slower than any sensible client timeout."""
        for index in range(len(data)):
            await asyncio.sleep(interval_ms / 1000)
            if writer.is_closing():
                return
            writer.write(data[index : index + 1])
            await writer.drain()
