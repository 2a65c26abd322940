"""`pilot journal`: list entries, print receipt cards, verify the sealed chain, and print an anchor to keep."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console

from pilot.app.human.desk import receipt_cards, resolve_plan_id
from pilot.app.runtime.runtime import Runtime
from pilot.cli import render
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import CheckFailed, emit_json, format_option
from pilot.core.errors import ErrorCode
from pilot.store import Anchor, ChainReport, JournalEntry


def _iso_time(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO-8601 time (e.g. 2026-01-31T12:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # no zone given: read as UTC


@click.group("journal", invoke_without_command=True)
@click.option("--plan", "plan_id", help="Only entries of this plan (its id or any unique prefix of it).")
@click.option(
    "--kind", help="Only entries whose kind starts with this (plan, order, order.sent, confirmation, ...)."
)
@click.option("--since", callback=_iso_time, help="From this ISO time on (UTC if no zone).")
@click.option("--until", callback=_iso_time, help="Before this ISO time.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=100, show_default=True, help="At most the newest N."
)
@click.option(
    "--card",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[PLAN_ID]",
    help="Receipt cards instead: the one for PLAN_ID (or a unique prefix, or seq-N for a refused plan), "
    "else the last --last N.",
)
@click.option(
    "--last", type=click.IntRange(min=1), default=1, show_default=True, help="With --card: how many."
)
@format_option("markdown", "rich")
@home_option
@click.pass_context
def command(
    ctx: click.Context,
    plan_id: str | None,
    kind: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    card: str | None,
    last: int,
    output: str,
) -> None:
    """What happened, in order: entries as a table, or one receipt card per order with --card.

    Text output fits the terminal's width (at 80 columns too) and wraps with hanging indents when piped;
    --format json gives every entry in full, markdown a table to paste.
    """
    if ctx.invoked_subcommand is not None:
        return
    home = resolve_home()
    if card is not None:
        _print_cards(home, card or None, last, output)
        return

    async def read(runtime: Runtime) -> list[JournalEntry]:
        plan = await resolve_plan_id(runtime, plan_id) if plan_id else None
        newest = await runtime.store.journal.entries(
            plan_id=plan, kind_prefix=kind, since=since, until=until, limit=limit, newest_first=True
        )
        return list(reversed(newest))

    entries = on_desk(home, read)
    if output == "json":
        emit_json({"home": str(home), "entries": [render.entry_record(entry) for entry in entries]})
    elif output == "markdown":
        click.echo(render.format_entries_markdown(entries))
    else:
        Console().print(render.format_entries(entries, width=Console().width))


def _print_cards(home: Path, card: str | None, last: int, output: str) -> None:
    cards = on_desk(home, lambda runtime: receipt_cards(runtime, card=card, last=last))
    if output == "json":
        emit_json({"home": str(home), "cards": [one.model_dump(mode="json") for one in cards]})
    elif output == "markdown":
        click.echo("\n".join(render.format_card_markdown(one) for one in cards) or "no plans in the journal")
    else:
        Console().print(render.format_cards(cards) if cards else "no plans in the journal")


def _anchor(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Anchor | None:
    if value is None:
        return None
    try:
        return Anchor.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@command.command("verify")
@click.option(
    "--anchor",
    callback=_anchor,
    metavar="SEQ:SEAL",
    help="An anchor printed earlier by `pilot journal anchor`: also prove that entry is still there.",
)
@format_option("rich")
@home_option
def verify(anchor: Anchor | None, output: str) -> None:
    """Recompute every hash, seal and link; exit 1 at the first broken entry or a missing anchored one."""
    home = resolve_home()

    async def check(runtime: Runtime) -> ChainReport:
        return await runtime.store.journal.verify(anchor)

    report = on_desk(home, check, react=False)
    if output == "json":
        emit_json({"home": str(home), **render.chain_record(report)})
    else:
        click.echo(render.format_chain(report))
    if not report.ok:
        raise SystemExit(1)


@command.command("anchor")
@format_option("rich")
@home_option
def anchor(output: str) -> None:
    """Print the newest entry's SEQ:SEAL to keep elsewhere; `verify --anchor` then catches a deleted tail."""
    home = resolve_home()

    async def head(runtime: Runtime) -> Anchor | None:
        return await runtime.store.journal.anchor()

    found = on_desk(home, head)
    if found is None:
        raise CheckFailed(
            ErrorCode.NOTHING_TO_ANCHOR,
            "nothing to anchor: the journal is empty or its newest entry has no seal",
            "anchor again once Pilot has journaled something",
        )
    if output == "json":
        emit_json({"home": str(home), **render.anchor_record(found)})
    else:
        click.echo(render.format_anchor(found))
