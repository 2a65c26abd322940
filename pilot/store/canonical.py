"""One byte-exact JSON form for everything Pilot stores or hashes, and one text form for instants."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from enum import Enum


def iso_utc(moment: datetime) -> str:
    """Render an aware instant as fixed-width ISO-8601 UTC, so stored times also sort as text.

    Raises:
        ValueError: the datetime is naive; Pilot never guesses a time zone.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("naive datetime: pass a timezone-aware UTC time")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_iso(text: str) -> datetime:
    """Read back a time written by `iso_utc`."""
    return datetime.fromisoformat(text).astimezone(UTC)


def _to_json_value(obj: object) -> object:
    if isinstance(obj, Decimal):
        return str(obj)
    if isinstance(obj, datetime):
        return iso_utc(obj)
    if isinstance(obj, date):
        return obj.isoformat()
    if isinstance(obj, Enum):
        return obj.value
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {field.name: getattr(obj, field.name) for field in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"cannot store a {type(obj).__name__} as JSON")


def canonical_json(obj: object) -> str:
    """Serialise `obj` to canonical JSON: sorted keys, no spaces, UTF-8 text, no NaN.

    Decimal becomes its string, datetime an ISO-8601 UTC string, Enum its value and a dataclass
    a dict of its fields; nested values are converted the same way.
    """
    return json.dumps(
        obj,
        default=_to_json_value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def sha256_hex(text: str) -> str:
    """Hash text as UTF-8 with SHA-256, hex encoded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_hash(obj: object) -> str:
    """Hash the canonical JSON of `obj`: equal content always gives an equal hash."""
    return sha256_hex(canonical_json(obj))
