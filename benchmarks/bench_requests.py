"""Exchange requests per order: plan_order + place_order over REST and with streams, on Bybit's wire and OKX's.

The paper exchange runs in this process (its request counters are read by path); OKX's wire is the tests'
OKX front over it (tests/okx_front: OKX v5 REST and WebSocket on 127.0.0.1, the requests it received read by
path), driven by the OKX adapter as okx-demo. On each, the use cases plan and place `--rounds` orders after
two to warm (instrument rules, listings). Printed, as ratios against the issue's targets (the same for both
venues): the requests of a plan, of a place, and of the order (plan + place), by path, as medians, against
at most half of the 15 a REST order took on Bybit (7.5); over REST, the sequential round trips place_order's
requests make (requests in flight together count once) against three (fresh facts, the create, the
read-back); on Bybit, the orders a second its documented limits allow at that cost (the IP's 600 requests per
5 s, the tightest per-UID path), against the 10 a second its create allows a UID on linear. Then, on Bybit, over REST with a daily loss limit on a day that has already closed `--closed`
trades: the closed-PnL requests per judgement, against the pages a whole-day read of them takes (it read the
whole day on every judgement before issue 41; now it reads on from the newest row held).

    .venv/bin/python benchmarks/bench_requests.py [--rounds 20] [--closed 500] [--venues bybit,okx]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol, cast

import bench_plan_place as base

from pilot.app.facts.streaming_reader import StreamingReader, start_streams
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.road.clock import SystemClock
from pilot.app.road.ports import Exchange
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.core.day_pnl import OVERLAP
from pilot.exchange.okx.adapter import OkxExchange
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.handlers import ROUTES
from pilot.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: the tests' OKX front
from tests.okx_front import OkxFront

BEFORE = 15  # requests per REST order when issue 41 was filed (counted at a proxy)
TARGET = BEFORE / 2
TRIPS = 3  # place_order over REST: fresh facts, the create, the read-back, one after the other
CLOSED_PNL = "/v5/position/closed-pnl"
PAGE = 100  # closed-PnL rows a page (the adapter asks for Bybit's largest)
# Bybit's limits (rate-limit.mdx): 600 requests in a 5-second window per IP, and per second per UID on the
# private paths an order uses (order/create: linear's 10/s; the reads 50/s). Public market data counts
# against the IP's only.
IP_PER_SECOND = 600 / 5
UID_PER_SECOND = {
    "/v5/order/create": 10,
    "/v5/order/realtime": 50,
    "/v5/position/list": 50,
    "/v5/account/wallet-balance": 50,
    "/v5/execution/list": 50,
    CLOSED_PNL: 50,
}


class Wire(Protocol):
    """A venue's wire the orders go through: what it has received so far, by path, and a runtime on it."""

    name: str
    policy: dict[str, Any]
    orders: tuple[dict[str, str], ...]

    def counts(self) -> Counter[str]: ...

    async def open(
        self, home: Path, stack: contextlib.AsyncExitStack, streams: bool
    ) -> tuple[Runtime, base.TimedExchange]: ...


class BybitWire:
    """Bybit V5's wire: the paper exchange itself, as bench_plan_place drives it."""

    name = "bybit"
    orders = base.ORDERS

    def __init__(self, paper: PaperExchange, policy: dict[str, Any] = base.POLICY) -> None:
        self.paper, self.policy = paper, policy

    def counts(self) -> Counter[str]:
        return Counter({path: n for path in ROUTES if (n := self.paper.request_count(path))})

    async def open(
        self, home: Path, stack: contextlib.AsyncExitStack, streams: bool
    ) -> tuple[Runtime, base.TimedExchange]:
        address = (self.paper.url, self.paper.api_key, self.paper.api_secret, self.paper.ws_url)
        return await base.open_runtime(home, address, stack, streams=streams)


def okx_name(symbol: str) -> str:
    return symbol.removesuffix("USDT") + "-USDT"  # BTCUSDT -> BTC-USDT (spot and perpetual)


class OkxWire:
    """OKX v5's wire: the OKX front over the paper exchange, the OKX adapter on it as okx-demo."""

    name = "okx"
    orders = tuple({**order, "symbol": okx_name(order["symbol"])} for order in base.ORDERS)
    policy: ClassVar[dict[str, Any]] = {
        **base.POLICY,
        "allowedMarkets": [okx_name(s) for s in base.POLICY["allowedMarkets"]],
    }

    def __init__(self, front: OkxFront) -> None:
        self.front = front

    def counts(self) -> Counter[str]:
        return Counter(seen.path for seen in self.front.seen())

    async def open(
        self, home: Path, stack: contextlib.AsyncExitStack, streams: bool
    ) -> tuple[Runtime, base.TimedExchange]:
        front = self.front
        adapter = OkxExchange.connect(
            "okx-demo",
            api_key=front.api_key,
            api_secret=front.api_secret,
            passphrase=front.passphrase,
            base_url=front.url,
        )
        stack.push_async_callback(adapter.close)
        timed = base.TimedExchange(adapter)
        store = await open_store(Home(home).database_path, home=home)
        stack.push_async_callback(store.close)
        reader = None
        if streams:  # OKX's streams are opened by its own adapter: the reader reads over the bare one
            streamed = await start_streams(
                stack,
                adapter,
                SystemClock(),
                lambda: base.MAX_FACT_AGE_MS,
                environment="okx-demo",
                api_key=front.api_key,
                api_secret=front.api_secret,
                symbols=tuple(self.policy["allowedMarkets"]),
                paper_ws_url=front.ws_url,
            )
            assert streamed is not None, "the streams did not start"
            await base.until_streamed(streamed, True)
            timed.streaming = streamed
            reader = cast(
                StreamingReader, base.TimedExchange(streamed, frozenset({"find_order"}), into=timed)
            )
        runtime = assemble_runtime(
            home, store, cast(Exchange, timed), SystemClock(), environment="okx-demo", reader=reader
        )
        return runtime, timed


@contextlib.contextmanager
def wire_on(name: str, paper: PaperExchange) -> Any:
    if name == "bybit":
        yield BybitWire(paper)
        return
    with OkxFront(paper) as front:
        yield OkxWire(front)


def sequential(intervals: list[tuple[float, float]]) -> int:
    """How many times a request was sent with none in flight: the round trips a caller waited through."""
    trips, end = 0, float("-inf")
    for start, stop in sorted(intervals):
        if start >= end:
            trips += 1
        end = max(end, stop)
    return trips


async def run(venue: str, streams: bool, rounds: int) -> float:
    """Requests per order on `venue`'s wire, printed; the median returned."""
    with start_paper_exchange(base.bench_scenario(0)) as paper, wire_on(venue, paper) as wire:
        plans, places, trips = await rounds_on(wire, streams, rounds)
    mode = f"{venue} {'streams' if streams else 'rest'}"
    plan, place = (statistics.median(sum(c.values()) for c in cs) for cs in (plans, places))
    total = plan + place
    waits = (
        f"; place_order's sequential round trips {statistics.median(trips):g} "
        f"({statistics.median(trips) / TRIPS:.2f}x the {TRIPS} of fresh facts, create, read-back)"
        if not streams
        else ""
    )
    print(
        f"[{mode:13}] requests per order {total:g} (plan {plan:g}, place {place:g}): {total / TARGET:.2f}x "
        f"the target of at most {TARGET:g} ({total / BEFORE:.2f}x the {BEFORE} before){waits}"
    )
    print(f"                plan  by path: {dict(sorted(plans[-1].items()))}")
    print(f"                place by path: {dict(sorted(places[-1].items()))}")
    if venue == "bybit":
        print(f"                {headroom(plans[-1] + places[-1])}")
    return total


def headroom(order: Counter[str]) -> str:
    """The orders a second Bybit's limits allow at this cost per order: by the IP's window, and by the
    tightest per-UID path; against the create's own limit (what no guard can raise)."""
    by_ip = IP_PER_SECOND / sum(order.values())
    paths = {path: UID_PER_SECOND[path] / n for path, n in order.items() if path in UID_PER_SECOND}
    tightest = min(paths, key=paths.__getitem__)
    create = UID_PER_SECOND["/v5/order/create"]
    allowed = min(by_ip, paths[tightest])
    return (
        f"orders a second Bybit's limits allow at this cost: {allowed:.1f} ({allowed / create:.2f}x the "
        f"{create}/s its create allows a UID on linear; the IP's 600 per 5 s: {by_ip:.1f}, {tightest}: "
        f"{paths[tightest]:.1f})"
    )


async def rounds_on(
    wire: Wire, streams: bool, rounds: int
) -> tuple[list[Counter[str]], list[Counter[str]], list[int]]:
    """Plan and place `rounds` orders (after two to warm): each one's plan and place requests by path, and
    place_order's sequential round trips."""
    plans: list[Counter[str]] = []
    places: list[Counter[str]] = []
    trips: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        async with contextlib.AsyncExitStack() as stack:
            runtime, timed = await wire.open(Path(folder), stack, streams)
            (Path(folder) / "policy.json").write_text(json.dumps(wire.policy))
            for index in range(rounds + 2):
                before = wire.counts()
                planned = await plan_order(runtime, PlanRequest.parse(wire.orders[index % 2]))
                assert planned.plan_id is not None, planned
                between = wire.counts()
                timed.reset()
                placed = await place_order(runtime, planned.plan_id)
                assert placed.status == "filled", placed
                if index >= 2:
                    plans.append(between - before)
                    places.append(wire.counts() - between)
                    trips.append(sequential(timed.intervals))
    return plans, places, trips


async def daily_loss(rounds: int, closed: int) -> None:
    """Over REST with a daily loss limit, on a day with `closed` closed trades already (left by another client
    of the key, then the exchange's time moved past OVERLAP): closed-PnL requests per judgement."""
    with start_paper_exchange(base.bench_scenario(0)) as paper:
        for side in ("Sell", "Buy") * closed:
            order = {"symbol": "BTCUSDT", "side": side, "orderType": "Market", "qty": "0.001"}
            paper.leave_order("linear", order)
        paper.advance(int((OVERLAP + timedelta(minutes=1)).total_seconds() * 1000))
        policy = {**base.POLICY, "dailyLossLimitUsd": 1000}
        plans, places, _ = await rounds_on(BybitWire(paper, policy), False, rounds)
    per_judgement = statistics.median(c[CLOSED_PNL] for c in (*plans, *places))
    whole_day = (closed + rounds) // PAGE + 2  # full pages, the last rows, and the empty page after them
    total = statistics.median(sum(p.values()) + sum(q.values()) for p, q in zip(plans, places, strict=True))
    print(
        f"[rest, daily loss limit, {closed} trades closed earlier today] closed-PnL requests per judgement "
        f"{per_judgement:g} (a whole-day read: {whole_day}, as every judgement read before); requests per "
        f"order {total:g} (the day's spot fills and positions too)"
    )
    print(f"          plan  by path: {dict(sorted(plans[-1].items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--closed", type=int, default=500, help="trades closed earlier today (daily loss run)"
    )
    parser.add_argument("--venues", default="bybit,okx", help="the wires to measure, comma-separated")
    args = parser.parse_args()
    os.environ.setdefault("PILOT_JOURNAL_KEY_FILE", str(Path(tempfile.mkdtemp()) / "journal.key"))
    print(f"bench_requests on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    venues = args.venues.split(",")
    totals = {
        (venue, streams): asyncio.run(run(venue, streams, args.rounds))
        for venue in venues
        for streams in (False, True)
    }
    if {"bybit", "okx"} <= set(venues):
        for streams in (False, True):
            okx, bybit = totals["okx", streams], totals["bybit", streams]
            print(f"[okx / bybit {'streams' if streams else 'rest'}] {okx:g} / {bybit:g} requests per order")
    if "bybit" in venues:
        asyncio.run(daily_loss(args.rounds, args.closed))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
