"""`pilot keys`: add, show, replace and delete exchange API keys. Secrets come from a prompt or stdin only."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import click

from pilot.app.answers.failures import explain
from pilot.app.human.desk import HumanError
from pilot.app.human.exchange_keys import (
    KeySummary,
    add_key,
    check_ready_to_store,
    delete_key,
    replace_key,
    show_keys,
)
from pilot.app.runtime.runtime import Home, is_live
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import CliError, emit_json, format_option, wants_json
from pilot.keys.credentials import given_address
from pilot.keys.environments import Environment
from pilot.keys.errors import KeysError
from pilot.store import StoreError

T = TypeVar("T")

_ENVIRONMENTS = click.Choice([environment.value for environment in Environment])
_url_option = click.option("--url", default=None, help="The paper exchange's address, http://127.0.0.1:PORT.")
_host_option = click.option(
    "--host",
    default=None,
    help="A live key's only (bybit, okx): the API host of the site your account is on, named explicitly "
    "(bybit: api.bybit.com, api.bybit.eu, api.bybit.nl, ...; okx: www.okx.com, eea.okx.com for my.okx.com, "
    "us.okx.com; docs/going-live.md lists them).",
)
_stdin_option = click.option(
    "--stdin",
    "from_stdin",
    is_flag=True,
    help="Read the key and then the secret as two lines from stdin (OKX: a third, the passphrase).",
)


def _exchange_option(required: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--exchange",
        "environment",
        type=_ENVIRONMENTS,
        required=required,
        help="Bybit demo or testnet, bybit (mainnet: a live home only, needs --host), OKX demo, okx (OKX's "
        "real account: a live home only, needs --host), or the paper exchange (which needs --url).",
    )


@click.group(name="keys")
@home_option
def command() -> None:
    """Store exchange API keys encrypted (in HOME/keys.db); they are never shown again, and never pass
    through the agent."""


@command.command()
@_exchange_option()
@_url_option
@_host_option
@_stdin_option
@home_option
@format_option()
def add(environment: str, url: str | None, host: str | None, from_stdin: bool, output: str) -> None:
    """Add a key for an environment that has none; its permissions are checked on the exchange first."""
    home = resolve_home()
    url = given_address(Environment(environment), url, host)
    _refuse_where_never_used(home, environment)
    _run(check_ready_to_store(home, environment, base_url=url))
    api_key, api_secret, passphrase = _read_secrets(Environment(environment), from_stdin)
    summary = _run(
        add_key(home, environment, api_key, api_secret, now=_now(), base_url=url, passphrase=passphrase)
    )
    _print_stored("Added", home, summary)


@command.command(name="replace")
@_exchange_option()
@_url_option
@_host_option
@_stdin_option
@home_option
@format_option()
def replace_command(
    environment: str, url: str | None, host: str | None, from_stdin: bool, output: str
) -> None:
    """Replace the environment's key; the old one stays if the new one is refused."""
    home = resolve_home()
    url = given_address(Environment(environment), url, host)
    _refuse_where_never_used(home, environment)
    _run(check_ready_to_store(home, environment, base_url=url, replacing=True))
    api_key, api_secret, passphrase = _read_secrets(Environment(environment), from_stdin)
    summary = _run(
        replace_key(home, environment, api_key, api_secret, now=_now(), base_url=url, passphrase=passphrase)
    )
    _print_stored("Replaced", home, summary)


@command.command()
@_exchange_option(required=False)
@home_option
@format_option()
def show(environment: str | None, output: str) -> None:
    """Show stored keys: id, last four characters, when added and checked, permissions. Never the secret."""
    home = resolve_home()
    summaries = [s for s in _run(show_keys(home)) if environment in (None, s.environment)]
    if wants_json():
        emit_json({"home": str(home), "keys": [summary_record(s) for s in summaries]})
        return
    click.echo("\n\n".join(format_summary(s) for s in summaries) if summaries else "No keys stored.")


@command.command()
@_exchange_option()
@home_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@format_option()
def delete(environment: str, yes: bool, output: str) -> None:
    """Delete the environment's key: Pilot can no longer trade there until a key is added."""
    home = resolve_home()
    if not yes:
        click.confirm(f"Delete the {environment} key?", abort=True, err=wants_json())
    key_id = _run(delete_key(home, environment, now=_now()))
    if wants_json():
        emit_json({"home": str(home), "environment": environment, "deleted_key_id": key_id})
    else:
        click.echo(f"Deleted {key_id} ({environment}).")


def _print_stored(done: str, home: Path, summary: KeySummary) -> None:
    if wants_json():
        emit_json({"home": str(home), "key": summary_record(summary)})
    else:
        click.echo(f"{done}.\n{format_summary(summary)}")
    _warn_if_not_ip_bound(summary)


def summary_record(summary: KeySummary) -> dict[str, Any]:
    """A stored key as JSON-ready data; like format_summary, it never holds the secret."""
    check = summary.check
    return {
        "environment": summary.environment,
        "key_id": summary.key_id,
        "key_hint": summary.key_hint,
        "address": summary.base_url,
        "added_at": _timestamp(summary.added_at),
        "last_checked_at": _timestamp(check.checked_at),
        "read_only": check.read_only,
        "permissions": list(check.permissions),
        "not_allowed": list(check.disallowed),
        "ip_bound": check.ip_bound,
    }


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


def _read_secrets(environment: Environment, from_stdin: bool) -> tuple[str, str, str | None]:
    """The key, its secret and (OKX's keys only) the passphrase: hidden prompts, or lines of stdin."""
    third = environment.needs_passphrase
    if from_stdin:
        key, secret = sys.stdin.readline(), sys.stdin.readline()
        return key, secret, sys.stdin.readline() if third else None
    api_key = click.prompt("API key", hide_input=True, err=True)
    api_secret = click.prompt("API secret", hide_input=True, err=True)
    passphrase = click.prompt("API passphrase", hide_input=True, err=True) if third else None
    return api_key, api_secret, passphrase


def _refuse_where_never_used(home: Path, environment: str) -> None:
    """A key the home would never use is refused before a secret is typed or the venue is asked: a
    real-money key in a practice home, another environment's in a live home (okx-demo in a live OKX home).
    A real-money key needs the live home's journal; a practice key needs none, and a journal that cannot be
    read now (its key elsewhere, say) does not stop it: that is `pilot doctor`'s to report."""
    from pilot.app.human.going_live import LiveRefused, require_its_venue

    check = partial(require_its_venue, environment=environment)
    if is_live(environment):
        on_desk(home, check)
    elif Home(home).has_store():
        try:
            on_desk(home, check, react=False)
        except LiveRefused:
            raise
        except (HumanError, StoreError):
            return


def _run(use_case: Coroutine[Any, Any, T]) -> T:
    try:
        return asyncio.run(use_case)
    except KeysError as error:  # answered here too, in the map's words: `pilot keys` also runs on its own
        failure = explain(error)
        raise CliError(failure.code, failure.problem, failure.fix) from None


def _warn_if_not_ip_bound(summary: KeySummary) -> None:
    environment = Environment(summary.environment)
    if summary.check.main_account is True and environment.live:
        click.echo(
            "Note: this is the main account's key. A sub-account funded with only the risk budget is safer "
            "(docs/going-live.md).",
            err=True,
        )
    if not summary.check.ip_bound and environment != Environment.PAPER:
        click.echo(
            "Warning: the key works from any IP address; binding it to yours on "
            f"{environment.venue_name} is safer.",
            err=True,
        )


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
