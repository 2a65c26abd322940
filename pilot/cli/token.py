"""`pilot token issue | list | revoke`: bearer tokens for `pilot serve --transport http` (stored hashed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import click

from pilot.app.runtime import Home
from pilot.store import open_store

HOME = click.option(
    "--home",
    envvar="PILOT_HOME",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)


@click.group("token")
def command() -> None:
    """Bearer tokens for the HTTP transport. A token is shown once; only its hash is kept."""


@command.command("issue")
@click.argument("name")
@HOME
def issue(name: str, home: Path) -> None:
    """Issue a token for NAME (e.g. the client's name) and print it once."""

    async def run() -> str:
        async with await open_store(Home(home).database_path) as store:
            return await store.tokens.issue(name, now=datetime.now(UTC))

    click.echo(anyio.run(run))


@command.command("list")
@HOME
def list_tokens(home: Path) -> None:
    """List token names and when they were issued (never the tokens)."""

    async def run() -> list[tuple[str, datetime]]:
        async with await open_store(Home(home).database_path) as store:
            return await store.tokens.list()

    for name, created in anyio.run(run):
        click.echo(f"{name}\t{created.isoformat()}")


@command.command("revoke")
@click.argument("name")
@HOME
def revoke(name: str, home: Path) -> None:
    """Revoke NAME's token."""

    async def run() -> bool:
        async with await open_store(Home(home).database_path) as store:
            return await store.tokens.revoke(name)

    click.echo("revoked" if anyio.run(run) else f"no token named {name}")
