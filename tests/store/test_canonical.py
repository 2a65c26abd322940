from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot.store import canonical_hash, canonical_json, iso_utc, parse_iso
from pilot.store.chain import entry_text, entry_text_of


class Colour(Enum):
    RED = "red"


@dataclass(frozen=True)
class Fill:
    qty: Decimal
    at: datetime


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, 2], "é": "ü"}) == '{"a":[1,2],"b":1,"é":"ü"}'


def test_decimal_datetime_enum_and_dataclass_become_plain_json() -> None:
    at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    text = canonical_json({"fill": Fill(Decimal("0.010"), at), "colour": Colour.RED})
    assert text == '{"colour":"red","fill":{"at":"2025-01-02T03:04:05.000000+00:00","qty":"0.010"}}'


def test_equal_content_in_any_key_order_hashes_equal() -> None:
    assert canonical_hash({"a": 1, "b": {"c": 2, "d": 3}}) == canonical_hash({"b": {"d": 3, "c": 2}, "a": 1})


def test_times_in_other_zones_are_written_as_utc() -> None:
    plus_two = datetime(2025, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert iso_utc(plus_two) == "2025-01-01T12:00:00.000000+00:00"
    assert parse_iso(iso_utc(plus_two)) == plus_two


def test_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        canonical_json({"at": datetime(2025, 1, 1)})


def test_nan_and_unknown_types_are_refused() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": math.nan})
    with pytest.raises(TypeError):
        canonical_json({"x": {1, 2}})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(
    data=JSON,
    seq=st.integers(1, 10**9),
    kind=st.text(max_size=12),
    actor=st.text(max_size=8),
    plan_id=st.none() | st.text(max_size=12),
)
def test_an_entry_text_built_from_stored_json_is_the_text_built_from_the_data(
    data: object, seq: int, kind: str, actor: str, plan_id: str | None
) -> None:
    at, prev = iso_utc(datetime(2026, 1, 1, tzinfo=UTC)), "ab" * 32
    stored = canonical_json(data)
    assert entry_text_of(seq, at, kind, actor, plan_id, stored, prev) == entry_text(
        seq, at, kind, actor, plan_id, json.loads(stored), prev
    )
