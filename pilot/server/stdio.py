"""MCP over stdio that answers what it was asked before it stops at the end of its input.

Why: when stdin closes, the SDK cancels every request still being handled, so a client that writes its
requests and closes its end at once (a shell pipeline, the README's one-line smoke test, a script) could get
no answer at all. Here the requests read from stdin pass through a counter, the answers written to stdout
tick them off, and at the end of input the server's own input is held open until every request read has
been answered, for at most DRAIN_SECONDS (a request waiting on the client, such as a confirmation form,
never will be), then closed as before.
"""

from __future__ import annotations

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

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


async def run_stdio(mcp: MCPServer) -> None:
    """Serve `mcp` on stdin and stdout until stdin closes and what was asked is answered (or the drain ends)."""
    async with stdio_server() as (stdin, stdout):
        unanswered = _Unanswered()
        to_server, server_input = anyio.create_memory_object_stream[Incoming]()
        server_output, from_server = anyio.create_memory_object_stream[SessionMessage]()
        lowlevel = mcp._lowlevel_server
        async with anyio.create_task_group() as reading:
            reading.start_soon(_requests, stdin, to_server, unanswered)
            async with anyio.create_task_group() as writing:
                writing.start_soon(_answers, from_server, stdout, unanswered)
                await lowlevel.run(server_input, server_output, lowlevel.create_initialization_options())
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
