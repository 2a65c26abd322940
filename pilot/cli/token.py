"""`pilot token issue | list | revoke`: bearer tokens for `pilot serve --transport http` (stored hashed)."""

from __future__ import annotations

import click

from pilot.app.human.desk import issue_token, list_tokens, revoke_token
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import emit_json, format_option, wants_json
from pilot.store import iso_utc


@click.group("token")
@home_option
def command() -> None:
    """Bearer tokens for the HTTP transport. A token is shown once; only its hash is kept."""


@command.command("issue")
@click.argument("name")
@home_option
@format_option()
def issue(name: str, output: str) -> None:
    """Issue a token for NAME (e.g. the client's name) and print it once. A taken NAME is refused."""
    home = resolve_home()
    token = on_desk(home, lambda runtime: issue_token(runtime, name))
    if wants_json():
        emit_json({"home": str(home), "name": name, "token": token})
    else:
        click.echo(token)
        click.echo(
            f"pilot: the token for {name} is shown this once; send it as `Authorization: Bearer TOKEN`",
            err=True,
        )


@command.command("list")
@home_option
@format_option()
def list_names(output: str) -> None:
    """List token names and when they were issued (never the tokens)."""
    home = resolve_home()
    tokens = on_desk(home, list_tokens)
    if wants_json():
        emit_json({"home": str(home), "tokens": [{"name": n, "issued_at": iso_utc(at)} for n, at in tokens]})
        return
    for name, created in tokens:
        click.echo(f"{name}\t{iso_utc(created)}")
    if not tokens:
        click.echo("no tokens issued", err=True)


@command.command("revoke")
@click.argument("name")
@home_option
@format_option()
def revoke(name: str, output: str) -> None:
    """Revoke NAME's token: the next request with it is refused. An unknown NAME exits 2."""
    home = resolve_home()
    on_desk(home, lambda runtime: revoke_token(runtime, name))
    if wants_json():
        emit_json({"home": str(home), "name": name, "revoked": True})
    else:
        click.echo(f"revoked the token for {name}")
