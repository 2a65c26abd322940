"""`pilot policy check [FILE]`: validate policy.json and show the effective limits, or each error's fix."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from pilot.app.runtime.policy_file import read_policy_file
from pilot.app.runtime.runtime import Home
from pilot.cli import render_setup
from pilot.cli.home import home_option, resolve_home
from pilot.cli.output import emit_json, format_option, wants_json
from pilot.core.policy import LoadedPolicy


@click.group("policy")
@home_option
def command() -> None:
    """Read and check policy.json (only a human edits it; no tool can change it)."""


@command.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@home_option
@format_option()
def check(file: Path | None, output: str) -> None:
    """Validate FILE (default: the home's policy.json) and print the limits per market; exit 1 if invalid."""
    path = Path(file).absolute() if file is not None else Home(resolve_home()).policy_path
    outcome = read_policy_file(path)
    if wants_json():
        emit_json(render_setup.policy_record(path, outcome))
    elif isinstance(outcome, LoadedPolicy):
        Console().print(render_setup.format_limits(outcome, path))
        if outcome.policy.agents:
            Console().print(render_setup.format_agent_budgets(outcome.policy))
    else:
        Console().print(render_setup.format_problems(outcome, path))
    if not isinstance(outcome, LoadedPolicy):
        raise SystemExit(1)
