"""MCP over stdio that answers what it was asked before it stops at the end of its input.

Why: when stdin closes, the SDK cancels every request still being handled, so a client that writes its
requests and closes its end at once (a shell pipeline, the docs' one-line smoke test, a script) could get
no answer at all. Here the requests read from stdin pass through a counter, the answers written to stdout
tick them off, and at the end of input the server's own input is held open until every request read has
been answered, for at most DRAIN_SECONDS (a request waiting on the client, such as a confirmation form,
never will be), then closed as before.

When stdin and stdout are pipes or sockets (as an MCP host starts a server), they are read and written on
the event loop itself (asyncio pipe transports): the SDK's own stdio wraps them in files whose every
readline, write and flush is a trip to a worker thread, three a call. As the SDK does, the process's own
fd 0 and 1 then point at the null device and at stderr while serving, so a stray print cannot corrupt
the protocol; both are restored at the end. Anything else (a file, a terminal) is left to the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from pilot.server import sdk

DRAIN_SECONDS = 5.0

Incoming = SessionMessage | Exception


class _Unanswered:
    """The ids of requests read but not yet answered."""

    def __init__(self) -> None:
        self.ids: set[str | int] = set()
        self.changed = anyio.Event()

    def asked(self, message: Incoming) -> None:
        if isinstance(message, SessionMessage) and isinstance(message.message, JSONRPCRequest):
            self.ids.add(message.message.id)

    def answered(self, message: SessionMessage) -> None:
        if isinstance(message.message, JSONRPCResponse | JSONRPCError) and message.message.id is not None:
            self.ids.discard(message.message.id)
            self.changed.set()

    async def none_left(self) -> None:
        while self.ids:
            self.changed = anyio.Event()
            await self.changed.wait()


MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSON-RPC message; the SDK's own reader has no bound


async def run_stdio(mcp: MCPServer) -> None:
    """Serve `mcp` on stdin and stdout until stdin closes and what was asked is answered (or the drain ends)."""
    async with _wire() as wire, stdio_server(*wire) as (stdin, stdout):
        unanswered = _Unanswered()
        to_server, server_input = anyio.create_memory_object_stream[Incoming]()
        server_output, from_server = anyio.create_memory_object_stream[SessionMessage]()
        async with anyio.create_task_group() as reading:
            reading.start_soon(_requests, stdin, to_server, unanswered)
            async with anyio.create_task_group() as writing:
                writing.start_soon(_answers, from_server, stdout, unanswered)
                await sdk.serve_streams(mcp, server_input, server_output)
            # The server closed its output and every answer reached stdout; stop reading if stdin is still open.
            reading.cancel_scope.cancel()


async def _requests(
    stdin: ObjectReceiveStream[Incoming], to_server: ObjectSendStream[Incoming], unanswered: _Unanswered
) -> None:
    async with to_server:
        async for message in stdin:
            unanswered.asked(message)
            await to_server.send(message)
        with anyio.move_on_after(DRAIN_SECONDS):
            await unanswered.none_left()


async def _answers(
    from_server: ObjectReceiveStream[SessionMessage],
    stdout: ObjectSendStream[SessionMessage],
    unanswered: _Unanswered,
) -> None:
    async with stdout:
        async for message in from_server:
            await stdout.send(message)
            unanswered.answered(message)


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def _wire() -> AsyncIterator[tuple[Any, Any]]:
    """stdin and stdout as line readers and writers on the event loop; (None, None): leave them to the SDK."""
    if not (_pipe_or_socket(0) and _pipe_or_socket(1)):
        yield None, None
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = (os.dup(fd) for fd in (0, 1))
    kept = [os.dup(0), os.dup(1)]  # to put back on fd 0 and 1 at the end
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    read_pipe = os.fdopen(wire_in, "rb", buffering=0)
    write_pipe = os.fdopen(wire_out, "wb", buffering=0)
    reading, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_pipe)
    writing, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, write_pipe)
    writer = asyncio.StreamWriter(writing, cast(Any, protocol), None, loop)
    try:
        yield _Lines(reader), _Writes(writer)
    finally:
        reading.close()
        writing.close()
        for fd, saved in zip((0, 1), kept, strict=True):
            with contextlib.suppress(OSError):  # the transports made the pipe non-blocking: undo it
                os.set_blocking(saved, True)
            os.dup2(saved, fd)
            os.close(saved)


class _Lines:
    """stdin's lines, as the SDK reads them from a file (decoded, bad bytes replaced)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writes:
    """stdout, as the SDK writes to a file: write a line, then flush (here: until the pipe took it)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()
