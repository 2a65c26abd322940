"""plan_order and place_order through a real `pilot serve` over stdio: wall time per call and the server's CPU.

The server is a child process started by the MCP SDK's stdio client, as an agent's host starts it. Its CPU
(user + system, every thread: the SDK, the use cases, the adapter's signing and HTTP, and the embedded paper
exchange when there is one) is read from /proc before and after a run of rounds, and divided by them.
Used by bench_plan_place.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, every thread (/proc/PID/stat fields 14 and 15)."""
    after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / TICKS


def children(command_part: str) -> set[int]:
    """This process's children whose command line holds `command_part`."""
    found = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    if command_part in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                        found.add(int(pid))
    return found


def make_home(home: Path, policy: dict[str, Any]) -> None:
    """A Pilot home made by `pilot init`, with the benchmark's policy."""
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pilot", "init", "--home", str(home)],
        check=True,
        capture_output=True,
    )
    (home / "policy.json").write_text(json.dumps(policy))


@dataclass
class Calls:
    """Wall seconds of each call of one tool."""

    wall: list[float] = field(default_factory=list)

    def median_ms(self) -> float:
        return statistics.median(self.wall) * 1000

    def p90_ms(self) -> float:
        return quantile(self.wall, 0.9) * 1000


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class StdioRun:
    plans: Calls = field(default_factory=Calls)
    places: Calls = field(default_factory=Calls)
    cpu_s: float = 0.0  # the server process's CPU over the counted rounds
    rounds: int = 0

    def cpu_ms_per_round(self) -> float:
        return self.cpu_s / self.rounds * 1000 if self.rounds else float("nan")


class StdioServer:
    """A connected MCP client and the pid of the `pilot serve` it started."""

    def __init__(self, client: Client, pid: int) -> None:
        self.client = client
        self.pid = pid

    async def round(self, order: dict[str, Any], into: StdioRun) -> None:
        start = time.perf_counter()
        planned = await self.client.call_tool("plan_order", order)
        planned_at = time.perf_counter()
        content = planned.structured_content or {}
        assert content.get("status") == "ok", content
        placed = await self.client.call_tool("place_order", {"plan_id": content["plan_id"]})
        done = time.perf_counter()
        answer = placed.structured_content or {}
        assert answer.get("status") == "filled", answer
        into.plans.wall.append(planned_at - start)
        into.places.wall.append(done - planned_at)

    async def rounds(
        self, orders: list[dict[str, Any]], count: int, into: StdioRun | None = None
    ) -> StdioRun:
        """`count` rounds of plan + place, alternating `orders`; the server's CPU over them."""
        run = into or StdioRun()
        before = cpu_seconds(self.pid)
        for index in range(count):
            await self.round(orders[index % len(orders)], run)
        run.cpu_s += cpu_seconds(self.pid) - before
        run.rounds += count
        return run


@contextlib.asynccontextmanager
async def stdio_server(home: Path, *serve_args: str) -> AsyncIterator[StdioServer]:
    """`pilot serve --home HOME ARGS` over stdio, as a host starts it."""
    before = children("\0serve\0")
    args = ["-m", "pilot", "serve", "--home", str(home), "--quiet", *serve_args]
    # the whole environment (the SDK passes only a safe few by default): PILOT_JOURNAL_KEY_FILE among them
    parameters = StdioServerParameters(command=sys.executable, args=args, cwd=str(home), env=dict(os.environ))
    async with Client(parameters) as client:
        await client.list_tools()
        (pid,) = children("\0serve\0") - before
        yield StdioServer(client, pid)
