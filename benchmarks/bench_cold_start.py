"""`pilot serve`'s cold start against the bare imports of the libraries it needs, run in turn, as ratios.

What is timed: a fresh interpreter running `python -m pilot serve --home HOME --quiet`, sent initialize and
tools/list over stdio (what a host sends first), from its start to the tools/list answer.

What "bare imports" means: a fresh interpreter (the same Python, flags and environment) that imports the
third-party libraries that server imports to get there, and nothing of Pilot's, then exits:
`python -c "import mcp.server.mcpserver, mcp.server.stdio, pybit.unified_trading, websocket, pydantic,
aiosqlite, anyio, anyio._backends._asyncio, click"` (the MCP server SDK and its stdio transport; pybit's
REST client, which brings requests; websocket-client, pybit's stream client; pydantic; aiosqlite; anyio and
the asyncio backend it loads to run anything; click). It is the floor any
Python server on those libraries pays before doing anything; the ratio is what Pilot adds to it: importing
its own modules, opening the home (policy, store, journal key), attaching to the exchange, registering its
tools and answering. The set is the one both ways: the paper exchange runs in a process of its own either
way, so no server imports the exchange's WebSocket server (`websockets`), and a library the server stopped
importing would leave the set (`BARE_IMPORTS`; `--libraries` prints what the server imports beyond it).

Measured both ways a paper server runs:
- embedded: `pilot serve --home HOME`, the home's own paper exchange (started by the first server on the
  home in a process of its own, then shared: warm after the first run);
- attached: `pilot serve --paper-url URL` to a paper exchange in a child process of this script (as `pilot
  sim`). Both are a server that serves no console, no evals and no paper exchange of its own.

Both sides run with bytecode cached alike: every child runs with PYTHONPYCACHEPREFIX in this run's
temporary folder, written by the warm-up runs (and PYTHONDONTWRITEBYTECODE unset). Without it a source
checkout run where PYTHONDONTWRITEBYTECODE is set compiled every one of Pilot's modules from source on every
start while the libraries, byte-compiled when pip installed them, did not: a difference in the measure, not
in the start an installed Pilot makes (it was most of the gap between 1.1-1.2x here and 1.5-1.8x measured
from outside).

The machine is shared, so the measure is made to hold under load: warm-up runs first (the OS's file cache,
the home's first start, the exchange); then `--runs` rounds, each running the server and the bare imports
back to back, in alternate order from round to round (so neither always runs on a cache the other just
warmed), both ways interleaved round by round (so a burst of load lands on both); the ratio of each round's
pair, the median of those ratios (the figure against the target), and, as the steadier cross-check, the same
ratio of the CPU seconds each process used to get there (the server's read from /proc at the answer, the
bare imports' whole life). The load average is printed at the start, between the ways and at the end.
Target: median wall ratio <= 1.25x, both ways. `python -m pilot` pauses the cyclic garbage collector while
it starts (pilot.cli.heap), which the bare imports do not: the ratio against the bare imports with the
collector paused too is printed beside it, what Pilot adds like for like.

    .venv/bin/python benchmarks/bench_cold_start.py [--runs 11] [--libraries]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench_plan_place import start_exchange
from bench_tools_list import INITIALIZE, INITIALIZED, TOOLS_LIST

LIBRARIES = (  # the stream client is websocket-client's (`websocket`, under pybit)
    "mcp.server.mcpserver",
    "mcp.server.stdio",
    "pybit.unified_trading",
    "websocket",
    "pydantic",
    "aiosqlite",
    "anyio",
    "anyio._backends._asyncio",  # the event loop anyio runs the SDK's stdio server on: loaded by anyio.run
    "click",
)
BARE_IMPORTS = "import " + ", ".join(LIBRARIES)
# The same with the cyclic collector paused, as `python -m pilot` starts (pilot.cli.heap): like for like.
PAUSED_IMPORTS = "import gc; gc.disable(); " + BARE_IMPORTS
REQUESTS = [INITIALIZE, INITIALIZED, TOOLS_LIST]  # what a host sends first
TARGET = 1.25
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Way:
    """One way the server runs, and what its rounds measured: (wall seconds, CPU seconds) per process."""

    label: str
    serve: Callable[[], tuple[float, float]]
    serves: list[tuple[float, float]] = field(default_factory=list)
    bares: list[tuple[float, float]] = field(default_factory=list)
    paused: list[tuple[float, float]] = field(default_factory=list)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds the process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def serve_until_tools(home: Path, env: dict[str, str], paper_url: str | None = None) -> tuple[float, float]:
    """Wall and CPU seconds from starting `pilot serve` to reading its tools/list answer (then it is stopped)."""
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
                return time.perf_counter() - started, cpu_seconds(server.pid)
        raise RuntimeError("pilot serve ended without answering tools/list")
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def bare_imports(env: dict[str, str], imports: str = BARE_IMPORTS) -> tuple[float, float]:
    """Wall and CPU seconds of a fresh interpreter importing the libraries (BARE_IMPORTS) and exiting."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", imports], check=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--libraries", action="store_true", help="print what the server imports beyond")
    args = parser.parse_args()
    print(f"{load()}; {args.runs} rounds, each way's server and the bare imports in turn")
    with tempfile.TemporaryDirectory(prefix="pilot-bench-") as folder:
        home = Path(folder) / "home"
        env = {
            **{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
            "PILOT_JOURNAL_KEY_FILE": str(Path(folder) / "journal.key"),
            "PYTHONPYCACHEPREFIX": str(Path(folder) / "bytecode"),
        }
        subprocess.run(
            [sys.executable, "-m", "pilot", "init", "--home", str(home)],
            check=True,
            capture_output=True,
            env=env,
        )
        address, shutdown = start_exchange(0)
        try:
            ways = [
                Way("embedded", lambda: serve_until_tools(home, env)),
                Way("attached", lambda: serve_until_tools(home, env, address[0])),
            ]
            if args.libraries:
                libraries_beyond(home, env, address[0])
            rounds(ways, args.runs, env)
        finally:
            shutdown()
            subprocess.run(
                [sys.executable, "-m", "pilot", "sim", "stop", "--home", str(home)],
                capture_output=True,
                env=env,
            )
    for way in ways:
        report(way)
    print(f"at the end: {load()}")


def rounds(ways: list[Way], runs: int, env: dict[str, str]) -> None:
    """Warm each way and the bare imports, then run the rounds, the ways interleaved."""
    for way in ways:
        way.serve()
    bare_imports(env)
    for number in range(runs):
        for way in ways:
            if number % 2 == 0:
                way.serves.append(way.serve())
                way.bares.append(bare_imports(env))
                way.paused.append(bare_imports(env, PAUSED_IMPORTS))
            else:
                way.paused.append(bare_imports(env, PAUSED_IMPORTS))
                way.bares.append(bare_imports(env))
                way.serves.append(way.serve())
        if number == runs // 2:
            print(f"half way: {load()}")


def report(way: Way) -> None:
    walls = [a[0] / b[0] for a, b in zip(way.serves, way.bares, strict=True)]
    cpus = [a[1] / b[1] for a, b in zip(way.serves, way.bares, strict=True) if b[1] > 0]
    ratio = statistics.median(walls)

    def ms(values: list[tuple[float, float]], which: int) -> str:
        found = [value[which] * 1000 for value in values]
        return f"median {statistics.median(found):.0f} ms (min {min(found):.0f}, max {max(found):.0f})"

    print(
        f"[{way.label}] pilot serve to its tools/list answer: {ms(way.serves, 0)}, CPU {ms(way.serves, 1)}; "
        f"bare imports: {ms(way.bares, 0)}, CPU {ms(way.bares, 1)}"
    )
    print(
        f"[{way.label}] wall ratio, median of the rounds: {ratio:.2f}x (min {min(walls):.2f}, max "
        f"{max(walls):.2f}; target <= {TARGET}x: {ratio / TARGET:.2f} of it, "
        f"{'ok' if ratio <= TARGET else 'MISSED'}); CPU ratio {statistics.median(cpus):.2f}x "
        f"(min {min(cpus):.2f}, max {max(cpus):.2f})"
    )
    alike = [a[0] / b[0] for a, b in zip(way.serves, way.paused, strict=True)]
    print(
        f"[{way.label}] like for like, against the bare imports with the collector paused as `python -m pilot` "
        f"pauses it ({ms(way.paused, 0)}): {statistics.median(alike):.2f}x (min {min(alike):.2f}, max "
        f"{max(alike):.2f})"
    )


def libraries_beyond(home: Path, env: dict[str, str], paper_url: str) -> None:
    """The top-level packages a served server has imported that neither the bare imports nor Python's own
    library bring (`python -X importtime`: what the set may lack, or what Pilot should not import)."""
    for way, attach in (("embedded", []), ("attached", ["--paper-url", paper_url])):
        server = subprocess.Popen(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "pilot",
                "serve",
                "--home",
                str(home),
                "--quiet",
                *attach,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        _, err = server.communicate("".join(json.dumps(m) + "\n" for m in REQUESTS).encode(), timeout=60)
        bare = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", BARE_IMPORTS], capture_output=True, env=env, check=True
        )
        beyond = _packages(err.decode()) - _packages(bare.stderr.decode()) - set(sys.stdlib_module_names)
        print(f"[{way}] imported beyond the bare imports: {', '.join(sorted(beyond))}")


def _packages(importtime: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in importtime.splitlines()
        if line.startswith("import time:") and "|" in line and "imported package" not in line
    }


if __name__ == "__main__":
    main()
