"""The layering docs/ARCHITECTURE.md promises, checked by reading every import and call in the package."""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

# One worker runs them all: each reads and parses every module of the package once per process (modules()),
# and spread over four workers the parse was paid four times (22 worker-seconds against 6 on one).
pytestmark = pytest.mark.xdist_group("architecture")
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pilot"
PORTS = "pilot.app.road.ports"
GATE = "pilot.app.road.gate"
BYBIT = "pilot.exchange.bybit"
OKX = "pilot.exchange.okx"
VENUES = (BYBIT, OKX)  # each venue's package: its client libraries are imported there and nowhere else
# What pilot/core may import besides itself and pydantic: the standard library's pure parts, named one by one,
# so a module that reads the clock, the disk, the network or chance (time, os, pathlib, socket, random) is out.
# Builtins that reach the disk, the terminal or arbitrary code: the core calls none of them.
IMPURE_BUILTINS = {"open", "input", "print", "exec", "eval", "compile", "__import__", "breakpoint"}
CORE_STDLIB = {
    "__future__",
    "bisect",
    "collections",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "hashlib",
    "json",
    "re",
    "typing",
}


@functools.cache
def modules() -> dict[str, ast.Module]:
    """Every module of the package by dotted name, parsed."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return found


def is_package(name: str) -> bool:
    return (ROOT / Path(*name.split(".")) / "__init__.py").exists()


def absolute(name: str, node: ast.ImportFrom) -> str:
    """The module an ImportFrom names, with a relative one (`from . import x`, `from ..y import z`) resolved."""
    if node.level == 0:
        return node.module or ""
    base = name.split(".") if is_package(name) else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(name: str, tree: ast.Module) -> list[str]:
    """Every module a tree imports, at any depth (imports inside functions count, relative ones resolved)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = absolute(name, node)
            if module:
                names.append(module)
            names.extend(f"{module}.{alias.name}" for alias in node.names)
    return names


def writer_methods() -> set[str]:
    """The writes, read from the ExchangeWriter port itself: a write added there is checked here at once."""
    (writer,) = (
        node
        for node in ast.walk(modules()[PORTS])
        if isinstance(node, ast.ClassDef) and node.name == "ExchangeWriter"
    )
    methods = {node.name for node in writer.body if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)}
    assert methods, "ExchangeWriter declares no methods"
    return methods


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "pilot" or len(parts) < 2:
        return None
    if parts[1] == "__main__":
        return "cli"
    return parts[1]


def documented_layers(block_name: str = "layers") -> dict[str, set[str]]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(rf"```{block_name}\n(.*?)```", text, re.S)
    assert block, f"docs/ARCHITECTURE.md has no ```{block_name} block"
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
        for imported in imports(name, tree):
            target = layer(imported)
            if target is not None and target != source and imported not in ("pilot.exchange",):
                edges[source].add(target)
    return dict(edges)


def importers_of(prefix: str) -> set[str]:
    return {
        name
        for name, tree in modules().items()
        if any(i == prefix or i.startswith(prefix + ".") for i in imports(name, tree))
    }


def test_the_layers_import_exactly_what_docs_architecture_says():
    assert actual_layers() == documented_layers()


def test_the_core_imports_only_the_pure_standard_library_and_pydantic_and_reads_no_clock():
    clocks = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}
    for name, tree in modules().items():
        if not name.startswith("pilot.core"):
            continue
        outside = {i.split(".")[0] for i in imports(name, tree)} - CORE_STDLIB - {"pydantic", "pilot"}
        assert not outside, (name, outside)
        calls = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        assert not calls & clocks, (name, calls & clocks)
        builtins = {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        assert not builtins & IMPURE_BUILTINS, (name, builtins & IMPURE_BUILTINS)


def test_relative_imports_are_resolved():
    """A relative import counts like an absolute one (checked on made-up sources, so the rule cannot rot)."""
    module = ast.parse(
        "from . import clock\nfrom ..runtime.ledger import Ledger\nfrom .ports import ExchangeWriter"
    )
    found = set(imports("pilot.app.road.gate", module))
    assert {
        "pilot.app.road.clock",
        "pilot.app.runtime.ledger",
        "pilot.app.road.ports.ExchangeWriter",
    } <= found
    package = ast.parse("from .gate import ExchangeGate\nfrom .. import answers")
    assert {"pilot.app.road.gate.ExchangeGate", "pilot.app.answers"} <= set(
        imports("pilot.app.road", package)
    )


def test_each_outside_library_has_one_importer():
    # Bybit is spoken in its own package: pybit and its HTTP stack (requests, urllib3) are imported under
    # pilot/exchange/bybit/ and nowhere else.
    for library in ("pybit", "requests"):
        found = importers_of(library)
        assert found and all(m.startswith(BYBIT + ".") for m in found), (library, found)
    # urllib3 carries two venues' HTTP: Bybit's paper adapter and OKX's client (its one module; OKX is
    # spoken under pilot/exchange/okx/ only, over no SDK: pilot/exchange/okx/client.py says why).
    found = importers_of("urllib3")
    assert {m for m in found if not m.startswith(BYBIT + ".")} == {f"{OKX}.client"}, found
    # websocket-client carries two venues' streams: pybit's transport under Bybit's stream client, and OKX's
    # stream client (its one module), each driving its own connection threads
    assert importers_of("websocket") == {f"{BYBIT}.stream", f"{OKX}.stream"}
    assert {m for m in importers_of("aiosqlite")} <= {m for m in modules() if m.startswith("pilot.store")}
    assert importers_of("aiosqlite")
    # The store's engines: SQLite (the embedded default) and PostgreSQL, whose driver is an optional extra
    # imported by one module, and only when a store is on a server (pilot.store.location.postgres_engine).
    assert importers_of("aiosqlite") == {"pilot.store.sqlite"}
    assert importers_of("psycopg") == {"pilot.store.postgres"}
    server_sdk = importers_of("mcp.server")
    assert server_sdk and all(m.startswith("pilot.server") for m in server_sdk), server_sdk
    others = {m for m in importers_of("mcp") if not m.startswith("pilot.server")}
    # the demo's scripted agent and the evals' agents are MCP clients
    assert all(m.startswith(("pilot.demo", "pilot.evals")) for m in others), others
    # HTTP clients: one module per family of outside services, where its errors are translated (the model
    # APIs of pilot eval; Telegram and ntfy, the human's phone)
    assert importers_of("httpx2") == {"pilot.evals.model_http", "pilot.push.wire"}


def test_a_venue_is_reached_through_the_port_and_the_one_module_that_names_its_adapter():
    """Outside its own package, only pilot/exchange/adapters.py imports a venue's: the use cases, the CLI and
    the server reach a venue through the port (pilot/app/road/ports.py) and that module. No venue's package
    imports another's."""
    for venue in VENUES:
        outside = {m for m in importers_of(venue) if m != venue and not m.startswith(venue + ".")}
        assert outside == {"pilot.exchange.adapters"}, (venue, outside)


SDK_EDGE = "pilot.server.sdk"
# Modules of the SDK that are its machinery, not its API: what a tool is registered as, and how.
SDK_INTERNAL_MODULES = ("mcp.server.mcpserver.tools", "mcp.server.mcpserver.utilities")


def sdk_private_names() -> set[str]:
    """The MCP SDK's private names, read from the SDK itself: MCPServer's underscored attributes (its tool
    manager, its low-level server) and the fields of its tool records that the public `mcp.types.Tool` lacks
    (a record's function, argument model, resolver parameters)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools.base import Tool
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
    from mcp.types import Tool as PublicTool

    server = MCPServer("probe")
    private = {n for n in {*dir(server), *vars(server)} if n.startswith("_") and not n.startswith("__")}
    records = ({*Tool.model_fields} | {*FuncMetadata.model_fields}) - {*PublicTool.model_fields}
    assert {"_tool_manager", "_lowlevel_server"} <= private and {"fn_metadata", "arg_model"} <= records
    return private | records


def _sdk_internal(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "mcp" and (
        module.startswith(SDK_INTERNAL_MODULES) or any(part.startswith("_") for part in parts)
    )


def test_the_sdks_private_api_is_reached_from_one_module():
    """pilot/server/sdk.py holds every use of the MCP SDK's private API; the rest goes through its public one."""
    private = sdk_private_names()
    reaching: dict[str, set[str]] = defaultdict(set)
    for name, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private:
                reaching[name].add(node.attr)
            elif isinstance(node, ast.Import):
                reaching[name] |= {alias.name for alias in node.names if _sdk_internal(alias.name)}
            elif isinstance(node, ast.ImportFrom) and _sdk_internal(module := absolute(name, node)):
                reaching[name].add(module)
            elif isinstance(node, ast.ImportFrom) and module.split(".")[0] == "mcp":
                reaching[name] |= {alias.name for alias in node.names if alias.name.startswith("_")}
    assert {name for name, used in reaching.items() if used} == {SDK_EDGE}, dict(reaching)


def test_only_the_gate_calls_an_exchange_write():
    writes = writer_methods()
    assert {"create_order", "cancel_order", "amend_order", "cancel_all_orders"} <= writes
    for name, tree in modules().items():
        if name.startswith(("pilot.exchange", "pilot.paper")) or name == GATE:
            continue
        # a use case module may name its function after the write it asks the gate for (cancel_order)
        use_case_modules = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if f"{absolute(name, node)}.{alias.name}".startswith("pilot.app.")
            and f"{absolute(name, node)}.{alias.name}" in modules()
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in writes:
                continue
            receiver = node.func.value
            through_gate = isinstance(receiver, ast.Attribute) and receiver.attr == "gate"
            use_case = isinstance(receiver, ast.Name) and receiver.id in use_case_modules
            assert through_gate or use_case, f"{name}:{node.lineno} calls {node.func.attr} outside the gate"


def test_only_the_ports_and_the_gate_name_the_exchange_writer():
    naming = {
        name for name, tree in modules().items() if any(_names_the_writer(node) for node in ast.walk(tree))
    }
    assert naming == {PORTS, GATE}


def _names_the_writer(node: ast.AST) -> bool:
    """A bare name, an imported alias, an attribute (`ports.ExchangeWriter`) or a string annotation."""
    if isinstance(node, ast.Name | ast.alias):
        return "ExchangeWriter" in ast.unparse(node)
    if isinstance(node, ast.Attribute):
        return node.attr == "ExchangeWriter"
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and "ExchangeWriter" in node.value


def test_the_paper_exchange_reaches_the_app_only_where_it_is_started():
    users = {m for m in importers_of("pilot.paper") if m.startswith("pilot.app")}
    assert users == {"pilot.app.service.boot", "pilot.app.service.doctor", "pilot.app.service.home_paper"}


def test_the_use_cases_import_each_other_without_a_cycle():
    """Imports inside functions count: a lazy import that breaks a cycle at run time still is one."""
    app = {name: tree for name, tree in modules().items() if name.startswith("pilot.app")}
    graph = {name: {i for i in imports(name, tree) if i in app and i != name} for name, tree in app.items()}
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


def test_the_use_cases_live_in_sub_packages_that_say_what_they_hold():
    """pilot/app holds sub-packages only, each with a one-line docstring: the layout says where a change goes."""
    app = PACKAGE / "app"
    assert [p.name for p in app.glob("*.py")] == ["__init__.py"]
    packages = [p for p in app.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert len(packages) >= 5
    for package in packages:
        doc = ast.get_docstring(modules()[f"pilot.app.{package.name}"])
        assert doc and "\n" not in doc.strip(), package.name


# One concept across layers may keep its name: a use case and its command, a use case and its table.
SHARED_NAMES = {
    "doctor": {"pilot.app.service.doctor", "pilot.cli.doctor"},
    "idempotency": {"pilot.app.orders.idempotency", "pilot.store.idempotency"},
    "journal": {"pilot.cli.journal", "pilot.store.journal"},
    "phone": {"pilot.app.human.phone", "pilot.cli.phone"},
    "store": {"pilot.cli.store", "pilot.store.store"},
}


def test_no_two_modules_share_a_name_unless_they_are_one_concept_across_layers():
    """Four modules were once called `keys`, and two `streams` were a cache and a WebSocket server: a
    module's name says what it is wherever it sits. Each package's own `errors` is what that package raises.
    """
    leaves = defaultdict(set)
    for name in modules():
        leaf = name.rsplit(".", 1)[-1]
        if not is_package(name) and leaf != "errors":
            leaves[leaf].add(name)
    shared = {leaf: names for leaf, names in leaves.items() if len(names) > 1 and not one_per_venue(names)}
    assert shared == SHARED_NAMES


def one_per_venue(names: set[str]) -> bool:
    """Modules of the same role in each venue's package (adapter, payloads, urls...): one concept, per venue."""
    venues = [next((v for v in VENUES if name.startswith(v + ".")), None) for name in names]
    return None not in venues and len(set(venues)) == len(venues)


def app_layers() -> dict[str, set[str]]:
    """Which sub-package of pilot/app imports which other one."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, tree in modules().items():
        parts = name.split(".")
        if parts[:2] != ["pilot", "app"] or len(parts) < 3:
            continue
        edges[parts[2]]
        for imported in imports(name, tree):
            target = imported.split(".")
            if target[:2] == ["pilot", "app"] and len(target) > 2 and target[2] != parts[2]:
                edges[parts[2]].add(target[2])
    return dict(edges)


def test_the_app_sub_packages_import_only_those_below_them_as_docs_architecture_says():
    """The sub-packages form layers, top down: a use case never reaches up into the service that runs it."""
    actual, documented = app_layers(), documented_layers("app-layers")
    assert set(actual) == set(documented)
    for name, targets in actual.items():
        assert targets <= documented[name], (name, targets - documented[name])
    order = list(documented)
    for name, targets in documented.items():
        assert all(order.index(target) > order.index(name) for target in targets), name
