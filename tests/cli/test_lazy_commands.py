"""Each command's module is imported when the command runs: every listed name finds its command, and
starting `pilot serve` imports none of the others (nor rich, the console or the demo), nor the paper exchange
or another venue's adapter; `python -m pilot` pauses the collector while it starts (pilot.cli.heap)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import click

from pilot.cli import _COMMAND_MODULES, heap, main


def test_every_listed_command_is_found_under_its_own_name() -> None:
    context = click.Context(main)
    names = main.list_commands(context)
    assert len(names) == len(set(names)) == len(_COMMAND_MODULES)
    for name in names:
        command = main.get_command(context, name)
        assert command is not None and command.name == name
    assert main.get_command(context, "no-such-command") is None


def test_the_serve_command_imports_no_other_command_and_nothing_only_they_use() -> None:
    probe = (
        "import sys, json; from pilot.cli import main; import click; "
        "main.get_command(click.Context(main), 'serve'); print(json.dumps(sorted(sys.modules)))"
    )
    loaded = set(
        json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    )
    others = {
        f"pilot.cli.{name}"
        for name in ("console", "journal", "demo", "sim", "keys", "doctor", "confirm", "evals")
    }
    assert not loaded & others
    assert not {"rich", "pilot.console", "pilot.demo"} & loaded


def _loaded(probe: str) -> set[str]:
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout
    return set(json.loads(found))


def test_a_server_reaches_the_paper_exchange_by_its_lock_and_scenario_and_imports_no_other_venue() -> None:
    # What `pilot serve` imports to attach to the home's paper exchange, or to a `pilot sim`: never the
    # exchange itself (its engine, HTTP and WebSocket servers), nor OKX's adapter for a Bybit or paper home.
    probe = (
        "import sys, json; import pilot.cli.serve, pilot.app.service.home_paper; "
        "from pilot.paper.scenario import load_scenario; from pilot.exchange.adapters import spelling; "
        "load_scenario(None); spelling('paper'); print(json.dumps(sorted(sys.modules)))"
    )
    loaded = _loaded(probe)
    assert {"pilot.paper.lock", "pilot.paper.sharing", "pilot.paper.scenario"} <= loaded
    exchange = {"pilot.paper.exchange", "pilot.paper.engine", "pilot.paper.server", "pilot.paper.streams"}
    assert not (exchange | {"websockets", "pilot.exchange.okx.adapter", "pilot.exchange.okx"}) & loaded


def test_the_sdk_builds_its_server_without_rich_where_the_root_logger_has_its_handler() -> None:
    probe = (
        "import sys, json, logging; logging.getLogger().addHandler(logging.StreamHandler()); "
        "from mcp.server.mcpserver import MCPServer; from pilot.server import sdk; "
        "exec('with sdk.own_logging(): MCPServer(\"probe\")'); print(json.dumps(sorted(sys.modules)))"
    )
    assert "rich" not in _loaded(probe)


def test_python_m_pilot_collects_again_once_a_command_other_than_serve_is_imported() -> None:
    def enabled_after(command: str, settle: bool = False) -> list[object]:
        probe = (
            "import gc, json, click; from pilot.cli import heap; heap.pause(); from pilot.cli import main; "
            f"main.resolve_command(click.Context(main), [{command!r}]); "
            f"{'heap.settle(); ' if settle else ''}print(json.dumps([gc.isenabled(), gc.get_freeze_count() > 0]))"
        )
        found = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout
        return list(json.loads(found))

    assert enabled_after("policy") == [True, False]
    assert enabled_after("serve") == [False, False]  # until the server is built: pilot serve settles it
    assert enabled_after("serve", settle=True) == [True, True]


def test_a_process_whose_collector_runs_is_left_as_it_is() -> None:
    # A test invoking the CLI in its own process: nothing paused, so nothing is set apart or resumed.
    frozen = gc.get_freeze_count()
    heap.settle()
    heap.resume()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
