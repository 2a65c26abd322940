"""Pilot's own database failing (disk full, I/O error) as answers in Pilot's words, never a bare tool error.

Two cases, never blurred:

    nothing sent      the store failed before a send was journaled, so nothing left: the tool answers
                      "refused" with rule storeUnavailable (`refusal`; the server's edge turns any
                      StoreError that reaches a tool into that tool's answer this way)
    sent, unrecorded  the send happened and the journal could not record what came of it: the answer still
                      says what was sent, and `journal_problem` says what is missing (`unrecorded`)

Either way the next action is to stop until a human frees disk space or repairs the database: every write
would fail the same way, so retrying is never suggested.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pilot.app.answers.refusals import violation
from pilot.app.answers.responses import Refusal, ToolAnswer, ViolationOut, next_out
from pilot.core.codes import Code
from pilot.core.violations import NextAction, Violation
from pilot.store import JournalKeyUnusable, StoreBusy, StoreCorrupt, StoreError, StoreFull

__all__ = ["StoreError", "refusal", "unrecorded"]

A = TypeVar("A", bound=ToolAnswer)
LIMIT = "a database Pilot can read and write"
NOTHING_SENT = (
    "stop: nothing was sent; Pilot does not act when it cannot record what it does, so do not retry"
)


def _explain(error: StoreError) -> tuple[str, str]:
    """What went wrong and what a human must do, in Pilot's words (the database's own text stays in the log)."""
    if isinstance(error, StoreFull):
        return (
            "the disk holding Pilot's database is full",
            "free disk space on the volume that holds this Pilot home's journal/ folder, then continue",
        )
    if isinstance(error, StoreBusy):
        return (
            "another process held Pilot's database for longer than the busy timeout",
            "another `pilot` process may hold this Pilot home's database: let it finish or stop it, then continue",
        )
    if isinstance(error, StoreCorrupt):
        return "Pilot's database is damaged", "run `pilot doctor` for this Pilot home and repair it"
    if isinstance(error, JournalKeyUnusable):
        return f"the journal key cannot be used: {error.problem}", error.fix
    return (
        "Pilot's database could not be read or written (an I/O error)",
        "check the disk that holds this Pilot home and run `pilot doctor`, then continue",
    )


def store_violation(error: StoreError, attempted: str, next_text: str) -> Violation:
    """The storeUnavailable violation for `error`: its next action stops, naming what a human must do."""
    problem, human = _explain(error)
    return violation(
        Code.STORE_UNAVAILABLE, LIMIT, attempted, problem, NextAction.stop(next_text, human=human)
    )


def refusal(error: StoreError) -> Refusal:
    """Nothing was sent: the store failed before anything left for the exchange."""
    broken = store_violation(error, "recording this call", NOTHING_SENT)
    return Refusal.of(broken, f"{broken.detail}; nothing was sent")


def unrecorded(answer: A, error: StoreError, missing: str, *, sent: bool) -> A:
    """`answer` as it stands, saying the journal is missing `missing`.

    When something was sent (`sent`), the next action becomes a stop that says not to resend it; otherwise
    the answer's own next action still holds. An answer that already names a journal problem keeps it.
    """
    if answer.journal_problem is not None:
        return answer
    text = (
        f"stop: the request in this answer was sent, but {missing} could not be recorded; do not resend it"
        if sent
        else f"{missing} could not be recorded"
    )
    broken = store_violation(error, f"recording {missing}", text)
    update: dict[str, Any] = {"journal_problem": ViolationOut(**broken.to_dict())}
    if sent:
        update["next_safe_action"] = next_out(broken.next)
    return answer.model_copy(update=update)
