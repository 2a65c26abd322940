"""Reading policy.json: hostile text parsed into a Policy with a version, or issues that name the JSON path,
the problem and the fix."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from pilot.core.facts import TradingState
from pilot.core.policy.fields import EXAMPLES
from pilot.core.policy.model import Policy
from pilot.core.policy.parts import quoted, shown

# policy.json is read as hostile input; what a policy never needs is refused before it can cost anything.
MAX_POLICY_BYTES = 64 * 1024
MAX_NESTING = 10  # the deepest real path is 3: markets.SYMBOL.field
MAX_NUMBER_DIGITS = 30  # and a magnitude between 1e-30 and 1e30
MAX_ISSUES = 20  # reported; a file of a thousand typos gets the first twenty and a count
# A JSON string (possessive, so an unterminated one runs to the end in one pass) or a bracket.
_BRACKETS_AND_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_NUMBER_FIX = "write a plain number such as 25 (at most 30 digits, magnitude 1e-30 to 1e30)"
_SHIPPED = "start again from the example that `pilot init` writes"


@dataclass(frozen=True, slots=True)
class PolicyIssue:
    """One thing wrong with policy.json: where (a JSON path), what, and how to fix it."""

    path: str
    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}; {self.fix}"


class PolicyInvalid(ValueError):
    """policy.json cannot be used; `issues` lists each problem with its fix."""

    def __init__(self, issues: list[PolicyIssue]) -> None:
        super().__init__("; ".join(str(issue) for issue in issues))
        self.issues = issues


@dataclass(frozen=True, slots=True)
class LoadedPolicy:
    policy: Policy
    version: str  # sha256 of the canonical content, "sha256:<hex>"


def parse_policy(text: str) -> LoadedPolicy:
    """Parse policy.json text. Raises PolicyInvalid naming each JSON path, the problem and an example.

    The text is treated as hostile: its length, nesting, numbers and repeated keys are checked before anything
    recursive or costly touches them, so no input makes this raise anything else or run for long.
    """
    raw = _decoded(text)
    if not isinstance(raw, dict):
        raise PolicyInvalid(
            [
                PolicyIssue(
                    "$", "the top level must be a JSON object", 'example: {"allowedMarkets": ["BTCUSDT"]}'
                )
            ]
        )
    try:
        policy = Policy.model_validate(raw)
    except ValidationError as error:
        raise PolicyInvalid(_at_most([_issue(detail) for detail in error.errors()])) from None
    unused = _overrides_outside_allowed_markets(policy)
    if unused:
        raise PolicyInvalid(_at_most(unused))
    return LoadedPolicy(policy=policy, version=policy_version(policy))


def _overrides_outside_allowed_markets(policy: Policy) -> list[PolicyIssue]:
    """An override for a market not in allowedMarkets never lets an order open there: a typo or a leftover."""
    return [
        PolicyIssue(
            f"markets.{shown(symbol)}",
            f"{shown(symbol)} is not in allowedMarkets, so this override would never let an order open there",
            f'add "{shown(symbol)}" to allowedMarkets, or remove markets.{shown(symbol)}',
        )
        for symbol in policy.markets
        if symbol not in policy.allowed_markets
    ]


def _decoded(text: str) -> Any:
    """The JSON value of `text`, or PolicyInvalid for what no policy needs: size, depth, odd numbers, repeats."""
    if len(text) > MAX_POLICY_BYTES:
        raise PolicyInvalid([policy_too_large(f"{len(text)} characters")])
    if _deeper_than(text, MAX_NESTING):
        raise PolicyInvalid(
            [
                PolicyIssue(
                    "$",
                    f"nested deeper than {MAX_NESTING} levels",
                    "a policy needs 3 (markets, symbol, field): " + _SHIPPED,
                )
            ]
        )
    try:
        raw = json.loads(
            text,
            parse_int=_integer,
            parse_float=_decimal,
            parse_constant=_not_a_number,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as error:
        raise PolicyInvalid([syntax_issue(text, error)]) from None
    marked = list(_marked(raw, []))
    if marked:
        raise PolicyInvalid(_at_most(marked))
    return raw


def syntax_issue(text: str, error: json.JSONDecodeError) -> PolicyIssue:
    """A JSON syntax error where it really is (the comma before a "}", not the "}"), quoting that line."""
    where, problem, fix = _real_problem(text, error)
    line_number = text.count("\n", 0, where) + 1
    line_start = text.rfind("\n", 0, where) + 1
    line_end = text.find("\n", where)
    line = text[line_start : line_end if line_end != -1 else len(text)].strip()
    quoted = f": line {line_number} reads {shown(line, 80)}" if line else ""
    return PolicyIssue(
        f"line {line_number} column {where - line_start + 1}", f"not valid JSON, {problem}{quoted}", fix
    )


def _real_problem(text: str, error: json.JSONDecodeError) -> tuple[int, str, str]:
    """(position, what is wrong, the fix) for the JSON decoder's complaint at `error.pos`."""
    at, message = error.pos, error.msg
    here = text[at] if at < len(text) else ""
    before = len(text[:at].rstrip()) - 1  # the last character before the complaint that is not blank
    previous = text[before] if before >= 0 else ""
    if here in "/#" and here:
        return at, "a comment", "remove it: JSON has no comments"
    if at >= len(text.rstrip()):
        return max(before, 0), "the file ends too early", 'close every "{" and "[" it opens'
    if here in "}]" and here and previous == ",":
        return (
            before,
            f'a comma before the closing "{here}"',
            "remove that comma: JSON allows none after the last item",
        )
    if here == "," and previous in ",[{":
        # `20,,` or `{,`: the decoder wants a key or a value where the extra comma stands
        what = "two commas in a row" if previous == "," else f'a comma right after the opening "{previous}"'
        return at, what, "remove the extra comma"
    if message.startswith("Expecting ',' delimiter") and before >= 0:
        return before + 1, "a comma is missing after this value", "add a comma at the end of this line"
    if here == "'":
        return at, "a single quote", "use double quotes: \"BTCUSDT\", not 'BTCUSDT'"
    if message.startswith("Expecting property name") and here:
        return at, "a key without double quotes", 'put every key in double quotes: "maxNotionalUsd": 25'
    if message.startswith("Expecting value") and text[at:].startswith(("True", "False", "None")):
        return at, "a Python constant", "JSON writes true, false and null in lower case"
    if message.startswith("Unterminated string"):
        return at, "a string is not closed", "add its closing double quote"
    if message.startswith("Invalid control character"):
        return at, "a line break or tab inside a string", "close the string on the line it starts on"
    if message.startswith("Extra data"):
        return at, "more after the end of the policy", 'remove it, or move it inside the outer "{ ... }"'
    return at, message[:1].lower() + message[1:], "fix the JSON syntax at this point"


def policy_too_large(size: str) -> PolicyIssue:
    """The issue for a policy file or text over MAX_POLICY_BYTES; `size` says how big it is, with its unit."""
    return PolicyIssue(
        "policy.json",
        f"is {size}, above the limit of {MAX_POLICY_BYTES // 1024} KiB",
        "a policy needs about 1 KiB: " + _SHIPPED,
    )


def _deeper_than(text: str, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than `limit`: json and pydantic recurse per level."""
    depth = 0
    for token in _BRACKETS_AND_STRINGS.finditer(text):
        opener = token.group()[0]
        if opener in "[{":
            depth += 1
            if depth > limit:
                return True
        elif opener in "]}":
            depth -= 1
    return False


@dataclass(frozen=True, slots=True)
class _Refused:
    """Stands in for a JSON value the decoder would not turn into a number; reported with its path."""

    problem: str
    fix: str


class _Repeated(dict[str, Any]):
    """A JSON object that gave some keys more than once (json would silently keep the last)."""

    def __init__(self, pairs: list[tuple[str, Any]], repeated: list[str]) -> None:
        super().__init__(pairs)
        self.repeated = repeated


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    counts = Counter(key for key, _ in pairs)
    repeated = [key for key, count in counts.items() if count > 1]
    return _Repeated(pairs, repeated) if repeated else dict(pairs)


def _integer(text: str) -> int | _Refused:
    # Checked before int(): Python refuses over 4300 digits with ValueError, and no limit needs more than 10.
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        return _Refused(f"a number {len(text)} characters long", _NUMBER_FIX)
    return int(text)


def _decimal(text: str) -> Decimal | _Refused:
    if len(text) > MAX_NUMBER_DIGITS + 8:  # digits, then room for a sign, a point and an exponent
        return _Refused(f"a number {len(text)} characters long", _NUMBER_FIX)
    value = Decimal(text)
    # 1e999999999 is cheap to hold but a billion digits to print: bound the magnitude, not only the text.
    if not -MAX_NUMBER_DIGITS <= value.adjusted() <= MAX_NUMBER_DIGITS:
        return _Refused(f"the number {shown(text)} is out of range", _NUMBER_FIX)
    return value


def _not_a_number(text: str) -> _Refused:
    return _Refused(f"{text} is not a JSON number", "write a plain number such as 25")


def _marked(value: Any, path: list[str]) -> Iterator[PolicyIssue]:
    """The problems the decoder left in place, each with its JSON path (depth is bounded, so recursion is)."""
    if isinstance(value, _Refused):
        yield PolicyIssue(_path(path), value.problem, value.fix)
    elif isinstance(value, dict):
        for key in getattr(value, "repeated", ()):
            yield PolicyIssue(
                _path([*path, key]),
                "is given more than once (JSON would silently keep the last)",
                "keep exactly one of them",
            )
        for key, item in value.items():
            yield from _marked(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _marked(item, [*path, str(index)])


def _at_most(issues: list[PolicyIssue]) -> list[PolicyIssue]:
    if len(issues) <= MAX_ISSUES:
        return issues
    more = PolicyIssue(
        "$", f"{len(issues) - MAX_ISSUES} more problems", "fix the ones above, then run `pilot policy check`"
    )
    return [*issues[:MAX_ISSUES], more]


def _path(parts: list[str]) -> str:
    return ".".join(shown(part) for part in parts) or "$"


def policy_version(policy: Policy) -> str:
    """sha256 over the canonical policy: defaults filled in, keys sorted, numbers normalised (25 == 25.0)."""
    canonical = json.dumps(
        _normalised(policy.model_dump(by_alias=True)), sort_keys=True, separators=(",", ":")
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _normalised(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalised(item) for item in value]
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, datetime):
        return value.isoformat()
    return value.value if isinstance(value, TradingState) else value


def _issue(detail: Any) -> PolicyIssue:
    location = [str(part) for part in detail["loc"]]
    path = _path(location)
    field = next((part for part in reversed(location) if part in EXAMPLES), None)
    fix = (
        f"example of a valid value: {EXAMPLES[field]}"
        if field
        else "see the policy.json reference, docs/policy.md"
    )
    kind = detail["type"]
    if kind == "extra_forbidden":
        problem = f"unknown key {quoted(location[-1])}"
        close = [name for name in EXAMPLES if name.lower() == location[-1].lower()]
        fix = f"did you mean {close[0]!r}?" if close else f"remove it; known keys: {_known_keys(location)}"
    elif kind == "missing":
        problem = "is required"
    elif kind == "bool_type":
        problem = f"must be true or false, without quotes (found {shown(json.dumps(detail.get('input'), default=str), 60)})"
    else:
        problem = detail["msg"].removeprefix("Value error, ")
        found = detail.get("input")
        if found is not None and not isinstance(found, dict | list | tuple):
            problem += f" (found {shown(json.dumps(found, default=str), 60)})"
    return PolicyIssue(path=path, problem=problem, fix=fix)


def _known_keys(location: list[str]) -> str:
    """The keys allowed where an unknown one was found: those of the model that holds it."""
    model = _model_at(location[:-1])
    names = [field.alias or name for name, field in model.model_fields.items()]
    listed: list[str] = []
    for name in names:  # as many as fit a line or three; docs/policy.md lists them all
        if sum(len(one) + 2 for one in listed) + len(name) > 200:
            return (
                ", ".join(listed)
                + f" and {len(names) - len(listed)} more (the policy.json reference, docs/policy.md)"
            )
        listed.append(name)
    return ", ".join(listed)


def _model_at(path: list[str]) -> type[BaseModel]:
    """The part of the policy (Policy, ConfirmRule, a market's overrides, ...) a JSON path leads into: each
    key names a field whose type holds the next part; a key that names none (a market's symbol, a list's
    index) stays in the part it is in."""
    model: type[BaseModel] = Policy
    for key in path:
        field = next((f for name, f in model.model_fields.items() if (f.alias or name) == key), None)
        inner = _part_in(field.annotation) if field is not None else None
        model = inner or model
    return model


def _part_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field's type holds: itself, or inside an Optional, a tuple or a dict's values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((found for arg in get_args(annotation) if (found := _part_in(arg)) is not None), None)
