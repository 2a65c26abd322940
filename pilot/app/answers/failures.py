"""One map from a failure to what a human or an agent is told: a code, the problem and the fix, for every edge.

    tools     a store fault that reaches a tool is refused with rule storeUnavailable, in these words
              (`store_faults.refusal`, asked by pilot/server/store_refusals.py)
    CLI       one error line or JSON document (`pilot.cli.output.translated`, at the top of every command)
    console   a page with the problem and the fix, and the status it calls for (the exception handlers
              `pilot.console.app.build_app` registers for `FORESEEN`)

No edge has words of its own for these failures. An error that explains itself (`ExplainedError`: a human's
request, an exchange key, the journal key) keeps its own code and words; Pilot's database failing is worded
here, never in the database's own text (that goes to the log). The exception classes are drawn as one tree
in pilot/core/errors.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

from pilot.core.errors import ErrorCode, ExplainedError
from pilot.store import JournalKeyUnusable, SchemaTooNew, StoreBusy, StoreCorrupt, StoreError, StoreFull

# What a console page answers for itself; the CLI also answers an OSError (a folder it cannot make or read).
FORESEEN: tuple[type[Exception], ...] = (ExplainedError, StoreError)


@dataclass(frozen=True, slots=True)
class Failure:
    """What a failure is called (`code`), what went wrong (`problem`) and what a human does about it (`fix`)."""

    code: ErrorCode
    problem: str
    fix: str


# Pilot's database failing, most specific first (every write would fail the same way: none says "retry").
_STORE: tuple[tuple[type[StoreError], ErrorCode, str, str], ...] = (
    (
        StoreFull,
        ErrorCode.STORE_FULL,
        "the disk holding Pilot's database is full",
        "free disk space on the volume that holds this Pilot home's journal/ folder, then continue",
    ),
    (
        StoreBusy,
        ErrorCode.STORE_BUSY,
        "another process held Pilot's database for longer than the busy timeout",
        "another `pilot` process may hold this Pilot home's database: let it finish or stop it, then continue",
    ),
    (
        StoreCorrupt,
        ErrorCode.STORE_CORRUPT,
        "Pilot's database is damaged",
        "run `pilot doctor` for this Pilot home and repair it",
    ),
    (
        SchemaTooNew,
        ErrorCode.STORE_ERROR,
        "Pilot's database was written by a newer Pilot",
        "use the Pilot that wrote this home's database, or a newer one",
    ),
    (
        StoreError,
        ErrorCode.STORE_ERROR,
        "Pilot's database could not be read or written (an I/O error)",
        "check the disk that holds this Pilot home and run `pilot doctor`, then continue",
    ),
)


@overload
def explain(error: ExplainedError | StoreError) -> Failure: ...
@overload
def explain(error: BaseException) -> Failure | None: ...
def explain(error: BaseException) -> Failure | None:
    """What to tell of `error`, or None when Pilot did not foresee it (a bug: its edge shows no words)."""
    if isinstance(error, ExplainedError):
        return Failure(error.code, error.problem, error.fix)
    if isinstance(error, StoreError):
        return explain_store(error)
    if isinstance(error, OSError):  # a folder that cannot be created or read: the environment, not a bug
        where = f" ({error.filename})" if error.filename else ""
        return Failure(
            ErrorCode.OS_ERROR,
            f"{error.strerror or type(error).__name__}{where}",
            "check the path and its permissions",
        )
    return None


def explain_store(error: StoreError) -> Failure:
    """Pilot's database failing, in Pilot's words."""
    if isinstance(error, JournalKeyUnusable):
        return Failure(
            ErrorCode.JOURNAL_KEY_UNUSABLE, f"the journal key cannot be used: {error.problem}", error.fix
        )
    code, problem, fix = next((c, p, f) for kind, c, p, f in _STORE if isinstance(error, kind))
    return Failure(code, problem, fix)
