"""Running the cases: each case `runs` times, each run in a fresh world, until every run is scored or the
budget says the next model call might not fit. A provider that refuses the key ends the run at once; any
other provider failure leaves that case-run unscored (counted as such) and the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pilot.evals.budget import Budget, BudgetSpent
from pilot.evals.case_book import Case
from pilot.evals.conversation import Provider, ProviderError
from pilot.evals.episode import Limits, list_tools, play
from pilot.evals.scoring import Verdict, score
from pilot.evals.stage import open_stage


@dataclass(frozen=True, slots=True)
class Unscored:
    """A case-run that got no score: the provider failed (its error's kind) or the budget stopped it."""

    case: Case
    run: int
    reason: str  # "budget", or a ProviderError kind
    detail: str


@dataclass
class EvalRun:
    """A whole run: who was evaluated, on what, and every verdict."""

    provider: str
    model: str
    endpoint: str
    cases: tuple[Case, ...]
    runs: int
    budget: Budget
    started_at: datetime
    verdicts: list[Verdict] = field(default_factory=list)
    unscored: list[Unscored] = field(default_factory=list)
    stopped: str = ""  # why the run ended early: "budget", "auth", or "" when every case-run was played
    seconds: float = 0.0


Progress = Callable[[Verdict | Unscored], None]


async def run_evals(
    cases: Sequence[Case],
    provider: Provider,
    *,
    runs: int = 1,
    budget: Budget | None = None,
    limits: Limits | None = None,
    workdir: Path | None = None,
    progress: Progress | None = None,
) -> EvalRun:
    """Play every case `runs` times with `provider` and score each run."""
    started = time.monotonic()
    result = EvalRun(
        provider.name,
        provider.model,
        provider.endpoint,
        tuple(cases),
        runs,
        budget or Budget(),
        datetime.now(UTC),
    )
    try:
        await _play_all(result, provider, limits or Limits(), workdir, progress)
    finally:
        result.seconds = time.monotonic() - started
    return result


async def _play_all(
    result: EvalRun, provider: Provider, limits: Limits, workdir: Path | None, progress: Progress | None
) -> None:
    for run in range(1, result.runs + 1):
        for case in result.cases:
            outcome = await _play_one(case, run, provider, result.budget, limits, workdir)
            if isinstance(outcome, Verdict):
                result.verdicts.append(outcome)
            else:
                result.unscored.append(outcome)
            if progress is not None:
                progress(outcome)
            if isinstance(outcome, Unscored) and outcome.reason in ("budget", "auth"):
                result.stopped = outcome.reason
                return


async def _play_one(
    case: Case, run: int, provider: Provider, budget: Budget, limits: Limits, workdir: Path | None
) -> Verdict | Unscored:
    async with open_stage(case, workdir) as stage:
        try:
            trace = await play(stage, provider, budget, limits)
        except BudgetSpent as spent:
            return Unscored(case, run, "budget", str(spent))
        except ProviderError as error:
            return Unscored(case, run, error.kind, str(error))
        tools = await list_tools(stage)
        end = await stage.snapshot()
        return score(case, run, trace, tools, stage.start, end, stage.policy)
