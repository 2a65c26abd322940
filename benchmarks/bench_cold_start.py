"""`pilot serve`'s cold start against the bare imports of the libraries it needs, run in turn, as ratios.

A: `python -m pilot serve --home HOME` (the embedded paper exchange, streams on: the default) started in a
fresh interpreter, sent initialize and tools/list over stdio; the time from its start to the tools/list
answer. B: a fresh interpreter importing only the libraries that server needs (the MCP server SDK, pybit's
REST and WebSocket clients, websockets for the paper exchange's streams, pydantic, aiosqlite, anyio, click)
and exiting. Run A, B, A, B, ... so that the
machine's speed, which moves with what other processes do, moves both; the ratio of each pair is printed
with the medians. Target: A <= 1.25 x B (median of the pairs).

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
from pathlib import Path

from bench_tools_list import INITIALIZE, INITIALIZED, TOOLS_LIST

BARE_IMPORTS = (  # the embedded paper exchange's WebSocket server is websockets'; the stream client, websocket's
    "import mcp.server.mcpserver, mcp.server.stdio, pybit.unified_trading, websocket, websockets.asyncio.server, "
    "pydantic, aiosqlite, anyio, click"
)
REQUESTS = [INITIALIZE, INITIALIZED, TOOLS_LIST]  # what a host sends first


def serve_until_tools(home: Path, env: dict[str, str]) -> float:
    """Seconds from starting `pilot serve` to reading its tools/list answer (then it is stopped)."""
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "pilot", "serve", "--home", str(home), "--quiet"],
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


def bare_imports(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_IMPORTS], check=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pilot-bench-") as folder:
        home = Path(folder) / "home"
        env = {**os.environ, "PILOT_JOURNAL_KEY_FILE": str(Path(folder) / "journal.key")}
        subprocess.run(
            [sys.executable, "-m", "pilot", "init", "--home", str(home)],
            check=True,
            capture_output=True,
            env=env,
        )
        serve_until_tools(home, env)  # warm: the OS's file cache, the home's first start (its state file)
        bare_imports(env)
        serves, bares = [], []
        for _ in range(args.runs):
            serves.append(serve_until_tools(home, env))
            bares.append(bare_imports(env))
    ratios = [a / b for a, b in zip(serves, bares, strict=True)]
    ratio = statistics.median(ratios)
    print(f"on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {args.runs} pairs run in turn")
    print(
        f"pilot serve to its tools/list answer: median {statistics.median(serves) * 1000:.0f} ms "
        f"(min {min(serves) * 1000:.0f}, max {max(serves) * 1000:.0f})"
    )
    print(
        f"bare imports of its libraries:        median {statistics.median(bares) * 1000:.0f} ms "
        f"(min {min(bares) * 1000:.0f}, max {max(bares) * 1000:.0f})"
    )
    print(
        f"ratio, median of the pairs: {ratio:.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}) "
        f"(target <= 1.25x: {'ok' if ratio <= 1.25 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
