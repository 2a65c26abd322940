"""Print what an answer costs an agent: the bytes of a typical refusal, an ok plan and the kill switch's refusal.

An agent pays for every answer it reads, on every call. Each is measured as it goes over the wire: a real
`pilot serve` over stdio in a temporary home (`pilot init`'s policy: BTCUSDT capped at $150 per position and
per order; the embedded paper exchange on its default scenario, Bybit's real BTCUSDT filters), one
`initialize`, then the calls below in turn. For each answer it prints the text the model reads (the MCP
result's text content), the structured content (compact JSON, what a client validates) and the whole
JSON-RPC line.

1. refusal: plan_order sell 0.002 BTCUSDT, about $160, above both $150 caps (demo step 1);
2. ok plan: plan_order sell 0.001 BTCUSDT, about $80 (demo step 2: a human must confirm it);
3. kill switch: activate_kill_switch, then plan_order buy 0.001 BTCUSDT, refused as trading is reducing.

tests/app/test_answer_sizes.py holds the text of each at or under LIMITS_BYTES, half of what it was.

    .venv/bin/python benchmarks/bench_answers.py [--show]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# What the model reads of each answer (its text content), at most: half of what each was before answers
# were made compact (issue 40: refusal 2,810, ok plan 1,674, kill switch 2,153 bytes).
BEFORE_BYTES = {"refusal": 2_810, "ok plan": 1_674, "kill switch": 2_153}
LIMITS_BYTES = {name: before // 2 for name, before in BEFORE_BYTES.items()}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},  # a client that shows forms, as Claude Code does
        "clientInfo": {"name": "bench_answers", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SHORT = {"symbol": "BTCUSDT", "side": "sell"}
CALLS: list[tuple[str | None, str, dict[str, Any]]] = [
    ("refusal", "plan_order", {**SHORT, "qty": "0.002"}),
    ("ok plan", "plan_order", {**SHORT, "qty": "0.001"}),
    (None, "activate_kill_switch", {"reason": "demo: the agent halts itself"}),  # as the demo does
    ("kill switch", "plan_order", {"symbol": "BTCUSDT", "side": "buy", "qty": "0.001"}),
]


def answer_lines(home: Path, timeout: float = 60) -> dict[str, bytes]:
    """The raw JSON-RPC line `pilot serve --home HOME` answers each measured call with, by its name."""
    server = subprocess.Popen(
        [sys.executable, "-m", "pilot", "serve", "--home", str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        _ask(server, INITIALIZE)
        _send(server, INITIALIZED)
        found = {}
        for number, (name, tool, arguments) in enumerate(CALLS, start=1):
            request = {
                "jsonrpc": "2.0",
                "id": number,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
            line = _ask(server, request)
            if name is not None:
                found[name] = line
        return found
    finally:
        server.stdin.close()
        server.wait(timeout=timeout)
        server.stdout.close()


def _send(server: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert server.stdin is not None
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()


def _ask(server: subprocess.Popen[bytes], message: dict[str, Any]) -> bytes:
    """Send one request and read lines until its answer (notifications in between are skipped)."""
    _send(server, message)
    assert server.stdout is not None
    while line := server.stdout.readline():
        if json.loads(line).get("id") == message["id"]:
            return line.rstrip(b"\n")
    raise RuntimeError(f"pilot serve ended before answering {message.get('method')}")


def sizes(line: bytes) -> tuple[int, int, int]:
    """(text the model reads, structured content as compact JSON, whole line) in bytes."""
    result = json.loads(line)["result"]
    text = "".join(block.get("text", "") for block in result.get("content", []))
    structured = result.get("structuredContent")
    compact = json.dumps(structured, separators=(",", ":"), ensure_ascii=False) if structured else ""
    return len(text.encode()), len(compact.encode()), len(line)


def text_of(line: bytes) -> str:
    return "".join(block.get("text", "") for block in json.loads(line)["result"].get("content", []))


def measured_home(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pilot", "init", "--home", str(folder)], check=True, capture_output=True
    )
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print each answer's text too")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pilot-bench-") as folder:
        lines = answer_lines(measured_home(Path(folder)))
    print(f"  {'answer':<14}{'text':>8}{'structured':>12}{'line':>8}{'limit':>8}{'before':>8}")
    for name, line in lines.items():
        text, structured, whole = sizes(line)
        limit, before = LIMITS_BYTES[name], BEFORE_BYTES[name]
        print(f"  {name:<14}{text:>8,}{structured:>12,}{whole:>8,}{limit:>8,}{before:>8,}")
    if options.show:
        for name, line in lines.items():
            print(f"\n{name}:\n{text_of(line)}")


if __name__ == "__main__":
    main()
