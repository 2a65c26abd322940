"""The report of a run: the same figures as JSON (for machines and diffs) and as markdown (for people).

Figures are counts with their rates: utility (the task done by the agent's own calls) beside the end state
(the agent and Pilot's refusals together), security, injection resistance (and how many runs the planted text
reached at all), attack success (FinVault's: the share of attack case-runs, injection and dangerous requests,
where the agent did what the attacker wanted), false refusals (where only a call would do, the agent
stopped), the first decision and the tool it called, hops from a refusal to a call that passes (a plan
issued, an action done), loops, pass^k over repeated runs (tau-bench's: the chance that all k runs of a case
pass, from n runs of it as C(c, k) / C(n, k), averaged over cases), turns, tokens (marked as estimated when no
model was called) and cost; overall, by kind and by language; then every case-run.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from math import comb
from pathlib import Path
from typing import Any

from pilot.evals.case_book import KINDS, LANGUAGES
from pilot.evals.runner import EvalRun
from pilot.evals.scoring import Verdict

FAILURES_SHOWN = 60
ESTIMATE = "no model was called; a request's characters / 3"
SCRIPTED_NOTE = (
    "The scripted provider is the offline stand-in that checks the harness itself: these figures say the "
    "cases can be passed (careful) or failed (reckless) and that the scoring sees which, not how a model does."
)


@dataclass(frozen=True, slots=True)
class Rate:
    hits: int
    total: int

    def record(self) -> dict[str, Any]:
        return {
            "hits": self.hits,
            "total": self.total,
            "rate": round(self.hits / self.total, 4) if self.total else None,
        }


def rate(verdicts: Iterable[Verdict], value: Callable[[Verdict], bool | None]) -> Rate:
    """How many verdicts `value` says True of, among those it says anything of (None is not counted)."""
    seen = [value(verdict) for verdict in verdicts]
    known = [item for item in seen if item is not None]
    return Rate(sum(1 for item in known if item), len(known))


def figures(verdicts: list[Verdict]) -> dict[str, Any]:
    """The figures of a set of case-runs, JSON-ready."""
    hops = [v.hops_to_ok for v in verdicts if v.hops_to_ok is not None]
    refused_first = [v for v in verdicts if any(c.changing and c.status == "refused" for c in v.trace.calls)]
    rates = {
        "utility": rate(verdicts, lambda v: v.utility),
        "end_state": rate(verdicts, lambda v: v.end_state),
        "passed": rate(verdicts, lambda v: v.passed),
        "security": rate(verdicts, lambda v: v.security),
        "injection_resisted": rate(verdicts, lambda v: v.injection),
        "injection_exposed": rate(verdicts, lambda v: v.exposed if v.injection is not None else None),
        "first_decision": rate(verdicts, lambda v: v.decision_ok),
        "tool_accuracy": rate(verdicts, lambda v: v.tool_ok),
        "runs_without_loops": rate(verdicts, lambda v: v.loops == 0),
        "attack_success": rate(verdicts, lambda v: v.attack),
        "false_refusal": rate(verdicts, lambda v: v.false_refusal),
    }
    return {
        "case_runs": len(verdicts),
        **{name: value.record() for name, value in rates.items()},
        "pass_k": pass_hat_k((v.case.id, v.passed) for v in verdicts),
        "loops": sum(v.loops for v in verdicts),
        "hops_to_ok": {
            "runs_refused": len(refused_first),
            "reached_ok": len(hops),
            "mean": round(sum(hops) / len(hops), 2) if hops else None,
            "histogram": {str(k): n for k, n in sorted(Counter(hops).items())},
        },
        "turn_limit_reached": sum(1 for v in verdicts if v.trace.ended in ("turn_limit", "call_limit")),
        "tokens": {
            "input": sum(v.trace.usage.input_tokens for v in verdicts),
            "output": sum(v.trace.usage.output_tokens for v in verdicts),
            "estimated": any(v.trace.usage.estimated for v in verdicts),
        },
    }


def pass_hat_k(played: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """pass^k for k from 1 to the most runs of a case, from each run's (case, passed): over the cases with at
    least k runs, the chance that k runs drawn from its n all pass, C(c, k) / C(n, k) with c of them
    passed, averaged (tau-bench)."""
    runs: dict[str, list[bool]] = defaultdict(list)
    for case, passed in played:
        runs[case].append(passed)
    most = max((len(played) for played in runs.values()), default=0)
    found = {}
    for k in range(1, most + 1):
        chances = [comb(sum(p), k) / comb(len(p), k) for p in runs.values() if len(p) >= k]
        found[str(k)] = round(sum(chances) / len(chances), 4)
    return found


def report_record(run: EvalRun) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    cost = run.budget.cost_usd
    return {
        "provider": run.provider,
        "model": run.model,
        "endpoint": run.endpoint,
        "started_at": run.started_at.isoformat(timespec="seconds"),
        "seconds": round(run.seconds, 1),
        "cases": len(run.cases),
        "runs": run.runs,
        "stopped": run.stopped or None,
        "budget": {
            "max_tokens": run.budget.max_tokens,
            "max_usd": str(run.budget.max_usd) if run.budget.max_usd is not None else None,
            "tokens_used": run.budget.used.total,
            "tokens_estimated": run.budget.used.estimated,
            "cost_usd": str(cost.quantize(Decimal("0.0001"))) if cost is not None else None,
        },
        "summary": figures(run.verdicts),
        "by_kind": {kind: figures([v for v in run.verdicts if v.case.kind == kind]) for kind in KINDS},
        "by_language": {
            lang: figures([v for v in run.verdicts if v.case.lang == lang]) for lang in LANGUAGES
        },
        "case_runs": [case_run(verdict) for verdict in run.verdicts],
        "unscored": [
            {"case": u.case.id, "run": u.run, "reason": u.reason, "detail": u.detail} for u in run.unscored
        ],
    }


def case_run(verdict: Verdict) -> dict[str, Any]:
    trace = verdict.trace
    return {
        "case": verdict.case.id,
        "kind": verdict.case.kind,
        "lang": verdict.case.lang,
        "mode": verdict.case.mode,
        "run": verdict.run,
        "utility": verdict.utility,
        "end_state": verdict.end_state,
        "passed": verdict.passed,
        "attack_succeeded": verdict.attack,
        "false_refusal": verdict.false_refusal,
        "security": verdict.security,
        "injection_resisted": verdict.injection,
        "injection_exposed": verdict.exposed if verdict.injection is not None else None,
        "first_decision": verdict.decision.describe(),
        "first_decision_ok": verdict.decision_ok,
        "tool_ok": verdict.tool_ok,
        "hops_to_ok": verdict.hops_to_ok,
        "loops": verdict.loops,
        "failures": [{"check": f.check, "detail": f.detail} for f in verdict.failures],
        "turns": trace.turns,
        "ended": trace.ended,
        "tokens": {"input": trace.usage.input_tokens, "output": trace.usage.output_tokens},
        "calls": [{"tool": c.tool, "args": c.args, "status": c.status} for c in trace.calls],
        "final_text": trace.final_text[:1000],
    }


def write_report(run: EvalRun, folder: Path) -> tuple[Path, Path]:
    """Write report.json and report.md into `folder` (created if missing); return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    record = report_record(run)
    json_path, md_path = folder / "report.json", folder / "report.md"
    json_path.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    md_path.write_text(format_markdown(record), encoding="utf-8")
    return json_path, md_path


def format_markdown(record: dict[str, Any]) -> str:
    """The report for people, from its JSON record."""
    lines = _heading(record)
    lines += _summary_table(record["summary"])
    lines += _grouped("By kind", record["by_kind"])
    lines += _grouped("By language", record["by_language"])
    lines += _hops(record["summary"]["hops_to_ok"])
    lines += _failures(record["case_runs"])
    lines += _every_case(record["case_runs"])
    if record["unscored"]:
        lines += ["", "## Not scored", "", "| case | run | reason | detail |", "|---|---|---|---|"]
        lines += [f"| {u['case']} | {u['run']} | {u['reason']} | {u['detail']} |" for u in record["unscored"]]
    return "\n".join(lines) + "\n"


def _heading(record: dict[str, Any]) -> list[str]:
    budget = record["budget"]
    estimated = budget.get("tokens_estimated")
    tokens = f"about {budget['tokens_used']} tokens (estimated: {ESTIMATE})" if estimated else None
    spent = (tokens or f"{budget['tokens_used']} tokens") + (
        f", ${budget['cost_usd']}" if budget["cost_usd"] else ""
    )
    limit = ", ".join(
        part
        for part in (
            f"{budget['max_tokens']} tokens" if budget["max_tokens"] else "",
            f"${budget['max_usd']}" if budget["max_usd"] else "",
        )
        if part
    )
    lines = [
        f"# Pilot eval: {record['provider']} `{record['model']}`",
        "",
        f"{record['started_at']}, {record['cases']} cases × {record['runs']} run(s), endpoint {record['endpoint']}, "
        f"{record['seconds']} s. Used {spent}" + (f" of a budget of {limit}." if limit else "."),
    ]
    if record["stopped"]:
        lines += [
            "",
            f"**Stopped early ({record['stopped']})**: the case-runs not played are listed at the end.",
        ]
    if record["provider"] == "scripted":
        lines += ["", SCRIPTED_NOTE]
    return lines


def _summary_table(summary: dict[str, Any]) -> list[str]:
    rows = [
        ("utility (the task done by the agent's own calls)", "utility"),
        ("end state as expected (the agent, and Pilot's refusals)", "end_state"),
        ("security (no action outside policy)", "security"),
        ("injection resisted", "injection_resisted"),
        ("planted text reached the model", "injection_exposed"),
        ("attack success (lower is better)", "attack_success"),
        ("false refusals (lower is better)", "false_refusal"),
        ("first decision as expected", "first_decision"),
        ("tool accuracy (when a call was expected)", "tool_accuracy"),
        ("runs without a loop", "runs_without_loops"),
        ("case-runs passed (no check failed)", "passed"),
    ]
    lines = ["", "## Summary", "", "| metric | rate | hits / total |", "|---|---|---|"]
    for label, key in rows:
        value = summary[key]
        lines.append(f"| {label} | {_pct(value)} | {value['hits']} / {value['total']} |")
    tokens = summary["tokens"]
    how = f" (estimated: {ESTIMATE})" if tokens.get("estimated") else ""
    pass_k = ", ".join(f"pass^{k} {100 * chance:.0f}%" for k, chance in summary["pass_k"].items())
    lines += [
        "",
        f"{summary['case_runs']} case-runs scored; {summary['loops']} looping calls; "
        f"{summary['turn_limit_reached']} runs hit the turn or call limit; "
        f"{tokens['input']} input and {tokens['output']} output tokens{how}.",
        "",
        f"Over repeated runs (the chance that all k runs of a case pass): {pass_k or 'none'}.",
    ]
    return lines


def _grouped(title: str, groups: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"## {title}",
        "",
        "| | case-runs | utility | security | injection resisted | first decision | tool accuracy | loops |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, value in groups.items():
        if not value["case_runs"]:
            continue
        cells = [
            value[key]
            for key in ("utility", "security", "injection_resisted", "first_decision", "tool_accuracy")
        ]
        shown = " | ".join(f"{_pct(cell)} ({cell['hits']}/{cell['total']})" for cell in cells)
        lines.append(f"| {name} | {value['case_runs']} | {shown} | {value['loops']} |")
    return lines


def _hops(hops: dict[str, Any]) -> list[str]:
    histogram = ", ".join(f"{n} run(s) in {k}" for k, n in hops["histogram"].items()) or "none"
    return [
        "",
        "## From a refusal to a call that passes",
        "",
        f"{hops['runs_refused']} case-runs met a refusal; {hops['reached_ok']} then reached a call that passes "
        f"(mean {hops['mean']} state-changing calls: {histogram}).",
    ]


def _failures(case_runs: list[dict[str, Any]]) -> list[str]:
    failed = [(r, f) for r in case_runs for f in r["failures"]]
    lines = ["", "## Failures", ""]
    if not failed:
        return [*lines, "None."]
    lines += ["| case | run | check | detail |", "|---|---|---|---|"]
    lines += [
        f"| {r['case']} | {r['run']} | {f['check']} | {_cell(f['detail'])} |"
        for r, f in failed[:FAILURES_SHOWN]
    ]
    if len(failed) > FAILURES_SHOWN:
        lines.append(f"\n{len(failed) - FAILURES_SHOWN} more in report.json.")
    return lines


def _every_case(case_runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## Every case-run",
        "",
        "| case | kind | run | utility | security | injection | first decision | hops | loops | calls |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in case_runs:
        injection = "" if r["injection_resisted"] is None else _mark(r["injection_resisted"])
        calls = " → ".join(f"{c['tool']}:{c['status']}" for c in r["calls"])
        lines.append(
            f"| {r['case']} | {r['kind']} | {r['run']} | {_mark(r['utility'])} | {_mark(r['security'])} | "
            f"{injection} | {_cell(r['first_decision'])} | {r['hops_to_ok'] if r['hops_to_ok'] is not None else ''} "
            f"| {r['loops']} | {_cell(calls)} |"
        )
    return lines


def _pct(value: dict[str, Any]) -> str:
    return f"{100 * value['hits'] / value['total']:.0f}%" if value["total"] else "n/a"


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
