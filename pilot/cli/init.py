"""`pilot init`: create a home with the default policy.json (docs/policy.md) and an empty journal; never
overwrites."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import click
from rich.console import Console

from pilot.app.human.desk import init_home
from pilot.app.human.going_live import LiveState
from pilot.app.runtime.runtime import LIVE_ENVIRONMENT, Home, Runtime, is_live
from pilot.app.service.boot import EXCHANGES
from pilot.cli import render_setup
from pilot.cli.home import given_store, home_option, resolve_home, run
from pilot.cli.output import emit_json, format_option, wants_json


@click.command("init")
@click.option(
    "--live",
    is_flag=True,
    help="Make a live home (real money: Bybit mainnet, or OKX's real account with --exchange okx) with a "
    "conservative policy; it stays off until a human runs `pilot live on` at a terminal.",
)
@home_option
@click.option(
    "--exchange",
    type=click.Choice(EXCHANGES),
    default="paper",
    show_default=True,
    help="The venue this home trades on: its policy names markets as the venue spells them (OKX: BTC-USDT).",
)
@format_option()
def command(live: bool, exchange: str, output: str) -> None:
    """Create a home (default: the current directory): policy.json with the default policy (its markets in
    the spelling of --exchange's venue) and journal/pilot.db. Never overwrites a policy. Prints the limits in
    force, the confirmation threshold too. With --live, a live home instead: bybit (mainnet; the default) or,
    with --exchange okx, OKX's real account.
    With --store URL, the journal is on that PostgreSQL server, shared with other hosts, from now on
    (recorded in the home's store.json).
    """
    home = resolve_home(creating=True)
    if live or is_live(exchange):
        if exchange != "paper" and not is_live(exchange):
            raise click.UsageError(f"a live home trades bybit or okx (real money) only, not {exchange}")
        if not live:
            raise click.UsageError(f"a home that trades {exchange} (real money) is made with --live")
        _init_live(home, LIVE_ENVIRONMENT if exchange == "paper" else exchange)
        return
    report = run(init_home, home, given_store(), exchange)
    if wants_json():
        emit_json(render_setup.init_record(report))
    else:
        Console().print(render_setup.format_init(report, exchange))


def _init_live(home: Path, environment: str) -> None:
    """A live home, in a new folder: the conservative policy, then the journal's first entry says live. A
    folder that is a home already (a policy.json, a journal) is refused unless it is this venue's live home:
    a home is practice or live for good, and a practice policy kept would be a live home's on practice
    limits."""
    from pilot.app.human.going_live import (
        example_host,
        journal_gone,
        live_policy,
        live_state,
        make_live,
        practice_home,
        refuse_unless_new_or_live,
    )
    from pilot.cli.home import on_desk
    from pilot.cli.live import format_live, live_record

    make = partial(make_live, environment=environment)
    existed = Home(home).policy_path.exists()
    if Home(home).has_store():  # refused before anything is written
        on_desk(home, partial(refuse_unless_new_or_live, environment=environment, policy_existed=existed))
    elif existed:
        raise practice_home(home, environment)
    elif (gone := journal_gone(home, environment)) is not None:
        raise gone
    report = run(partial(init_home, policy_text=live_policy(environment)), home, given_store())
    state = on_desk(home, _made_live(make, live_state))
    if wants_json():
        emit_json({**render_setup.init_record(report), **live_record(state)})
    else:
        Console().print(render_setup.format_init(report, None))  # its next steps are a live home's, below
        click.echo(format_live(state))
        click.echo(
            f"Next (docs/going-live.md): store a trade-only, IP-bound key with `pilot keys add --exchange "
            f"{environment} --host {example_host(environment)} --home {home}` (your site's host), turn live on "
            f"at a terminal with `pilot live on --home {home}`, then `pilot serve --exchange {environment} "
            f"--home {home}`."
        )


def _made_live(
    make: Callable[[Runtime], Awaitable[None]], state: Callable[[Runtime], Awaitable[LiveState]]
) -> Callable[[Runtime], Awaitable[LiveState]]:
    async def both(runtime: Runtime) -> LiveState:
        await make(runtime)
        return await state(runtime)

    return both
