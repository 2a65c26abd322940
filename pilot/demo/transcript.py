"""The demo's transcript, pure: a run in, rich renderables or markdown out. Both print the same lines.

Answer text is never parsed as rich markup (it goes into `Text`), so whatever a tool says shows as written.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text

from pilot.cli import render
from pilot.demo.agent import Call
from pilot.demo.run import DemoRun, Step

Line = tuple[str, str]  # (style, text)

REGENERATE = "pilot demo --markdown DEMO.md"


# --- lines -------------------------------------------------------------------------------------------


def step_lines(step: Step) -> list[Line]:
    """What the agent called, what the human saw, what Pilot answered, and what the agent concluded."""
    lines: list[Line] = []
    for entry in step.entries:
        lines.extend(call_lines(entry) if isinstance(entry, Call) else [("italic", f"· {entry}")])
    if step.chain is not None:
        lines.append(("bold", f"pilot journal verify: {render.format_chain(step.chain)}"))
    return lines


def call_lines(call: Call) -> list[Line]:
    lines: list[Line] = [("bold cyan", f"agent → {call.tool} {json.dumps(call.args)}")]
    for form in call.forms:
        lines.append(("magenta", "human ← a form from Pilot, shown by the MCP client:"))
        lines.extend(("magenta", f"    │ {row}") for row in form.splitlines())
        lines.append(("magenta", "human → ticks approve"))
    lines.append(("bold", f"Pilot ← {answer_summary(call.tool, call.answer)}"))
    for violation in call.answer.get("violations") or []:
        lines.append(
            (
                "red",
                f"    ✗ {violation['rule']}: limit {violation['limit']}, attempted {violation['attempted']}: "
                f"{violation['detail']}",
            )
        )
    lines.extend(next_lines(call.answer.get("next_safe_action")))
    return lines


def answer_summary(tool: str, answer: dict[str, Any]) -> str:
    """One line for an answer: its status and the numbers that matter for this tool."""
    status = answer.get("status")
    if tool == "plan_order" and status == "ok":
        order = answer.get("order") or {}
        confirm = ", a human must confirm" if answer.get("needs_confirmation") else ""
        return (
            f"ok: {order.get('side')} {order.get('qty')} {order.get('symbol')} (worst price {order.get('price')}), "
            f"position notional ${answer.get('position_notional_usd')}{confirm}; plan {answer.get('plan_id')}"
        )
    if answer.get("fill"):
        fill = answer["fill"]
        protection = answer.get("protection") or {}
        stop = (
            f"; stop-loss on the position at {protection['stop_loss']}" if protection.get("stop_loss") else ""
        )
        return (
            f"{status}: {fill['filled_qty']} at average price {fill['avg_price']}, fee {fill['fee']} "
            f"(order {answer.get('order_id')}){stop}"
        )
    if status == "ok" and tool in READ_SUMMARIES:
        data = answer.get("data")
        rows = data.get("rows") if isinstance(data, dict) else data
        return READ_SUMMARIES[tool](rows or [])
    if answer.get("detail"):
        return f"{status}: {answer['detail']}"
    return f"{status}"


SHOWN_ROWS = 3  # of a read's rows, newest first


def _rows(rows: list[dict[str, Any]], line: Any) -> str:
    shown = [line(row) for row in rows[:SHOWN_ROWS]]
    more = f"; and {len(rows) - SHOWN_ROWS} more" if len(rows) > SHOWN_ROWS else ""
    return "; ".join(shown) + more if shown else "none"


def _order(row: dict[str, Any]) -> str:
    """An order as a reader needs it: a stop by its kind and trigger, an ordinary order by its price."""
    what = f"{row['side']} {row['qty']} {row['symbol']}"
    if row.get("stop_type"):
        kind = f"{row['stop_type']} {what}, trigger {row.get('trigger_price')}"
    else:
        kind = f"{row['order_type']} {what} at {row['price']}"
        kind += f" with stop-loss {row['stop_loss']}" if row.get("stop_loss") else ""
    filled = f" {row['filled_qty']}" if row.get("filled_qty") not in (None, "0") else ""
    return f"{kind}: {row['status']}{filled}"


def _fill(row: dict[str, Any]) -> str:
    return f"{row['side']} {row['qty']} {row['symbol']} at {row['price']}, fee {row['fee']}, at {row['at']}"


def _closed(row: dict[str, Any]) -> str:
    return (
        f"{row['symbol']} {row['closed_size']} closed from {row['avg_entry_price']} at {row['avg_exit_price']}: "
        f"PnL {row['closed_pnl']} USDT after fees"
    )


READ_SUMMARIES = {
    "get_positions": lambda rows: (
        "open positions: " + (", ".join(f"{row['symbol']} {row['size']}" for row in rows) or "none")
    ),
    "get_open_orders": lambda rows: f"open orders: {_rows(rows, _order)}",
    "get_order_history": lambda rows: f"order history, newest first: {_rows(rows, _order)}",
    "get_fills": lambda rows: f"fills, newest first: {_rows(rows, _fill)}",
    "get_closed_pnl": lambda rows: f"closed PnL, newest first: {_rows(rows, _closed)}",
}


def next_lines(action: dict[str, Any] | None) -> list[Line]:
    if not action:
        return []
    if action.get("tool"):
        call = f"{action['tool']} {json.dumps(action.get('args') or {})}"
        shown: list[Line] = [
            ("green", f"    next safe action: {call}"),
            ("green", f"      ({action.get('text')})"),
        ]
        for option in action.get("options") or []:
            shown.append(("green", f"    or: {option['tool']} {json.dumps(option.get('args') or {})}"))
            shown.append(("green", f"      ({option.get('text')})"))
        return shown
    lines: list[Line] = [("yellow", f"    next safe action: no tool; {action.get('text')}")]
    if action.get("human"):
        lines.append(("yellow", f"    a human must: {action['human']}"))
    return lines


def headline(run: DemoRun) -> str:
    if run.ok:
        return f"All {len(run.steps)} steps behaved as shown, in {run.seconds:.1f} s."
    failed = run.failed
    where = f"step {failed.number}" if failed is not None else f"after step {len(run.steps)}"
    return f"The demo stopped at {where}: Pilot did not behave as shown, so this exits 1."


# --- rich --------------------------------------------------------------------------------------------


def format_run(run: DemoRun) -> Group:
    """The transcript for the terminal."""
    parts: list[RenderableType] = [
        Text(
            "Pilot demo: a scripted agent, a real MCP client over stdio, `pilot serve` on the paper exchange "
            "(offline, Bybit's real instrument filters, ETHUSDT on a seeded walk the demo runs), `pilot init`'s "
            f"policy.json with a $2 loss limit a trade, in {run.home}",
            style="dim",
        )
    ]
    for step in run.steps:
        parts.append(format_step(step))
    parts.append(Text(headline(run), style="bold green" if run.ok else "bold red"))
    return Group(*parts)


def format_step(step: Step) -> Group:
    parts: list[RenderableType] = [Rule(Text(f"Step {step.number} · {step.title}"), align="left")]
    if step.cards:
        parts.append(Text(f"pilot journal --card --last {len(step.cards)}", style="bold"))
        parts.append(render.format_cards(step.cards))
    parts.extend(Text(text, style=style) for style, text in step_lines(step))
    if step.failure is None:
        parts.append(Text(f"proves: {step.proves}", style="green"))
    else:
        parts.append(Text(f"STEP {step.number} FAILED: {step.failure}", style="bold red"))
    return Group(*parts)


# --- markdown ----------------------------------------------------------------------------------------


def format_markdown(run: DemoRun) -> str:
    """DEMO.md: how it was made, the policy, then each step's transcript and what it proves."""
    out = [
        "# Pilot demo: the refusal that says what fits",
        "",
        f"Generated by `{REGENERATE}` (or `scripts/regenerate-demo`) on {run.started_at:%Y-%m-%d %H:%M} UTC "
        f"with Pilot {version('pilot')}. Do not edit by hand: run it again. Plan ids, order ids, times and "
        "hashes differ on every run; statuses, rule codes and quantities are checked and do not.",
        "",
        "A scripted agent drives a real MCP client over stdio against `pilot serve`, attached to the built-in "
        "paper exchange (default scenario: Bybit's real instrument filters, so BTCUSDT trades in steps of "
        "0.001 BTC, about $80; loopback only). ETHUSDT follows a seeded random walk (2 % an hour) whose clock "
        "stands still until the demo runs it, so every step sees the same prices on every run. The home is "
        "temporary, with `pilot init`'s policy.json and one loss limit added, a trade may lose at most $2 at "
        "its stop (BTCUSDT capped at $150 per position and per order, other markets at $100, a human "
        "confirming orders above $50):",
        "",
        "```json",
        json.dumps(run.policy, indent=2),
        "```",
        "",
    ]
    for step in run.steps:
        out.extend(markdown_step(step))
    out.append(f"**{headline(run)}**")
    return "\n".join(out) + "\n"


def markdown_step(step: Step) -> list[str]:
    out = [f"## Step {step.number} · {step.title}", ""]
    if step.failure is None:
        out.extend([f"**Proves:** {step.proves}.", ""])
    if step.cards:
        out.extend([f"`pilot journal --card --last {len(step.cards)}`:", ""])
        out.extend(render.format_card_markdown(card) for card in step.cards)
    lines = step_lines(step)
    if lines:
        out.extend(["```text", *(text for _style, text in lines), "```", ""])
    if step.failure is not None:
        out.extend([f"**Step {step.number} failed:** {step.failure}", ""])
    return out
