"""What one agent's sends put in each market (pilot.app.runtime.agent_holdings), against a restatement.

Random journals of one agent's sends and their outcomes, in two markets, folded in order; the running totals
must equal what the journal says read whole: a send counts on its side at its whole quantity until an
outcome says what filled (rejected or never executed: nothing; filled: its fill; cancelled, or an IOC
order's final answer: its fill), then at that, signed by its side; a send that left the window counts no more.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from pilot.app.answers import entry_kinds
from pilot.app.runtime.agent_holdings import Holdings
from pilot.core.facts import Held
from pilot.store import JournalEntry

T0 = datetime(2026, 12, 4, 12, tzinfo=UTC)
MARKETS = [("linear", "BTCUSDT"), ("spot", "ETHUSDT")]
LINKS = [f"pilot-{n}" for n in range(6)]
STATUSES = [
    "filled",
    "partially_filled",
    "cancelled",
    "rejected",
    "never_executed",
    "open",
    "outcome_unknown",
]

sends = st.tuples(
    st.just("send"),
    st.sampled_from(LINKS),
    st.sampled_from(MARKETS),
    st.sampled_from(["Buy", "Sell"]),
    st.integers(1, 50),
    st.booleans(),
)
outcomes = st.tuples(
    st.just("outcome"), st.sampled_from(LINKS), st.sampled_from(STATUSES), st.integers(0, 60)
)
prunes = st.tuples(st.just("prune"), st.integers(0, 40))


def entry(seq: int, kind: str, data: dict) -> JournalEntry:
    return JournalEntry(seq, T0 + timedelta(minutes=seq), kind, "agent:a", None, data, "", "")


def restated(steps: list[tuple], seconds_kept: dict[int, bool]) -> dict[tuple[str, str], Held]:
    """Every send of each link (the newest), its settling outcome (the newest after it), the window."""
    sent: dict[str, tuple[int, tuple]] = {}
    settled: dict[str, Decimal] = {}
    for seq, step in enumerate(steps):
        if step[0] == "send":
            sent[step[1]] = (seq, step)
            settled.pop(step[1], None)
        elif step[0] == "outcome" and step[1] in sent:
            _, (_, _, _, _, qty, ioc) = sent[step[1]]
            status, filled = step[2], Decimal(min(step[3], qty))
            if status in ("rejected", "never_executed"):
                settled[step[1]] = Decimal(0)
            elif status in ("filled", "cancelled") or (ioc and status == "partially_filled"):
                settled[step[1]] = filled
    totals: dict[tuple[str, str], list[Decimal]] = {}
    for link, (seq, (_, _, market, side, qty, _)) in sent.items():
        if not seconds_kept[seq]:
            continue
        row = totals.setdefault(market, [Decimal(0)] * 3)
        sign = 1 if side == "Buy" else -1
        if link in settled:
            row[0] += sign * settled[link]
        elif side == "Buy":
            row[1] += qty
        else:
            row[2] += qty
    return {market: Held(*row) for market, row in totals.items() if any(row)}


@given(st.lists(st.one_of(sends, outcomes, prunes), max_size=40))
def test_the_running_totals_say_what_the_journal_read_whole_says(steps):
    holdings, cutoff = Holdings(), -1
    for seq, step in enumerate(steps):
        if step[0] == "send":
            _, link, (category, symbol), side, qty, ioc = step
            request = {"order_link_id": link, "category": category, "symbol": symbol, "side": side}
            request |= {"qty": str(qty), "time_in_force": "IOC" if ioc else "GTC"}
            holdings.send(entry(seq, entry_kinds.ORDER_SENT, {"request": request}))
        elif step[0] == "outcome":
            _, link, status, filled = step
            holdings.outcome({"order_link_id": link, "status": status, "fill": {"filled_qty": str(filled)}})
        else:  # the window moves on: sends before `seq - back` leave
            cutoff = max(cutoff, seq - step[1])
            holdings.keep(lambda at, stamp, edge=cutoff: at >= T0 + timedelta(minutes=edge))
    kept = {seq: seq >= cutoff for seq in range(len(steps))}
    assert holdings.view() == restated(steps, kept)
