"""Benchmark plan_order and place_order against the paper exchange, in exchange round trips and Pilot's own time.

Two modes side by side in one run: "rest" (streams off: every fact read over REST, the read-back too) and
"streams" (facts kept fresh by the paper exchange's Bybit V5 WebSocket streams, judged on while younger
than maxFactAgeMs; the outcome of a send learnt from the order stream), and the streams again while
stalled (the exchange stops pushing: every fact goes back to REST once older than maxFactAgeMs).
The WebSocket side has no injected delay: a push leaves when the engine changes, as the REST answer does.

Targets, with the exchange answering every request after an injected delay (scenario `latencyMs`, 50 ms):
rest: plan_order <= 1 round trip + 10 ms (facts are read concurrently, instrument rules cached) and
place_order <= 3 round trips + 10 ms; streams: plan_order <= 0.2 round trips, place_order <= 1.3; stalled:
as rest. With no injected delay: Pilot's own time per plan + place, median <= 5 ms, measured
through the in-memory MCP client and on the use cases directly. "Own time" is the wall time of the call minus
the time during which at least one exchange request was in flight, or Pilot was waiting for the exchange's
stream to show the order it had just sent (the union of those intervals), so the exchange's and the
network's share is taken out however many requests overlap.

The paper exchange runs in a child process, so its work does not share Pilot's GIL; rate limits are off.

    .venv/bin/python benchmarks/bench_plan_place.py [--latency-ms 50] [--rounds 20] [--overhead-rounds 200]
        [--postgres postgresql://USER@127.0.0.1:PORT/DB]
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
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, cast

from mcp import Client

from pilot.app.facts.stream_cache import StreamingReader, start_streams
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.road.clock import SystemClock
from pilot.app.road.ports import Exchange
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.exchange.bybit import BybitExchange
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
# Sell then buy back Bybit's smallest BTCUSDT lot: the position stays under its cap however many rounds run.
ORDERS = (
    {"symbol": "BTCUSDT", "side": "sell", "qty": "0.001"},
    {"symbol": "BTCUSDT", "side": "buy", "qty": "0.001"},
)


# ---- the exchange, in its own process -------------------------------------------------------------------


def serve(scenario: dict, ready: Any, stop: Any, stall: Any) -> None:
    from pilot.exchange.sim import start_paper_exchange

    with start_paper_exchange(scenario) as paper:
        ready.put((paper.url, paper.api_key, paper.api_secret, paper.ws_url))
        while not stop.wait(0.01):
            paper.stream_faults.stall = stall.is_set()


STALL: Any = None  # set in the parent: the child stops every stream push while it is set


def start_exchange(latency_ms: float) -> tuple[tuple[str, str, str, str], Callable[[], None]]:
    scenario = json.loads(
        resources.files("pilot.exchange.sim").joinpath("scenarios/default.json").read_text()
    )
    scenario["rateLimits"] = False
    scenario["latencyMs"] = latency_ms
    scenario["balances"] = {"USDT": "1000000"}
    global STALL
    ready: Any = multiprocessing.Queue()
    stop = multiprocessing.Event()
    STALL = multiprocessing.Event()
    process = multiprocessing.Process(target=serve, args=(scenario, ready, stop, STALL), daemon=True)
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


async def direct_rounds(runtime: Runtime, timed: TimedExchange, rounds: int) -> tuple[Measured, Measured]:
    plans, places = Measured(), Measured()
    for index in range(rounds):
        request = PlanRequest.parse(ORDERS[index % 2])
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
    runtime: Runtime, timed: TimedExchange, rounds: int, warm: int = 2
) -> tuple[Measured, Measured, float]:
    """Plan and place through the in-memory MCP client; also returns the client's schema checks per round."""
    plans, places = Measured(), Measured()
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        for index in range(warm):  # the first call of each tool lists the tools and compiles their schemas
            planned = await client.call_tool("plan_order", ORDERS[index % 2])
            await client.call_tool("place_order", {"plan_id": planned.structured_content["plan_id"]})
        validation = ValidationTimer(client.session)
        for index in range(rounds):
            planned = await measure(
                timed, lambda i=index: client.call_tool("plan_order", ORDERS[i % 2]), plans
            )
            plan_id = planned.structured_content["plan_id"]
            placed = await measure(
                timed, lambda p=plan_id: client.call_tool("place_order", {"plan_id": p}), places
            )
            assert placed.structured_content["status"] == "filled", placed.structured_content
    return plans, places, validation.seconds / rounds


async def with_latency(address: tuple[str, str, str, str], latency_ms: float, rounds: int) -> None:
    rows = []
    for mode in ("rest", "streams", "stalled"):
        with tempfile.TemporaryDirectory() as folder:
            async with contextlib.AsyncExitStack() as stack:
                runtime, timed = await open_runtime(Path(folder), address, stack, streams=mode != "rest")
                rtt = await round_trip_ms(timed, 10)
                cold = Measured()
                first = PlanRequest.parse(ORDERS[0])
                await measure(timed, lambda r=runtime, f=first: plan_order(r, f), cold)
                if mode == "stalled":
                    STALL.set()
                    assert timed.streaming is not None
                    await until_streamed(timed.streaming, False)
                try:
                    plans, places = await direct_rounds(runtime, timed, rounds)
                    mcp_plans, mcp_places, checks = await mcp_rounds(runtime, timed, rounds)
                finally:
                    STALL.clear()
        rows.append((mode, rtt, cold, plans, places, mcp_plans, mcp_places, checks))
    print(
        f"\nwith {latency_ms:.0f} ms injected per request; one bare round trip (ticker read): {rows[0][1]:.1f} ms"
    )
    targets = {"rest": (1.0, 3.0), "streams": (0.2, 1.3), "stalled": (1.0, 3.0)}
    for mode, rtt, cold, plans, places, mcp_plans, mcp_places, checks in rows:
        print(
            f"  [{mode}] cold plan_order (instrument rules not cached yet): {cold.median_ms(cold.wall):.1f} ms"
        )
        plan_trips, place_trips = targets[mode]
        for label, measured, trips in (
            ("plan_order  (use case)", plans, plan_trips),
            ("place_order (use case)", places, place_trips),
            ("plan_order  (MCP)     ", mcp_plans, plan_trips),
            ("place_order (MCP)     ", mcp_places, place_trips),
        ):
            median = measured.median_ms(measured.wall)
            target = trips * rtt + (10 if mode != "streams" else 0)
            print(
                f"  [{mode:7}] {label}: median {median:6.1f} ms = {median / rtt:4.2f} round trips, Pilot's own "
                f"{measured.median_ms(measured.own):4.1f} ms (target <= {target:.0f} ms: "
                f"{'ok' if median <= target else 'MISSED'}); exchange calls: {', '.join(measured.calls[-1]) or '-'}"
            )
        print(
            f"  [{mode:7}] (the MCP client's own output-schema checks: {checks * 1000:.1f} ms per plan + place)"
        )


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


@contextlib.contextmanager
def postgres_store(given: str | None) -> Iterator[str | None]:
    """A fresh schema on the PostgreSQL server given (or PILOT_TEST_POSTGRES's, or a throwaway one started for
    the run), as a store URL; None when there is no server to be had."""
    import psycopg

    base, started = given or os.environ.get("PILOT_TEST_POSTGRES"), None
    if base is None:
        script = Path(__file__).resolve().parents[1] / "scripts" / "throwaway-postgres"
        result = subprocess.run([str(script), "start"], capture_output=True, text=True)
        if result.returncode != 0:
            print(f"\nno PostgreSQL server for the store's figures: {result.stderr.strip()}")
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
            script = Path(__file__).resolve().parents[1] / "scripts" / "throwaway-postgres"
            subprocess.run([str(script), "stop", started], check=False)


async def without_latency(address: tuple[str, str, str, str], rounds: int, postgres: str | None) -> None:
    hop, commit = await machine_now()
    print(
        f"\nthis machine now: one SQLite statement on aiosqlite's thread and back {hop:.0f} us; "
        f"one synced commit {commit:.0f} us"
    )
    modes: list[tuple[str, bool, StoreLocation | None]] = [("rest", False, None), ("streams", True, None)]
    if postgres is not None:
        print(f"one statement to PostgreSQL over loopback and back: {await postgres_now(postgres):.0f} us")
        modes.append(("rest, PostgreSQL store", False, StoreLocation.parse(postgres)))
    own_by_store: dict[str, float] = {}
    for mode, streams, store_at in modes:
        with tempfile.TemporaryDirectory() as folder:
            async with contextlib.AsyncExitStack() as stack:
                runtime, timed = await open_runtime(Path(folder), address, stack, streams, store_at)
                rtt = await round_trip_ms(timed, 50)
                await direct_rounds(runtime, timed, 6)  # warm: instrument cache, imports, SQLite pages
                plans, places = await direct_rounds(runtime, timed, rounds)
                mcp_plans, mcp_places, checks = await mcp_rounds(runtime, timed, rounds)
        print(f"\n[{mode}] with no injected delay; one bare round trip (ticker read): {rtt:.2f} ms")
        for label, plan, place, client in (
            ("use cases", plans, places, 0.0),
            ("MCP client", mcp_plans, mcp_places, checks),
        ):
            own = [a + b for a, b in zip(plan.own, place.own, strict=True)]
            wall = [a + b for a, b in zip(plan.wall, place.wall, strict=True)]
            median = statistics.median(own) * 1000
            if label == "use cases" and not streams:
                own_by_store["sqlite" if store_at is None else "postgresql"] = median
            print(
                f"  {label:10}: plan+place wall {statistics.median(wall) * 1000:5.2f} ms; own time median "
                f"{median:5.2f} ms (plan {plan.median_ms(plan.own):.2f}, place {place.median_ms(place.own):.2f}), "
                f"p90 {statistics.quantiles(own, n=10)[-1] * 1000:.2f} ms (target median <= 5 ms: "
                f"{'ok' if median <= 5 else 'MISSED'})"
            )
            if client:
                print(
                    f"  {'':10}  of which the MCP client's output-schema checks (jsonschema, client side): "
                    f"{client * 1000:.2f} ms; without them {median - client * 1000:.2f} ms"
                )
    if len(own_by_store) == 2:
        sqlite, server = own_by_store["sqlite"], own_by_store["postgresql"]
        print(
            f"\nPilot's own time per plan + place (use cases, REST facts): SQLite {sqlite:.2f} ms, PostgreSQL "
            f"over loopback {server:.2f} ms ({server / sqlite:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--overhead-rounds", type=int, default=200)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server for the store's figures")
    args = parser.parse_args()
    address, shutdown = start_exchange(args.latency_ms)
    try:
        asyncio.run(with_latency(address, args.latency_ms, args.rounds))
    finally:
        shutdown()
    address, shutdown = start_exchange(0)
    try:
        with postgres_store(args.postgres) as postgres:
            asyncio.run(without_latency(address, args.overhead_rounds, postgres))
    finally:
        shutdown()


if __name__ == "__main__":
    main()
