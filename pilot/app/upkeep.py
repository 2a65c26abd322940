"""What a running server does between calls: finish what humans approved, and settle sends still unknown."""

from __future__ import annotations

from pilot.app.parked import run_approved
from pilot.app.pending import settle_sends
from pilot.app.runtime import Runtime

UPKEEP_SECONDS = 1.0


async def upkeep(runtime: Runtime) -> None:
    """One round: run actions a human approved in the CLI, then look up every unsettled send.

    A failed exchange read leaves a send unsettled (and counted as pending) for the next round.
    """
    await run_approved(runtime)
    await settle_sends(runtime)
