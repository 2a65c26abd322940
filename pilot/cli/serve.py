"""`pilot serve`: the MCP server over stdio (default) or Streamable HTTP on loopback with bearer tokens.

It starts only in a Pilot home (see pilot/cli/home.py): outside one it refuses before creating anything.
What it serves is said on stderr at start (stdout is the protocol over stdio): the home, the exchange, the
tools and, over HTTP, the URL and how to get a token. Over HTTP each request is then one access line,
unless --quiet.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import click

from pilot.app.facts.streaming_reader import StreamingReader
from pilot.app.runtime.runtime import Home, Runtime
from pilot.app.service.boot import EXCHANGES, StartupError, open_runtime
from pilot.app.service.dead_man import stdio_ended
from pilot.app.service.pushing import PhoneService
from pilot.app.service.upkeep import UPKEEP_SECONDS, upkeep
from pilot.cli import heap
from pilot.cli.home import home_option, resolve_home
from pilot.cli.output import CliError
from pilot.core.errors import ErrorCode
from pilot.server.build import select_tools
from pilot.server.http import DEFAULT_SESSION_IDLE_SECONDS, RemoteHostRefused, check_host, is_loopback
from pilot.server.tool_sets import TOOL_SETS
from pilot.store import StoreError

log = logging.getLogger("pilot.serve")


@click.command("serve")
@home_option
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
@click.option(
    "--tools",
    default="all",
    show_default=True,
    metavar="read|trade|all|NAMES",
    help="Which tools to expose: read (no tool that changes anything), trade (planning, trading and the "
    "reads its answers refer to), all, or tool names separated by commas.",
)
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP only; loopback by default.")
@click.option(
    "--port",
    default=8766,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="HTTP only (`pilot console` takes 8765, so both run side by side).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="HTTP only: allow a --host other than loopback. Put TLS in front of it (see docs/connecting.md).",
)
@click.option(
    "--session-idle-seconds",
    default=DEFAULT_SESSION_IDLE_SECONDS,
    show_default=True,
    type=click.IntRange(min=1),
    help="HTTP only: forget a client session after this long without a request.",
)
@click.option(
    "--streams/--no-streams",
    default=None,
    help="Keep facts fresh from the exchange's WebSocket streams and judge on them while younger than "
    "maxFactAgeMs (REST otherwise). Default: on for the paper exchange (embedded, or the `pilot sim` of "
    "--paper-url, which says where they are) unless --record; off for Bybit and OKX.",
)
@click.option(
    "--quiet",
    is_flag=True,
    help="Say only problems: no banner over stdio, no access line per HTTP request (the HTTP banner stays).",
)
def command(
    exchange: str,
    scenario: Path | None,
    paper_url: str | None,
    record_dir: Path | None,
    tools: str,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    session_idle_seconds: int,
    streams: bool | None,
    quiet: bool,
) -> None:
    """Run Pilot's MCP server. An invalid policy.json does not stop it: growing orders are refused until fixed.

    The home's paper exchange runs in a process of its own, started by the first server on the home and
    shared by the next ones (any number of clients on one home); it stops a minute after the last server.
    It keeps its account in HOME/paper/ across restarts (`pilot sim reset --home` clears it, `pilot sim stop
    --home` stops it).
    """
    try:
        exposed = select_tools(tools)
    except ValueError as error:
        raise CliError(ErrorCode.UNKNOWN_TOOLS, str(error), "e.g. --tools read") from None
    http = HttpOptions(host, port, allow_remote, session_idle_seconds, quiet) if transport == "http" else None
    try:
        if http is not None:
            check_host(host, allow_remote=allow_remote)
    except RemoteHostRefused as error:
        raise CliError(ErrorCode.REMOTE_HOST_REFUSED, f"cannot start: {error}") from None
    home = resolve_home(announce=False)  # refuses outside a home, before anything is created
    listener = _listen(http) if http is not None else None
    options = ServeOptions(
        home, exchange, scenario, paper_url, record_dir, tools, len(exposed), http, quiet, streams
    )
    _log_to_stderr(quiet)
    try:
        anyio.run(_serve, options, listener)
    except StartupError as error:
        raise CliError(error.code, f"cannot start: {error}", error.fix) from None
    except KeyboardInterrupt:
        click.echo("pilot serve: stopped", err=True)
    finally:
        heap.resume()  # a start that failed before the heap was settled
        if listener is not None:
            listener.close()


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """What `--transport http` serves on."""

    host: str
    port: int
    allow_remote: bool
    session_idle_seconds: int
    quiet: bool = False


@dataclass(frozen=True, slots=True)
class ServeOptions:
    home: Path
    exchange: str
    scenario: Path | None
    paper_url: str | None
    record_dir: Path | None
    tools: str
    tool_count: int
    http: HttpOptions | None
    quiet: bool = False
    streams: bool | None = None  # None: on for the paper exchange unless recording (pilot.app.service.boot)


def _listen(http: HttpOptions) -> socket.socket:
    """The HTTP socket, bound before anything starts, so a port in use is one line with its fix."""
    family = socket.AF_INET6 if ":" in http.host.strip("[]") else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((http.host.strip("[]"), http.port))
    except OSError as error:
        listener.close()
        raise CliError(
            ErrorCode.CANNOT_LISTEN,
            f"cannot listen on {http.host}:{http.port}: {error.strerror or error}",
            "choose another --port (another `pilot serve` may be using this one)",
        ) from None
    listener.listen(128)
    return listener


def _log_to_stderr(quiet: bool) -> None:
    """Problems (warnings and errors, from any library) and Pilot's own lines on stderr with a time; one
    access line per HTTP request unless `quiet`. Configured before the MCP SDK would set up its own
    (INFO lines per session from every layer), which it then leaves alone."""
    root = logging.getLogger()
    if not any(getattr(handler, "pilot_serve", False) for handler in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
        handler.pilot_serve = True  # type: ignore[attr-defined]  # our mark on the handler: found again above
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("pilot").setLevel(logging.INFO)
    logging.getLogger("pilot.access").setLevel(logging.WARNING if quiet else logging.INFO)


async def _serve(options: ServeOptions, listener: socket.socket | None) -> None:
    phone = PhoneService()
    async with (
        open_runtime(
            options.home,
            exchange=options.exchange,
            scenario=options.scenario,
            paper_url=options.paper_url,
            record_dir=options.record_dir,
            streams=options.streams,
            shared_paper=True,
        ) as runtime,
        _closing(phone, runtime),
    ):
        if options.http is None or listener is None:
            await _take_credential(runtime)  # before the tasks: a bad one is one line, not an exception group
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_upkeep, runtime)
            tasks.start_soon(_push, runtime, phone)
            tasks.start_soon(_read_presses, runtime, phone)
            await _serve_agents(options, listener, runtime)
            tasks.cancel_scope.cancel()


async def _serve_agents(options: ServeOptions, listener: socket.socket | None, runtime: Runtime) -> None:
    """Say what is served, then serve the agent over stdio, or the agents over HTTP, until they leave."""
    from pilot.server import build_server, serve_http
    from pilot.server.stdio import run_stdio

    http = options.http
    tokens = len(await runtime.store.tokens.list()) if http is not None else 0
    if http is not None or not options.quiet:
        streaming = isinstance(runtime.exchange, StreamingReader)
        click.echo(format_banner(options, listener, tokens, streaming=streaming), err=True)
    if http is None or listener is None:
        server = build_server(runtime, tools=options.tools)
        heap.settle()  # start-up's objects built: pilot.cli.heap
        await run_stdio(server)
        await stdio_ended(runtime)  # the dead-man's switch may fire when the last session ends
        return
    heap.settle()
    await serve_http(
        runtime,
        http.host,
        http.port,
        listener,
        allow_remote=http.allow_remote,
        session_idle_seconds=http.session_idle_seconds,
        tools=options.tools,
    )


async def _take_credential(runtime: Runtime) -> None:
    """Over stdio, the agent's credential the client's configuration carries (PILOT_AGENT_TOKEN or
    PILOT_AGENT_TOKEN_FILE): its calls are that agent's. One that is not this home's stops the start."""
    from pilot.server.callers import CredentialProblem, stdio_credential

    try:
        credential = stdio_credential()
    except CredentialProblem as problem:
        raise CliError(
            ErrorCode.BAD_AGENT_CREDENTIAL, str(problem), "fix the client's configuration"
        ) from None
    if credential is None:
        return
    holder = await runtime.store.tokens.identify(credential)
    if holder is None or holder.role is None:
        raise CliError(
            ErrorCode.BAD_AGENT_CREDENTIAL,
            "the agent's credential (PILOT_AGENT_TOKEN) is not an agent's of this home, or it was revoked",
            "`pilot agent list` shows the agents; `pilot agent add NAME --role ...` gives a new credential",
        )
    runtime.credential, runtime.credential_name = credential, holder.name
    log.info("pilot serve: calls over stdio are agent %s's (role %s)", holder.name, holder.role)


@contextlib.asynccontextmanager
async def _closing(phone: PhoneService, runtime: Runtime) -> AsyncIterator[None]:
    """Close the phone channels' connections and give the push turn back, however serving ends."""
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await phone.close(runtime)
            except StoreError as error:
                log.warning("the push turn could not be given back (it lapses in 30 s): %s", error)


def format_banner(
    options: ServeOptions, listener: socket.socket | None, tokens: int, *, streaming: bool = False
) -> str:
    """What `pilot serve` says at start, on stderr: where, on which home and exchange, which tools, and
    whether facts come from the exchange's streams."""
    home = options.home
    venue = options.exchange
    if options.exchange == "paper":
        venue += (
            f" (attached to {options.paper_url})"
            if options.paper_url
            else f" (the home's, shared by its servers; account in {Home(home).paper_state_path})"
        )
    tool_set = options.tools if options.tools in TOOL_SETS else "selected"
    lines = [
        f"  home:      {home}",
        f"  exchange:  {venue}",
        f"  tools:     {tool_set} ({options.tool_count})",
        "  streams:   on (facts judged on while younger than maxFactAgeMs, else read over REST)"
        if streaming
        else "  streams:   off (facts read over REST)",
    ]
    http = options.http
    if http is None or listener is None:
        return "\n".join(["pilot serve: MCP over stdio", *lines])
    bound_host, bound_port = listener.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    url = f"http://{shown_host}:{bound_port}/mcp"
    issue = f"pilot token issue NAME --home {home}"
    token_line = (
        f"{tokens} issued; clients send `Authorization: Bearer TOKEN`; a new one: {issue}"
        if tokens
        else f"none issued yet, so every request is refused: {issue}"
    )
    lines.append(f"  tokens:    {token_line}")
    if not is_loopback(http.host):
        lines.append(f"  WARNING:   serving on {http.host}, not loopback: keep TLS in front")
    lines.append(
        "  log:       no access lines (--quiet)" if http.quiet else "  log:       one line per request"
    )
    return "\n".join([f"pilot serve: MCP (Streamable HTTP) on {url}", *lines, "Press Ctrl+C to stop."])


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


async def _push(runtime: Runtime, phone: PhoneService) -> None:
    """Every second: push actions waiting for a human to the phone channels policy.json opens (Telegram,
    ntfy), and end the Telegram messages of those decided or timed out (pilot.app.service.pushing)."""
    while True:
        await anyio.sleep(UPKEEP_SECONDS)
        try:
            await phone.round(runtime)
        except StoreError as error:
            log.warning("the phone channels could not read or record the store: %s", error)


async def _read_presses(runtime: Runtime, phone: PhoneService) -> None:
    """Read Telegram's button presses by long polling, while a Telegram channel is open (else look again in a
    second)."""
    while True:
        try:
            listened = await phone.listen(runtime)
        except StoreError as error:
            log.warning("a Telegram answer could not be recorded: %s", error)
            listened = False
        if not listened:
            await anyio.sleep(UPKEEP_SECONDS)
