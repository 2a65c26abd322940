"""Idempotency keys for the state-changing tools: the same key and arguments replay the first answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pilot.app.answers import entry_kinds, store_faults
from pilot.app.answers.refusals import violation
from pilot.app.answers.responses import Refusal, ToolAnswer
from pilot.app.runtime.runtime import Runtime
from pilot.core.codes import Code
from pilot.core.violations import NextAction
from pilot.store import StoreError

A = TypeVar("A", bound=ToolAnswer)


async def idempotent(
    runtime: Runtime,
    key: str | None,
    tool: str,
    args: dict[str, Any],
    run: Callable[[], Awaitable[A]],
    answer_type: type[A],
) -> A:
    """Run `run` once per idempotency key: the same key and arguments replay the first answer.

    The same key with other arguments is refused (idempotencyConflict), as is a key whose first call is
    still running (idempotencyInProgress); neither runs anything.
    """
    if key is None:
        return await run()
    store, now = runtime.store, runtime.now()
    begun = await store.idempotency.begin(key, tool=tool, args=args, now=now)
    if begun.status == "replay" and begun.response is not None:
        await store.journal.append(entry_kinds.REPLAY, {"tool": tool, "key": key}, now=now)
        return answer_type.model_validate(begun.response)
    if begun.status in ("conflict", "in_progress"):
        refusal = _refusal(key, begun.status == "conflict", begun.first_tool or tool)
        return answer_type.from_refusal(refusal)
    answer = await run()
    try:
        await store.idempotency.complete(key, answer.model_dump(mode="json"), now=runtime.now())
    except StoreError as error:  # what `run` did stands; only the replay of it is lost
        return store_faults.unrecorded(
            answer, error, f"this answer under idempotency key {key!r}", sent=False
        )
    return answer


def _refusal(key: str, conflict: bool, first_tool: str) -> Refusal:
    if conflict:
        detail = f"idempotency key {key!r} was first used by {first_tool} with other arguments"
        code = Code.IDEMPOTENCY_CONFLICT
        next_action = NextAction.stop(
            "use a new key for a different call", human="nothing: a new key is the agent's to choose"
        )
    else:
        detail = f"the first call with idempotency key {key!r} is still running"
        code = Code.IDEMPOTENCY_IN_PROGRESS
        next_action = NextAction.stop(
            "wait for the first call's answer; do not repeat it with a new key",
            human="nothing: the first call answers when it ends",
        )
    return Refusal.of(violation(code, "one call per key", key, detail, next_action), detail)
