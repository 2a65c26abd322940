"""Assembling a Runtime: the home's store, an exchange (embedded paper exchange or a venue's stored key), a clock."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pilot.app.human.kill_switch import stop_on_rollback
from pilot.app.road.clock import Clock, SystemClock, store_clock
from pilot.app.road.ports import Exchange, ExchangeReader
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime, is_live, read_policy
from pilot.app.service.key_watch import KeyWatch
from pilot.app.service.upkeep import upkeep
from pilot.core.errors import ErrorCode
from pilot.exchange.adapters import ENVIRONMENTS, connect_exchange, streams_served
from pilot.exchange.stream_events import NoStreams
from pilot.store import Store, StoreError, open_store

if TYPE_CHECKING:
    from pilot.paper.lock import StateInUse

EXCHANGES = ENVIRONMENTS  # paper, bybit-demo, bybit-testnet, bybit (live), okx-demo, okx (live): adapters
log = logging.getLogger("pilot.boot")


class StartupError(Exception):
    """A problem that stops Pilot from starting, stated in one line, with a stable code and, apart, its fix
    when the line does not already say it."""

    def __init__(
        self, message: str, *, code: ErrorCode = ErrorCode.CANNOT_START, fix: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.fix = fix


@contextlib.asynccontextmanager
async def open_runtime(
    home: Path,
    *,
    exchange: str = "paper",
    scenario: Path | None = None,
    paper_url: str | None = None,
    record_dir: Path | None = None,
    clock: Clock | None = None,
    streams: bool | None = None,
    settle: bool = True,
    shared_paper: bool = False,
) -> AsyncIterator[Runtime]:
    """Open everything a server needs and close it all on exit.

    With exchange "paper" and no paper_url, an embedded paper exchange is started on 127.0.0.1 for the
    runtime's lifetime, keeping its account in the home (HOME/paper/state.json), so positions, balances and
    orders carry over to the next start; only one process at a time may embed it (StartupError otherwise,
    naming `pilot sim` and `--paper-url`); with `shared_paper` (`pilot serve`), the home's own in a process
    of its own, shared by its servers (pilot.app.service.home_paper). With paper_url, Pilot attaches to that
    paper exchange (a running `pilot sim`) with the paper key stored in the home, or else the scenario's key.
    bybit-demo, bybit-testnet, okx-demo, bybit and okx (real money: a live home only, _live_checks) use the key stored
    with `pilot keys add`, its permissions re-checked when stale. With record_dir, every exchange request
    and answer is written there, redacted (pilot.exchange.recordings).

    With streams, facts are kept fresh from the exchange's WebSocket streams and judged on when fresh
    (pilot.app.facts.stream_cache). None (the default): on for the paper exchange unless record_dir is given
    (a recording must hold every fact read); off for Bybit and OKX unless asked. An attached paper
    exchange without streams on loopback (GET /pilot/streams) is read over REST only, said in the log.

    Before the runtime is handed out, a journal found rolled back turns the kill switch on (stop_on_rollback),
    and sends left unsettled by a server that stopped are looked up; at exit, work whose client went away is
    given time to finish before the store closes. With `settle` False (`pilot console`, which only reads),
    that look-up is left to the servers.
    """
    clock = clock or SystemClock()
    await _admit(home, exchange, paper_url, clock)
    venue = _Venue(home, exchange, scenario, paper_url, record_dir, clock, shared=shared_paper)
    async with contextlib.AsyncExitStack() as stack:
        adapter, stored_key = await venue.connect(stack)
        stack.push_async_callback(adapter.close)
        try:
            store = await open_store(Home(home).store(), home=home, clock=store_clock(clock))
        except StoreError as error:  # damaged file, unusable journal key: one line with its fix
            raise StartupError(str(error)) from None
        stack.push_async_callback(store.close)
        key_check = KeyWatch(home, exchange, store.journal, store.clock, clock) if stored_key else None
        reader = await venue.streams(stack, adapter, streams)
        journal_stream_troubles(reader, store, clock)
        runtime = assemble_runtime(
            home, store, adapter, clock, environment=exchange, key_check=key_check, reader=reader
        )
        stack.push_async_callback(runtime.gate.drain)  # runs first: sends whose client left finish
        # A journal that lost entries stops growing orders before any judgement.
        await stop_on_rollback(runtime)
        await _live_checks(runtime, stack, adapter, venue)
        if settle:
            await upkeep(runtime)  # what a stopped server left unsettled is looked up before any judgement
        yield runtime


async def _admit(home: Path, exchange: str, paper_url: str | None, clock: Clock) -> None:
    """Refuse an unknown exchange, --paper-url beside another one, and, before any request, a real-money
    environment for a home that is not a live home of that environment."""
    if exchange not in EXCHANGES:
        raise StartupError(f"unknown exchange {exchange!r}: use one of {', '.join(EXCHANGES)}")
    if paper_url is not None and exchange != "paper":
        raise StartupError(f"--paper-url attaches to a paper exchange; it cannot be used with {exchange}")
    # Only a live home of that venue ever reaches real money; a live home reaches nothing else (asked before
    # a stored key is looked for; on paper, _live_checks says it once the store is open).
    if is_live(exchange) or (exchange != "paper" and Home(home).has_store()):
        await _require_live_home(home, clock, exchange)


async def _require_live_home(home: Path, clock: Clock, exchange: str) -> None:
    """Refuse `exchange` (real money) for a home whose journal did not begin live for it, and any other
    environment for a live home."""
    from pilot.app.human.going_live import live_environment, live_home_command

    try:
        store = await open_store(Home(home).store(), home=home, clock=store_clock(clock))
    except StoreError as error:
        raise StartupError(str(error)) from None
    try:
        trades = await live_environment(store.journal)
    finally:
        await store.close()
    if trades is None and not is_live(exchange):
        return
    if trades is None:
        raise StartupError(
            f"{home} is a practice home: it never trades {exchange} (real money)",
            code=ErrorCode.PRACTICE_HOME,
            fix=f"make a live home in a new folder with `{live_home_command(exchange)}`",
        )
    if trades != exchange:
        raise _only_its_venue(home, trades)


def _only_its_venue(home: Path, trades: str) -> StartupError:
    from pilot.app.human.going_live import only_its_venue

    return StartupError(
        f"{home} is a live home: it trades {trades} (real money) and nothing else",
        code=only_its_venue(trades),
        fix=f"start it with `--exchange {trades}`, or practise in another home (`pilot init --home NEW_FOLDER`)",
    )


async def _live_checks(
    runtime: Runtime, stack: contextlib.AsyncExitStack, adapter: Exchange, venue: _Venue
) -> None:
    """A live home starts only on the environment its journal names, with the limits it needs, a human's
    opt-in standing, and the venue's own dead-man's switch set to the dead-man's window and verified
    (pilot.app.service.backstops: Bybit's Disconnect Cancel All, OKX's cancel-all-after)."""
    from pilot.app.human.going_live import LiveRefused, live_environment, live_state, require_live_limits

    trades = await live_environment(runtime.store.journal)
    if trades is not None and trades != runtime.environment:
        raise _only_its_venue(runtime.home.path, trades)
    if not runtime.live:
        return
    try:
        require_live_limits(runtime)
    except LiveRefused as error:
        raise StartupError(error.problem, code=error.code, fix=error.fix) from None
    if not (await live_state(runtime)).on:
        raise StartupError(
            "live trading is off for this home",
            code=ErrorCode.LIVE_OFF,
            fix=f"a human runs `pilot live on --home {runtime.home.path}` at a terminal and types what it asks",
        )
    await _backstops(runtime, stack, adapter, venue)


async def _backstops(
    runtime: Runtime, stack: contextlib.AsyncExitStack, adapter: Exchange, venue: _Venue
) -> None:
    from pilot.app.service.backstops import BackstopFailed, start_backstops
    from pilot.app.service.countdown import CountdownFailed, start_countdown, wants_countdown

    if wants_countdown(adapter):
        try:
            watch = runtime.gate.key_check
            if not isinstance(watch, KeyWatch):  # never so: a live home starts only with its stored key
                raise CountdownFailed("no stored key to renew it with")
            watch.countdown = await start_countdown(runtime, adapter)
        except CountdownFailed as error:
            raise StartupError(
                f"OKX's cancel-all-after is not in place: {error}",
                code=ErrorCode.CANCEL_AFTER_NOT_SET,
                fix="check the key may trade (Read and Trade) and the network reaches OKX's host, then start "
                "again (docs/going-live.md, OKX)",
            ) from None
        return
    try:
        await start_backstops(runtime, stack, adapter, venue.credentials)
    except BackstopFailed as error:
        raise StartupError(
            f"Bybit's Disconnect Cancel All is not in place: {error}",
            code=ErrorCode.DCP_NOT_SET,
            fix="check the key may trade and the network reaches Bybit, then start again; if Bybit refuses "
            "DCP for the account, ask Bybit to enable it (docs/going-live.md)",
        ) from None


def journal_stream_troubles(reader: ExchangeReader | None, store: Store, clock: Clock) -> None:
    """What goes wrong on the streams (a message that could not be read, the private stream down) goes to
    the journal, where `pilot doctor` and the console read it (pilot.app.facts.stream_health)."""
    from pilot.app.facts.streaming_reader import StreamingReader

    if not isinstance(reader, StreamingReader):
        return

    async def report(kind: str, data: dict[str, Any]) -> None:
        await store.journal.append(kind, data, now=clock.now(), actor="pilot", durable=False)

    reader.hub.report = report


class _Venue:
    """Where the Runtime's exchange comes from: the embedded paper exchange, a running one, or a venue's
    demo or testnet with the key stored in the home."""

    def __init__(
        self,
        home: Path,
        exchange: str,
        scenario: Path | None,
        url: str | None,
        record_dir: Path | None,
        clock: Clock,
        *,
        shared: bool = False,
    ) -> None:
        self.home, self.exchange, self.scenario, self.url = home, exchange, scenario, url
        self.record_dir, self.clock = record_dir, clock
        self.ws_url: str | None = None  # the embedded paper exchange's WebSocket side
        self.credentials: tuple[str, str] | None = None
        self.shared = shared  # the home's paper exchange in its own process, not one embedded here

    async def streams(
        self, stack: contextlib.AsyncExitStack, adapter: Exchange, wanted: bool | None
    ) -> ExchangeReader | None:
        """The stream-fed reader when streams are on (see open_runtime), else None (REST only)."""
        on = wanted if wanted is not None else self.exchange == "paper" and self.record_dir is None
        if on and not streams_served(self.exchange):
            if wanted:
                raise StartupError(
                    f"--streams: {self.exchange} has no streams in this version; its facts are read over REST",
                    code=ErrorCode.NO_STREAMS,
                    fix="leave out --streams",
                )
            return None
        if not on or self.credentials is None:
            return None
        if self.exchange == "paper" and self.ws_url is None:  # an attached paper exchange: ask it
            self.ws_url = await self._discover(required=wanted is True)
            if self.ws_url is None:
                return None
        from pilot.app.facts.streaming_reader import start_streams

        policy_path = Home(self.home).policy_path

        def max_age_ms() -> int:
            return read_policy(policy_path).policy.max_fact_age_ms

        return await start_streams(
            stack,
            adapter,
            self.clock,
            max_age_ms,
            environment=self.exchange,
            api_key=self.credentials[0],
            api_secret=self.credentials[1],
            symbols=read_policy(policy_path).policy.allowed_markets,
            paper_ws_url=self.ws_url,
        )

    async def _discover(self, *, required: bool) -> str | None:
        """The attached paper exchange's WebSocket URL, or None (said once) when it names none Pilot uses."""
        from pilot.exchange.adapters import paper_streams_url

        try:
            return await asyncio.to_thread(paper_streams_url, self.url or "")
        except NoStreams as error:
            if required:
                raise StartupError(
                    f"--streams: the paper exchange at {self.url} serves no streams Pilot can use: {error}",
                    code=ErrorCode.NO_STREAMS,
                    fix="attach to a `pilot sim` of this version, or leave out --streams to read over REST",
                ) from None
            log.warning(
                "streams off, facts are read over REST: the paper exchange at %s: %s", self.url, error
            )
            return None

    async def connect(self, stack: contextlib.AsyncExitStack) -> tuple[Exchange, bool]:
        """The adapter to use, and whether it uses a key stored in the home (whose permissions need checks)."""
        if self.exchange == "paper" and self.url is None:
            if not self.shared:
                return self._embedded(stack), False
            self.url = await self._home_exchange(stack)
            adapter = self._scenario_key()  # the key the exchange started on this scenario takes
            self._check_home_key()
            return adapter, False
        from pilot.keys.errors import KeysError, NoKeyStored

        try:
            return await self._stored_key(), True
        except NoKeyStored as error:
            if self.exchange != "paper":
                raise StartupError(error.problem, code=error.code, fix=error.fix) from None
            return self._scenario_key(), False
        except KeysError as error:
            raise StartupError(error.problem, code=error.code, fix=error.fix) from None

    def _embedded(self, stack: contextlib.AsyncExitStack) -> Exchange:
        from pilot.paper import ScenarioError, StateError, StateInUse, start_paper_exchange

        state = Home(self.home).paper_state_path
        try:
            paper = start_paper_exchange(self.scenario, state_path=state)
        except StateInUse as error:
            raise StartupError(_in_use(self.home, error)) from None
        except StateError as error:
            raise StartupError(
                f"cannot continue the paper account: {error}; start it afresh with "
                f"`pilot sim reset --home {self.home}`"
            ) from None
        except (ScenarioError, OSError) as error:
            raise StartupError(f"cannot start the paper exchange: {error}") from None
        stack.callback(paper.stop)
        self.ws_url = paper.ws_url
        return self._adapter(paper.api_key, paper.api_secret, paper.url)

    async def _home_exchange(self, stack: contextlib.AsyncExitStack) -> str:
        from pilot.app.service.home_paper import HomeExchangeFailed, attach_home_exchange

        try:
            return await attach_home_exchange(self.home, self.scenario, stack)
        except HomeExchangeFailed as error:
            raise StartupError(
                str(error),
                code=ErrorCode.CANNOT_START,
                fix=f"if the account cannot be continued: `pilot sim reset --home {self.home}`",
            ) from None

    def _check_home_key(self) -> None:
        """Refuse to attach to the home's paper exchange when it was started on another scenario whose keys
        do not include this scenario's (every request would be refused for its key)."""
        from pilot.paper import serves_key

        if (
            self.credentials is None
            or serves_key(Home(self.home).paper_state_path, *self.credentials) is not False
        ):
            return
        scenario = f"scenario {self.scenario}" if self.scenario is not None else "the default scenario"
        raise StartupError(
            f"the home's paper exchange at {self.url} runs another scenario: it does not take the key of {scenario}",
            code=ErrorCode.PAPER_SCENARIO_MISMATCH,
            fix="give this server the --scenario the exchange was started with (the first server's on this "
            f"home), or stop it with `pilot sim stop --home {self.home}` and start this server again to run "
            "it on this one",
        )

    async def _stored_key(self) -> Exchange:
        from pilot.app.human.exchange_keys import load_exchange_credentials

        credentials = await load_exchange_credentials(self.home, self.exchange, now=self.clock.now())
        return self._adapter(
            credentials.api_key,
            credentials.api_secret,
            self.url or credentials.base_url,
            passphrase=credentials.passphrase,
        )

    def _scenario_key(self) -> Exchange:
        """No paper key stored: a `pilot sim` on the same scenario serves its first key, so use that."""
        from pilot.paper.scenario import ScenarioError, load_scenario  # not the exchange: only its key

        try:
            key = load_scenario(self.scenario).api_keys[0]
        except ScenarioError as error:
            raise StartupError(f"cannot read the scenario for the paper key: {error}") from None
        return self._adapter(key.key, key.secret, self.url)

    def _adapter(
        self, api_key: str, api_secret: str, base_url: str | None, *, passphrase: str | None = None
    ) -> Exchange:
        self.credentials = (api_key, api_secret)
        try:
            return connect_exchange(
                self.exchange,
                api_key=api_key,
                api_secret=api_secret,
                passphrase=passphrase,
                base_url=base_url,
                record_dir=self.record_dir,
            )
        except ValueError as error:  # a base URL off the allowlist: mainnet, or not loopback for paper
            raise StartupError(str(error)) from None


def _in_use(home: Path, error: StateInUse) -> str:
    shared = (
        f"To share the paper account between processes, run `pilot sim --home {home}` once and start each "
        f"server with `pilot serve --home {home} --paper-url URL`, URL being the one `pilot sim` prints"
    )
    if error.url:
        shared = (
            f"This one can attach to it while it runs: `pilot serve --home {home} --paper-url {error.url}`. "
            + shared
        )
    return (
        f"{error}. Two paper exchanges on one account would fork it, so this one does not start. {shared} "
        "(or stop the other process first)"
    )
