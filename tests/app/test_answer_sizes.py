"""What an agent pays for every answer it reads: a typical refusal, an ok plan and the kill switch's refusal,
as a real `pilot serve` answers them over stdio, each at most half of what it was before answers were made
compact (benchmarks/bench_answers.py prints them), and in the compact shape: no null field, no violation
repeating the next action at the top, no text indented for nobody."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.bench_answers import LIMITS_BYTES, sizes
from tests.app.conftest import SERVED_ANSWERS

pytestmark = SERVED_ANSWERS


@pytest.fixture
def answers(served_answer_lines: dict[str, bytes]) -> dict[str, bytes]:
    return served_answer_lines


@pytest.mark.parametrize("name", sorted(LIMITS_BYTES))
def test_an_answer_costs_at_most_half_what_it_did(answers: dict[str, bytes], name: str) -> None:
    text, structured, _ = sizes(answers[name])
    assert text <= LIMITS_BYTES[name], f"{name}: {text} bytes"
    assert text == structured  # the text is the structured answer, compact


def nulls(value: Any, path: str = "") -> list[str]:
    """Every path in an answer whose value is null, but a next action's tool (null there: no call fits)."""
    if isinstance(value, dict):
        found = [f"{path}.{key}" for key, item in value.items() if item is None and key != "tool"]
        return found + [n for key, item in value.items() for n in nulls(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [n for index, item in enumerate(value) for n in nulls(item, f"{path}[{index}]")]
    return []


@pytest.mark.parametrize("name", sorted(LIMITS_BYTES))
def test_an_answer_says_nothing_null_and_each_next_action_once(answers: dict[str, bytes], name: str) -> None:
    answer = json.loads(answers[name])["result"]["structuredContent"]
    assert nulls(answer) == []
    top = answer.get("next_safe_action")
    assert all(v.get("next") != top for v in answer.get("violations") or [])
    assert "fact_sources" not in (answer.get("snapshot") or {})


def test_the_refusal_is_the_demos_first_step_and_the_plan_its_second(answers: dict[str, bytes]) -> None:
    refusal = json.loads(answers["refusal"])["result"]["structuredContent"]
    plan = json.loads(answers["ok plan"])["result"]["structuredContent"]
    killed = json.loads(answers["kill switch"])["result"]["structuredContent"]
    assert [v["rule"] for v in refusal["violations"]] == ["maxOrderNotionalUsd", "maxNotionalUsd"]
    assert refusal["next_safe_action"]["args"]["qty"] == "0.001"
    assert "instrument" in refusal["snapshot"]  # refused for its size: the grid the size is on
    assert plan["status"] == "ok" and "instrument" not in plan["snapshot"]
    assert [h["source"] for v in killed["violations"] for h in v.get("held_by", [])] == ["killSwitch"]
