"""Benchmark the paper exchange: signed order requests per second over loopback, and startup time.

Targets: >= 1,500 signed order requests/s with N concurrent pybit sessions, startup < 0.5 s.
The exchange runs in a child process (`pilot sim`-like) so that the clients' GIL does not slow the server;
rate limits are switched off in the scenario (Bybit's 10/s per key would cap the measure, not the server).
On 2 cores the clients (pybit over requests: about 330 us of CPU a request) and the server share the machine,
so the server's own CPU per order (user + system, from /proc) is printed too: it does not move with the load
other processes put on the machine as the rate does.

    .venv/bin/python benchmarks/bench_paper_exchange.py [--sessions 4] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from importlib import resources
from pathlib import Path

STARTUP_SNIPPET = (
    "import time; t = time.perf_counter(); "
    "from pilot.paper import start_paper_exchange; "
    "p = start_paper_exchange(); print(time.perf_counter() - t); p.stop()"
)


def startup_seconds() -> float:
    """Cold start in a fresh interpreter: import, load the default scenario, listen."""
    output = subprocess.run(
        [sys.executable, "-c", STARTUP_SNIPPET], capture_output=True, text=True, check=True
    )
    return float(output.stdout.strip())


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (/proc/PID/stat fields 14 and 15)."""
    after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")


def serve(scenario: dict, ready: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    from pilot.paper import start_paper_exchange

    with start_paper_exchange(scenario) as paper:
        ready.put((paper.url, paper.api_key, paper.api_secret))
        stop.wait()
        ready.put(paper.request_count("/v5/order/create"))


def client(url: str, key: str, secret: str, deadline: float, counts: list[int], index: int) -> None:
    from pybit.unified_trading import HTTP

    session = HTTP(api_key=key, api_secret=secret, max_retries=1)
    session.endpoint = url
    session.client.trust_env = False
    session.retry_codes = set()
    sides = ("Buy", "Sell")
    done = 0
    while time.time() < deadline:
        side = sides[done % 2]
        price = "80300" if side == "Buy" else "80100"
        session.place_order(
            category="linear",
            symbol="BTCUSDT",
            side=side,
            orderType="Limit",
            qty="0.001",
            price=price,
            timeInForce="IOC",
        )
        done += 1
    counts[index] = done


def client_process(
    url: str, key: str, secret: str, deadline: float, sessions: int, out: multiprocessing.Queue
) -> None:
    counts = [0] * sessions
    threads = [
        threading.Thread(target=client, args=(url, key, secret, deadline, counts, i)) for i in range(sessions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put(sum(counts))


def throughput(sessions: int, processes: int, seconds: float) -> tuple[float, int, float]:
    """Requests/s from `sessions` pybit sessions spread over `processes` client processes; the requests the
    exchange received; its CPU seconds per request."""
    scenario = json.loads(resources.files("pilot.paper").joinpath("scenarios/default.json").read_text())
    scenario["rateLimits"] = False
    scenario["balances"] = {"USDT": "10000000"}
    ready: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(scenario, ready, stop), daemon=True)
    server.start()
    url, key, secret = ready.get(timeout=10)
    out: multiprocessing.Queue = multiprocessing.Queue()
    per_process = [sessions // processes + (1 if i < sessions % processes else 0) for i in range(processes)]
    started = time.time()
    cpu_before = cpu_seconds(server.pid)
    deadline_wall = started + seconds
    clients = [
        multiprocessing.Process(target=client_process, args=(url, key, secret, deadline_wall, n, out))
        for n in per_process
        if n
    ]
    for process in clients:
        process.start()
    total = sum(out.get(timeout=seconds + 30) for _ in clients)
    elapsed = time.time() - started
    cpu = cpu_seconds(server.pid) - cpu_before
    for process in clients:
        process.join(timeout=10)
    stop.set()
    received = ready.get(timeout=10)
    server.join(timeout=10)
    return total / elapsed, received, cpu / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2, help="client processes (pybit is GIL-bound)")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    start = min(startup_seconds() for _ in range(3))
    rate, received, cpu = throughput(args.sessions, args.processes, args.seconds)
    print(
        f"startup (default scenario, fresh interpreter, best of 3): {start * 1000:.0f} ms  (target < 500 ms)"
    )
    print(
        f"signed order requests: {rate:,.0f}/s with {args.sessions} pybit sessions in {args.processes} client "
        f"processes over {args.seconds:.0f} s "
        f"({received:,} received by the exchange)  (target >= 1,500/s); load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"the exchange's own CPU per signed order: {cpu * 1e6:.0f} us (one core would serve {1 / cpu:,.0f}/s)"
    )


if __name__ == "__main__":
    main()
