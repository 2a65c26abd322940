"""`pilot console [--port N]` and `pilot console token`: the human's web page on 127.0.0.1, and its login secret."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pilot.app.human.desk import NoJournal
from pilot.app.runtime.runtime import Home, Runtime
from pilot.app.service.boot import EXCHANGES
from pilot.cli.home import home_option, resolve_home
from pilot.cli.output import CliError, emit_json, format_option, wants_json
from pilot.core.errors import ErrorCode

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from pilot.console.app_state import Following

DEFAULT_PORT = 8765
HOST = "127.0.0.1"  # loopback only: from another device, use an SSH tunnel (docs/console.md)


def _require_journal(home: Path) -> None:
    if not Home(home).has_store():
        raise NoJournal(home)


@click.group("console", invoke_without_command=True)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port on 127.0.0.1 (0: any free one).",
)
@click.option(
    "--exchange",
    type=click.Choice(EXCHANGES),
    default=None,
    help="Read this exchange (never write to it) to show the room left under each cap on the Policy page; "
    "default: the home's paper exchange, wherever it runs at each page (its servers restarting included).",
)
@click.option(
    "--paper-url", default=None, metavar="URL", help="With --exchange paper: a running `pilot sim` elsewhere."
)
@home_option
@format_option()
@click.pass_context
def command(ctx: click.Context, port: int, exchange: str | None, paper_url: str | None, output: str) -> None:
    """Serve the console (live receipts, approvals, kill switch, policy, charts) on 127.0.0.1 until Ctrl-C.

    Log in with the secret from `pilot console token`. Approving needs confirm.consoleChannel true in
    policy.json; the running `pilot serve` carries an approved action out, re-checked then.
    """
    if ctx.invoked_subcommand is not None:
        return
    home = resolve_home()
    _require_journal(home)
    from pilot.console.login import current_digest

    if current_digest(home) is None:
        raise CliError(
            ErrorCode.NO_CONSOLE_SECRET,
            f"no console login secret for {home} yet",
            f"issue one with `pilot console token --home {home}`",
        )
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
        listener.listen(128)  # connections made before uvicorn accepts wait in the backlog
    except OSError as error:
        listener.close()
        raise CliError(
            ErrorCode.PORT_IN_USE,
            f"cannot listen on {HOST}:{port}: {error.strerror}",
            "choose another --port",
        ) from None
    follows = exchange in (None, "paper") and paper_url is None
    bound = listener.getsockname()[1]
    click.echo(f"pilot: console on http://{HOST}:{bound}/ (Ctrl-C stops it)", err=True)
    click.echo(f"pilot: {_reading(exchange, paper_url, home if follows else None)}", err=True)
    if follows:
        from pilot.console.app import build_app

        _uvicorn(build_app(home, following=following_home(home))).run(sockets=[listener])
        return
    from pilot.app.service.boot import StartupError

    try:
        asyncio.run(_serve_reading(home, exchange or "paper", paper_url, listener))
    except StartupError as error:  # as `pilot serve` says it: one line with its code and fix, exit 2
        raise CliError(error.code, f"cannot start: {error}", error.fix) from None
    finally:
        listener.close()


def _uvicorn(app: Starlette) -> uvicorn.Server:
    import uvicorn

    return uvicorn.Server(
        uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, access_log=False)
    )


async def _serve_reading(home: Path, exchange: str, paper_url: str | None, listener: socket.socket) -> None:
    """The console reading `exchange`: the venue opened first, so that one it cannot be opened on (no key
    stored, a venue the home refuses) is said before any page is served, not as a traceback from the app's
    start; then the pages on the same loop, reading through it."""
    from pilot.console.app import build_app

    async with _reader(home, exchange, paper_url) as runtime:
        app = build_app(home, reader=lambda: contextlib.nullcontext(runtime))
        await _uvicorn(app).serve(sockets=[listener])


def _reader(home: Path, exchange: str, paper_url: str | None) -> AbstractAsyncContextManager[Runtime]:
    from pilot.app.service.boot import open_runtime

    return open_runtime(home, exchange=exchange, paper_url=paper_url, settle=False, streams=False)


def following_home(home: Path) -> Following:
    """The home's paper exchange wherever it runs (a `pilot serve`'s shared one, or a `pilot sim --home`)."""
    from pilot.console.app_state import Following
    from pilot.paper import serving_url

    state = Home(home).paper_state_path
    return Following(where=lambda: serving_url(state), open=lambda url: _reader(home, "paper", paper_url=url))


def _reading(exchange: str | None, paper_url: str | None, followed: Path | None) -> str:
    """What the banner says the Overview and Policy pages read positions and room from."""
    if followed is not None:
        return (
            f"positions and room left read from {followed}'s paper exchange wherever it runs (read only); "
            "while no `pilot serve` runs on the home, the pages say so"
        )
    if paper_url is not None:
        return f"positions and room left read from the paper exchange at {paper_url} (read only)"
    if exchange is not None:
        return f"positions and room left read from {exchange} with the stored key (read only)"
    return "no exchange read: give --exchange bybit-demo (or okx-demo) to read positions and room left"


@command.command("token")
@home_option
@format_option()
def token(output: str) -> None:
    """Issue the console login secret and print it once (only its hash is kept; the old one stops working)."""
    home = resolve_home()
    _require_journal(home)
    from pilot.console.login import issue_secret

    secret = issue_secret(home)
    if wants_json():
        emit_json({"home": str(home), "secret": secret})
        return
    click.echo(secret)
    click.echo(
        "pilot: the console secret is shown this once; paste it on the console's login page",
        err=True,
    )
