"""`pilot agent add | list | revoke | stop | resume`: agents on one home, a credential, a role and a switch each.

`add` prints the credential once (or writes it to `--token-file`, readable by its owner only): an HTTP
client sends it as its bearer token; a stdio client's configuration carries it in PILOT_AGENT_TOKEN or
PILOT_AGENT_TOKEN_FILE, never on the command line.
"""

from __future__ import annotations

import os
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from pilot.app.human.agent_board import AgentBoard, BudgetLine, MarketRoom, agent_board
from pilot.app.human.agent_desk import Revoked, add_agent, revoke_agent, switch_agent_by_human
from pilot.app.runtime.runtime import Home
from pilot.app.service.boot import EXCHANGES
from pilot.cli.home import home_option, on_desk, resolve_home, run
from pilot.cli.output import emit_json, format_option, wants_json
from pilot.core.room import RoomNow
from pilot.core.rules.situation import CENT
from pilot.core.violations import plain
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
@click.option(
    "--exchange",
    type=click.Choice(EXCHANGES),
    default=None,
    help="Read this exchange (never write to it) for the room left to each agent per market and today's "
    "loss; default: the home's paper exchange when one runs.",
)
@click.option(
    "--paper-url", default=None, metavar="URL", help="With --exchange paper: a running `pilot sim` elsewhere."
)
@home_option
@format_option()
def list_agents(exchange: str | None, paper_url: str | None, output: str) -> None:
    """Each agent: role, switch, connected, last call, its budget and what is left, orders and refusals today.

    Read from the home's store and journal (never a credential, never a server asked): connected is a
    session open in a serving process or a call in the last 5 minutes (pilot.app.human.agent_board). The
    room left per market is read from the exchange (the home's paper exchange when one runs).
    """
    home = resolve_home()
    boards = run(_boards, home, exchange, paper_url)
    if wants_json():
        emit_json({"home": str(home), "agents": [board_json(board) for board in boards]})
        return
    for board in boards:
        click.echo(_line(board))
        for text in [*map(_limit_text, board.lines), *map(_room_text, board.rooms or ())]:
            click.echo("\t" + text)
    if not boards:
        click.echo("no agents: `pilot agent add NAME --role trade` gives one a credential", err=True)
    elif boards[0].rooms is None:
        click.echo("pilot: no exchange read, so no room per market: none runs on this home", err=True)


async def _boards(home: Path, exchange: str | None, paper_url: str | None) -> list[AgentBoard]:
    """The board on the home's desk, with the exchange read when one is given or the home's paper one runs."""
    from pilot.app.human.desk import open_desk
    from pilot.app.service.boot import StartupError, open_runtime
    from pilot.paper import serving_url

    async with open_desk(home) as desk:
        if exchange is None and paper_url is None:
            paper_url = serving_url(Home(home).paper_state_path)
            if paper_url is None:
                return await agent_board(desk)
        try:
            opened = open_runtime(
                home, exchange=exchange or "paper", paper_url=paper_url, settle=False, streams=False
            )
            async with opened as reader:
                return await agent_board(desk, reader)
        except StartupError:  # it stopped as we opened it: what the journal says
            return await agent_board(desk)


def board_json(board: AgentBoard) -> dict[str, Any]:
    """One agent as `pilot agent list --format json` gives it."""
    row, switch = board.row, board.switch
    return {
        "name": row.name,
        "role": row.role,
        "issued_at": _iso(row.issued_at),
        "switch": "on" if switch is not None else "off",
        "switch_by": switch.data.get("by") if switch is not None else None,
        "switch_at": _iso(switch.at) if switch is not None else None,
        "revoked": board.revoked,
        "connected": board.connected,
        "sessions": row.sessions,
        "last_call_at": _iso(board.last_call_at),
        "orders_today": row.orders_today,
        "orders_left_today": board.orders_left,
        "refusals_today": board.refusals_today,
        "budget": row.budget,
        "limits": [_limit_json(limit) for limit in board.lines],
        "rooms": {market.symbol: _room_json(market) for market in board.rooms}
        if board.rooms is not None
        else None,
        "recent": [
            {"seq": e.seq, "at": iso_utc(e.at), "kind": e.kind, "plan_id": e.plan_id} for e in board.recent
        ],
    }


def _limit_json(limit: BudgetLine) -> dict[str, Any]:
    return {
        "key": limit.key,
        "market": limit.market,
        "own": _num(limit.own),
        "binding": _num(limit.binding),
        "used": _num(limit.used),
        "left": _num(limit.left),
    }


def _room_json(market: MarketRoom) -> dict[str, Any]:
    """One market's room left to the agent per side, as get_policy words a room (null: a fact unread)."""
    return {side: _side_json(judged) for side, judged in (("buy", market.buy), ("sell", market.sell))}


def _side_json(judged: RoomNow | None) -> dict[str, Any] | None:
    if judged is None:
        return None
    room, free = judged.room, judged.without_approval
    found: dict[str, Any] = {
        "qty": plain(room.qty),
        "notional_usd_at_worst_fill": plain(room.notional_usd.quantize(CENT)),
        "limited_by": [code.value for code in room.limited_by],
    }
    if free is not None:
        found["without_approval"] = {"qty": plain(free.qty)}
    return found


def _room_text(market: MarketRoom) -> str:
    sides = [
        f"{side} {plain(judged.room.qty)} (${judged.room.notional_usd:.2f})" if judged else f"{side} unknown"
        for side, judged in (("buy", market.buy), ("sell", market.sell))
    ]
    return f"{market.symbol} room left: " + ", ".join(sides)


def _num(value: Decimal | int | None) -> str | None:
    return plain(value) if value is not None else None


def _iso(at: datetime | None) -> str | None:
    return iso_utc(at) if at is not None else None


def _line(board: AgentBoard) -> str:
    row = board.row
    role = row.role or ("revoked" if board.revoked else "no credential")
    return (
        f"{row.name}\t{role}\tswitch {'on' if board.switch else 'off'}\t"
        f"{'connected' if board.connected else 'not connected'}\tsessions {row.sessions}\t"
        f"last call {_iso(board.last_call_at) or '-'}\torders today {row.orders_today} "
        f"({board.orders_left} left)\trefusals today {board.refusals_today}"
    )


def _limit_text(limit: BudgetLine) -> str:
    where = f"{limit.market} " if limit.market else ""
    text = f"{where}{limit.key} {plain(limit.own)} (applied {plain(limit.binding)})"
    if limit.used is not None and limit.left is not None:
        text += f": used {plain(limit.used)}, left {plain(limit.left)}"
    return text


@command.command("revoke")
@click.argument("name")
@click.option(
    "--exchange",
    type=click.Choice(EXCHANGES),
    default=None,
    help="Cancel NAME's resting opening orders on this exchange; default: the home's paper exchange when "
    "one runs (with none, the credential and its plans are still ended: run revoke again with one).",
)
@click.option(
    "--paper-url", default=None, metavar="URL", help="With --exchange paper: a running `pilot sim` elsewhere."
)
@home_option
@format_option()
def revoke(name: str, exchange: str | None, paper_url: str | None, output: str) -> None:
    """Stop NAME's credential at once, cancel its resting opening orders and its unused plans (journaled)."""
    home = resolve_home()
    done = run(_revoke, home, name, exchange, paper_url)
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "name": name,
                "revoked": True,
                "journal_seq": done.seq,
                "orders_looked_at": done.orders_looked_at,
                "cancelled": done.cancelled,
                "cancel_failed": done.failed,
                "plans_ended": done.plans,
            }
        )
    else:
        click.echo(
            f"revoked agent {name}: {len(done.cancelled)} opening orders cancelled, {len(done.plans)} plans ended"
            + (f"; {len(done.failed)} cancels failed: check `pilot journal`" if done.failed else "")
        )
    if not done.orders_looked_at:
        click.echo(
            f"pilot: no exchange runs on this home, so {name}'s resting orders were not looked at: run "
            f"`pilot agent revoke {name} --exchange EXCHANGE` (or again once the home's paper exchange runs)",
            err=True,
        )


async def _revoke(home: Path, name: str, exchange: str | None, paper_url: str | None) -> Revoked:
    """Revoke on a runtime with the exchange when one is given or the home's paper one runs, else on the desk
    (the credential and its plans ended, its resting orders left for a revoke with an exchange)."""
    from pilot.app.human.desk import open_desk
    from pilot.app.service.boot import StartupError, open_runtime
    from pilot.paper import serving_url

    if exchange is None and paper_url is None:
        paper_url = serving_url(Home(home).paper_state_path)
    if exchange is not None or paper_url is not None:
        try:
            opened = open_runtime(
                home, exchange=exchange or "paper", paper_url=paper_url, settle=False, streams=False
            )
            async with opened as runtime:
                return await revoke_agent(runtime, name)
        except StartupError:
            if exchange is not None:
                raise
    async with open_desk(home) as desk:
        return await revoke_agent(desk, name, cancel_orders=False)


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
