"""The layering docs/ARCHITECTURE.md promises, checked by reading every import and call in the package."""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pilot"
WRITES = {
    "create_order",
    "cancel_order",
    "set_leverage",
    "amend_order",
    "cancel_all_orders",
    "set_trading_stop",
}


@functools.cache
def modules() -> dict[str, ast.Module]:
    """Every module of the package by dotted name, parsed."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return found


def imports(tree: ast.Module) -> list[str]:
    """Every module a tree imports, at any depth (imports inside functions count)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "pilot" or len(parts) < 2:
        return None
    if parts[1] == "__main__":
        return "cli"
    if parts[1] == "exchange" and len(parts) > 2 and parts[2] == "sim":
        return "exchange.sim"
    return parts[1]


def documented_layers() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/ARCHITECTURE.md has no ```layers block"
    table = {}
    for line in block.group(1).strip().splitlines():
        name, _, targets = line.partition(":")
        table[name.strip()] = {t.strip() for t in targets.split(",") if t.strip() not in ("", "-")}
    return table


def actual_layers() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for name, tree in modules().items():
        source = layer(name)
        if source is None:
            continue
        edges[source]
        for imported in imports(tree):
            target = layer(imported)
            if target is not None and target != source and imported not in ("pilot.exchange",):
                edges[source].add(target)
    return dict(edges)


def importers_of(prefix: str) -> set[str]:
    return {
        name
        for name, tree in modules().items()
        if any(i == prefix or i.startswith(prefix + ".") for i in imports(tree))
    }


def test_the_layers_import_exactly_what_docs_architecture_says():
    assert actual_layers() == documented_layers()


def test_the_core_imports_only_the_standard_library_and_pydantic_and_reads_no_clock():
    allowed = set(sys.stdlib_module_names) | {"pydantic", "pilot"}
    clocks = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}
    for name, tree in modules().items():
        if not name.startswith("pilot.core"):
            continue
        outside = {i.split(".")[0] for i in imports(tree)} - allowed
        assert not outside, (name, outside)
        imported = {i.split(".")[0] for i in imports(tree)}
        assert "time" not in imported, name
        calls = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        assert not calls & clocks, (name, calls & clocks)


def test_each_outside_library_has_one_importer():
    # REST (bybit.py) and the WebSocket streams (bybit_stream.py) are two pybit clients that share nothing
    # but bybit_wire's parsers, so each has its own module; pybit stays out of everything else.
    assert importers_of("pybit") == {"pilot.exchange.bybit", "pilot.exchange.bybit_stream"}
    # pybit's WebSocket transport, driven by the stream client's own connection threads
    assert importers_of("websocket") == {"pilot.exchange.bybit_stream"}
    assert {m for m in importers_of("aiosqlite")} <= {m for m in modules() if m.startswith("pilot.store")}
    assert importers_of("aiosqlite")
    server_sdk = importers_of("mcp.server")
    assert server_sdk and all(m.startswith("pilot.server") for m in server_sdk), server_sdk
    others = {m for m in importers_of("mcp") if not m.startswith("pilot.server")}
    assert all(m.startswith("pilot.demo") for m in others), others  # the scripted agent is an MCP client


def test_only_the_gate_calls_an_exchange_write():
    for name, tree in modules().items():
        if name.startswith("pilot.exchange") or name == "pilot.app.gate":
            continue
        use_case_modules = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "pilot.app"
            for alias in node.names
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in WRITES:
                continue
            receiver = node.func.value
            through_gate = isinstance(receiver, ast.Attribute) and receiver.attr == "gate"
            use_case = isinstance(receiver, ast.Name) and receiver.id in use_case_modules
            assert through_gate or use_case, f"{name}:{node.lineno} calls {node.func.attr} outside the gate"


def test_only_the_ports_and_the_gate_name_the_exchange_writer():
    naming = {
        name
        for name, tree in modules().items()
        if any(
            isinstance(node, ast.Name | ast.alias) and "ExchangeWriter" in ast.unparse(node)
            for node in ast.walk(tree)
        )
    }
    assert naming == {"pilot.app.ports", "pilot.app.gate"}


def test_the_paper_exchange_reaches_the_app_only_where_it_is_started():
    users = {m for m in importers_of("pilot.exchange.sim") if m.startswith("pilot.app")}
    assert users == {"pilot.app.boot", "pilot.app.doctor"}


def test_the_use_cases_import_each_other_without_a_cycle():
    """Imports inside functions count: a lazy import that breaks a cycle at run time still is one."""
    app = {name: tree for name, tree in modules().items() if name.startswith("pilot.app")}
    graph = {name: {i for i in imports(tree) if i in app and i != name} for name, tree in app.items()}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path, name))
        if name in done:
            return
        for target in graph[name]:
            visit(target, (*path, name))
        done.add(name)

    for name in graph:
        visit(name, ())
