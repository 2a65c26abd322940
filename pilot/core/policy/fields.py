"""Every list of policy.json's fields, derived from their declarations (each field's About): the examples an
error shows, the file `pilot init` writes, the groups `get_policy` answers with, and the reference's table.

tests/core/test_policy_fields.py holds each of them to the models' fields, and the reference page to
`reference_table()` (scripts/regenerate-policy-table writes it there).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from pilot.core.policy.about import LEFT_OUT, About, Shown, about
from pilot.core.policy.model import PER_MARKET, Policy
from pilot.core.policy.parts import BILLION, ConfirmRule, Frozen, MarketOverrides, TradingWindow
from pilot.core.violations import plain

# The page, from the repository's root, whose policy.json reference holds reference_table().
REFERENCE_PAGE = "docs/policy.md"
REFERENCE_HEADER = "| Field | Left out | `pilot init` writes | What it refuses | Example refusal (`detail`) |"


def declared(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo, About]]:
    """Each field of `model` in its order: (name, field, its About)."""
    for name, field in model.model_fields.items():
        yield name, field, about(field)


def key(name: str, field: FieldInfo) -> str:
    """The field's key in policy.json."""
    return field.alias or name


def parts(model: type[BaseModel] = Policy) -> list[type[Frozen]]:
    """`model` and every part its fields hold, depth first (a market's overrides aside: they are Policy's
    fields again, and their About is Policy's)."""
    found: list[type[Frozen]] = []
    for field in model.model_fields.values():
        for kind in _models_in(field.annotation):
            if kind is not MarketOverrides and kind not in found:
                found += [part for part in parts(kind) if part not in found]
    return [model, *found] if issubclass(model, Frozen) else found


def _models_in(annotation: Any) -> list[type[Frozen]]:
    if isinstance(annotation, type) and issubclass(annotation, Frozen):
        return [annotation]
    return [kind for arg in getattr(annotation, "__args__", ()) for kind in _models_in(arg)]


# A valid example for every key, shown next to any error about it (a market's override shares its field's).
EXAMPLES: dict[str, str] = {
    key(name, field): entry.example for part in parts() for name, field, entry in declared(part)
}


# --- what `pilot init` writes ----------------------------------------------------------------------


def init_value(field: FieldInfo, entry: About) -> Any:
    """What `pilot init` writes for a field, JSON-ready: its declared `init`, else the left-out value (a
    part such as `confirm` as the object of its own fields' values)."""
    if entry.init is not LEFT_OUT:
        return entry.init
    default = field.get_default(call_default_factory=True)
    if isinstance(default, Frozen):
        return {key(name, f): init_value(f, e) for name, f, e in declared(type(default))}
    return json_ready(default)


def init_policy() -> dict[str, Any]:
    """The policy `pilot init` writes, every field in Policy's order."""
    return {key(name, field): init_value(field, entry) for name, field, entry in declared(Policy)}


def init_policy_text(
    policy: dict[str, Any] | None = None, spelled: Callable[[str], str] | None = None
) -> str:
    """`pilot init`'s policy.json (or `policy`, JSON-ready) as text: a field per line, a non-empty object one
    level deeper. `spelled` names its markets as the home's venue spells them (OKX: BTC-USDT for BTCUSDT)."""
    policy = dict(policy) if policy is not None else init_policy()
    if spelled is not None:
        policy["allowedMarkets"] = [spelled(symbol) for symbol in policy["allowedMarkets"]]
        policy["markets"] = {spelled(symbol): limits for symbol, limits in policy["markets"].items()}
    lines = []
    for name, value in policy.items():
        if isinstance(value, dict) and value:
            inner = ",\n".join(f"    {json.dumps(k)}: {inline(v)}" for k, v in value.items())
            lines.append(f"  {json.dumps(name)}: {{\n{inner}\n  }}")
        else:
            lines.append(f"  {json.dumps(name)}: {inline(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def json_ready(value: Any) -> Any:
    """A field's value as JSON holds it (decimals stay decimals: `inline` writes them as numbers)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [json_ready(item) for item in value]
    if isinstance(value, BaseModel):
        return json_ready(value.model_dump(by_alias=True))
    if isinstance(value, dict):
        return {name: json_ready(item) for name, item in value.items()}
    return value.isoformat() if isinstance(value, datetime) else value


def inline(value: Any) -> str:
    """A JSON value on one line, as a human writes it: `{"a": 1, "b": [2, 3]}`, decimals as plain numbers."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(inline(item) for item in value) + "]"
    return plain(value) if isinstance(value, Decimal) else json.dumps(value)


# --- what get_policy answers -------------------------------------------------------------------------

# The fields each group of get_policy's answer shows, in order: (name, About). CONFIRM's are ConfirmRule's.
SHOWN: dict[Shown, tuple[tuple[str, About], ...]] = {
    group: tuple(
        (name, entry)
        for part in (Policy, ConfirmRule)
        for name, _, entry in declared(part)
        if entry.shown is group
    )
    for group in Shown
}


def answer_group(group: Shown, source: object) -> dict[str, Any]:
    """The fields get_policy shows in `group`, read off `source` (the Policy; its ConfirmRule for CONFIRM; a
    market's EffectiveLimits for MARKET), keyed and valued as answers give them (snake_case, decimals as
    text)."""
    return {entry.key or name: answer_value(getattr(source, name)) for name, entry in SHOWN[group]}


def answer_value(value: Any) -> Any:
    """A field's value in an answer: decimals as plain text, times in ISO 8601, a trading window as
    "08:00-20:00", a part as its snake_case fields."""
    if isinstance(value, Decimal):
        return plain(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [answer_value(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, TradingWindow):
        return str(value)
    return value.model_dump(by_alias=False) if isinstance(value, BaseModel) else value


# --- the reference's table -----------------------------------------------------------------------------


def reference_table() -> str:
    """The reference's table of policy.json's fields: a row per field (a part such as `confirm` a row per
    field of its own), with the value a left-out field has and the one `pilot init` writes."""
    rows = [REFERENCE_HEADER, "|---|---|---|---|---|"]
    for name, field, entry in declared(Policy):
        if name == "markets":
            rows.append(_markets_row(entry))
        elif entry.refuses:
            rows.append(_row(key(name, field), field, entry, init_value(field, entry)))
        else:
            part = type(field.get_default(call_default_factory=True))
            prefix = key(name, field) + "."
            for inner, f, e in declared(part):
                rows.append(_row(prefix + key(inner, f), f, e, init_value(f, e)))
    return "\n".join(rows)


def _row(name: str, field: FieldInfo, entry: About, written: Any) -> str:
    left_out = json_ready(field.get_default(call_default_factory=True))
    cells = [f"`{name}`{_bounds(field)}", f"`{inline(left_out)}`", f"`{inline(written)}`", entry.refuses]
    return _cells([*cells, entry.refusal])


def _markets_row(entry: About) -> str:
    overrides = ", ".join(f"`{key(name, Policy.model_fields[name])}`" for name in PER_MARKET)
    written = "; ".join(f"{symbol}: {inline(value)}" for symbol, value in entry.init.items())
    refuses = entry.refuses.format(overrides=overrides)
    return _cells(["`markets.SYMBOL.*`", "none", f"`{written}`", refuses, entry.refusal])


def _cells(cells: list[str]) -> str:
    escaped = [cell.replace("|", "\\|") for cell in cells]  # a bar inside a cell is escaped in Markdown
    return "| " + " | ".join(escaped[:-1]) + (f" | {escaped[-1]} |" if escaped[-1] else " | |")


def _bounds(field: FieldInfo) -> str:
    """What values a field takes, where the table says: a switch, or a range a number keeps to."""
    if field.annotation in (bool, bool | None):
        return " (`true` or `false`)"
    bounds = {
        name: getattr(item, name)
        for item in field.metadata
        for name in ("ge", "gt", "le")
        if hasattr(item, name)
    }
    low, high = bounds.get("ge", bounds.get("gt")), bounds.get("le")
    if low is None or high is None or high >= BILLION:
        return ""
    return f" ({plain(low)} to {plain(high)})"
