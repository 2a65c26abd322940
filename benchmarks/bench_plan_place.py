"""Benchmark plan_order and place_order on the paper exchange: round trips, Pilot's own time, the server's CPU.

Each figure is taken on two coins: BTCUSDT, listed on linear and spot, and ETHUSDT with its spot market
taken out of the scenario (a perpetual whose coin has no spot market of the same name, common on Bybit:
the judgement must learn "no such instrument" once, not on every call).

1. Round trips, with the exchange answering every REST request after an injected delay (`--latency-ms`,
   50 ms; the WebSocket side has none). Modes: "rest" (streams off: every fact read over REST, the
   read-back too), "streams" (facts from the paper exchange's Bybit V5 streams while younger than
   maxFactAgeMs; a send's outcome from the order stream) and, in-process, "stalled" (the exchange stops
   pushing: facts go back to REST). Measured in-process (the use cases and the in-memory MCP client) and
   through a real `pilot serve` over stdio attached to the exchange (`--paper-url`), as medians and p90s in
   multiples of one bare round trip measured in the same run. Targets through stdio: streams plan_order
   <= 0.2, place_order <= 1.2; rest plan_order <= 1.15, place_order <= 3.1.
2. With no injected delay: Pilot's own time in-process (the wall time minus the time during which at least
   one exchange request was in flight or Pilot waited for the order stream), on the home's SQLite store and,
   beside it, on a PostgreSQL store over loopback (the store hosts share: `--postgres URL`, else
   PILOT_TEST_POSTGRES, else a throwaway server scripts/throwaway-postgres starts; said and skipped without
   one), and through stdio the whole
   `pilot serve` process's CPU per plan + place (user + system, every thread: the SDK, the use cases, the
   adapter's signing, HTTP and JSON, and the embedded paper exchange when there is one), for the external
   paper exchange (its own process) and the embedded one. Targets through stdio with the external exchange:
   <= 8 ms with streams, <= 12 ms over REST.
3. A long session through stdio on the embedded paper exchange (the default `pilot serve`, its account in
   the home), then on the external one (its account in a state file, as `pilot sim --home` keeps it):
   place_order's median over the first and the last quarter of
   `--session-rounds` (`--long`: 2,000 rounds, orders 1-500 against 1,501-2,000); target: the last within
   1.2x of the first.

The external paper exchange runs in a child process (its work does not share Pilot's GIL); rate limits are off.
The default run takes a few minutes; `--long` is the issue's form (2,000 rounds, more rounds everywhere).

    .venv/bin/python benchmarks/bench_plan_place.py [--latency-ms 50] [--rounds 30] [--overhead-rounds 200]
        [--session-rounds 600] [--long] [--only trips,overhead,session] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, cast

from mcp import Client
from plan_place_stdio import make_home, quantile, stdio_server

from pilot.app.facts.streaming_reader import StreamingReader, start_streams
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.road.clock import SystemClock
from pilot.app.road.ports import Exchange
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.stream_events import PRIVATE
from pilot.server import build_server
from pilot.store import StoreLocation, open_store

POLICY = {
    "allowedMarkets": ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
    "maxNotionalUsd": 150,
    "maxOrderNotionalUsd": 150,
    "maxLeverage": 3,
    "minLiquidationDistancePct": 20,
    "dailyOrderCap": 100_000,
    "maxSlippagePct": 0.5,
    "planTtlSeconds": 60,
}
# Sell then buy back a small lot: the position stays under its cap however many rounds run.
ORDERS = (
    {"symbol": "BTCUSDT", "side": "sell", "qty": "0.001"},
    {"symbol": "BTCUSDT", "side": "buy", "qty": "0.001"},
)
NO_SPOT_ORDERS = (
    {"symbol": "ETHUSDT", "side": "sell", "qty": "0.02"},
    {"symbol": "ETHUSDT", "side": "buy", "qty": "0.02"},
)
COINS = {"BTCUSDT (spot listed)": ORDERS, "ETHUSDT (no spot)": NO_SPOT_ORDERS}


# ---- the exchange, in its own process -------------------------------------------------------------------


def serve(scenario: dict, ready: Any, stop: Any, stall: Any, state_path: Path | None = None) -> None:
    from pilot.paper import start_paper_exchange

    with start_paper_exchange(scenario, state_path=state_path) as paper:
        ready.put((paper.url, paper.api_key, paper.api_secret, paper.ws_url))
        while not stop.wait(0.01):
            paper.stream_faults.stall = stall.is_set()


STALL: Any = None  # set in the parent: the child stops every stream push while it is set


def bench_scenario(latency_ms: float) -> dict[str, Any]:
    """The default scenario, rate limits off, a large balance, and no spot ETHUSDT."""
    scenario = json.loads(resources.files("pilot.paper").joinpath("scenarios/default.json").read_text())
    scenario["rateLimits"] = False
    scenario["latencyMs"] = latency_ms
    scenario["balances"] = {"USDT": "1000000"}
    scenario["instruments"] = [
        i for i in scenario["instruments"] if (i["category"], i["symbol"]) != ("spot", "ETHUSDT")
    ]
    return scenario


def start_exchange(
    latency_ms: float, state_path: Path | None = None
) -> tuple[tuple[str, str, str, str], Callable[[], None]]:
    """The paper exchange in a child process (`pilot sim --state FILE`-like when `state_path` is given)."""
    scenario = bench_scenario(latency_ms)
    global STALL
    ready: Any = multiprocessing.Queue()
    stop = multiprocessing.Event()
    STALL = multiprocessing.Event()
    process = multiprocessing.Process(
        target=serve, args=(scenario, ready, stop, STALL, state_path), daemon=True
    )
    process.start()
    address = ready.get(timeout=20)

    def shutdown() -> None:
        stop.set()
        process.join(timeout=10)

    return address, shutdown


# ---- timing the exchange's share ------------------------------------------------------------------------


class TimedExchange:
    """The real adapter, recording when each request was in flight.

    With `only` and `into`: another reader, timing just those methods into the same record (the stream-fed
    reader's find_order: waiting for the exchange's push of an order is the exchange's share, as the REST
    read-back it replaces is).
    """

    def __init__(
        self, inner: Any, only: frozenset[str] | None = None, into: TimedExchange | None = None
    ) -> None:
        self._inner = inner
        self._only = only
        self.intervals: list[tuple[float, float]] = into.intervals if into else []
        self.calls: list[str] = into.calls if into else []
        self.streaming: StreamingReader | None = None  # the stream-fed reader, when streams are on

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not asyncio.iscoroutinefunction(target) or name == "close":
            return target
        if self._only is not None and name not in self._only:
            return target

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await target(*args, **kwargs)
            finally:
                self.intervals.append((start, time.perf_counter()))
                self.calls.append(name)

        return timed

    def reset(self) -> None:
        self.intervals.clear()
        self.calls.clear()

    def busy_seconds(self) -> float:
        """The union of the recorded intervals: time during which at least one request was in flight."""
        total, end = 0.0, float("-inf")
        for start, stop in sorted(self.intervals):
            if stop <= end:
                continue
            total += stop - max(start, end)
            end = stop
        return total


class Measured:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.own: list[float] = []
        self.calls: list[list[str]] = []

    def median_ms(self, values: list[float]) -> float:
        return statistics.median(values) * 1000


async def measure(timed: TimedExchange, run: Callable[[], Awaitable[Any]], into: Measured) -> Any:
    timed.reset()
    start = time.perf_counter()
    result = await run()
    wall = time.perf_counter() - start
    into.wall.append(wall)
    into.own.append(wall - timed.busy_seconds())
    into.calls.append(list(timed.calls))
    return result


# ---- the runs -------------------------------------------------------------------------------------------


async def open_runtime(
    home: Path,
    address: tuple[str, str, str, str],
    stack: contextlib.AsyncExitStack,
    streams: bool = False,
    store_at: StoreLocation | None = None,
) -> tuple[Runtime, TimedExchange]:
    (home / "policy.json").write_text(json.dumps(POLICY))
    url, key, secret, ws_url = address
    adapter = BybitExchange.connect("paper", api_key=key, api_secret=secret, base_url=url)
    timed = TimedExchange(adapter)
    stack.push_async_callback(adapter.close)
    store = await open_store(store_at or Home(home).database_path, home=home)
    stack.push_async_callback(store.close)
    reader = None
    if streams:
        # cast: TimedExchange forwards every port method to the real adapter (see its __getattr__)
        reader = await start_streams(
            stack,
            cast(Exchange, timed),
            SystemClock(),
            lambda: MAX_FACT_AGE_MS,
            environment="paper",
            api_key=key,
            api_secret=secret,
            symbols=tuple(POLICY["allowedMarkets"]),
            paper_ws_url=ws_url,
        )
        assert reader is not None, "the streams did not start"
        await until_streamed(reader, True)
        timed.streaming = reader
        reader = cast(StreamingReader, TimedExchange(reader, frozenset({"find_order"}), into=timed))
    return assemble_runtime(home, store, cast(Exchange, timed), SystemClock(), reader=reader), timed


MAX_FACT_AGE_MS = 300


def streamed(reader: StreamingReader) -> bool:
    now = reader.hub.now_ms()
    return all(reader.facts.usable(c, now, MAX_FACT_AGE_MS) for c in ("linear", "spot", PRIVATE))


async def until_streamed(reader: StreamingReader, wanted: bool, timeout: float = 20) -> None:
    """Wait until every channel is (or, for a stall, is no longer) usable."""
    deadline = time.monotonic() + timeout
    while streamed(reader) != wanted:
        assert time.monotonic() < deadline, "the streams did not reach the wanted state"
        await reader.hub.changed(0.05)


async def round_trip_ms(timed: TimedExchange, rounds: int) -> float:
    """One bare exchange request (a ticker read) through the same adapter."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        await timed._inner.get_ticker("linear", "BTCUSDT")
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


async def direct_rounds(
    runtime: Runtime, timed: TimedExchange, rounds: int, orders: tuple[dict[str, str], ...] = ORDERS
) -> tuple[Measured, Measured]:
    plans, places = Measured(), Measured()
    for index in range(rounds):
        request = PlanRequest.parse(orders[index % 2])
        planned = await measure(timed, lambda request=request: plan_order(runtime, request), plans)
        assert planned.status == "ok", planned
        placed = await measure(timed, lambda p=planned.plan_id: place_order(runtime, p), places)
        assert placed.status == "filled", placed
    return plans, places


class ValidationTimer:
    """Time spent in the MCP client's own check of each result against the tool's output schema."""

    def __init__(self, session: Any) -> None:
        self.seconds = 0.0
        inner = session.validate_tool_result

        async def timed(name: str, result: Any) -> None:
            start = time.perf_counter()
            await inner(name, result)
            self.seconds += time.perf_counter() - start

        session.validate_tool_result = timed


async def mcp_rounds(
    runtime: Runtime,
    timed: TimedExchange,
    rounds: int,
    orders: tuple[dict[str, str], ...] = ORDERS,
    warm: int = 2,
) -> tuple[Measured, Measured, float]:
    """Plan and place through the in-memory MCP client; also returns the client's schema checks per round."""
    plans, places = Measured(), Measured()
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        for index in range(warm):  # the first call of each tool lists the tools and compiles their schemas
            planned = await client.call_tool("plan_order", orders[index % 2])
            await client.call_tool("place_order", {"plan_id": planned.structured_content["plan_id"]})
        validation = ValidationTimer(client.session)
        for index in range(rounds):
            planned = await measure(
                timed, lambda i=index: client.call_tool("plan_order", orders[i % 2]), plans
            )
            plan_id = planned.structured_content["plan_id"]
            placed = await measure(
                timed, lambda p=plan_id: client.call_tool("place_order", {"plan_id": p}), places
            )
            assert placed.structured_content["status"] == "filled", placed.structured_content
    return plans, places, validation.seconds / rounds


def p90_ms(values: list[float]) -> float:
    return quantile(values, 0.9) * 1000


def trips(label: str, wall: list[float], rtt: float, target: float) -> str:
    median, p90 = statistics.median(wall) * 1000, p90_ms(wall)
    verdict = "ok" if median / rtt <= target else "MISSED"
    return (
        f"{label}: median {median / rtt:4.2f} round trips ({median:6.1f} ms), p90 {p90 / rtt:4.2f} "
        f"(target median <= {target}: {verdict})"
    )


TARGETS = {"rest": (1.15, 3.1), "streams": (0.2, 1.2), "stalled": (1.15, 3.1)}


async def in_process_trips(address: tuple[str, str, str, str], rounds: int) -> None:
    """The use cases and the in-memory MCP client, each coin, each mode."""
    for coin, orders in COINS.items():
        for mode in ("rest", "streams", "stalled"):
            if mode == "stalled" and orders is not ORDERS:
                continue
            with tempfile.TemporaryDirectory() as folder:
                async with contextlib.AsyncExitStack() as stack:
                    runtime, timed = await open_runtime(Path(folder), address, stack, streams=mode != "rest")
                    rtt = await round_trip_ms(timed, 10)
                    cold = Measured()
                    first = PlanRequest.parse(orders[0])
                    await measure(timed, lambda r=runtime, f=first: plan_order(r, f), cold)
                    if mode == "stalled":
                        STALL.set()
                        assert timed.streaming is not None
                        await until_streamed(timed.streaming, False)
                    try:
                        plans, places = await direct_rounds(runtime, timed, rounds, orders)
                        mcp_plans, mcp_places, _ = await mcp_rounds(runtime, timed, rounds, orders)
                    finally:
                        STALL.clear()
            plan_target, place_target = TARGETS[mode]
            print(
                f"  [{mode:7}] {coin}: one bare round trip {rtt:.1f} ms; cold plan_order {cold.wall[0] * 1000:.1f} ms"
            )
            for label, measured, target in (
                ("plan_order  (use case)", plans, plan_target),
                ("place_order (use case)", places, place_target),
                ("plan_order  (MCP)     ", mcp_plans, plan_target),
                ("place_order (MCP)     ", mcp_places, place_target),
            ):
                print(
                    f"  [{mode:7}]   {trips(label, measured.wall, rtt, target)}; Pilot's own "
                    f"{measured.median_ms(measured.own):4.1f} ms; exchange calls: {', '.join(measured.calls[-1]) or '-'}"
                )


async def stdio_trips(
    address: tuple[str, str, str, str], scenario_file: Path, rounds: int, warm: int = 4
) -> None:
    """A real `pilot serve` over stdio, attached to the exchange, each coin, each mode."""
    url = address[0]
    for coin, orders in COINS.items():
        for mode in ("rest", "streams"):
            with tempfile.TemporaryDirectory() as folder:
                home = Path(folder) / "home"
                make_home(home, POLICY)
                streams = "--streams" if mode == "streams" else "--no-streams"
                async with contextlib.AsyncExitStack() as stack:
                    adapter = BybitExchange.connect(
                        "paper", api_key=address[1], api_secret=address[2], base_url=url
                    )
                    stack.push_async_callback(adapter.close)
                    rtt = await round_trip_ms(TimedExchange(adapter), 10)
                    server = await stack.enter_async_context(
                        stdio_server(home, "--paper-url", url, "--scenario", str(scenario_file), streams)
                    )
                    await server.rounds(list(orders), warm)
                    run = await server.rounds(list(orders), rounds)
            plan_target, place_target = TARGETS[mode]
            print(f"  [{mode:7}] {coin} through stdio (one bare round trip {rtt:.1f} ms):")
            print(f"  [{mode:7}]   {trips('plan_order ', run.plans.wall, rtt, plan_target)}")
            print(f"  [{mode:7}]   {trips('place_order', run.places.wall, rtt, place_target)}")
            print(
                f"  [{mode:7}]   server CPU per plan + place (waits included): {run.cpu_ms_per_round():.1f} ms"
            )


async def with_latency(
    address: tuple[str, str, str, str], latency_ms: float, rounds: int, scenario_file: Path
) -> None:
    print(f"\n1. Round trips, {latency_ms:.0f} ms injected per REST request ({rounds} rounds each)")
    print(" in-process:")
    await in_process_trips(address, rounds)
    print(" through stdio (pilot serve --paper-url):")
    await stdio_trips(address, scenario_file, rounds)


async def machine_now() -> tuple[float, float]:
    """This machine's speed at the moment, in what Pilot's own time is made of: one statement on aiosqlite's
    thread and back (µs), and one commit synced to disk in WAL mode (µs). Figures taken on different days
    compare only through these."""
    import aiosqlite

    with tempfile.TemporaryDirectory() as folder:
        async with aiosqlite.connect(Path(folder) / "speed.db", isolation_level=None) as db:
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute("PRAGMA synchronous = FULL")
            await db.execute("CREATE TABLE t (a)")
            start = time.perf_counter()
            for _ in range(2000):
                await db.execute_fetchall("SELECT 1")
            hop = (time.perf_counter() - start) / 2000
            start = time.perf_counter()
            for _ in range(300):
                await db.execute("INSERT INTO t VALUES (1)")
            commit = (time.perf_counter() - start) / 300
    return hop * 1e6, commit * 1e6


async def postgres_now(url: str) -> float:
    """One statement to the PostgreSQL server and back through psycopg (µs): what a store on it adds per trip."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        start = time.perf_counter()
        for _ in range(2000):
            await conn.execute("SELECT 1")
        return (time.perf_counter() - start) / 2000 * 1e6


THROWAWAY = Path(__file__).resolve().parents[1] / "scripts" / "throwaway-postgres"


@contextlib.contextmanager
def postgres_store(given: str | None) -> Iterator[str | None]:
    """A fresh schema on the PostgreSQL server given (or PILOT_TEST_POSTGRES's, or a throwaway one started for
    the run), as a store URL; None when there is no server to be had."""
    import psycopg

    base, started = given or os.environ.get("PILOT_TEST_POSTGRES"), None
    if base is None:
        result = subprocess.run([str(THROWAWAY), "start"], capture_output=True, text=True)
        if result.returncode != 0:
            print(f"  (no PostgreSQL server for the store's figures: {result.stderr.strip()})")
            yield None
            return
        found = dict(line.removeprefix("export ").split("=", 1) for line in result.stdout.splitlines())
        base, started = found["PILOT_TEST_POSTGRES"], found["PILOT_TEST_POSTGRES_DIR"]
    schema = "bench_" + secrets.token_hex(4)
    try:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with contextlib.suppress(psycopg.Error), psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        if started:
            subprocess.run([str(THROWAWAY), "stop", started], check=False)


async def without_latency(
    address: tuple[str, str, str, str], rounds: int, postgres: str | None = None
) -> None:
    hop, commit = await machine_now()
    print(
        f"\n2. No injected delay ({rounds} rounds each). This machine now: one SQLite statement on aiosqlite's "
        f"thread and back {hop:.0f} us; one synced commit {commit:.0f} us; load average {os.getloadavg()[0]:.2f}"
    )
    modes: list[tuple[str, bool, StoreLocation | None]] = [("rest", False, None), ("streams", True, None)]
    if postgres is not None:
        print(f"  one statement to PostgreSQL over loopback and back: {await postgres_now(postgres):.0f} us")
        modes += [
            ("rest", False, StoreLocation.parse(postgres)),
            ("streams", True, StoreLocation.parse(postgres)),
        ]
    own_by_store: dict[tuple[str, str], float] = {}
    for mode, streams, store_at in modes:
        engine = "SQLite" if store_at is None else "PostgreSQL"
        with tempfile.TemporaryDirectory() as folder:
            async with contextlib.AsyncExitStack() as stack:
                runtime, timed = await open_runtime(Path(folder), address, stack, streams, store_at)
                rtt = await round_trip_ms(timed, 50)
                await direct_rounds(runtime, timed, 6)  # warm: instrument cache, imports, SQLite pages
                plans, places = await direct_rounds(runtime, timed, rounds)
                mcp_plans, mcp_places, checks = await mcp_rounds(runtime, timed, rounds)
        print(
            f"  [{mode:7}] in-process, {engine} store, BTCUSDT; one bare round trip (ticker read): {rtt:.2f} ms"
        )
        for label, plan, place, client in (
            ("use cases", plans, places, 0.0),
            ("MCP client", mcp_plans, mcp_places, checks),
        ):
            own = [a + b for a, b in zip(plan.own, place.own, strict=True)]
            wall = [a + b for a, b in zip(plan.wall, place.wall, strict=True)]
            median = statistics.median(own) * 1000
            if label == "use cases":
                own_by_store[(mode, engine)] = median
            print(
                f"  [{mode:7}]   {label:10}: plan+place wall {statistics.median(wall) * 1000:5.2f} ms; own time "
                f"median {median:5.2f} ms (plan {plan.median_ms(plan.own):.2f}, place {place.median_ms(place.own):.2f}), "
                f"p90 {p90_ms(own):.2f} ms"
                + (f"; of which the client's output-schema checks {client * 1000:.2f} ms" if client else "")
            )
    for mode in ("rest", "streams"):
        if (mode, "PostgreSQL") in own_by_store:
            sqlite, server = own_by_store[(mode, "SQLite")], own_by_store[(mode, "PostgreSQL")]
            print(
                f"  [{mode:7}] Pilot's own time per plan + place (use cases): SQLite {sqlite:.2f} ms, "
                f"PostgreSQL over loopback {server:.2f} ms ({server / sqlite:.2f}x)"
            )


async def stdio_cpu(
    address: tuple[str, str, str, str], scenario_file: Path, rounds: int, warm: int = 10
) -> None:
    """The server process's CPU per plan + place, external and embedded paper exchange, each mode and coin."""
    cpu_targets = {"rest": 12.0, "streams": 8.0}
    for exchange in ("external", "embedded"):
        for mode in ("rest", "streams"):
            for coin, orders in COINS.items():
                with tempfile.TemporaryDirectory() as folder:
                    home = Path(folder) / "home"
                    make_home(home, POLICY)
                    attach = ["--paper-url", address[0]] if exchange == "external" else []
                    streams = "--streams" if mode == "streams" else "--no-streams"
                    async with stdio_server(
                        home, *attach, "--scenario", str(scenario_file), streams
                    ) as server:
                        await server.rounds(list(orders), warm)
                        run = await server.rounds(list(orders), rounds)
                wall = [a + b for a, b in zip(run.plans.wall, run.places.wall, strict=True)]
                cpu = run.cpu_ms_per_round()
                target = cpu_targets[mode]
                verdict = (
                    f" (target <= {target:.0f} ms: {'ok' if cpu <= target else 'MISSED'})"
                    if exchange == "external"
                    else ""
                )
                print(
                    f"  [{mode:7}] stdio, {exchange} exchange, {coin}: server CPU per plan + place {cpu:5.2f} ms{verdict}; "
                    f"wall median {statistics.median(wall) * 1000:5.2f} ms, p90 {p90_ms(wall):5.2f} ms"
                )


async def long_session(
    scenario_file: Path, rounds: int, address: tuple[str, str, str, str] | None, sim_state: Path | None = None
) -> None:
    """`pilot serve` over many rounds: embedded (the default: the paper exchange in the server, its account in
    the home, streams on), or attached to the external exchange at `address` (streams on)."""
    quarter = rounds // 4
    where = "the embedded paper exchange" if address is None else "the external paper exchange"
    print(
        f"\n3. A long session: {rounds} rounds of plan + place through stdio on {where} (streams on), "
        f"BTCUSDT; load average {os.getloadavg()[0]:.2f}"
    )
    attach = ["--paper-url", address[0]] if address is not None else []
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        make_home(home, POLICY)
        async with stdio_server(home, *attach, "--scenario", str(scenario_file), "--streams") as server:
            windows = [await server.rounds(list(ORDERS), quarter) for _ in range(4)]
            state = sim_state or home / "paper" / "state.json"
            files = [path for path in (state, state.with_name(state.name + ".log")) if path.exists()]
            sizes = ", ".join(f"{path.name} {path.stat().st_size / 1e6:.2f} MB" for path in files) or "none"
    first, last = windows[0], windows[-1]
    for index, window in enumerate(windows):
        print(
            f"  orders {index * quarter + 1:5}-{(index + 1) * quarter:5}: place_order median "
            f"{window.places.median_ms():5.2f} ms, p90 {window.places.p90_ms():5.2f} ms; plan_order median "
            f"{window.plans.median_ms():5.2f} ms, p90 {window.plans.p90_ms():5.2f} ms; "
            f"server CPU per plan + place {window.cpu_ms_per_round():5.2f} ms"
        )
    ratio = last.places.median_ms() / first.places.median_ms()
    print(
        f"  place_order median, last quarter / first: {ratio:.2f}x (target <= 1.2x: {'ok' if ratio <= 1.2 else 'MISSED'}); "
        f"CPU last / first {last.cpu_ms_per_round() / first.cpu_ms_per_round():.2f}x; "
        f"the paper account on disk before the stop: {sizes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--rounds", type=int, default=30, help="rounds per figure with injected latency")
    parser.add_argument("--overhead-rounds", type=int, default=200, help="rounds per figure with none")
    parser.add_argument("--session-rounds", type=int, default=600)
    parser.add_argument(
        "--long", action="store_true", help="the issue's form: 2,000 session rounds, more rounds"
    )
    parser.add_argument("--only", default="trips,overhead,session", help="which parts, separated by commas")
    parser.add_argument(
        "--postgres", default=None, help="a PostgreSQL server for the store's figures (a URL)"
    )
    args = parser.parse_args()
    if args.long:
        args.rounds, args.overhead_rounds, args.session_rounds = (
            max(args.rounds, 60),
            max(args.overhead_rounds, 500),
            max(args.session_rounds, 2000),
        )
    parts = set(args.only.split(","))
    os.environ.setdefault("PILOT_JOURNAL_KEY_FILE", str(Path(tempfile.mkdtemp()) / "journal.key"))
    print(
        f"bench_plan_place on {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    with tempfile.TemporaryDirectory() as folder:
        if "trips" in parts:
            scenario_file = Path(folder) / "latency.json"
            scenario_file.write_text(json.dumps(bench_scenario(args.latency_ms)))
            address, shutdown = start_exchange(args.latency_ms)
            try:
                asyncio.run(with_latency(address, args.latency_ms, args.rounds, scenario_file))
            finally:
                shutdown()
        scenario_file = Path(folder) / "quick.json"
        scenario_file.write_text(json.dumps(bench_scenario(0)))
        if "overhead" in parts:
            address, shutdown = start_exchange(0)
            try:
                with postgres_store(args.postgres) as postgres:
                    asyncio.run(without_latency(address, args.overhead_rounds, postgres))
                print(" through stdio: the whole pilot serve process's CPU")
                asyncio.run(stdio_cpu(address, scenario_file, args.overhead_rounds))
            finally:
                shutdown()
        if "session" in parts:
            asyncio.run(long_session(scenario_file, args.session_rounds, None))
            sim_state = Path(folder) / "sim-state.json"
            address, shutdown = start_exchange(0, sim_state)  # its account in a file, as `pilot sim --home`
            try:
                asyncio.run(long_session(scenario_file, args.session_rounds, address, sim_state))
            finally:
                shutdown()


if __name__ == "__main__":
    sys.exit(main())
