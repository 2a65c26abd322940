"""Pure `format_*` functions for the human's commands: values in, text or rich renderables out, no I/O.

Journal and exchange text is never parsed as rich markup: it goes into `Text` objects, so a string like
"[red]" from the exchange shows as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pilot.app.doctor import Check
from pilot.app.human import InitReport, KillSwitchState
from pilot.app.receipts import (
    CardAnswer,
    CardChecks,
    CardConfirmation,
    CardFacts,
    CardNext,
    CardOrder,
    CardRefusal,
    CardSent,
    CardViolation,
    ReceiptCard,
)
from pilot.store import Anchor, ChainReport, ConfirmationRecord, JournalEntry, iso_utc

Section = tuple[str, list[str]]


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
        request = data.get("request") or {}
        return (
            f"sent {request.get('side')} {request.get('qty')} {request.get('symbol')} "
            f"worst price {request.get('price')} ({request.get('orderLinkId')})"
        )
    if kind == "order.outcome":
        return _outcome_words(data)
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
    return str(data.get("detail") or data.get("reason") or data.get("status") or data.get("tool") or "")


def entry_record(entry: JournalEntry) -> dict[str, Any]:
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


def format_entries(entries: Sequence[JournalEntry]) -> Table:
    table = Table(title=f"journal: {len(entries)} entries", show_lines=False)
    for header in ("seq", "time (UTC)", "kind", "actor", "plan", "summary"):
        wrap = header == "summary"
        table.add_column(
            header, justify="right" if header == "seq" else "left", no_wrap=not wrap, ratio=wrap or None
        )
    for entry in entries:
        table.add_row(
            str(entry.seq),
            entry.at.strftime("%Y-%m-%d %H:%M:%S"),
            entry.kind,
            entry.actor,
            _short(entry.plan_id),
            Text(entry_summary(entry)),
        )
    return table


def format_entries_markdown(entries: Sequence[JournalEntry]) -> str:
    lines = ["| seq | time (UTC) | kind | actor | plan | summary |", "|---:|---|---|---|---|---|"]
    for entry in entries:
        cells = [
            str(entry.seq),
            iso_utc(entry.at),
            entry.kind,
            entry.actor,
            entry.plan_id or "",
            entry_summary(entry),
        ]
        lines.append("| " + " | ".join(_md_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def format_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False)


# --- receipt cards -----------------------------------------------------------------------------------


def card_sections(card: ReceiptCard) -> list[Section]:
    """The card as titled sections of plain lines; the rich and markdown forms both print these."""
    sections: list[Section] = [
        ("asked", _asked_lines(card.asked)),
        ("facts", _facts_lines(card.facts)),
        ("checks", _check_lines(card.checks)),
    ]
    if card.refusals:
        sections.append(("refused", [line for r in card.refusals for line in _refusal_lines(r)]))
    if card.confirmations:
        sections.append(("confirmation", [_confirmation_line(c) for c in card.confirmations]))
    sections.append(("sent", _sent_lines(card.sent)))
    sections.append(("exchange", _exchange_lines(card.exchange)))
    seal = card.seal
    sections.append(
        ("sealed", [f"journal seq {seal.seq}, hash {seal.hash}", f"entries {_seqs(seal.entries)}"])
    )
    return sections


def card_title(card: ReceiptCard) -> str:
    return f"receipt {card.card} · {card.status} · planned {card.planned_at}"


def format_card(card: ReceiptCard) -> Panel:
    body = Text()
    for index, (title, lines) in enumerate(card_sections(card)):
        if index:
            body.append("\n")
        body.append(f"{title}\n", style="bold")
        for line in lines:
            body.append(f"  {line}\n", style="yellow" if line.startswith("UNTRUSTED") else "")
    border = "green" if card.status in ("filled", "partially_filled") else "red" if _is_no(card) else "blue"
    body.rstrip()
    return Panel(body, title=Text(card_title(card)), border_style=border, expand=False)


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
    return [
        f"policy {facts.policy_version} · trading state {facts.trading_state}",
        f"market data at {facts.market_data_at}: bid {facts.bid} / ask {facts.ask} / mark {facts.mark}",
        f"position {facts.position_size} · equity ${facts.equity_usd} · orders today {facts.orders_today}",
    ]


def _check_lines(checks: CardChecks) -> list[str]:
    if checks.passed:
        distance = checks.liquidation_distance_pct
        liquidation = f"{distance}% from mark" if distance is not None else "none (no leverage risk)"
        lines = [
            "all checks passed",
            f"order notional ${checks.notional_usd} · position notional ${checks.position_notional_usd}"
            f" · liquidation {liquidation}",
        ]
        if checks.needs_confirmation:
            lines.append("policy asks a human to confirm this order")
        return lines
    return [_violation_line(v) for v in checks.violations] or ["refused"]


def _violation_line(violation: CardViolation) -> str:
    return f"✗ {violation.rule}: limit {violation.limit}, attempted {violation.attempted}: {violation.detail}"


def _refusal_lines(refusal: CardRefusal) -> list[str]:
    head = f"{refusal.status} at {refusal.stage} ({refusal.at})"
    lines = [f"{head}: {refusal.detail}" if refusal.detail else head]
    if refusal.stage == "place":
        lines.extend(_violation_line(v) for v in refusal.violations)
    if refusal.next_safe_action is not None:
        lines.append("next safe action: " + _next_words(refusal.next_safe_action))
    return lines


def _confirmation_line(confirmation: CardConfirmation) -> str:
    c = confirmation
    line = f"{c.channel}: {c.verdict} by {c.actor} at {c.at}"
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
        f"client order id {sent.client_order_id} · by {sent.origin} at {sent.at}",
    ]


def _exchange_lines(answer: CardAnswer | None) -> list[str]:
    if answer is None:
        return ["no answer recorded"]
    lines = [_outcome_words(answer.model_dump())]
    if answer.order_id:
        lines.append(f"exchange order id {answer.order_id} at {answer.at}")
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
        return f"{status}: {fill.get('filled_qty')} filled{price}, fee {fill.get('fee')}"
    return str(status)


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
    return card.status in ("refused", "rejected", "declined", "cancelled", "outcome_unknown")


def _seqs(seqs: list[int]) -> str:
    return ", ".join(str(seq) for seq in seqs)


def _short(plan_id: str | None) -> str:
    return "" if plan_id is None else plan_id[:13] + "…"


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|")


def _md_text(text: str) -> str:
    return text.replace("\n", " ").replace("`", "'")


# --- chain, kill switch, confirmations, init, doctor ------------------------------------------------


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


def chain_record(report: ChainReport) -> dict[str, Any]:
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


def anchor_record(anchor: Anchor) -> dict[str, Any]:
    return {"anchor": str(anchor), "seq": anchor.seq, "seal": anchor.seal}


def format_kill_switch(state: KillSwitchState) -> str:
    if state.seq is None:
        return "kill switch: off (never set)"
    since = f" since {iso_utc(state.at)}" if state.at else ""
    reason = f": {state.reason}" if state.reason else ""
    effect = " (only reducing orders, cancels and lower leverage work)" if state.on else ""
    return f"kill switch: {'on' if state.on else 'off'}{effect}, set by {state.by}{since}{reason} (journal seq {state.seq})"


def format_confirmations(records: Sequence[ConfirmationRecord]) -> Table | str:
    if not records:
        return "no confirmations waiting"
    table = Table(title=f"{len(records)} waiting for a human")
    for header in ("id", "tool", "expires (UTC)", "summary"):
        table.add_column(header, overflow="fold")
    for record in records:
        table.add_row(record.confirmation_id, record.tool, iso_utc(record.expires_at), Text(record.summary))
    return table


def format_confirmation(record: ConfirmationRecord, now: datetime) -> str:
    """The exact parked action a human is asked about, from the server's record."""
    action = record.action
    order = action.get("order") or {}
    left = int((record.expires_at - now).total_seconds())
    lines = [
        f"confirmation {record.confirmation_id} ({record.status})",
        f"  tool:      {record.tool}",
        f"  summary:   {record.summary}",
        f"  order:     {json.dumps(order, sort_keys=True)}",
        f"  notional:  ${action.get('notional_usd', '?')}",
        f"  plan:      {action.get('plan_id') or '-'}",
        f"  expires:   {iso_utc(record.expires_at)} ({max(left, 0)} s left)",
    ]
    if record.decided_by:
        lines.append(
            f"  decided:   by {record.decided_by} at {iso_utc(record.decided_at) if record.decided_at else '?'}"
        )
    if record.result:
        lines.append(f"  result:    {json.dumps(record.result, sort_keys=True)[:300]}")
    return "\n".join(lines)


def format_init(report: InitReport) -> str:
    policy = (
        "created policy.json with the default policy (BTCUSDT, ETHUSDT, SOLUSDT; $100 caps, BTCUSDT $150; "
        "a human above $50)"
        if report.policy_created
        else "kept the existing policy.json (init never overwrites it)"
    )
    journal = "created journal/pilot.db" if report.journal_created else "journal/pilot.db already there"
    return f"Pilot home {report.home}:\n  {policy}\n  {journal}\nCheck it with `pilot doctor --home {report.home}`."


def format_checks(checks: Sequence[Check]) -> str:
    lines = []
    for check in checks:
        lines.append(f"{'✓' if check.ok else '✗'} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"    fix: {check.fix}")
    failed = sum(not check.ok for check in checks)
    lines.append("all checks passed" if not failed else f"{failed} check(s) failed")
    return "\n".join(lines)


def check_record(check: Check) -> dict[str, Any]:
    return {"name": check.name, "ok": check.ok, "detail": check.detail, "fix": check.fix}
