"""Fixtures for the eval harness's tests: asyncio for anyio, the packaged cases, and the share of them a
run at a given PILOT_SOAK_SCALE plays."""

from __future__ import annotations

import pytest

from pilot.evals import Case, load_cases
from pilot.evals.case_book import LANGUAGES


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def cases() -> tuple[Case, ...]:
    return load_cases()


def one_case_per_kind(cases: tuple[Case, ...], lang: str = "en") -> list[Case]:
    picked: dict[str, Case] = {}
    for case in cases:
        if case.lang == lang:
            picked.setdefault(case.kind, case)
    return list(picked.values())


def sample(cases: tuple[Case, ...], scale: int) -> tuple[Case, ...]:
    """The case-runs played at PILOT_SOAK_SCALE `scale`, the same on every run: from 4 up, every case in
    every language; below, each case in one language, taking turns (so both are played in every kind); at 1,
    two cases of every three. The worlds and scripts do not depend on the language (test_cases.py)."""
    if scale >= 4:
        return cases
    ids = list(dict.fromkeys(case.spec.id for case in cases))
    chosen = {
        (spec_id, LANGUAGES[i % len(LANGUAGES)]) for i, spec_id in enumerate(ids) if scale > 1 or i % 3 != 2
    }
    return tuple(case for case in cases if (case.spec.id, case.lang) in chosen)
