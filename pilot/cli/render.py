"""Pure `format_*` functions for what the journal says (`pilot journal`): its entries, its receipt cards, its
chain and anchor; values in, text or rich renderables out, no I/O. The desk's commands print through
`render_desk`, setting a home up and checking it through `render_setup`.

Journal and exchange text is never parsed as rich markup: it goes into `Text` objects, so a string like
"[red]" from the exchange shows as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pilot.app.answers import entry_kinds
from pilot.app.answers.receipts import (
    CardAnswer,
    CardChecks,
    CardConfirmation,
    CardFacts,
    CardNext,
    CardOrder,
    CardRefusal,
    CardSent,
    CardStep,
    CardViolation,
    ReceiptCard,
    event_key,
)
from pilot.app.answers.sent_requests import sent_request
from pilot.store import Anchor, ChainReport, JournalEntry, iso_utc

Section = tuple[str, list[str]]


class EntryRecord(TypedDict):
    """`pilot journal --format json`: one entry, with its summary line."""

    seq: int
    at: str
    kind: str
    actor: str
    plan_id: str | None
    summary: str
    hash: str
    data: Mapping[str, Any]  # the entry's data as journaled: its shape is its kind's


class ChainRecord(TypedDict):
    """`pilot journal verify --format json`."""

    ok: bool
    count: int
    first_broken_seq: int | None
    reason: str | None
    unsealed: int
    anchored: bool


class AnchorRecord(TypedDict):
    """`pilot journal anchor --format json`."""

    anchor: str
    seq: int
    seal: str


# --- journal listing ---------------------------------------------------------------------------------


def entry_summary(entry: JournalEntry) -> str:
    """One line saying what an entry records, in Pilot's own words (exchange text is left out)."""
    data, kind = entry.data, entry.kind
    if kind == "plan":
        if data.get("status") == "ok" and data.get("order"):
            return f"ok: {_order_words(data['order'])}, notional ${data.get('notional_usd')}"
        rules = ", ".join(v.get("rule", "?") for v in data.get("violations") or [])
        return f"refused: {rules}"
    if kind == "order.sent":
        request = sent_request(data.get("request"))
        return (
            f"sent {request.get('side')} {request.get('qty')} {request.get('symbol')} "
            f"worst price {request.get('price')}, client order id {request.get('order_link_id')}"
        )
    if kind == "order.outcome":
        return _outcome_words(data)
    if kind == entry_kinds.PLACE_PENDING:
        return f"pending: waiting for a human in the CLI ({data.get('confirmation_id')})"
    if kind == entry_kinds.PLACE_REFUSED:
        rules = ", ".join(v.get("rule", "?") for v in data.get("violations") or [])
        return f"{data.get('status', 'refused')}: {rules or _detail_words(data)}"
    if kind == entry_kinds.ORDER_RESOLVED:
        return f"looked up: {data.get('status')} ({data.get('order_link_id')})"
    if kind == "killswitch":
        reason = f": {data['reason']}" if data.get("reason") else ""
        return f"{'on' if data.get('on') else 'off'} by {data.get('by')}{reason}"
    if kind == "confirmation":
        if data.get("event") == "decided":
            return f"{'approved' if data.get('approved') else 'rejected'} {data.get('confirmation_id')}"
        what = data.get("event") or data.get("verdict")
        return f"{what} {data.get('tool') or data.get('confirmation_id') or ''}".strip()
    if kind == "action":
        return f"{data.get('tool')} {data.get('phase')} {data.get('symbol', '')} {data.get('status', '')}".strip()
    return _detail_words(data)


def _detail_words(data: Mapping[str, Any]) -> str:
    return str(data.get("detail") or data.get("reason") or data.get("status") or data.get("tool") or "")


def entry_record(entry: JournalEntry) -> EntryRecord:
    """An entry as JSON-ready data, with its summary line."""
    return {
        "seq": entry.seq,
        "at": iso_utc(entry.at),
        "kind": entry.kind,
        "actor": entry.actor,
        "plan_id": entry.plan_id,
        "summary": entry_summary(entry),
        "hash": entry.hash,
        "data": entry.data,
    }


# Below this width the time column drops the year, so the summary keeps room for words, not letters.
WIDE = 100


def events(entries: Sequence[JournalEntry]) -> list[tuple[JournalEntry, list[int]]]:
    """The entries as events: each with the seqs of later rows that only restate it (one entry per event).

    A parking is written by the queue, by the approval step and as place_order's pending answer; a CLI
    approval by `pilot confirm approve` and again when the server carries it out. Every row stays in the
    journal (and in --format json); a listing shows the event once and names the rows that repeat it.
    """
    listed: list[tuple[JournalEntry, list[int]]] = []
    firsts: dict[str, list[int]] = {}
    for entry in entries:
        key = event_key(entry)
        if key is not None and key in firsts:
            firsts[key].append(entry.seq)
            continue
        also: list[int] = []
        if key is not None:
            firsts[key] = also
        listed.append((entry, also))
    return listed


def format_entries(entries: Sequence[JournalEntry], width: int = 120) -> Table:
    """The journal as a table that fits `width`: fixed columns never wrap, the summary wraps under itself,
    and a plan's full id is shown once, under the first of its entries listed."""
    table = Table(
        title=f"journal: {len(entries)} entries", box=None, pad_edge=False, padding=(0, 1), show_edge=False
    )
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("actor", no_wrap=True)
    table.add_column("summary", ratio=1, overflow="fold", min_width=24)
    time_format = "%Y-%m-%d %H:%M:%S" if width >= WIDE else "%m-%d %H:%M:%S"
    shown_plan: str | None = None
    for entry, also in events(entries):
        summary = Text(entry_summary(entry))
        if also:
            summary.append(f" (also seq {_seqs(also)})", style="dim")
        if entry.plan_id and entry.plan_id != shown_plan:
            summary.append(f"\n{entry.plan_id}", style="dim")
        shown_plan = entry.plan_id or shown_plan
        table.add_row(str(entry.seq), entry.at.strftime(time_format), entry.kind, entry.actor, summary)
    return table


def format_entries_markdown(entries: Sequence[JournalEntry]) -> str:
    lines = ["| seq | time (UTC) | kind | actor | plan | summary |", "|---:|---|---|---|---|---|"]
    for entry, also in events(entries):
        summary = entry_summary(entry) + (f" (also seq {_seqs(also)})" if also else "")
        cells = [str(entry.seq), iso_utc(entry.at), entry.kind, entry.actor, entry.plan_id or "", summary]
        lines.append("| " + " | ".join(_md_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


# --- receipt cards -----------------------------------------------------------------------------------


def card_sections(card: ReceiptCard) -> list[Section]:
    """The card as titled sections of plain lines; the rich and markdown forms both print these."""
    last = card.path[-1]
    when = f"planned {_when(card.planned_at)}" + (
        f", last step {_when(last.at)}" if len(card.path) > 1 else ""
    )
    sections: list[Section] = [("home", [card.home.words])]
    if card.agent is not None:
        sections.append(("agent", [card.agent]))
    sections += [
        ("path", [_path_line(card.path), when]),
        ("asked", _asked_lines(card.asked)),
        ("facts", _facts_lines(card.facts)),
        ("checks", _check_lines(card.checks)),
    ]
    if card.refusals:
        sections.append(("refused", [line for r in card.refusals for line in _refusal_lines(r)]))
    if card.confirmations:
        sections.append(("approval", [_confirmation_line(c) for c in card.confirmations]))
    sections.append(("sent", _sent_lines(card.sent)))
    sections.append(("exchange", _exchange_lines(card.exchange)))
    seal = card.seal
    sections.append(
        ("sealed", [f"by journal seq {seal.seq} (entries {_seqs(seal.entries)}), hash:", seal.hash])
    )
    return sections


def _short_version(version: str | None) -> str:
    """A policy version as the cards show it (the whole of it is in --format json)."""
    return f"{version[:19]}…" if version and len(version) > 19 else str(version)


def _path_line(path: list[CardStep]) -> str:
    return " → ".join(step.step.replace("_", " ") for step in path)


def card_title(card: ReceiptCard) -> str:
    live = "LIVE " if card.home.live else ""
    return f"{live}receipt {card.card} · {card.status}"


def _when(iso: str | None) -> str:
    """An ISO time as the cards show it: to the second, in UTC."""
    if not iso:
        return "?"
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return iso


def format_card(card: ReceiptCard) -> Panel:
    """A card as a panel: section names in a column of their own, each line wrapping under itself."""
    body = Table.grid(padding=(0, 1))
    body.add_column(no_wrap=True, style="bold")
    body.add_column(overflow="fold")
    for title, lines in card_sections(card):
        for index, line in enumerate(lines):
            style = "yellow" if line.startswith("UNTRUSTED") else ""
            body.add_row(title if index == 0 else "", Text(line, style=style))
    border = "green" if card.status in ("filled", "partially_filled") else "red" if _is_no(card) else "blue"
    return Panel(body, title=Text(card_title(card)), title_align="left", border_style=border, expand=False)


def format_cards(cards: Iterable[ReceiptCard]) -> Group:
    return Group(*(format_card(card) for card in cards))


def format_card_markdown(card: ReceiptCard) -> str:
    lines = [f"### {_md_text(card_title(card))}", ""]
    for title, body in card_sections(card):
        lines.append(f"**{title}**")
        lines.extend(f"- {_md_text(line)}" for line in body)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _asked_lines(asked: CardOrder | None) -> list[str]:
    if asked is None:
        return ["not recorded: the journal keeps no request for a plan refused before it was sized"]
    return [_order_words(asked.model_dump())]


def _facts_lines(facts: CardFacts | None) -> list[str]:
    if facts is None:
        return ["no snapshot recorded"]
    venue = f"venue {facts.venue} · " if facts.venue else ""
    return [
        f"{venue}policy {_short_version(facts.policy_version)} · trading state {facts.trading_state}",
        f"market data at {_when(facts.market_data_at)}: bid {facts.bid} / ask {facts.ask} / mark {facts.mark}",
        f"position {facts.position_size} · equity ${facts.equity_usd} · orders today {facts.orders_today}",
    ]


def _check_lines(checks: CardChecks) -> list[str]:
    if checks.passed:
        lines = [
            "all checks passed",
            f"order notional ${checks.notional_usd} · position notional ${checks.position_notional_usd}"
            f" · {checks.liquidation_words}",
        ]
        if checks.needs_confirmation:
            lines.append("policy asks a human to confirm this order")
        return lines
    return [_violation_line(v) for v in checks.violations] or ["refused"]


def _violation_line(violation: CardViolation) -> str:
    return f"✗ {violation.rule}: limit {violation.limit}, attempted {violation.attempted}: {violation.detail}"


def _refusal_lines(refusal: CardRefusal) -> list[str]:
    head = f"{refusal.status} at {refusal.stage} ({_when(refusal.at)})"
    lines = [f"{head}: {refusal.detail}" if refusal.detail else head]
    if refusal.stage == "place":
        lines.extend(_violation_line(v) for v in refusal.violations)
    if refusal.next_safe_action is not None:
        lines.append("next safe action: " + _next_words(refusal.next_safe_action))
    return lines


def _confirmation_line(confirmation: CardConfirmation) -> str:
    c = confirmation
    line = f"{c.channel}: {c.verdict} by {c.actor}"
    if c.approver:
        line += f" {c.approver}"
    line += f" at {_when(c.at)}"
    if c.open_channels:
        line += f" (to be decided in: {', '.join(c.open_channels)})"
    if c.changes:
        line += f" (changed since planning: {'; '.join(c.changes)})"
    return line


def _sent_lines(sent: CardSent | None) -> list[str]:
    if sent is None:
        return ["nothing was sent"]
    reduce = " reduce-only" if sent.reduce_only else ""
    return [
        f"{sent.side}{reduce} {sent.qty} {sent.symbol} {sent.order_type} "
        f"{sent.time_in_force}, worst price {sent.worst_price}",
        f"client order id {sent.client_order_id}",
        f"by {sent.origin} at {_when(sent.at)}",
    ]


def _exchange_lines(answer: CardAnswer | None) -> list[str]:
    if answer is None:
        return ["no answer recorded"]
    lines = [_outcome_words(answer.model_dump())]
    if answer.order_id:
        lines.append(f"exchange order id {answer.order_id}, {_when(answer.at)}")
    if answer.detail:
        lines.append(f"Pilot says: {answer.detail}")
    if answer.untrusted_exchange_text:
        lines.append(f"UNTRUSTED exchange text (shown, never followed): {answer.untrusted_exchange_text!r}")
    if answer.next_safe_action is not None:
        lines.append("next safe action: " + _next_words(answer.next_safe_action))
    return lines


def _outcome_words(data: Mapping[str, Any]) -> str:
    status, fill = data.get("status"), data.get("fill")
    if status == "rejected":
        code = f" retCode {data['ret_code']}" if data.get("ret_code") is not None else ""
        family = f" ({data['reject_family']})" if data.get("reject_family") else ""
        return f"rejected by the exchange{code}{family}"
    if fill:
        price = f" at average {fill.get('avg_price')}" if fill.get("avg_price") else ""
        return f"{status}: {fill.get('filled_qty')} filled{price}, fee {fee_words(fill)}"
    return str(status)


def fee_words(fill: Mapping[str, Any]) -> str:
    """A fill's fee with its coin ("0.00000006 BTC"), each coin's when paid in several."""
    several = fill.get("fees")
    if several:
        return ", ".join(f"{amount} {coin}" for coin, amount in sorted(several.items()))
    coin = fill.get("fee_coin")
    return f"{fill.get('fee')} {coin}" if coin else str(fill.get("fee"))


def _order_words(order: dict[str, Any]) -> str:
    amount = order.get("qty") or f"${order.get('notional_usd')}"
    price = f" limit {order['price']}" if order.get("order_type") == "limit" and order.get("price") else ""
    if order.get("order_type") == "market" and order.get("price"):
        price = f" (worst price {order['price']})"
    reduce = " reduce-only" if order.get("reduce_only") else ""
    category = f" ({order['category']})" if order.get("category") else ""
    return f"{order.get('side')}{reduce} {amount} {order.get('symbol')}{category} {order.get('order_type')}{price}"


def _next_words(action: CardNext) -> str:
    call = f"{action.tool} {json.dumps(action.args or {}, sort_keys=True)}: " if action.tool else ""
    human = f" (a human: {action.human})" if action.human else ""
    return f"{call}{action.text}{human}"


def _is_no(card: ReceiptCard) -> bool:
    return card.status in (
        "refused",
        "rejected",
        "declined",
        "withdrawn",
        "cancelled",
        "outcome_unknown",
        "never_executed",
    )


def _seqs(seqs: list[int]) -> str:
    return ", ".join(str(seq) for seq in seqs)


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|")


def _md_text(text: str) -> str:
    return text.replace("\n", " ").replace("`", "'")


# --- the chain and its anchor --------------------------------------------------------------------


def format_chain(report: ChainReport) -> str:
    if not report.ok:
        return (
            f"journal BROKEN at seq {report.first_broken_seq}: {report.reason} "
            f"({report.count} entries before it are intact)"
        )
    lines = [f"journal intact: {report.count} entries, every hash, seal and link recomputed"]
    if report.unsealed:
        lines.append(
            f"{report.unsealed} entries predate sealing: the first sealed entry covers them as they stood"
        )
    lines.append(
        "the anchored entry is present and matches"
        if report.anchored
        else "a deleted tail cannot be seen without an anchor: keep `pilot journal anchor` elsewhere"
    )
    return "\n".join(lines)


def chain_record(report: ChainReport) -> ChainRecord:
    return {
        "ok": report.ok,
        "count": report.count,
        "first_broken_seq": report.first_broken_seq,
        "reason": report.reason,
        "unsealed": report.unsealed,
        "anchored": report.anchored,
    }


def format_anchor(anchor: Anchor) -> str:
    return (
        f"{anchor}\n"
        "Keep this line outside this machine (a note, a message to yourself). Later, "
        f"`pilot journal verify --anchor {anchor}` proves entry {anchor.seq} and everything before it are "
        "still there, unchanged."
    )


def anchor_record(anchor: Anchor) -> AnchorRecord:
    return {"anchor": str(anchor), "seq": anchor.seq, "seal": anchor.seal}
