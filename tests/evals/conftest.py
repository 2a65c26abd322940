"""Fixtures for the eval harness's tests: asyncio for anyio, and the packaged cases."""

from __future__ import annotations

import pytest

from pilot.evals import Case, load_cases


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
