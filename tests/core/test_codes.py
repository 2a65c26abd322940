"""The closed set of codes: the README's table is the enum, group for group."""

from __future__ import annotations

import re
from pathlib import Path

from pilot.core.codes import GROUP_OF, RESIZE_CODES, SIZE_CAP_CODES, Code, Group

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_codes() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Every code an answer can carry", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \|", section, re.M)
    return dict(rows)


def test_the_readme_lists_every_code_with_its_group_and_nothing_else():
    assert readme_codes() == {code.value: group.value for code, group in GROUP_OF.items()}


def test_every_code_has_a_group_and_sizing_searches_exactly_the_size_groups():
    assert set(GROUP_OF) == set(Code)
    assert {code.group for code in SIZE_CAP_CODES} == {Group.SIZE_CAP}
    assert {code.group for code in RESIZE_CODES} == {Group.SIZE_CAP, Group.SIZE_GRID}
