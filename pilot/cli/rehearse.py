"""`pilot sim rehearse`: an agent's stop triggering on a fast moving paper market, end to end.

The agent's side goes through Pilot's own order path, the use cases behind the plan_order and place_order
tools (judged against the home's policy, sent once through the gate, journaled): an order with its stop,
on a paper exchange whose market stands still while the agent plans and places, and then runs `--speed`
times faster than the wall clock (0: as fast as the machine goes, with no waiting: the exchange's time is
advanced a minute at a time). When the exchange's own system closes the position at the stop, nobody
asking, the trigger and the fill are printed as the exchange recorded them. It runs in a temporary home,
removed afterwards (--keep-home keeps it, journal included).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import click

from pilot.app.answers.responses import OrderAnswer, PlanAnswer
from pilot.app.human.desk import init_home
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.service.boot import open_runtime
from pilot.cli.output import emit_json, format_option, wants_json
from pilot.paper import PaperExchange, load_scenario, start_paper_exchange
from pilot.paper.engine import SimExecution, SimOrder
from pilot.paper.scenario import PACKAGED

MINUTE_MS = 60_000
POLL_SECONDS = 0.1  # how often, in wall time, a running rehearsal looks at the exchange
PROGRESS_EVERY_MS = 15 * MINUTE_MS  # exchange time between two progress lines


@dataclass(frozen=True, slots=True)
class Ask:
    """What the rehearsing human asked for."""

    scenario: str
    symbol: str
    side: str
    qty: str
    stop: str
    speed: Decimal
    hours: int

    def plan_args(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "side": self.side, "qty": self.qty, "stop_loss": self.stop}


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """What happened: the agent's two calls, and the stop's closing order and fills if it triggered."""

    ask: Ask
    plan: PlanAnswer
    placed: OrderAnswer | None
    opened_ms: int | None  # exchange time when the market started to run
    close: SimOrder | None  # the exchange's order that closed the position at the stop
    fills: tuple[SimExecution, ...]
    closed_pnl: Decimal | None
    wallet: Decimal
    home: Path

    @property
    def triggered(self) -> bool:
        return self.close is not None


@click.command("rehearse")
@click.option("--scenario", default="moving", show_default=True, metavar="FILE|NAME", help="The market.")
@click.option("--symbol", default="ETHUSDT", show_default=True)
@click.option("--side", type=click.Choice(["buy", "sell"]), default="buy", show_default=True)
@click.option("--qty", default="0.01", show_default=True)
@click.option("--stop", default="3000", show_default=True, help="The order's stop-loss price.")
@click.option(
    "--speed",
    type=click.FloatRange(min=0),
    default=300,
    show_default=True,
    help="Exchange time per wall time once the order is in (0: no waiting, a minute per look).",
)
@click.option(
    "--hours", type=click.IntRange(min=1), default=24, show_default=True, help="Exchange hours to wait."
)
@click.option("--keep-home", is_flag=True, help="Keep the temporary home afterwards and print where it is.")
@format_option()
def command(
    scenario: str,
    symbol: str,
    side: str,
    qty: str,
    stop: str,
    speed: float,
    hours: int,
    keep_home: bool,
    output: str,
) -> None:
    """Watch an agent's stop trigger: plan_order and place_order with a stop, then a fast market hits it.

    Offline: the paper exchange runs on loopback, the agent's calls go through Pilot's own order path in
    a temporary home (your current folder is never touched). Exits 1 if the stop did not trigger.
    """
    ask = Ask(scenario, symbol.upper(), side, qty, stop, Decimal(str(speed)), hours)
    home = Path(tempfile.mkdtemp(prefix="pilot-rehearse-"))
    progress = None if wants_json() else _echo_progress
    try:
        done = anyio.run(rehearse, home, ask, progress)
    finally:
        if not keep_home:
            shutil.rmtree(home, ignore_errors=True)
    if wants_json():
        emit_json(rehearsal_record(done))
    else:
        click.echo(format_outcome(done))
    if keep_home:
        click.echo(f"the rehearsal's home is kept: pilot journal --home {home}", err=wants_json())
    if not done.triggered:
        raise SystemExit(1)


Progress = Callable[[PaperExchange, Ask], None]


async def rehearse(home: Path, ask: Ask, progress: Progress | None = None) -> Rehearsal:
    """Play the rehearsal in `home` (an empty folder): the agent's calls, then the market until the stop."""
    await init_home(home)
    paper = start_paper_exchange(load_scenario(ask.scenario), speed=0)  # still while the agent acts
    try:
        plan, placed = await _agent(home, paper, ask)
        if progress is not None:
            click.echo(format_calls(ask, plan, placed))
        if placed is None or placed.status != "filled":
            return _outcome(home, paper, ask, plan, placed, None, None)
        opened = paper.now_ms()
        close = await _run_market(paper, ask, progress)
        return _outcome(home, paper, ask, plan, placed, opened, close)
    finally:
        paper.stop()


async def _agent(home: Path, paper: PaperExchange, ask: Ask) -> tuple[PlanAnswer, OrderAnswer | None]:
    """plan_order then place_order, as the MCP tools run them (no human at hand: none may be needed)."""
    scenario = None if ask.scenario in PACKAGED else Path(ask.scenario)  # the packaged ones share one key
    async with open_runtime(home, scenario=scenario, paper_url=paper.url) as runtime:
        plan = await plan_order(runtime, PlanRequest.parse(ask.plan_args()), can_reach_human=False)
        if plan.plan_id is None:
            return plan, None
        return plan, await place_order(runtime, plan.plan_id)


async def _run_market(paper: PaperExchange, ask: Ask, progress: Progress | None) -> SimOrder | None:
    """Let the market run until the position is closed by the exchange, or `ask.hours` of exchange time."""
    deadline = paper.now_ms() + ask.hours * 60 * MINUTE_MS
    paper.set_speed(ask.speed)
    shown = paper.now_ms()
    while paper.now_ms() < deadline:
        close = closing_order(paper, ask.symbol)
        if close is not None:
            return close
        if ask.speed == 0:
            paper.advance(MINUTE_MS)
        else:
            await anyio.sleep(POLL_SECONDS)
            paper.catch_up()
        if progress is not None and paper.now_ms() - shown >= PROGRESS_EVERY_MS:
            progress(paper, ask)
            shown = paper.now_ms()
    return closing_order(paper, ask.symbol)


def closing_order(paper: PaperExchange, symbol: str) -> SimOrder | None:
    """The order the exchange's system made to close the flat position (a stop's, a liquidation's), if any."""
    if paper.position(symbol).size != 0:
        return None
    made = [o for o in paper.orders(symbol) if not o.order_link_id and o.reduce_only and o.cum_exec_qty > 0]
    return made[-1] if made else None


def _outcome(
    home: Path,
    paper: PaperExchange,
    ask: Ask,
    plan: PlanAnswer,
    placed: OrderAnswer | None,
    opened: int | None,
    close: SimOrder | None,
) -> Rehearsal:
    fills = tuple(e for e in paper.executions() if close is not None and e.order is close)
    pnl = [
        row.closed_pnl for row in paper.closed_pnl() if close is not None and row.order_id == close.order_id
    ]
    return Rehearsal(
        ask, plan, placed, opened, close, fills, pnl[0] if pnl else None, paper.balance("USDT"), home
    )


def _echo_progress(paper: PaperExchange, ask: Ask) -> None:
    quote = paper.quote(ask.symbol)
    click.echo(
        f"  market   {_when(paper.now_ms())}  {ask.symbol} mark {quote.mark.normalize():f}  (stop {ask.stop})"
    )


# ---- what is printed -------------------------------------------------------------------------------


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def format_calls(ask: Ask, plan: PlanAnswer, placed: OrderAnswer | None) -> str:
    pace = f"{ask.speed.normalize():f}x the wall clock" if ask.speed else "no waiting (a minute a look)"
    lines = [f"Rehearsal: {ask.symbol} on the {ask.scenario} market, once the order is in: {pace}"]
    lines.append(
        f"  agent    plan_order {ask.symbol} {ask.side} {ask.qty} stop_loss {ask.stop} -> {plan.status}"
    )
    for violation in plan.violations or []:
        lines.append(f"           refused by {violation.rule}: {violation.detail}")
    if placed is not None:
        fill = placed.fill
        got = f" {fill.filled_qty} at {fill.avg_price}" if fill is not None else ""
        lines.append(f"  agent    place_order {plan.plan_id} -> {placed.status}{got}")
    return "\n".join(lines)


def format_outcome(done: Rehearsal) -> str:
    if done.close is None:
        if done.placed is None or done.placed.status != "filled":
            return "  no order to protect: the rehearsal stops here"
        return f"  no stop triggered within {done.ask.hours} h of exchange time"
    close = done.close
    assert done.opened_ms is not None
    at, mark = trigger_moment(done)
    after = (at - done.opened_ms) / MINUTE_MS
    kind = close.stop_order_type or close.create_type
    lines = [
        f"  trigger  {kind} at {_when(at)}, {after:.0f} min of exchange time after the market "
        f"opened: mark {mark.normalize():f}, past the stop {done.ask.stop}",
    ]
    for fill in done.fills:
        lines.append(
            f"  fill     {close.side} {fill.qty.normalize():f} {close.symbol} at {fill.price.normalize():f} "
            f"({close.order_type}, reduce-only, fee {fill.fee.normalize():f}, mark {fill.mark.normalize():f})"
        )
    if done.closed_pnl is not None:
        lines.append(f"  result   closed PnL {done.closed_pnl:.4f} USDT; wallet {done.wallet:.4f} USDT")
    return "\n".join(lines)


def trigger_moment(done: Rehearsal) -> tuple[int, Decimal]:
    """When the closing order traded and the mark then. A stop keeps its id and creation time when it fires
    (it is the order that waited), so its first fill says when the price reached it."""
    assert done.close is not None
    if done.fills:
        return done.fills[0].time_ms, done.fills[0].mark
    return done.close.updated_ms, done.close.last_price_on_created


def rehearsal_record(done: Rehearsal) -> dict[str, Any]:
    close = done.close
    return {
        "symbol": done.ask.symbol,
        "scenario": done.ask.scenario,
        "speed": str(done.ask.speed),
        "plan": {"status": done.plan.status, "plan_id": done.plan.plan_id},
        "placed": {"status": done.placed.status} if done.placed is not None else None,
        "opened_ms": done.opened_ms,
        "triggered": done.triggered,
        "trigger": None
        if close is None
        else {
            "order_id": close.order_id,
            "stop_order_type": close.stop_order_type,
            "create_type": close.create_type,
            "time_ms": trigger_moment(done)[0],
            "mark_price": str(trigger_moment(done)[1]),
            "stop_loss": done.ask.stop,
        },
        "fills": [
            {"side": close.side if close else "", "qty": str(f.qty), "price": str(f.price), "fee": str(f.fee)}
            for f in done.fills
        ],
        "closed_pnl": str(done.closed_pnl) if done.closed_pnl is not None else None,
        "wallet_usdt": str(done.wallet),
    }
