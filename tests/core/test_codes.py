"""The closed set of codes: each declared once in pilot/core/codes.py, every other table derived from it."""

from __future__ import annotations

import pytest

from pilot.core.codes import NO_HUMAN_FIX, RESIZE_CODES, SIZE_CAP_CODES, Code, Group, code_tables
from tests import pages

PAGE = "refusals.md"  # scripts/regenerate-code-table writes the tables there
HEADING = "Every code an answer can carry"


def documented_tables() -> str:
    """docs/refusals.md's section on codes, from its first table row to its last."""
    lines = pages.section(PAGE, HEADING).splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("|")]
    return "\n".join(lines[rows[0] : rows[-1] + 1])


def test_the_documented_tables_are_the_ones_rendered_from_the_declarations():
    # On a failure: scripts/regenerate-code-table writes the tables from pilot/core/codes.py.
    assert documented_tables() == code_tables()


def test_every_code_declares_a_group_and_the_sentence_the_reference_shows():
    for code in Code:
        assert isinstance(code.group, Group)
        assert code.refused_because.strip(), code
        assert code.group.fixed_by.strip(), code.group


def test_every_size_cap_names_itself_for_nothing_fits_and_nothing_else_does():
    assert {code for code in Code if code.cap is not None} == SIZE_CAP_CODES
    for code in SIZE_CAP_CODES:
        assert code.cap is not None and code.cap.name and code.cap.human
        assert code.cap.human.format(symbol="ETHUSDT")  # every {placeholder} is one sizing fills in
    assert Code.REDUCE_ONLY_QTY.cap is not None and Code.REDUCE_ONLY_QTY.cap.human == NO_HUMAN_FIX


def test_sizing_searches_exactly_the_size_groups():
    assert {code.group for code in SIZE_CAP_CODES} == {Group.SIZE_CAP}
    assert {code.group for code in RESIZE_CODES} == {Group.SIZE_CAP, Group.SIZE_GRID}


def test_a_code_is_looked_up_by_its_value_as_answers_and_the_journal_show_it():
    assert Code("maxNotionalUsd") is Code.MAX_NOTIONAL
    assert f"{Code.MAX_NOTIONAL}" == "maxNotionalUsd"
    with pytest.raises(ValueError):
        Code("noSuchCode")
