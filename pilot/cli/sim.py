"""`pilot sim`: run the paper exchange in the foreground and print how to reach it; `pilot sim reset`."""

from __future__ import annotations

import threading
from pathlib import Path

import click

from pilot.exchange.sim import PaperExchange, ScenarioError, StateError, reset_state, start_paper_exchange


def format_banner(paper: PaperExchange) -> str:
    """What to print at start: the URL and the paper key (a paper key, harmless to show)."""
    lines = [
        f"Paper exchange (Bybit V5 REST) listening on {paper.url}",
        f"  api key:    {paper.api_key}",
        f"  api secret: {paper.api_secret}",
    ]
    if paper.state_path is not None:
        lines.append(
            f"  state:      {paper.state_path} (kept across restarts; `pilot sim reset --state` clears it)"
        )
    return "\n".join([*lines, "Press Ctrl+C to stop."])


STATE_OPTION = click.option(
    "--state",
    "state",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the paper account (balances, positions, orders, prices) in this file across restarts.",
)


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
@click.pass_context
def command(context: click.Context, scenario: Path | None, port: int, state: Path | None) -> None:
    """Run the paper exchange on 127.0.0.1 until interrupted."""
    if context.invoked_subcommand is not None:
        return
    try:
        paper = start_paper_exchange(scenario, port=port, state_path=state)
    except ScenarioError as error:
        raise click.ClickException(f"scenario {scenario}: {error}") from None
    except StateError as error:
        raise click.ClickException(f"{error}. Start afresh with: pilot sim reset --state {state}") from None
    click.echo(format_banner(paper))
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
    required=True,
    help="The state file to clear; the next start begins from the scenario.",
)
def reset(state: Path) -> None:
    """Forget the paper account kept in a state file."""
    if reset_state(state):
        click.echo(f"Cleared {state}: the next `pilot sim --state {state}` starts from the scenario.")
    else:
        click.echo(f"Nothing to clear: {state} does not exist.")
