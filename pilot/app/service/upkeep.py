"""What a server does besides answering calls: finish what a stopped server left, what humans approved, and
what is still unknown."""

from __future__ import annotations

from datetime import timedelta

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import PlanOutcome
from pilot.app.facts.peaks import streamed_equity
from pilot.app.facts.pending import settle_sends
from pilot.app.human.kill_switch import stop_on_rollback
from pilot.app.orders.place import release_unsent
from pilot.app.road.gate import TURN_TTL, TURN_WAIT
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.dead_man import watch
from pilot.app.service.key_watch import KeyWatch
from pilot.app.service.latched import stop_what_rests
from pilot.app.service.parked import run_approved

UPKEEP_SECONDS = 1.0
# A live use of a plan journals its send (or ends) within a turn's wait and one turn: a plan claimed longer
# ago than this (on the store's clock) with neither was left by a server that stopped. A claim whose
# claimer's process is gone is known to be left at once (pilot.store.plans.Plans.abandoned).
STALE_CLAIM = TURN_WAIT + TURN_TTL + timedelta(seconds=30)


async def upkeep(runtime: Runtime) -> None:
    """One round: stop growing orders if the journal was rolled back meanwhile, read the stored key again when
    its interval is over, finish plans a stopped server left, run actions a human approved in the CLI, look
    up every unsettled send, set the equities the wallet stream pushed against the drawdown's peak, cancel
    what could grow while a latch holds, then look whether the dead-man's switch fires. A failed exchange
    read leaves a send unsettled (and pending), or an order resting, for the next round."""
    await stop_on_rollback(runtime)
    await watch_key(runtime)
    await recover(runtime)
    await run_approved(runtime)
    await settle_sends(runtime)
    await streamed_equity(runtime)
    await stop_what_rests(runtime)
    await watch(runtime)


async def watch_key(runtime: Runtime) -> None:
    """Read the server's stored exchange key again when its timer says so (pilot.app.service.key_watch)."""
    watch = runtime.gate.key_check
    if isinstance(watch, KeyWatch):
        await watch.tick()


async def recover(runtime: Runtime) -> None:
    """Give every plan left claimed with no outcome by a server that stopped the outcome it had.

    A plan whose order was answered takes that answer from the journal; one with a send not yet settled is
    left to `settle_sends`, which records the outcome once the order is found; one waiting for a human in
    the CLI stays as it is. One with nothing sent is released ("refused", so the agent plans again) once no
    live use of it can still be under way, here or in another server: its claimer's process is gone, or the
    claim is STALE_CLAIM old.
    """
    journal, now = runtime.store.journal, runtime.now()
    waiting = {
        record.action.get("plan_id")
        for record in await runtime.store.confirmations.list(now=now)
        if record.status in ("pending", "approved", "executing")
    }
    for plan in await runtime.store.plans.unfinished():
        entries = await journal.entries(plan_id=plan.plan_id)
        answered = [e for e in entries if e.kind == entry_kinds.ORDER_OUTCOME]
        if answered:
            outcome = PlanOutcome.read(answered[-1].data)
            if outcome is not None:
                data = outcome.model_dump(mode="json", exclude_none=True)
                await runtime.store.plans.record_outcome(plan.plan_id, data, now=runtime.now())
            continue
        if any(e.kind == entry_kinds.ORDER_SENT for e in entries) or plan.plan_id in waiting:
            continue
        if runtime.store.plans.abandoned(plan, STALE_CLAIM):
            await release_unsent(runtime, plan)
