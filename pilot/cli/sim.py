"""`pilot sim`: run the paper exchange in the foreground and print how to reach it (REST and WebSocket URLs),
its prices moving if asked (`--speed`, `--walk`, `--tape`, `--funding`, or a moving scenario);
`pilot sim reset`; `pilot sim rehearse` (pilot/cli/rehearse.py)."""

from __future__ import annotations

import signal
import threading
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import click

from pilot.app.runtime.runtime import Home
from pilot.cli.home import explicit_home, home_option
from pilot.cli.output import CliError, emit_json, format_option, wants_json
from pilot.cli.rehearse import command as rehearse_command
from pilot.core.errors import ErrorCode
from pilot.paper import (
    PaperExchange,
    Scenario,
    ScenarioError,
    StateError,
    StateInUse,
    reset_state,
    start_paper_exchange,
)
from pilot.paper.scenario import PACKAGED, describe_moves, load_moving_scenario
from pilot.paper.sharing import IdleWatch, stop_serving
from pilot.paper.tape import packaged_tapes

DEFAULT_WALK_PCT_PER_HOUR = Decimal(1)
DEFAULT_TAPE = "bybit-testnet-btcusdt-mark-1d-2022-11.json"


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def format_banner(paper: PaperExchange, home: Path | None = None) -> str:
    """What to print at start: the URL and the paper key (a paper key, harmless to show)."""
    lines = [
        f"Paper exchange (Bybit V5 REST) listening on {paper.url}",
        f"  streams:    {paper.ws_url} (Bybit V5 WebSocket; `pilot serve --paper-url` finds it)",
        f"  api key:    {paper.api_key}",
        f"  api secret: {paper.api_secret}",
        f"  time:       {format_speed(paper.speed)}",
    ]
    lines += [f"  moving:     {line}" for line in describe_moves(paper.scenario)]
    if paper.state_path is not None:
        lines.append(
            f"  state:      {paper.state_path} (kept across restarts; `{_reset_command(home)}` clears it)"
        )
    if home is not None:
        lines.append(f"  attach:     pilot serve --home {home} --paper-url {paper.url}")
    return "\n".join([*lines, "Press Ctrl+C to stop."])


def banner_record(paper: PaperExchange, home: Path | None = None) -> dict[str, Any]:
    """The banner as JSON-ready data (`pilot sim --format json`)."""
    return {
        "url": paper.url,
        "ws_url": paper.ws_url,
        "api_key": paper.api_key,
        "api_secret": paper.api_secret,
        "home": str(home) if home is not None else None,
        "state": str(paper.state_path) if paper.state_path is not None else None,
        "attach": f"pilot serve --home {home} --paper-url {paper.url}" if home is not None else None,
        "speed": str(paper.speed),
        "moving": describe_moves(paper.scenario),
    }


def format_speed(speed: Decimal) -> str:
    if speed == 0:
        return "the market stands still (speed 0)"
    if speed == 1:
        return "the market runs at the wall clock's pace"
    return f"the market runs {speed.normalize():f}x faster than the wall clock (signed requests use the wall clock)"


def _reset_command(home: Path | None) -> str:
    return f"pilot sim reset --home {home}" if home is not None else "pilot sim reset --state"


STATE_OPTION = click.option(
    "--state",
    "state",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the paper account (balances, positions, orders, prices) in this file across restarts.",
)


def _state_path(home: Path | None, state: Path | None, *, required: bool) -> Path | None:
    """The state file named by --home (a Pilot home's paper account) or --state (not both)."""
    if home is not None and state is not None:
        raise click.UsageError("give --home or --state, not both")
    if home is not None:
        return Home(home).paper_state_path
    if state is None and required:
        raise click.UsageError("say which paper account: --home DIR (a Pilot home) or --state FILE")
    return state


SCENARIO_OPTION = click.option(
    "--scenario",
    default=None,
    metavar="FILE|NAME",
    help=f"Scenario JSON file, or a packaged one by name ({', '.join(PACKAGED)}); default: default.",
)


def scenario_source(scenario: str | None) -> Path | str | None:
    """A --scenario value: a file, or a packaged scenario's name."""
    if scenario is None or (scenario in PACKAGED and not Path(scenario).exists()):
        return scenario
    if not Path(scenario).is_file():
        raise CliError(
            ErrorCode.BAD_SCENARIO,
            f"no scenario file {scenario}",
            f"give a file or one of {', '.join(PACKAGED)}",
        )
    return Path(scenario)


def _named_values(option: str, given: tuple[str, ...], default: str) -> dict[str, str]:
    """`SYMBOL` or `SYMBOL=VALUE` options, as {symbol: value}."""
    values = {}
    for item in given:
        symbol, _, value = item.partition("=")
        if not symbol:
            raise click.UsageError(f"{option} {item!r}: give SYMBOL or SYMBOL=VALUE")
        values[symbol.upper()] = value or default
    return values


def _decimal_option(option: str, value: str) -> Decimal:
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise click.UsageError(f"{option}: {value!r} is not a number") from None
    if not number.is_finite():
        raise click.UsageError(f"{option}: {value!r} is not a number")
    return number


def moving_scenario(
    scenario: str | None,
    walks: tuple[str, ...],
    tapes: tuple[str, ...],
    funding: str | None,
    seed: int,
) -> Scenario:
    """The scenario `pilot sim` serves: the one named, with the paths and funding the switches ask for."""
    walk_pct = {
        symbol: _decimal_option("--walk", value)
        for symbol, value in _named_values("--walk", walks, str(DEFAULT_WALK_PCT_PER_HOUR)).items()
    }
    try:
        return load_moving_scenario(
            scenario_source(scenario),
            walks=walk_pct,
            tapes=_named_values("--tape", tapes, DEFAULT_TAPE),
            funding_rate=_decimal_option("--funding", funding) if funding is not None else None,
            seed=seed,
        )
    except ScenarioError as error:
        raise CliError(
            ErrorCode.BAD_SCENARIO,
            f"scenario {scenario or 'default'}: {error}",
            "fix the scenario or the switches",
        ) from None


@click.group("sim", invoke_without_command=True)
@SCENARIO_OPTION
@click.option(
    "--port", type=int, default=0, show_default=True, help="TCP port on 127.0.0.1 (0: any free port)."
)
@click.option(
    "--speed",
    type=click.FloatRange(min=0),
    default=None,
    help="Exchange time per wall-clock time (60: an hour a minute; 0: stands still); default: the scenario's.",
)
@click.option(
    "--walk",
    "walks",
    multiple=True,
    metavar="SYMBOL[=PCT]",
    help=f"Move SYMBOL on a seeded random walk from its price, PCT % an hour (default {DEFAULT_WALK_PCT_PER_HOUR}).",
)
@click.option(
    "--tape",
    "tapes",
    multiple=True,
    metavar="SYMBOL[=FILE]",
    help=f"Replay a tape of real klines on SYMBOL, scaled to its price, a bar a minute (default {DEFAULT_TAPE}; packaged: {', '.join(packaged_tapes())}).",
)
@click.option("--funding", default=None, metavar="RATE", help="Settle this funding rate on every perpetual.")
@click.option("--seed", type=int, default=1, show_default=True, help="The first --walk's seed (the next +1).")
@click.option(
    "--idle-exit",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="With --home: stop once no `pilot serve` has used the home's exchange for SECONDS (how a server "
    "starts the home's shared exchange).",
)
@STATE_OPTION
@home_option
@format_option()
@click.pass_context
def command(
    context: click.Context,
    scenario: str | None,
    port: int,
    speed: float | None,
    walks: tuple[str, ...],
    tapes: tuple[str, ...],
    funding: str | None,
    seed: int,
    idle_exit: float | None,
    state: Path | None,
    output: str,
) -> None:
    """Run the paper exchange on 127.0.0.1 until interrupted.

    With --home (only when given: it is optional here), it serves that home's paper account, the one
    `pilot serve --home` embeds, so several `pilot serve --home HOME --paper-url URL` processes can share
    one account (one embedded exchange per home runs at a time). Without --home or --state it keeps no
    account: each start begins from the scenario.

    Prices move with the exchange's time when the scenario says so (`--scenario moving`) or with --walk
    and --tape; --speed runs that time faster than the wall clock. `pilot sim rehearse` shows an agent's
    stop triggering on such a market.
    """
    if context.invoked_subcommand is not None:
        return
    home = explicit_home()
    path = _state_path(home, state, required=False)
    if idle_exit is not None and path is None:
        raise click.UsageError("--idle-exit needs --home (or --state): it watches who uses that account")
    world = moving_scenario(scenario, walks, tapes, funding, seed)
    try:
        paper = start_paper_exchange(world, port=port, state_path=path, speed=speed)
    except ScenarioError as error:
        raise CliError(
            ErrorCode.BAD_SCENARIO, f"scenario {scenario}: {error}", "fix the scenario file"
        ) from None
    except StateInUse as error:
        raise CliError(
            ErrorCode.PAPER_ACCOUNT_IN_USE,
            str(error),
            "attach to it instead, or stop it before starting another",
        ) from None
    except StateError as error:
        reset = f"pilot sim reset --home {home}" if home is not None else f"pilot sim reset --state {path}"
        raise CliError(
            ErrorCode.PAPER_ACCOUNT_UNREADABLE, str(error), f"start afresh with `{reset}`"
        ) from None
    _serve(paper, home, path, idle_exit)


def _serve(paper: PaperExchange, home: Path | None, path: Path | None, idle_exit: float | None) -> None:
    """Say where the exchange listens, then serve until Ctrl+C or SIGTERM (or, with idle_exit, until unused)."""
    # SIGTERM (`kill`, a service manager, a script that started it with `&`, where Ctrl+C's SIGINT is ignored
    # from birth) stops it as Ctrl+C does: the exchange's threads stopped and its state left whole.
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        # Ctrl+C may come the moment the banner is out (a script reads it, then stops the exchange): inside
        # the try, so it still stops the exchange's threads, which would otherwise keep the process alive.
        if wants_json():
            emit_json(banner_record(paper, home))
        else:
            click.echo(format_banner(paper, home))
        if idle_exit is None or path is None:
            threading.Event().wait()
        else:
            IdleWatch(path, idle_exit).wait_until_unused()
    except KeyboardInterrupt:
        pass
    finally:
        paper.stop()


@command.command("reset")
@click.option(
    "--state",
    "state",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The state file to clear; the next start begins from the scenario.",
)
@home_option
@format_option()
def reset(state: Path | None, output: str) -> None:
    """Forget a paper account: a home's (--home) or a state file's (--state). Refused while one serves it."""
    home = explicit_home()
    path = _state_path(home, state, required=True)
    assert path is not None
    again = f"pilot serve --home {home}" if home is not None else f"pilot sim --state {path}"
    try:
        cleared = reset_state(path)
    except StateInUse as error:
        raise CliError(
            ErrorCode.PAPER_ACCOUNT_IN_USE, str(error), "stop it first, or it would write the account back"
        ) from None
    if wants_json():
        emit_json({"home": str(home) if home else None, "state": str(path), "cleared": cleared})
    elif cleared:
        click.echo(f"Cleared {path}: the next `{again}` starts from the scenario.")
    else:
        click.echo(f"Nothing to clear: {path} does not exist.")


@command.command("stop")
@home_option
@format_option()
def stop(output: str) -> None:
    """Stop the paper exchange serving a home's account (the one its servers share, or a `pilot sim --home`)."""
    home = explicit_home()
    if home is None:
        raise click.UsageError("say which home: --home DIR")
    try:
        pid = stop_serving(Home(home).paper_state_path)
    except TimeoutError as error:
        raise CliError(ErrorCode.PAPER_ACCOUNT_IN_USE, str(error), "stop that process by its id") from None
    if wants_json():
        emit_json({"home": str(home), "stopped": pid})
    elif pid is None:
        click.echo(f"No paper exchange serves {home}.")
    else:
        click.echo(f"Stopped the paper exchange of {home} (process {pid}); the account is kept.")


command.add_command(rehearse_command)
