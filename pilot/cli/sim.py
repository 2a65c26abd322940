"""`pilot sim`: run the paper exchange in the foreground and print how to reach it."""

from __future__ import annotations

import threading
from pathlib import Path

import click

from pilot.exchange.sim import PaperExchange, ScenarioError, start_paper_exchange


def format_banner(paper: PaperExchange) -> str:
    """What to print at start: the URL and the paper key (a paper key, harmless to show)."""
    return "\n".join(
        [
            f"Paper exchange (Bybit V5 REST) listening on {paper.url}",
            f"  api key:    {paper.api_key}",
            f"  api secret: {paper.api_secret}",
            "Press Ctrl+C to stop.",
        ]
    )


@click.command("sim")
@click.option(
    "--scenario",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Scenario JSON file (default: the packaged default scenario).",
)
@click.option(
    "--port", type=int, default=0, show_default=True, help="TCP port on 127.0.0.1 (0: any free port)."
)
def command(scenario: Path | None, port: int) -> None:
    """Run the paper exchange on 127.0.0.1 until interrupted."""
    try:
        paper = start_paper_exchange(scenario, port=port)
    except ScenarioError as error:
        raise click.ClickException(f"scenario {scenario}: {error}") from None
    click.echo(format_banner(paper))
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        paper.stop()
