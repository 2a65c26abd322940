"""The venue's own backstop for a live home: Bybit's Disconnect Cancel All (DCP), set, verified and held.

At start, DCP is set for derivatives and spot to the dead-man's window (policy.json's
deadManSwitch.afterSeconds, brought into Bybit's 3-300 s), read back with query-dcp-info until Bybit
reports it ON with that window, and a private connection subscribed to the `dcp` topics is opened and kept
for as long as the server runs. If Pilot dies, its host loses the network or the connection drops for
longer than the window, Bybit itself cancels every order: the dead-man's switch that does not need Pilot
to be alive. A home where any of this fails does not start (StartupError "dcp_not_set"). Every step, and
every event of the connection, is journaled (kind `dcp`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.road.ports import DisconnectProtection, Exchange
from pilot.app.runtime.runtime import Runtime
from pilot.core.policy.live_limits import dcp_window
from pilot.exchange.errors import ExchangeError

PRODUCTS = ("DERIVATIVES", "SPOT")
VERIFY_TRIES = 12  # Bybit: a new setting "needs a certain time to take effect" (order/dcp.mdx)
VERIFY_PAUSE_SECONDS = 1.0


class BackstopFailed(Exception):
    """DCP could not be set, verified or held; the message says which (never the exchange's text)."""


async def start_backstops(
    runtime: Runtime,
    stack: contextlib.AsyncExitStack,
    adapter: Exchange,
    credentials: tuple[str, str] | None,
) -> None:
    """Set, verify and hold DCP for a live runtime.

    Raises:
        BackstopFailed: any step failed (journaled); the server must not start.
    """
    window = dcp_window(runtime.policy().policy)
    try:
        if window is None or credentials is None or not isinstance(adapter, DisconnectProtection):
            raise BackstopFailed("no dead-man's window or no key to set it with")
        await _set_and_verify(runtime, adapter, window)
        await _hold(runtime, stack, adapter.base_url, credentials)
    except BackstopFailed as error:
        await _journal(runtime, {"event": "failed", "problem": str(error)})
        raise


async def _set_and_verify(runtime: Runtime, adapter: DisconnectProtection, window: int) -> None:
    try:
        for product in PRODUCTS:
            await adapter.set_dcp(product, window)
        await _journal(runtime, {"event": "set", "window_seconds": window, "products": list(PRODUCTS)})
        for attempt in range(VERIFY_TRIES):
            found = await adapter.dcp_windows()
            if all(found.get(product) == window for product in PRODUCTS):
                await _journal(runtime, {"event": "verified", "windows": found})
                return
            if attempt + 1 < VERIFY_TRIES:
                await asyncio.sleep(VERIFY_PAUSE_SECONDS)  # Bybit's own delay, not a test's
    except ExchangeError as error:
        raise BackstopFailed(f"the exchange did not take it ({type(error).__name__})") from None
    raise BackstopFailed(f"query-dcp-info does not report {window} s ON for {', '.join(PRODUCTS)}")


async def _hold(
    runtime: Runtime, stack: contextlib.AsyncExitStack, base_url: str, credentials: tuple[str, str]
) -> None:
    """Open the `dcp` connection for the runtime's life; its events go to the journal."""
    from pilot.exchange.adapters import open_dcp_connection

    loop, pending = asyncio.get_running_loop(), set[asyncio.Task[None]]()

    def heard(what: str, data: dict[str, Any]) -> None:  # on the connection's thread
        def journal() -> None:
            task = loop.create_task(_journal(runtime, {"event": what, **data}))
            pending.add(task)
            task.add_done_callback(pending.discard)

        with contextlib.suppress(RuntimeError):  # the loop closed: the server is gone
            loop.call_soon_threadsafe(journal)

    connection = open_dcp_connection(
        base_url, api_key=credentials[0], api_secret=credentials[1], products=PRODUCTS, sink=heard
    )
    stack.push_async_callback(_settle, pending)
    stack.callback(connection.close)
    if not await asyncio.to_thread(connection.start):
        raise BackstopFailed("the private connection subscribed to `dcp` did not open")


async def _settle(pending: set[asyncio.Task[None]]) -> None:
    if pending:
        await asyncio.wait(set(pending), timeout=2)


async def _journal(runtime: Runtime, data: dict[str, Any]) -> None:
    await runtime.store.journal.append(entry_kinds.DCP, data, now=runtime.now(), actor="pilot")
