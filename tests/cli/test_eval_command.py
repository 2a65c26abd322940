"""`pilot eval`: cases chosen by kind, language and id, the report written, the run's figures as JSON, and a
provider that cannot be made refused with its fix, the key never printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pilot.evals import ScriptedProvider, load_cases
from tests.cli.conftest import pilot, pilot_json
from tests.evals.model_stubs import openai_stub

KEY = "sk-cli-test-7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b"


@pytest.mark.anyio
async def test_the_scripted_run_writes_both_reports(tmp_path: Path) -> None:
    out = tmp_path / "report"
    record = await pilot_json("eval", "--kind", "nothing_fits", "--lang", "es", "--out", str(out))
    chosen = [case.id for case in load_cases(kinds=["nothing_fits"], langs=["es"])]
    assert record["provider"] == "scripted" and record["summary"]["case_runs"] == len(chosen)
    assert record["summary"]["utility"] == {"hits": len(chosen), "total": len(chosen), "rate": 1.0}
    assert [c["case"] for c in record["case_runs"]] == chosen
    assert json.loads((out / "report.json").read_text())["summary"] == record["summary"]
    assert (out / "report.md").read_text().startswith("# Pilot eval")


@pytest.mark.anyio
async def test_list_names_every_case() -> None:
    listed = await pilot_json("eval", "--list")
    assert [item["case"] for item in listed] == [case.id for case in load_cases()]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--provider", "openai"), "no_model"),
        (("--provider", "anthropic", "--model", "m", "--api-key-env", "PILOT_TEST_NO_SUCH_KEY"), "no_key"),
        (("--case", "no-such-case"), "no_cases"),
        (("--budget-usd", "1"), "no_prices"),
        (("--usd-per-mtok-in", "3"), "half_a_price"),
    ],
)
async def test_what_cannot_run_is_refused_with_its_code(args: tuple[str, ...], code: str) -> None:
    result = await pilot("eval", *args, "--format", "json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == code


@pytest.mark.anyio
async def test_a_local_openai_compatible_server_is_evaluated_and_the_key_stays_out(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with openai_stub(ScriptedProvider(load_cases()).reply) as stub:
        result = await pilot(
            "eval",
            "--provider",
            "openai",
            "--model",
            "local-model",
            "--base-url",
            f"{stub.url}/v1",
            "--case",
            "go-long-eth.en",
            "--out",
            str(out),
            "--format",
            "json",
            env={"OPENAI_API_KEY": KEY},
        )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["model"] == "local-model" and record["endpoint"] == f"{stub.url}/v1"
    assert record["summary"]["utility"]["hits"] == 1
    assert record["budget"]["max_tokens"] == 2_000_000  # a model behind an API always has a budget
    for text in (result.output, (out / "report.json").read_text(), (out / "report.md").read_text()):
        assert KEY not in text
