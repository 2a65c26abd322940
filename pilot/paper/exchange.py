"""The running paper exchange (PaperExchange) and how one is started and its saved account forgotten: what
pilot.paper says, kept out of the package's own module so that importing any part of the package does not
import all of it (a server attaching to a running exchange reads only its lock and scenario)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any

from pilot.paper import timeline
from pilot.paper.accounts import SimPosition
from pilot.paper.clocks import ExchangeClock, WallClock, wall_clock_ms
from pilot.paper.disconnect_protection import DcpSettings
from pilot.paper.dispatch import Dispatcher
from pilot.paper.engine import Engine, SimClosedPnl, SimExecution, SimOrder
from pilot.paper.faults import FaultBook
from pilot.paper.lock import StateLock, key_fingerprint
from pilot.paper.market import Quote
from pilot.paper.ratelimit import RateLimiter
from pilot.paper.scenario import FaultSpec, Scenario, load_scenario
from pilot.paper.server import HttpServer
from pilot.paper.state_log import StateLog, log_path
from pilot.paper.streams import StreamFaults, StreamServer

LOG = logging.getLogger(__name__)
TICKER_MS = 100  # how often, in wall time, the server's loop moves the market on its own
SAVE_EVERY_MS = 1000  # moves that changed no account are saved at most this often (wall time)


class PaperExchange:
    """A running paper exchange. Create it with start_paper_exchange()."""

    def __init__(
        self,
        scenario: Scenario,
        port: int = 0,
        state_path: Path | None = None,
        *,
        speed: Decimal | None = None,
        wall_clock: WallClock | None = None,
        ticker_ms: float = TICKER_MS,
    ) -> None:
        self.scenario = scenario
        self.state_path = Path(state_path) if state_path is not None else None
        self._lock = threading.Lock()
        self._wall = wall_clock or wall_clock_ms
        self.clock = ExchangeClock(self._wall, scenario.speed if speed is None else Decimal(speed))
        self._engine = Engine(scenario, self.now_ms)
        self._engine.market.start(self.now_ms())
        self._ticker_ms = ticker_ms
        self._ticker: concurrent.futures.Future[None] | None = None
        self._saved_at = self._wall()
        self._state_lock = StateLock(self.state_path) if self.state_path is not None else None
        self._state_log = StateLog(self.state_path) if self.state_path is not None else None
        if self._state_lock is not None:
            self._state_lock.acquire()
            try:
                self._load_or_save()
            except BaseException:
                self._release_state()
                raise
        self._engine.note_prices()  # where the market stands at the start (restored or not)
        self._faults = FaultBook(scenario.faults)
        keys = {spec.key: spec for spec in scenario.api_keys}
        self.streams = StreamServer(
            self._engine,
            self._lock,
            keys,
            self.now_ms,
            server_clock_ms=self.server_ms,
            before_write=self.catch_up,
            after_write=self._save,
        )
        self._dispatcher = dispatcher = Dispatcher(
            self._engine,
            scenario,
            self._lock,
            self.now_ms,
            on_change=self._changed,
            streams_url=self._streams_url,
            server_clock_ms=self.server_ms,
        )
        self._server = HttpServer(
            dispatcher, self._faults, self._latency_for, self.server_ms, port, before_request=self.catch_up
        )

    def _streams_url(self) -> str:
        return self.ws_url if self.streams.port else ""

    def _changed(self) -> None:
        self._save()
        self.streams.changed()

    def _load_or_save(self) -> None:
        assert self.state_path is not None and self._state_log is not None
        if self.state_path.exists():
            self._state_log.load(self._engine)
            market = self._engine.market
            # the saved market time goes on (the market never runs behind the wall clock it started from)
            market.resume(self.clock.resume_at(market.moved_to_ms or self.now_ms()))
        self._state_log.compact(self._engine)
        self._saved_at = self._wall()

    def _save(self) -> None:
        """Log what changed (callers hold the lock, or run before the server starts)."""
        if self._state_log is not None:
            self._state_log.record(self._engine)
        self._saved_at = self._wall()

    def now_ms(self) -> int:
        """The exchange's time (the market clock): what it stamps, schedules and answers."""
        return self.clock.market_ms()

    def server_ms(self) -> int:
        """The server clock, in the callers' frame: their wall clock plus set_clock_offset()'s drift."""
        return self.clock.server_ms()

    @property
    def speed(self) -> Decimal:
        """Exchange time per wall-clock time (0: the market moves only on advance())."""
        return self.clock.speed

    def set_speed(self, speed: Any) -> None:
        """Run the market at `speed` from now on (what is due at the old speed is played first)."""
        self.catch_up()
        with self._lock:
            self.clock.set_speed(Decimal(str(speed)))

    def advance(self, ms: int) -> None:
        """Move the exchange's time `ms` ahead now and play what falls due meanwhile, in time order: price
        steps (with the fills, stops and liquidations they cause) and funding. The server clock signed
        requests are checked against does not move."""
        with self._lock:
            self.clock.advance(int(ms))
            self._play(limit=None)
            self._engine.fire_dcp()
            self._save()
        self.streams.changed()

    def catch_up(self) -> bool:
        """Play what is due by the market clock now (done before each request and by the ticker)."""
        with self._lock:
            played = self._play(limit=timeline.MAX_EVENTS_PER_LOOK)
            if self._engine.fire_dcp():
                self._save()
                self.streams.changed()
            if played.account_changed or (played.events and self._wall() - self._saved_at >= SAVE_EVERY_MS):
                self._save()
        if played.events:
            self.streams.changed()
        return played.events > 0

    def _play(self, limit: int | None) -> timeline.Played:
        return timeline.play_until(self._engine, self.clock, self.now_ms(), limit)

    async def _tick_forever(self) -> None:
        """The server loop's ticker: the market moves, and the streams push it, with nobody asking."""
        while True:
            await asyncio.sleep(self._ticker_ms / 1000)
            try:
                self.catch_up()
            except Exception:  # a bug in a move must not stop the ticker (requests would still catch up)
                LOG.exception("the paper exchange's market ticker failed; it goes on")

    @property
    def working(self) -> int:
        """Requests received and not yet answered: held by a latency fault, or being processed now."""
        return self._server.working

    def set_clock_offset(self, offset_ms: int) -> None:
        """Run the exchange's clock ahead (or behind) of the callers': signed requests then fall outside the
        recv window and are refused with retCode 10002, as Bybit does for a drifting client clock. The
        market's time moves by the same amount (never backwards)."""
        with self._lock:
            self.clock.offset_ms = int(offset_ms)

    def _latency_for(self, path: str) -> float:
        latency = self.scenario.latency_ms
        return latency.get(path, latency.get("*", 0.0))

    def start(self) -> PaperExchange:
        try:
            self._server.start()
            asyncio.run_coroutine_threadsafe(self.streams.start(), self._server.loop).result(timeout=5)
            if self._ticker_ms > 0:
                self._ticker = asyncio.run_coroutine_threadsafe(self._tick_forever(), self._server.loop)
        except BaseException:
            self._release_state()
            raise
        if self._state_lock is not None:
            keys = tuple(key_fingerprint(spec.key, spec.secret) for spec in self.scenario.api_keys)
            self._state_lock.note(self.url, keys)
        return self

    def stop(self) -> None:
        """Stop serving, join the server thread and let another exchange serve the state file (idempotent)."""
        if self._ticker is not None:
            self._ticker.cancel()
        if self._server.loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self.streams.stop(), self._server.loop).result(timeout=5)
        self._server.stop()
        if self._state_log is not None and self._state_lock is not None and self._state_lock.held:
            with self._lock:
                self._state_log.compact(self._engine)  # a clean stop leaves one whole snapshot
        self._release_state()

    def _release_state(self) -> None:
        if self._state_log is not None:
            self._state_log.close()
        if self._state_lock is not None:
            self._state_lock.release()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def ws_url(self) -> str:
        """The WebSocket side: ws://127.0.0.1:PORT, serving /v5/public/linear, /v5/public/spot, /v5/private."""
        return f"ws://127.0.0.1:{self.streams.port}"

    @property
    def stream_faults(self) -> StreamFaults:
        """Set `stall`, `delay_ms`, `swap_next_deltas`, `hold_topics`, `unavailable` (new connections get HTTP
        503) or `hold_handshakes` on it; `drop_streams()` resets every connection."""
        return self.streams.faults

    def drop_streams(self) -> None:
        self.streams.drop()

    @property
    def dcp(self) -> DcpSettings:
        """Disconnect Cancel All: the windows set, and each time it fired (disconnect_protection.py)."""
        return self._engine.dcp

    def set_key_permissions(self, key: str, permissions: dict[str, list[str]]) -> None:
        """Change what /v5/user/query-api reports for `key` while serving (a box ticked on Bybit's page)."""
        with self._lock:
            spec = self._dispatcher.keys[key]
            changed = replace(spec, permissions={group: tuple(names) for group, names in permissions.items()})
            self._dispatcher.keys[key] = self.streams.keys[key] = changed
            self._dispatcher.key_list = tuple(changed if s is spec else s for s in self._dispatcher.key_list)

    def set_rate_limits(self, setting: bool | dict[str, int]) -> None:
        """Bybit's per-key limits from now on, as a scenario's `rateLimits` sets them (False: none), with
        every window counted so far forgotten."""
        self._dispatcher.limiter = RateLimiter(setting)

    @property
    def api_key(self) -> str:
        return self.scenario.api_keys[0].key

    @property
    def api_secret(self) -> str:
        return self.scenario.api_keys[0].secret

    # ---- faults and counters --------------------------------------------------------------------

    def request_count(self, path: str) -> int:
        """How many requests reached `path` (e.g. "/v5/order/create"), faulted and refused ones included."""
        return self._faults.request_count(path)

    def add_fault(
        self,
        path: str,
        kind: str,
        nth: int | None = None,
        every: bool = False,
        *,
        delay_ms: float = 0,
        status: int | None = None,
        interval_ms: float = 1000,
    ) -> None:
        """Arm a fault on an endpoint: the nth call from now (default the next one), or every call."""
        self._faults.add(FaultSpec(path, kind, nth, every, float(delay_ms), status, float(interval_ms)))

    def clear_faults(self) -> None:
        self._faults.clear()

    def set_ack_lag(self, reads: int) -> None:
        """Orders created from now on stay out of realtime, history and executions for `reads` list reads
        (realtime or history requests, counted together): Bybit acknowledges a create before it shows."""
        with self._lock:
            self._engine.ack_lag_reads = max(int(reads), 0)

    def leave_order(self, category: str, params: dict[str, Any]) -> SimOrder:
        """Leave an order on the account as another client of the same key would: `params` as a
        /v5/order/create body (Bybit's names, e.g. {"symbol", "side": "Buy", "orderType": "Limit", "qty",
        "price", "timeInForce": "GTC", "orderLinkId"}), validated and matched as that create, but with no
        request counted. Raises SimReject (pilot.paper.validation) where Bybit would answer an error."""
        self.catch_up()
        with self._lock:
            order = self._engine.create_order(category, dict(params))
            self._save()
        self.streams.changed()
        return order

    def leave_resting_order(
        self,
        category: str,
        symbol: str,
        side: str,
        qty: str,
        price: str,
        link: str,
        reduce_only: bool = False,
    ) -> SimOrder:
        """Leave a GTC limit order as another client would (leave_order), with client order id `link`."""
        params: dict[str, Any] = {
            "symbol": symbol,
            "side": side,
            "orderType": "Limit",
            "qty": qty,
            "price": price,
        }
        params |= {"timeInForce": "GTC", "orderLinkId": link, "reduceOnly": reduce_only}
        return self.leave_order(category, params)

    # ---- prices -------------------------------------------------------------------------------

    def set_prices(self, symbol: str, *, bid: Any = None, ask: Any = None, mark: Any = None) -> None:
        """Set a symbol's quote (numbers or strings): resting orders the new quote crosses fill, stops it
        reaches trigger, positions whose mark reached their liqPrice are liquidated. A random walk goes on
        from the new price; a tape's next point replaces it."""
        self.catch_up()
        with self._lock:
            self._engine.market.set_prices(symbol, _dec(bid), _dec(ask), _dec(mark))
            timeline.after_move(self._engine, [symbol])
            self._save()
        self.streams.changed()

    def tick(self) -> None:
        """Move every price path (walks and tapes) one step now, off its schedule, with what the move causes."""
        with self._lock:
            timeline.after_move(self._engine, self._engine.market.step_walks())
            self._save()
        self.streams.changed()

    def quote(self, symbol: str) -> Quote:
        """A symbol's quote now (bid, ask, mark), as the market has moved it so far."""
        with self._lock:
            return self._engine.market.quote(symbol)

    def next_funding_ms(self, symbol: str) -> int:
        """When `symbol` settles funding next, in the exchange's time (the ticker's nextFundingTime)."""
        with self._lock:
            return self._engine.market.next_funding_ms(symbol)

    # ---- read access for assertions ---------------------------------------------------------------

    def orders(self, symbol: str | None = None) -> list[SimOrder]:
        """Every order ever accepted, oldest first (copies are not made: do not mutate)."""
        with self._lock:
            return [o for o in self._engine.orders.values() if symbol is None or o.symbol == symbol]

    def open_orders(self, symbol: str | None = None) -> list[SimOrder]:
        with self._lock:
            return [o for o in self._engine.open_orders.values() if symbol is None or o.symbol == symbol]

    def waiting_orders(self, symbol: str | None = None) -> list[SimOrder]:
        """The orders waiting for their trigger (TP/SL, trailing stops, conditional orders: Untriggered)."""
        with self._lock:
            waiting = self._engine.stop_book.waiting.values()
            return [o for o in waiting if o.untriggered and (symbol is None or o.symbol == symbol)]

    def executions(self) -> list[SimExecution]:
        with self._lock:
            return list(self._engine.executions)

    def closed_pnl(self) -> list[SimClosedPnl]:
        """The /v5/position/closed-pnl rows, oldest first."""
        with self._lock:
            return list(self._engine.closed_pnl)

    def position(self, symbol: str) -> SimPosition:
        with self._lock:
            return self._engine.accounts.positions[symbol]

    def balance(self, coin: str) -> Decimal:
        """The wallet balance of a coin (realised PnL and fees included, unrealised PnL not)."""
        with self._lock:
            return self._engine.accounts.wallet.get(coin, Decimal(0))

    # ---- context managers -------------------------------------------------------------------------

    def __enter__(self) -> PaperExchange:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> PaperExchange:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_paper_exchange(
    scenario: Scenario | Path | str | dict[str, Any] | None = None,
    port: int = 0,
    state_path: Path | None = None,
    *,
    speed: Any = None,
    wall_clock: WallClock | None = None,
    ticker_ms: float = TICKER_MS,
) -> PaperExchange:
    """Start a paper exchange on 127.0.0.1 (`port` 0: an ephemeral one) and return it, already listening.

    `speed` (exchange time per wall time) replaces the scenario's; `wall_clock` (ms since the epoch) stands
    in for the wall clock (the server clock and the market's pace); `ticker_ms` 0 turns the background
    ticker off (the market then moves only when a request arrives or on advance()).

    Raises:
        ScenarioError: the scenario cannot be used.
        StateInUse: another running paper exchange serves `state_path` (attach to it at its URL instead).
        StateError: `state_path` holds a state this scenario cannot continue (reset it with reset_state).
    """
    loaded = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    chosen = None if speed is None else Decimal(str(speed))
    return PaperExchange(
        loaded, port, state_path, speed=chosen, wall_clock=wall_clock, ticker_ms=ticker_ms
    ).start()


def reset_state(state_path: Path) -> bool:
    """Forget the paper account saved at `state_path`; True if there was one.

    Raises:
        StateInUse: a running paper exchange serves it (stop it first: it would write the account back).
    """
    path = Path(state_path)
    if not path.exists():
        return False
    lock = StateLock(path)
    lock.acquire()
    try:
        log_path(path).unlink(missing_ok=True)
        path.unlink()
    finally:
        lock.release()
    return True


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))
