"""The refusals README.md and docs/refusals.md show are the answers Pilot gives: each example, read as JSON,
is part of the real answer to the same call (the demo's first step, and the kill switch's refusal), key for
key and value for value; "…" stands for a value that differs from run to run (a time, a hash) or for what
the example leaves out."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.app.conftest import SERVED_ANSWERS
from tests.pages import section

pytestmark = SERVED_ANSWERS

ELLIPSES = ("…", "...")


@pytest.fixture
def answers(served_answer_lines: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {
        name: json.loads(line)["result"]["structuredContent"] for name, line in served_answer_lines.items()
    }


def examples(page: str, title: str) -> list[Any]:
    """The JSON blocks of a page's section, as values."""
    return [
        json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", section(page, title), re.DOTALL)
    ]


def part_of(example: Any, real: Any) -> bool:
    """Whether `example` is part of `real`: every key it gives there with a value that is part of the real
    one, its list items among the real list's in order, and "…" (or a string ending in it) for any value
    (or one that begins so)."""
    if isinstance(example, str) and example.endswith(ELLIPSES):
        return isinstance(real, str | int) and str(real).startswith(example.rstrip("….").rstrip())
    if isinstance(example, dict):
        given = {key: value for key, value in example.items() if key not in ELLIPSES}
        return isinstance(real, dict) and all(
            key in real and part_of(v, real[key]) for key, v in given.items()
        )
    if isinstance(example, list):
        rest = iter(real) if isinstance(real, list) else iter(())
        return all(any(part_of(item, candidate) for candidate in rest) for item in example)
    return example == real


def test_readmes_refusal_is_part_of_the_demos_first_answer(answers) -> None:
    [shown] = examples("README.md", "What a refusal looks like")
    assert part_of(shown, answers["refusal"]), json.dumps(answers["refusal"])


def test_the_refusals_page_shows_the_demos_first_answer_and_the_kill_switchs(answers) -> None:
    first, nothing_fits, held = examples("refusals.md", "What a refusal looks like")
    assert part_of(first, answers["refusal"]), json.dumps(answers["refusal"])
    assert part_of({"violations": [held]}, answers["kill switch"]), json.dumps(answers["kill switch"])
    # a next action where nothing fits: shown as answered, with no null but its tool
    assert nothing_fits["tool"] is None and None not in [v for k, v in nothing_fits.items() if k != "tool"]


@pytest.mark.parametrize(
    ("example", "real", "holds"),
    [
        ({"a": "1", "…": "…"}, {"a": "1", "b": 2}, True),
        ({"a": "sha256:…"}, {"a": "sha256:09bb"}, True),
        ({"a": [{"r": 2}]}, {"a": [{"r": 1}, {"r": 2}]}, True),
        ({"a": "1"}, {"a": "2"}, False),
        ({"a": "1", "b": None}, {"a": "1"}, False),  # a null the answer leaves out is no longer shown
        ({"a": [{"r": 2}, {"r": 1}]}, {"a": [{"r": 1}, {"r": 2}]}, False),
    ],
)
def test_part_of_reads_an_example_as_the_page_means_it(example, real, holds) -> None:
    assert part_of(example, real) is holds
