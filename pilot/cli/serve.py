"""`pilot serve`: the MCP server over stdio (default) or Streamable HTTP on loopback with bearer tokens."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import click

from pilot.app.boot import EXCHANGES, StartupError, open_runtime
from pilot.app.parked import run_approved
from pilot.app.runtime import Runtime


@click.command("serve")
@click.option(
    "--home",
    envvar="PILOT_HOME",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder with policy.json and journal/.",
)
@click.option("--exchange", type=click.Choice(EXCHANGES), default="paper", show_default=True)
@click.option(
    "--scenario",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Paper exchange world (JSON); default: the packaged scenario.",
)
@click.option(
    "--paper-url",
    metavar="URL",
    help="Attach to a running `pilot sim` (http://127.0.0.1:PORT) instead of embedding a paper exchange.",
)
@click.option(
    "--record",
    "record_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write every exchange request and answer here, redacted (no key, signature or secret).",
)
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP only; loopback by default.")
@click.option("--port", default=8765, show_default=True, type=int, help="HTTP only.")
def command(
    home: Path,
    exchange: str,
    scenario: Path | None,
    paper_url: str | None,
    record_dir: Path | None,
    transport: str,
    host: str,
    port: int,
) -> None:
    """Run Pilot's MCP server. An invalid policy.json does not stop it: growing orders are refused until fixed.

    The embedded paper exchange keeps its account in HOME/paper/ across restarts (`pilot sim reset --home`
    clears it); to share it between servers, run `pilot sim --home HOME` and give each `--paper-url`.
    """
    try:
        anyio.run(_serve, home, exchange, scenario, paper_url, record_dir, transport, host, port)
    except StartupError as error:
        click.echo(f"pilot serve: cannot start: {error}", err=True)
        sys.exit(2)


async def _serve(
    home: Path,
    exchange: str,
    scenario: Path | None,
    paper_url: str | None,
    record_dir: Path | None,
    transport: str,
    host: str,
    port: int,
) -> None:
    from pilot.server import build_server, serve_http

    async with (
        open_runtime(
            home, exchange=exchange, scenario=scenario, paper_url=paper_url, record_dir=record_dir
        ) as runtime,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(_execute_approvals, runtime)
        if transport == "stdio":
            await build_server(runtime).run_stdio_async()
        else:
            await serve_http(runtime, host, port)
        tasks.cancel_scope.cancel()


async def _execute_approvals(runtime: Runtime) -> None:
    """Carry out actions a human approved with `pilot confirm approve`, re-checked when they run."""
    while True:
        await run_approved(runtime)
        await anyio.sleep(1)
