"""`pilot serve`: the MCP server over stdio (default) or Streamable HTTP on loopback with bearer tokens."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import click

from pilot.app.boot import EXCHANGES, StartupError, open_runtime
from pilot.app.runtime import Runtime
from pilot.app.upkeep import UPKEEP_SECONDS, upkeep
from pilot.server.http import DEFAULT_SESSION_IDLE_SECONDS, RemoteHostRefused, check_host, is_loopback
from pilot.store import StoreError

log = logging.getLogger("pilot.serve")


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
@click.option(
    "--allow-remote",
    is_flag=True,
    help="HTTP only: allow a --host other than loopback. Put TLS in front of it (see the README).",
)
@click.option(
    "--session-idle-seconds",
    default=DEFAULT_SESSION_IDLE_SECONDS,
    show_default=True,
    type=click.IntRange(min=1),
    help="HTTP only: forget a client session after this long without a request.",
)
def command(
    home: Path,
    exchange: str,
    scenario: Path | None,
    paper_url: str | None,
    record_dir: Path | None,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    session_idle_seconds: int,
) -> None:
    """Run Pilot's MCP server. An invalid policy.json does not stop it: growing orders are refused until fixed.

    The embedded paper exchange keeps its account in HOME/paper/ across restarts (`pilot sim reset --home`
    clears it); to share it between servers, run `pilot sim --home HOME` and give each `--paper-url`.
    """
    http = HttpOptions(host, port, allow_remote, session_idle_seconds) if transport == "http" else None
    try:
        if http is not None:
            check_host(host, allow_remote=allow_remote)
        anyio.run(_serve, home, exchange, scenario, paper_url, record_dir, http)
    except (StartupError, RemoteHostRefused) as error:
        click.echo(f"pilot serve: cannot start: {error}", err=True)
        sys.exit(2)


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """What `--transport http` serves on."""

    host: str
    port: int
    allow_remote: bool
    session_idle_seconds: int


async def _serve(
    home: Path,
    exchange: str,
    scenario: Path | None,
    paper_url: str | None,
    record_dir: Path | None,
    http: HttpOptions | None,
) -> None:
    from pilot.server import build_server, serve_http

    async with (
        open_runtime(
            home, exchange=exchange, scenario=scenario, paper_url=paper_url, record_dir=record_dir
        ) as runtime,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(_upkeep, runtime)
        if http is None:
            await build_server(runtime).run_stdio_async()
        else:
            if not is_loopback(http.host):
                click.echo(f"pilot serve: serving on {http.host}, not loopback: keep TLS in front", err=True)
            await serve_http(
                runtime,
                http.host,
                http.port,
                allow_remote=http.allow_remote,
                session_idle_seconds=http.session_idle_seconds,
            )
        tasks.cancel_scope.cancel()


async def _upkeep(runtime: Runtime) -> None:
    """Every second: carry out actions a human approved with `pilot confirm approve` (re-checked when they
    run), and look up sends whose outcome is not known yet.

    A store failure (disk full, I/O error) is one log line and the loop goes on: nothing it failed to start
    was sent, and an approval it was carrying out is never run twice (it is claimed before it runs).
    """
    while True:
        await anyio.sleep(UPKEEP_SECONDS)
        try:
            await upkeep(runtime)
        except StoreError as error:
            log.warning("upkeep could not read or record the store: %s", error)
