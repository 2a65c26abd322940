"""`pilot agent add | list | revoke | stop | resume`: agents on one home, a credential, a role and a switch each.

`add` prints the credential once (or writes it to `--token-file`, readable by its owner only): an HTTP
client sends it as its bearer token; a stdio client's configuration carries it in PILOT_AGENT_TOKEN or
PILOT_AGENT_TOKEN_FILE, never on the command line.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from pilot.app.human.agent_desk import add_agent, agents_overview, revoke_agent, switch_agent_by_human
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import emit_json, format_option, wants_json
from pilot.store import iso_utc


@click.group("agent")
@home_option
def command() -> None:
    """Agents on this home: a credential with a role (read, reduce, trade), a budget, a switch each."""


@command.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(["read", "reduce", "trade"]), required=True)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None)
@home_option
@format_option()
def add(name: str, role: str, token_file: Path | None, output: str) -> None:
    """Give agent NAME a credential with ROLE; shown once (or written to --token-file, mode 600)."""
    home = resolve_home()
    token = on_desk(home, lambda runtime: add_agent(runtime, name, role))
    if token_file is not None:
        _write_secret(token_file, token)
    shown = None if token_file is not None else token
    if wants_json():
        emit_json(
            {"home": str(home), "name": name, "role": role, "token": shown, "token_file": _str(token_file)}
        )
        return
    if shown is not None:
        click.echo(shown)
    where = f"written to {token_file}" if token_file else "shown this once"
    click.echo(
        f"pilot: agent {name} ({role}): its credential is {where}. Over HTTP send it as "
        "`Authorization: Bearer TOKEN`; over stdio put it in the client's config as env "
        + (f"PILOT_AGENT_TOKEN_FILE={token_file}" if token_file else "PILOT_AGENT_TOKEN")
        + " (never on the command line)",
        err=True,
    )


def _write_secret(path: Path, token: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(token + "\n")
    path.chmod(0o600)


def _str(path: Path | None) -> str | None:
    return str(path) if path is not None else None


@command.command("list")
@home_option
@format_option()
def list_agents(output: str) -> None:
    """Each agent: role, switch, sessions open, last call, orders today and its budget (never a credential)."""
    home = resolve_home()
    rows = on_desk(home, agents_overview)
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "agents": [
                    {
                        "name": row.name,
                        "role": row.role,
                        "issued_at": iso_utc(row.issued_at) if row.issued_at else None,
                        "switch": "on" if row.switch_on else "off",
                        "sessions": row.sessions,
                        "last_call_at": iso_utc(row.last_call_at) if row.last_call_at else None,
                        "orders_today": row.orders_today,
                        "budget": row.budget,
                    }
                    for row in rows
                ],
            }
        )
        return
    for row in rows:
        last = iso_utc(row.last_call_at) if row.last_call_at else "-"
        click.echo(
            f"{row.name}\t{row.role or 'no credential'}\tswitch {'on' if row.switch_on else 'off'}\t"
            f"sessions {row.sessions}\tlast call {last}\torders today {row.orders_today}\tbudget {row.budget or '-'}"
        )
    if not rows:
        click.echo("no agents: `pilot agent add NAME --role trade` gives one a credential", err=True)


@command.command("revoke")
@click.argument("name")
@home_option
@format_option()
def revoke(name: str, output: str) -> None:
    """Stop NAME's credential at once, cancel its resting opening orders and its unused plans (journaled)."""
    home = resolve_home()
    done = on_desk(home, lambda runtime: revoke_agent(runtime, name))
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "name": name,
                "revoked": True,
                "journal_seq": done.seq,
                "cancelled": done.cancelled,
                "cancel_failed": done.failed,
                "plans_ended": done.plans,
            }
        )
        return
    click.echo(
        f"revoked agent {name}: {len(done.cancelled)} opening orders cancelled, {len(done.plans)} plans ended"
        + (f"; {len(done.failed)} cancels failed: check `pilot journal`" if done.failed else "")
    )


@command.command("stop")
@click.argument("name")
@click.option("--reason", default="", help="Why, for the journal")
@home_option
@format_option()
def stop(name: str, reason: str, output: str) -> None:
    """Turn NAME's own kill switch on: its growing orders are refused; other agents trade on."""
    _switch(name, on=True, reason=reason)


@command.command("resume")
@click.argument("name")
@home_option
@format_option()
def resume(name: str, output: str) -> None:
    """Turn NAME's own kill switch off."""
    _switch(name, on=False, reason="")


def _switch(name: str, *, on: bool, reason: str) -> None:
    home = resolve_home()
    seq = on_desk(home, lambda runtime: switch_agent_by_human(runtime, name, on=on, reason=reason))
    if wants_json():
        emit_json({"home": str(home), "name": name, "switch": "on" if on else "off", "journal_seq": seq})
    else:
        click.echo(f"agent {name}'s switch is {'on' if on else 'off'}")
