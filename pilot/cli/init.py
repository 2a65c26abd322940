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
from pilot.app.runtime.runtime import LIVE_ENVIRONMENT, Home, Runtime
from pilot.app.service.boot import EXCHANGES
from pilot.cli import render_setup
from pilot.cli.home import given_store, home_option, resolve_home, run
from pilot.cli.output import emit_json, format_option, wants_json


@click.command("init")
@click.option(
    "--live",
    is_flag=True,
    help="Make a live home (Bybit mainnet, real money) with a conservative policy; it stays off until a "
    "human runs `pilot live on` at a terminal.",
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
    force, the confirmation threshold too. With --live, a live home (bybit, mainnet) instead.
    With --store URL, the journal is on that PostgreSQL server, shared with other hosts, from now on
    (recorded in the home's store.json).
    """
    home = resolve_home(creating=True)
    if live or exchange == LIVE_ENVIRONMENT:
        if exchange not in ("paper", LIVE_ENVIRONMENT):
            raise click.UsageError(f"a live home trades bybit (mainnet) only, not {exchange}")
        if not live:
            raise click.UsageError("a home that trades bybit (mainnet, real money) is made with --live")
        _init_live(home)
        return
    report = run(init_home, home, given_store(), exchange)
    if wants_json():
        emit_json(render_setup.init_record(report))
    else:
        Console().print(render_setup.format_init(report, exchange))


def _init_live(home: Path) -> None:
    """A live home: the conservative policy (unless one is there), then the journal's first entry says live.
    A home whose journal already has entries is practice for good, and is refused."""
    from pilot.app.human.going_live import live_state, make_live
    from pilot.cli.home import on_desk
    from pilot.cli.live import format_live, live_record
    from pilot.core.policy.live_limits import live_policy_text

    if Home(home).has_store():
        on_desk(home, make_live)  # refuses a practice journal before anything is written
    report = run(partial(init_home, policy_text=live_policy_text()), home, given_store())
    state = on_desk(home, _made_live(make_live, live_state))
    if wants_json():
        emit_json({**render_setup.init_record(report), **live_record(state)})
    else:
        Console().print(render_setup.format_init(report, None))  # its next steps are a live home's, below
        click.echo(format_live(state))
        click.echo(
            f"Next (docs/going-live.md): store a trade-only, IP-bound key with `pilot keys add --exchange bybit "
            f"--host api.bybit.com --home {home}`, turn live on at a terminal with `pilot live on --home "
            f"{home}`, then `pilot serve --exchange bybit --home {home}`."
        )


def _made_live(
    make: Callable[[Runtime], Awaitable[None]], state: Callable[[Runtime], Awaitable[LiveState]]
) -> Callable[[Runtime], Awaitable[LiveState]]:
    async def both(runtime: Runtime) -> LiveState:
        await make(runtime)
        return await state(runtime)

    return both
