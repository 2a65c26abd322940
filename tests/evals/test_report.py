"""The report: the same figures in report.json and report.md, counted from the verdicts."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.evals import Budget, Case, Prices, ScriptedProvider, run_evals, write_report
from pilot.evals.conversation import Usage
from pilot.evals.scorecard import pass_hat_k

IDS = ("btc-short-over-cap.en", "inject-big-buy.en", "declined-no-split.es", "vague-buy.en")


@pytest.mark.anyio
async def test_the_report_counts_what_the_verdicts_say(cases: tuple[Case, ...], tmp_path: Path) -> None:
    chosen = [case for case in cases if case.id in IDS]
    budget = Budget(prices=Prices(input_per_million=Decimal(3), output_per_million=Decimal(15)))
    run = await run_evals(chosen, ScriptedProvider(cases, "reckless"), budget=budget, workdir=tmp_path / "w")
    json_path, md_path = write_report(run, tmp_path / "out")
    record = json.loads(json_path.read_text())
    summary = record["summary"]
    assert summary["case_runs"] == len(chosen) == len(record["case_runs"])
    assert summary["utility"]["hits"] == sum(v.utility for v in run.verdicts)
    assert summary["security"]["hits"] == sum(v.security for v in run.verdicts)
    assert summary["injection_resisted"] == {"hits": 0, "total": 1, "rate": 0.0}
    assert summary["loops"] == sum(v.loops for v in run.verdicts) > 0
    assert record["by_kind"]["injection"]["case_runs"] == 1
    assert record["by_language"]["es"]["case_runs"] == 1
    used = budget.used
    assert used == sum((v.trace.usage for v in run.verdicts), Usage())
    expected = (used.input_tokens * 3 + used.output_tokens * 15) / Decimal(10**6)
    assert record["budget"]["cost_usd"] == str(expected.quantize(Decimal("0.0001")))
    markdown = md_path.read_text()
    assert markdown.startswith("# Pilot eval: scripted `scripted-reckless`")
    assert all(case.id in markdown for case in chosen)
    assert "| injection resisted | 0% | 0 / 1 |" in markdown
    # the injected buy was refused by Pilot: the end state holds, the agent's utility does not
    assert summary["end_state"]["hits"] == sum(v.end_state for v in run.verdicts) > summary["utility"]["hits"]
    assert summary["attack_success"] == {"hits": 1, "total": 1, "rate": 1.0}
    assert summary["pass_k"] == {"1": round(sum(v.passed for v in run.verdicts) / len(chosen), 4)}
    # no model was called: the tokens are an estimate, and the report says so
    assert used.estimated and summary["tokens"]["estimated"] and record["budget"]["tokens_estimated"]
    assert "estimated: no model was called" in markdown.split("\n")[2]


def test_pass_hat_k_is_the_chance_that_k_runs_of_a_case_all_pass() -> None:
    """tau-bench's pass^k: C(c, k) / C(n, k) for a case passed c times in n, averaged over cases."""
    runs = [("a", True), ("a", True), ("a", False), ("b", True), ("b", True), ("b", True)]
    assert pass_hat_k(runs) == {"1": round((2 / 3 + 1) / 2, 4), "2": round((1 / 3 + 1) / 2, 4), "3": 0.5}
    assert pass_hat_k([("a", True), ("b", False), ("b", True)]) == {"1": 0.75, "2": 0.0}
    assert pass_hat_k([]) == {}


def test_a_dollar_budget_needs_prices() -> None:
    with pytest.raises(ValueError):
        Budget(max_usd=Decimal(1))
