"""`pilot serve`'s cold start against the bare imports of the libraries it needs, run in turn, as ratios.

Measured both ways a server runs:
- embedded: `python -m pilot serve --home HOME` (the embedded paper exchange, streams on: the default),
  against the bare imports of the libraries it needs (the MCP server SDK, pybit's REST and WebSocket
  clients, websockets for the paper exchange's streams, pydantic, aiosqlite, anyio, click);
- attached: `pilot serve --paper-url URL` (no paper exchange in the server: one runs in a child process of
  this script, as `pilot sim` does), against the bare imports of those libraries less the paper exchange's
  WebSocket server. This is the form of a server for Bybit (no console, no evals, no paper exchange in it):
  measured this way, what the embedded form's libraries hide shows.

Each: a fresh interpreter started, sent initialize and tools/list over stdio; the time from its start to
the tools/list answer; against a fresh interpreter importing only those libraries and exiting. Run A, B,
A, B, ... so that the machine's speed, which moves with what other processes do, moves both; the ratio of
each pair is printed with the medians. Target: A <= 1.25 x B (median of the pairs), both ways.

    .venv/bin/python benchmarks/bench_cold_start.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_plan_place import start_exchange
from bench_tools_list import INITIALIZE, INITIALIZED, TOOLS_LIST

ATTACHED_IMPORTS = (  # the stream client is websocket's (websocket-client, under pybit)
    "import mcp.server.mcpserver, mcp.server.stdio, pybit.unified_trading, websocket, pydantic, aiosqlite, "
    "anyio, click"
)
BARE_IMPORTS = ATTACHED_IMPORTS + ", websockets.asyncio.server"  # the embedded paper exchange's server
REQUESTS = [INITIALIZE, INITIALIZED, TOOLS_LIST]  # what a host sends first


def serve_until_tools(home: Path, env: dict[str, str], paper_url: str | None = None) -> float:
    """Seconds from starting `pilot serve` to reading its tools/list answer (then it is stopped)."""
    attach = ["--paper-url", paper_url] if paper_url else []
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "pilot", "serve", "--home", str(home), "--quiet", *attach],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(message) + "\n" for message in REQUESTS).encode())
    server.stdin.flush()
    try:
        for line in server.stdout:
            if json.loads(line).get("id") == TOOLS_LIST["id"]:
                return time.perf_counter() - started
        raise RuntimeError("pilot serve ended without answering tools/list")
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def bare_imports(env: dict[str, str], imports: str = BARE_IMPORTS) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", imports], check=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {args.runs} pairs run in turn")
    with tempfile.TemporaryDirectory(prefix="pilot-bench-") as folder:
        home = Path(folder) / "home"
        env = {**os.environ, "PILOT_JOURNAL_KEY_FILE": str(Path(folder) / "journal.key")}
        subprocess.run(
            [sys.executable, "-m", "pilot", "init", "--home", str(home)],
            check=True,
            capture_output=True,
            env=env,
        )
        pairs(args.runs, "embedded", lambda: serve_until_tools(home, env), lambda: bare_imports(env))
        address, shutdown = start_exchange(0)
        try:
            pairs(
                args.runs,
                "attached",
                lambda: serve_until_tools(home, env, address[0]),
                lambda: bare_imports(env, ATTACHED_IMPORTS),
            )
        finally:
            shutdown()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def pairs(runs: int, label: str, serve: Callable[[], float], bare: Callable[[], float]) -> None:
    """Warm both (the OS's file cache, the home's first start), then run them in turn and print the ratio."""
    serve()
    bare()
    serves, bares = [], []
    for _ in range(runs):
        serves.append(serve())
        bares.append(bare())
    ratios = [a / b for a, b in zip(serves, bares, strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"[{label}] pilot serve to its tools/list answer: median {statistics.median(serves) * 1000:.0f} ms "
        f"(min {min(serves) * 1000:.0f}, max {max(serves) * 1000:.0f}); bare imports of its libraries: median "
        f"{statistics.median(bares) * 1000:.0f} ms (min {min(bares) * 1000:.0f}, max {max(bares) * 1000:.0f})"
    )
    print(
        f"[{label}] ratio, median of the pairs: {ratio:.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}) "
        f"(target <= 1.25x: {'ok' if ratio <= 1.25 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
