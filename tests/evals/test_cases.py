"""The packaged cases: enough of them, of every kind the issue names, in two languages, each a world Pilot
and the paper exchange accept."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from pilot.core.policy import parse_policy
from pilot.evals import Case, CaseError
from pilot.evals.case_book import KINDS, LANGUAGES, parse_case_file
from pilot.evals.stage import policy_text, scenario_of
from pilot.paper import load_scenario

LINK_ID = re.compile(r"^[A-Za-z0-9_-]{1,36}$")  # Bybit's orderLinkId: where exchange text can be planted


def test_there_are_at_least_sixty_cases_of_every_kind_in_both_languages(cases: tuple[Case, ...]) -> None:
    """Sixty distinct cases: a case played in two languages counts once."""
    distinct = {case.spec.id: case.kind for case in cases}
    assert len(distinct) >= 60
    kinds = Counter(distinct.values())
    assert set(kinds) == set(KINDS)
    assert all(count >= 6 for count in kinds.values()), kinds
    assert Counter(case.lang for case in cases) == {lang: len(cases) // 2 for lang in LANGUAGES}


def test_each_case_is_the_same_world_and_expectation_in_each_language(cases: tuple[Case, ...]) -> None:
    by_id: dict[str, list[Case]] = {}
    for case in cases:
        by_id.setdefault(case.spec.id, []).append(case)
    for versions in by_id.values():
        assert {case.lang for case in versions} == set(LANGUAGES)
        assert len({case.spec.model_dump_json() for case in versions}) == 1
        assert len({case.instruction for case in versions}) == len(LANGUAGES)


def test_every_world_is_one_pilot_and_the_paper_exchange_accept(cases: tuple[Case, ...]) -> None:
    for case in cases:
        parse_policy(policy_text(case.spec.world))
        load_scenario(scenario_of(case.spec.world))
        for order in case.spec.world.resting:
            assert LINK_ID.match(order.link), (case.id, order.link)


def test_planted_text_is_in_exchange_data_and_every_injection_case_is_a_task(cases: tuple[Case, ...]) -> None:
    planted = [case for case in cases if case.spec.injection is not None]
    assert {case.kind for case in planted} == {"injection"}
    assert all(case.mode == "task" for case in planted)


def test_a_case_file_with_a_mistake_is_refused_naming_the_file_and_the_field() -> None:
    good = {
        "kind": "routine",
        "about": "x",
        "cases": [
            {
                "id": "a-case",
                "mode": "step",
                "instruction": {"en": "a", "es": "b"},
                "expect": {"first": {"stop": "clarify"}},
                "script": [{"say": "clarify"}],
            }
        ],
    }
    assert len(parse_case_file("ok.json", json.dumps(good)).cases) == 1
    wrong_mode = json.loads(json.dumps(good))
    wrong_mode["cases"][0]["mode"] = "sometimes"
    with pytest.raises(CaseError, match=r"bad\.json: cases\.0\.mode"):
        parse_case_file("bad.json", json.dumps(wrong_mode))
    one_language = json.loads(json.dumps(good))
    one_language["cases"][0]["instruction"] = {"en": "a"}
    with pytest.raises(CaseError, match=r"one\.json"):
        parse_case_file("one.json", json.dumps(one_language))
    task_without_end = json.loads(json.dumps(good))
    task_without_end["cases"][0]["mode"] = "task"
    with pytest.raises(CaseError, match=r"expect\.end"):
        parse_case_file("task.json", json.dumps(task_without_end))
