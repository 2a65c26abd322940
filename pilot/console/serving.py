"""Serving the console app with uvicorn inside a running event loop, on a loopback port (tests, benchmarks)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn
from starlette.types import ASGIApp


@contextlib.asynccontextmanager
async def serving(app: ASGIApp, port: int = 0) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1:`port` (0: a free one) in this event loop; yields its base URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    bound = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1, access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # a bounded wait on a condition
                if task.done():
                    task.result()  # raises what stopped it
                    raise RuntimeError("the console stopped before it started")
                await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{bound}"
    finally:
        server.should_exit = True
        async with asyncio.timeout(10):
            await task
        listener.close()
