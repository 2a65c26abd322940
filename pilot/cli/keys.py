"""`pilot keys`: add, show, replace and delete exchange API keys. Secrets come from a prompt or stdin only."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from pilot.app.keys import (
    KeySummary,
    add_key,
    check_ready_to_store,
    delete_key,
    replace_key,
    show_keys,
)
from pilot.keys.environments import Environment
from pilot.keys.errors import KeysError

T = TypeVar("T")

_ENVIRONMENTS = click.Choice([environment.value for environment in Environment])

_home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="PILOT_HOME",
    default=".",
    show_default="PILOT_HOME or the current directory",
    help="Pilot's data folder; keys are stored in HOME/keys.db.",
)
_url_option = click.option("--url", default=None, help="The paper exchange's address, http://127.0.0.1:PORT.")
_stdin_option = click.option(
    "--stdin", "from_stdin", is_flag=True, help="Read the key and then the secret as two lines from stdin."
)


def _exchange_option(required: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--exchange",
        "environment",
        type=_ENVIRONMENTS,
        required=required,
        help="Bybit demo or testnet, or the paper exchange (which needs --url).",
    )


@click.group(name="keys")
def command() -> None:
    """Store exchange API keys encrypted; they are never shown again, and never pass through the agent."""


@command.command()
@_exchange_option()
@_url_option
@_stdin_option
@_home_option
def add(environment: str, url: str | None, from_stdin: bool, home: Path) -> None:
    """Add a key for an environment that has none; its permissions are checked on the exchange first."""
    _run(check_ready_to_store(home, environment, base_url=url))
    api_key, api_secret = _read_key_and_secret(from_stdin)
    summary = _run(add_key(home, environment, api_key, api_secret, now=_now(), base_url=url))
    click.echo(f"Added.\n{format_summary(summary)}")
    _warn_if_not_ip_bound(summary)


@command.command(name="replace")
@_exchange_option()
@_url_option
@_stdin_option
@_home_option
def replace_command(environment: str, url: str | None, from_stdin: bool, home: Path) -> None:
    """Replace the environment's key; the old one stays if the new one is refused."""
    _run(check_ready_to_store(home, environment, base_url=url, replacing=True))
    api_key, api_secret = _read_key_and_secret(from_stdin)
    summary = _run(replace_key(home, environment, api_key, api_secret, now=_now(), base_url=url))
    click.echo(f"Replaced.\n{format_summary(summary)}")
    _warn_if_not_ip_bound(summary)


@command.command()
@_exchange_option(required=False)
@_home_option
def show(environment: str | None, home: Path) -> None:
    """Show stored keys: id, last four characters, when added and checked, permissions. Never the secret."""
    summaries = [s for s in _run(show_keys(home)) if environment in (None, s.environment)]
    click.echo("\n\n".join(format_summary(s) for s in summaries) if summaries else "No keys stored.")


@command.command()
@_exchange_option()
@_home_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def delete(environment: str, home: Path, yes: bool) -> None:
    """Delete the environment's key: Pilot can no longer trade there until a key is added."""
    if not yes:
        click.confirm(f"Delete the {environment} key?", abort=True)
    key_id = _run(delete_key(home, environment, now=_now()))
    click.echo(f"Deleted {key_id} ({environment}).")


def format_summary(summary: KeySummary) -> str:
    """Describe a stored key in a few lines of plain text; the secret is never part of a summary."""
    check = summary.check
    lines = [
        f"{summary.environment}: {summary.key_id}"
        + (f" (key ending {summary.key_hint})" if summary.key_hint else ""),
        f"  added:             {_timestamp(summary.added_at)}",
        f"  last checked:      {_timestamp(check.checked_at)}",
        f"  access:            {'read-only' if check.read_only else 'read and trade'}",
        f"  permissions:       {', '.join(check.permissions) or 'none'}",
    ]
    if summary.base_url:
        lines.insert(1, f"  address:           {summary.base_url}")
    if check.disallowed:
        lines.append(f"  NOT ALLOWED:       {', '.join(check.disallowed)} (trading is blocked)")
    return "\n".join(lines)


def _read_key_and_secret(from_stdin: bool) -> tuple[str, str]:
    if from_stdin:
        return sys.stdin.readline(), sys.stdin.readline()
    api_key = click.prompt("API key", hide_input=True, err=True)
    api_secret = click.prompt("API secret", hide_input=True, err=True)
    return api_key, api_secret


def _run(use_case: Coroutine[Any, Any, T]) -> T:
    try:
        return asyncio.run(use_case)
    except KeysError as error:
        raise click.ClickException(str(error)) from None


def _warn_if_not_ip_bound(summary: KeySummary) -> None:
    if not summary.check.ip_bound and summary.environment != Environment.PAPER:
        click.echo(
            "Warning: the key works from any IP address; binding it to yours on Bybit is safer.", err=True
        )


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
