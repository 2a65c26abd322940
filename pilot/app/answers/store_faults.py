"""Pilot's own database failing (disk full, I/O error) as answers in Pilot's words, never a bare tool error.

Two cases, never blurred:

    nothing sent      the store failed before a send was journaled, so nothing left: the tool answers
                      "refused" with rule storeUnavailable (`refusal`; the server's edge turns any
                      StoreError that reaches a tool into that tool's answer this way)
    sent, unrecorded  the send happened and the journal could not record what came of it: the answer still
                      says what was sent, and `journal_problem` says what is missing (`unrecorded`)

Either way the next action is to stop until a human frees disk space or repairs the database: every write
would fail the same way, so retrying is never suggested. The words (what went wrong, what a human must do)
are the failure map's (`pilot.app.answers.failures.explain_store`), the same the CLI and the console show.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pilot.app.answers.failures import explain_store
from pilot.app.answers.refusals import violation
from pilot.app.answers.responses import Refusal, ToolAnswer, ViolationOut, next_out
from pilot.core.codes import Code
from pilot.core.violations import NextAction, Violation
from pilot.store import StoreError

__all__ = ["StoreError", "refusal", "unrecorded"]

A = TypeVar("A", bound=ToolAnswer)
LIMIT = "a database Pilot can read and write"
NOTHING_SENT = (
    "stop: nothing was sent; Pilot does not act when it cannot record what it does, so do not retry"
)


def store_violation(error: StoreError, attempted: str, next_text: str) -> Violation:
    """The storeUnavailable violation for `error`: its next action stops, naming what a human must do."""
    failure = explain_store(error)
    return violation(
        Code.STORE_UNAVAILABLE,
        LIMIT,
        attempted,
        failure.problem,
        NextAction.stop(next_text, human=failure.fix),
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
