"""Print what `tools/list` costs a client: the bytes of the JSON-RPC answer `pilot serve` writes on stdio.

Every client sends this list to its model on every turn, so it is measured as it goes over the wire: a real
`pilot serve` over stdio in a temporary home, one `initialize`, one `tools/list`, the answer's line counted
in UTF-8 bytes. Printed per tool too (description, input schema, output schema) and for each `--tools` set.
tests/app/test_tools_list.py asserts the total stays at or under LIMIT_BYTES.

    .venv/bin/python benchmarks/bench_tools_list.py [--tools all|read|trade]
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

LIMIT_BYTES = 19 * 1024  # 20,335 bytes with --tools all before issue 40 trimmed it
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench_tools_list", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def tools_list_line(home: Path, tools: str = "all", timeout: float = 60) -> bytes:
    """The raw JSON-RPC line `pilot serve --home HOME --tools TOOLS` answers tools/list with."""
    requests = "".join(json.dumps(message) + "\n" for message in (INITIALIZE, INITIALIZED, TOOLS_LIST))
    done = subprocess.run(
        [sys.executable, "-m", "pilot", "serve", "--home", str(home), "--tools", tools],
        input=requests.encode(),
        capture_output=True,
        timeout=timeout,
        check=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("id") == TOOLS_LIST["id"]:
            return line
    raise RuntimeError(f"no tools/list answer; stderr: {done.stderr.decode(errors='replace')[-500:]}")


def breakdown(line: bytes) -> list[tuple[str, int, int, int, int]]:
    """(tool, whole, description, input schema, output schema) in bytes of compact JSON."""
    rows = []
    for tool in json.loads(line)["result"]["tools"]:
        rows.append(
            (
                tool["name"],
                _size(tool),
                len(tool.get("description", "").encode()),
                _size(tool.get("inputSchema")),
                _size(tool.get("outputSchema")),
            )
        )
    return rows


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()) if value else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=None, help="one set only (default: all three)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pilot-bench-") as folder:
        home = Path(folder)
        subprocess.run(
            [sys.executable, "-m", "pilot", "init", "--home", str(home)], check=True, capture_output=True
        )
        for tools in [options.tools] if options.tools else ["all", "trade", "read"]:
            line = tools_list_line(home, tools)
            rows = breakdown(line)
            print(
                f"tools/list --tools {tools}: {len(line):,} bytes for {len(rows)} tools (limit {LIMIT_BYTES:,})"
            )
            if tools == (options.tools or "all"):
                print(f"  {'tool':<24}{'whole':>7}{'descr.':>8}{'input':>7}{'output':>8}")
                for name, whole, description, inputs, outputs in rows:
                    print(f"  {name:<24}{whole:>7}{description:>8}{inputs:>7}{outputs:>8}")


if __name__ == "__main__":
    main()
