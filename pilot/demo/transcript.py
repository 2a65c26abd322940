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
    if tool == "get_positions":
        rows = answer.get("data") or []
        held = ", ".join(f"{row['symbol']} {row['size']}" for row in rows) or "none"
        return f"open positions: {held}"
    if answer.get("detail"):
        return f"{status}: {answer['detail']}"
    return f"{status}" + (f": {answer['detail']}" if answer.get("detail") else "")


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
            f"(offline, Bybit's real instrument filters), `pilot init`'s policy.json in {run.home}",
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
        "A scripted agent drives a real MCP client over stdio against `pilot serve` on the built-in paper "
        "exchange (default scenario: Bybit's real instrument filters, so BTCUSDT trades in steps of 0.001 "
        "BTC, about $80; loopback only), in a temporary home with `pilot init`'s policy.json, unchanged "
        "(BTCUSDT capped at $150 per position and per order, other markets at $100, a human confirming "
        "orders above $50):",
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
