"""Every equity Pilot reads counts for the drawdown: a judgement's, get_policy's and get_balances' reads, and
the wallet stream's pushes (taken by the server's upkeep every second, pilot.app.service.upkeep). Each is set
against the window's peak as a judgement's is: a new peak is journaled, and a fall past the limit latches
(pilot.app.runtime.latches)."""

from __future__ import annotations

from decimal import Decimal

from pilot.app.facts.streaming_reader import StreamingReader
from pilot.app.runtime.latches import drawdown_state, latch_drawdown, note_equity
from pilot.app.runtime.ledger import JournalState
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import DrawdownState
from pilot.core.policy import Policy


def watches_drawdown(policy: Policy) -> bool:
    return policy.max_drawdown_usd is not None or policy.max_drawdown_pct is not None


async def equity_read(
    runtime: Runtime, policy: Policy, equity: Decimal, journal: JournalState | None = None
) -> DrawdownState | None:
    """Set an equity Pilot read against the drawdown window's peak: journal it when it is a new peak (or the
    rolling window's mark is due), and the latch when the fall from the peak reached the limit. The state
    after it; None while policy.json sets no drawdown rule."""
    if not watches_drawdown(policy):
        return None
    now, store = runtime.now(), runtime.store.journal
    journal = journal if journal is not None else await runtime.ledger.state(now)
    state = drawdown_state(policy, journal, now)
    await note_equity(store, policy, state, equity, journal.equity_marks, journal.today)
    return await latch_drawdown(store, policy, state, equity, now)


async def streamed_equity(runtime: Runtime) -> None:
    """The equities the wallet stream pushed since the last look (the highest, then the newest), each set
    against the peak. Nothing without streams, or without a drawdown rule."""
    reader = runtime.exchange
    if not isinstance(reader, StreamingReader):
        return
    seen = reader.facts.take_equity()
    policy = runtime.policy().policy
    if seen is None or not watches_drawdown(policy):
        return
    highest, newest = seen
    await equity_read(runtime, policy, highest)
    if newest != highest:
        await equity_read(runtime, policy, newest)
