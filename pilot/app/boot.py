"""Assembling a Runtime: the home's store, an exchange (embedded paper exchange or a stored Bybit key), a clock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

from pilot.app.clock import Clock, SystemClock
from pilot.app.gate import KeyCheck
from pilot.app.runtime import Home, Runtime, assemble_runtime
from pilot.app.upkeep import upkeep
from pilot.exchange.bybit import BybitExchange
from pilot.store import StoreError, open_store

EXCHANGES = ("paper", "bybit-demo", "bybit-testnet")


class StartupError(Exception):
    """A problem that stops Pilot from starting, stated in one line with its fix."""


@contextlib.asynccontextmanager
async def open_runtime(
    home: Path,
    *,
    exchange: str = "paper",
    scenario: Path | None = None,
    paper_url: str | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[Runtime]:
    """Open everything a server needs and close it all on exit.

    With exchange "paper" and no paper_url, an embedded paper exchange is started on 127.0.0.1 for the
    runtime's lifetime (its scenario's key needs no setup). bybit-demo and bybit-testnet use the key stored
    with `pilot keys add`, whose permissions are re-checked when the last check is over an hour old.

    Before the runtime is handed out, sends left unsettled by a server that stopped are looked up; at exit,
    work whose client went away is given time to finish before the store closes.
    """
    if exchange not in EXCHANGES:
        raise StartupError(f"unknown exchange {exchange!r}: use one of {', '.join(EXCHANGES)}")
    clock = clock or SystemClock()
    async with contextlib.AsyncExitStack() as stack:
        adapter, stored_key = await _exchange(stack, home, exchange, scenario, paper_url, clock)
        stack.push_async_callback(adapter.close)
        try:
            store = await open_store(Home(home).database_path)
        except StoreError as error:  # damaged file, unusable journal key: one line with its fix
            raise StartupError(str(error)) from None
        stack.push_async_callback(store.close)
        key_check = _key_check(home, exchange) if stored_key else None
        runtime = assemble_runtime(home, store, adapter, clock, environment=exchange, key_check=key_check)
        stack.push_async_callback(runtime.gate.drain)  # runs first: sends whose client left finish
        await upkeep(runtime)  # sends a stopped server left unsettled are looked up before any judgement
        yield runtime


def _key_check(home: Path, environment: str) -> KeyCheck:
    from pilot.app.keys import ensure_fresh_permissions

    async def check(now: datetime) -> object:
        return await ensure_fresh_permissions(home, environment, now=now)

    return check


async def _exchange(
    stack: contextlib.AsyncExitStack,
    home: Path,
    exchange: str,
    scenario: Path | None,
    url: str | None,
    clock: Clock,
) -> tuple[BybitExchange, bool]:
    """The adapter to use, and whether it uses a key stored in the home (whose permissions need checks)."""
    if exchange == "paper":
        from pilot.exchange.sim import ScenarioError, start_paper_exchange

        if url is None:
            try:
                paper = start_paper_exchange(scenario)
            except (ScenarioError, OSError) as error:
                raise StartupError(f"cannot start the paper exchange: {error}") from None
            stack.callback(paper.stop)
            adapter = BybitExchange.connect(
                "paper", api_key=paper.api_key, api_secret=paper.api_secret, base_url=paper.url
            )
            return adapter, False
    from pilot.app.keys import load_exchange_credentials
    from pilot.keys.errors import KeysError

    try:
        credentials = await load_exchange_credentials(home, exchange, now=clock.now())
    except KeysError as error:
        raise StartupError(str(error)) from None
    adapter = BybitExchange.connect(
        exchange,
        api_key=credentials.api_key,
        api_secret=credentials.api_secret,
        base_url=url or credentials.base_url,
    )
    return adapter, True
