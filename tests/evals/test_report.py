"""The report: the same figures in report.json and report.md, counted from the verdicts."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.evals import Budget, Case, Prices, ScriptedProvider, run_evals, write_report
from pilot.evals.conversation import Usage

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


def test_a_dollar_budget_needs_prices() -> None:
    with pytest.raises(ValueError):
        Budget(max_usd=Decimal(1))
