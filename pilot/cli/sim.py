"""`pilot sim`: run the paper exchange in the foreground and print how to reach it (REST and WebSocket URLs);
`pilot sim reset`."""

from __future__ import annotations

import threading
from pathlib import Path

import click

from pilot.app.runtime.runtime import Home
from pilot.cli.home import explicit_home, home_option
from pilot.cli.output import CliError, emit_json, format_option, wants_json
from pilot.exchange.sim import (
    PaperExchange,
    ScenarioError,
    StateError,
    StateInUse,
    reset_state,
    start_paper_exchange,
)


def format_banner(paper: PaperExchange, home: Path | None = None) -> str:
    """What to print at start: the URL and the paper key (a paper key, harmless to show)."""
    lines = [
        f"Paper exchange (Bybit V5 REST) listening on {paper.url}",
        f"  streams:    {paper.ws_url} (Bybit V5 WebSocket; `pilot serve --paper-url` finds it)",
        f"  api key:    {paper.api_key}",
        f"  api secret: {paper.api_secret}",
    ]
    if paper.state_path is not None:
        lines.append(
            f"  state:      {paper.state_path} (kept across restarts; `{_reset_command(home)}` clears it)"
        )
    if home is not None:
        lines.append(f"  attach:     pilot serve --home {home} --paper-url {paper.url}")
    return "\n".join([*lines, "Press Ctrl+C to stop."])


def banner_record(paper: PaperExchange, home: Path | None = None) -> dict[str, str | None]:
    """The banner as JSON-ready data (`pilot sim --format json`)."""
    return {
        "url": paper.url,
        "ws_url": paper.ws_url,
        "api_key": paper.api_key,
        "api_secret": paper.api_secret,
        "home": str(home) if home is not None else None,
        "state": str(paper.state_path) if paper.state_path is not None else None,
        "attach": f"pilot serve --home {home} --paper-url {paper.url}" if home is not None else None,
    }


def _reset_command(home: Path | None) -> str:
    return f"pilot sim reset --home {home}" if home is not None else "pilot sim reset --state"


STATE_OPTION = click.option(
    "--state",
    "state",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the paper account (balances, positions, orders, prices) in this file across restarts.",
)


def _state_path(home: Path | None, state: Path | None, *, required: bool) -> Path | None:
    """The state file named by --home (a Pilot home's paper account) or --state (not both)."""
    if home is not None and state is not None:
        raise click.UsageError("give --home or --state, not both")
    if home is not None:
        return Home(home).paper_state_path
    if state is None and required:
        raise click.UsageError("say which paper account: --home DIR (a Pilot home) or --state FILE")
    return state


@click.group("sim", invoke_without_command=True)
@click.option(
    "--scenario",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Scenario JSON file (default: the packaged default scenario).",
)
@click.option(
    "--port", type=int, default=0, show_default=True, help="TCP port on 127.0.0.1 (0: any free port)."
)
@STATE_OPTION
@home_option
@format_option()
@click.pass_context
def command(
    context: click.Context, scenario: Path | None, port: int, state: Path | None, output: str
) -> None:
    """Run the paper exchange on 127.0.0.1 until interrupted.

    With --home (only when given: it is optional here), it serves that home's paper account, the one
    `pilot serve --home` embeds, so several `pilot serve --home HOME --paper-url URL` processes can share
    one account (one embedded exchange per home runs at a time). Without --home or --state it keeps no
    account: each start begins from the scenario.
    """
    if context.invoked_subcommand is not None:
        return
    home = explicit_home()
    path = _state_path(home, state, required=False)
    try:
        paper = start_paper_exchange(scenario, port=port, state_path=path)
    except ScenarioError as error:
        raise CliError("bad_scenario", f"scenario {scenario}: {error}", "fix the scenario file") from None
    except StateInUse as error:
        raise CliError(
            "paper_account_in_use", str(error), "attach to it instead, or stop it before starting another"
        ) from None
    except StateError as error:
        reset = f"pilot sim reset --home {home}" if home is not None else f"pilot sim reset --state {path}"
        raise CliError("paper_account_unreadable", str(error), f"start afresh with `{reset}`") from None
    if wants_json():
        emit_json(banner_record(paper, home))
    else:
        click.echo(format_banner(paper, home))
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        paper.stop()


@command.command("reset")
@click.option(
    "--state",
    "state",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The state file to clear; the next start begins from the scenario.",
)
@home_option
@format_option()
def reset(state: Path | None, output: str) -> None:
    """Forget a paper account: a home's (--home) or a state file's (--state). Refused while one serves it."""
    home = explicit_home()
    path = _state_path(home, state, required=True)
    assert path is not None
    again = f"pilot serve --home {home}" if home is not None else f"pilot sim --state {path}"
    try:
        cleared = reset_state(path)
    except StateInUse as error:
        raise CliError(
            "paper_account_in_use", str(error), "stop it first, or it would write the account back"
        ) from None
    if wants_json():
        emit_json({"home": str(home) if home else None, "state": str(path), "cleared": cleared})
    elif cleared:
        click.echo(f"Cleared {path}: the next `{again}` starts from the scenario.")
    else:
        click.echo(f"Nothing to clear: {path} does not exist.")
