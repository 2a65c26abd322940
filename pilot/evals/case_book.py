"""The cases, as data: each JSON file in pilot/evals/cases/ holds the cases of one kind, and each case is
played once per language of its instruction.

A case is an instruction in natural language, a world (the paper exchange's scenario with its prices,
positions and resting orders, a policy, the kill switch, the human at the client) and what counts as
success: the first state-changing decision (`first`), the end state (`end`), calls that are never right
(`forbid`), and for injected text the call that following it would be (`injection.goal`). `script` is what
the scripted offline agent does; `reckless`, what a reckless one does instead (it checks that the scoring
catches a failure). The fields are described in pilot/evals/cases/README.md.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

LANGUAGES = ("en", "es")
KINDS = (
    "replan",
    "nothing_fits",
    "kill_switch",
    "confirmation",
    "injection",
    "dangerous",
    "partial_close",
    "routine",
)
Lang = Literal["en", "es"]
Kind = Literal[
    "replan",
    "nothing_fits",
    "kill_switch",
    "confirmation",
    "injection",
    "dangerous",
    "partial_close",
    "routine",
]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CallPattern(_Data):
    """A tool call: this tool, with at least these arguments (numbers compared as decimals; {"min": x} or
    {"max": x} bound one). `after` counts the call only once an answer had that outcome."""

    call: str
    args: dict[str, Any] = Field(default_factory=dict)
    after: Literal["declined", "nothing_fits", "refused"] | None = None


class StopPattern(_Data):
    """Ending the turn in text with no state-changing call: "clarify" asks the user a question, "refuse"
    does not, "any" is either."""

    stop: Literal["clarify", "refuse", "any"]


class AnyPattern(_Data):
    any: tuple[CallPattern | StopPattern, ...]


Decision = CallPattern | StopPattern | AnyPattern


class PositionIs(_Data):
    position: str
    size: str  # signed, in the base coin: negative is short, "0" flat


class OrdersSent(_Data):
    """How many create requests reached the exchange during the run (another client's seeds excluded)."""

    orders_sent: int | None = None
    orders_sent_at_most: int | None = None


class KillSwitchIs(_Data):
    kill_switch: bool


class RestingIs(_Data):
    """A resting order, named by its client order id, is still open (or not) at the end; if open, at this
    price and/or for this total quantity when given (what an amend was to change)."""

    resting: str
    open: bool
    price: str | None = None
    qty: str | None = None


class OpenOrdersAre(_Data):
    """How many orders rest on a symbol at the end (another client's included; stops are not counted)."""

    open_orders: str
    count: int


class StopLossIs(_Data):
    stop_loss: str  # the symbol
    price: str  # the position's whole stop-loss; "0" none


class TakeProfitIs(_Data):
    take_profit: str  # the symbol
    price: str  # the position's whole take-profit; "0" none


class LeverageIs(_Data):
    leverage: str  # the symbol
    value: str


class HumanAsked(_Data):
    """How many confirmation forms the human at the client was shown during the run."""

    asked_human: int


class Called(_Data):
    called: CallPattern


class Says(_Data):
    """The model's last text holds one of these (a number it had to read, say), compared without case."""

    says: tuple[str, ...]


EndCheck = (
    PositionIs
    | OrdersSent
    | KillSwitchIs
    | RestingIs
    | OpenOrdersAre
    | StopLossIs
    | TakeProfitIs
    | LeverageIs
    | HumanAsked
    | Called
    | Says
)


class Expect(_Data):
    first: Decision | None = None
    end: tuple[EndCheck, ...] = ()
    forbid: tuple[CallPattern, ...] = ()


class Injection(_Data):
    """Text planted in what the exchange returns (`marker`, a resting order's client order id) and the call
    that would follow it (`goal`)."""

    marker: str
    goal: CallPattern


class CallMove(_Data):
    """The scripted agent calls this tool; after a plan that passes it places it unless `place` is false."""

    call: str
    args: dict[str, Any] = Field(default_factory=dict)
    place: bool = True


class SayMove(_Data):
    """The scripted agent ends its turn in text: a question, a refusal, or `text` (a summary it was asked for)."""

    say: Literal["clarify", "refuse", "done"]
    text: str = ""


Move = CallMove | SayMove


class Holding(_Data):
    """A linear position at the start, in the scenario's names."""

    symbol: str
    side: Literal["Buy", "Sell"]
    size: str
    avgPrice: str  # the scenario's own names
    leverage: str = "1"
    stopLoss: str | None = None
    takeProfit: str | None = None


class Resting(_Data):
    """An order another client left resting on the account, with its client order id (`link`)."""

    symbol: str
    side: Literal["Buy", "Sell"]
    qty: str
    price: str
    link: str
    category: Literal["linear", "spot"] = "linear"
    reduce_only: bool = False


class World(_Data):
    """What the case starts from. `policy` keys replace those of `pilot init`'s policy."""

    base: Literal["default"] = "default"
    prices: dict[str, dict[str, str]] = Field(default_factory=dict)
    positions: tuple[Holding, ...] = ()
    balances: dict[str, str] = Field(default_factory=dict)
    policy: dict[str, Any] = Field(default_factory=dict)
    kill_switch: bool = False
    resting: tuple[Resting, ...] = ()
    human: Literal["approve", "decline", "absent"] = "approve"


class CaseSpec(_Data):
    id: str = Field(pattern=r"^[a-z0-9-]{3,60}$")
    mode: Literal["step", "task"]
    instruction: dict[Lang, str]
    world: World = Field(default_factory=World)
    expect: Expect
    injection: Injection | None = None
    script: tuple[Move, ...] = Field(min_length=1)
    reckless: tuple[Move, ...] | None = None
    note: str = ""


class CaseFile(_Data):
    kind: Kind
    about: str
    cases: tuple[CaseSpec, ...]


@dataclass(frozen=True, slots=True)
class Case:
    """One case as played: a case of a file in one language."""

    spec: CaseSpec
    kind: Kind
    lang: Lang

    @property
    def id(self) -> str:
        return f"{self.spec.id}.{self.lang}"

    @property
    def instruction(self) -> str:
        return self.spec.instruction[self.lang]

    @property
    def mode(self) -> str:
        return self.spec.mode


class CaseError(ValueError):
    """A case file that cannot be used; the message names the file and the problem."""


def load_cases(
    *, kinds: Iterable[str] = (), langs: Iterable[str] = (), ids: Iterable[str] = ()
) -> tuple[Case, ...]:
    """Every packaged case, in file order, or those of the given kinds, languages and ids (an id with or
    without its language: "btc-short-over-cap" or "btc-short-over-cap.es").

    Raises:
        CaseError: a case file is not valid, or two cases share an id or an instruction.
    """
    kinds, langs, ids = set(kinds), set(langs), set(ids)
    cases = [
        Case(spec, book.kind, lang)
        for book in case_files()
        for spec in book.cases
        for lang in LANGUAGES
        if lang in spec.instruction
    ]
    _check_unique(cases)
    return tuple(
        case
        for case in cases
        if (not kinds or case.kind in kinds)
        and (not langs or case.lang in langs)
        and (not ids or case.id in ids or case.spec.id in ids)
    )


def case_files() -> list[CaseFile]:
    """The packaged case files, parsed, in the order of KINDS (the seeds' stories first)."""
    folder = resources.files("pilot.evals").joinpath("cases")
    books = [
        parse_case_file(entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    ]
    return sorted(books, key=lambda book: KINDS.index(book.kind))


def parse_case_file(name: str, text: str) -> CaseFile:
    """One case file. Raises CaseError naming the file, the JSON path and the problem."""
    try:
        book = CaseFile.model_validate(json.loads(text))
    except json.JSONDecodeError as error:
        raise CaseError(f"{name}: not JSON: {error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CaseError(f"{name}: {where}: {first['msg']} ({error.error_count()} problem(s))") from None
    for spec in book.cases:
        _check_case(name, spec)
    return book


def _check_case(name: str, spec: CaseSpec) -> None:
    if set(spec.instruction) != set(LANGUAGES):
        raise CaseError(f"{name}: {spec.id}: give the instruction in {', '.join(LANGUAGES)}")
    if spec.mode == "step" and spec.expect.first is None:
        raise CaseError(f"{name}: {spec.id}: a step case is scored on its first decision: give expect.first")
    if spec.mode == "task" and not spec.expect.end:
        raise CaseError(f"{name}: {spec.id}: a task is scored on the end state: give expect.end")
    planted = {order.link for order in spec.world.resting}
    if spec.injection is not None and spec.injection.marker not in planted:
        raise CaseError(f"{name}: {spec.id}: the injection's marker must be a resting order's link")


def _check_unique(cases: list[Case]) -> None:
    for what, values in (("id", [c.id for c in cases]), ("instruction", [c.instruction for c in cases])):
        twice = [value for value, count in Counter(values).items() if count > 1]
        if twice:
            raise CaseError(f"two cases share the {what} {twice[0]!r}")
