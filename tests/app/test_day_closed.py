"""The day's closed PnL read on from a mark: however the rows arrive (in batches, again, out of order), the
day's realised PnL is the sum of the day's distinct rows, and the next read starts OVERLAP before the newest."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from pilot.app.runtime.day_closed import DayClosed
from pilot.core.day_pnl import OVERLAP
from pilot.exchange.models import ClosedPnl

DAY = datetime(2026, 3, 1, tzinfo=UTC)


def row(order: int, minute: int, pnl: int) -> ClosedPnl:
    at = DAY + timedelta(minutes=minute)
    one = Decimal("0.01")
    return ClosedPnl(
        "BTCUSDT",
        f"o{order}",
        "Buy",
        one,
        one,
        Decimal(100),
        Decimal(101),
        Decimal(pnl),
        "Market",
        "Trade",
        at,
        at,
    )


rows = st.lists(
    st.builds(row, st.integers(0, 30), st.integers(-120, 24 * 60 - 1), st.integers(-50, 50)), max_size=40
)


@given(rows, st.lists(st.integers(0, 40), max_size=6))
def test_the_days_realised_pnl_is_its_distinct_rows_whatever_the_batches(
    read: list[ClosedPnl], cuts: list[int]
) -> None:
    day = DayClosed(DAY)
    edges = sorted({0, len(read), *(min(cut, len(read)) for cut in cuts)})
    for start, end in itertools.pairwise(edges):
        day.add(read[start:end])
        day.add(read[start:end])  # a read repeated (the overlap) counts nothing twice
    distinct = {
        (r.order_id, r.updated_at, r.closed_pnl, r.closed_size): r for r in read if r.updated_at >= DAY
    }
    assert day.realised == sum((r.closed_pnl for r in distinct.values()), Decimal(0))
    newest = max((r.updated_at for r in distinct.values()), default=None)
    assert day.since == (max(DAY, newest - OVERLAP) if newest is not None else DAY)
    noon = DAY + timedelta(hours=12)
    assert day.realised_since(noon) == sum(
        (r.closed_pnl for r in distinct.values() if r.updated_at >= noon), Decimal(0)
    )
