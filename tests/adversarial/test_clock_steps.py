"""Clocks that step: the wall clock jumps back or forward (an NTP correction, a resumed laptop, a human with
`date -s`) by seconds or hours, during plans, during sends, and at midnight UTC. Every time limit holds.

`clock.advance(s)` is time passing; `clock.step(s)` moves the wall clock alone (tests/clocks.py).

- A plan lives planTtlSeconds of real time: a backward step does not lengthen it (issue 25: a 5 s step let a
  64 s-old plan fill, a one-hour step a 70 s-old one), a forward step does not cut it short.
- dailyOrderCap counts every order of the day by each clock involved: a backward step just after 00:00 UTC
  does not open a second allowance (issue 25: six orders in four seconds against a cap of 3), nor does a
  forward step that crosses midnight.
- The daily loss limit's latch holds for its day by each clock involved, across a step either way.
- A send still held at the exchange stays pending across a forward step of hours (it is given up only after
  five minutes of real time, never by its timestamp).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import Side

from .conftest import CREATE, write_policy
from .one_home import Venue, latch_the_loss_limit, market, open_test_runtime, rules_of, until

pytestmark = pytest.mark.anyio
HOUR = 3600
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
ROOMY = {"maxNotionalUsd": 1000, "maxOrderNotionalUsd": 1000}


async def plan_and_place(runtime: Runtime, qty: str = "0.0001", side: Side = Side.BUY) -> Any:
    plan = await plan_order(runtime, market(side, qty))
    return plan if plan.plan_id is None else await place_order(runtime, plan.plan_id)


@pytest.mark.parametrize(
    ("elapsed", "step", "fills"),
    [
        (64, -5, False),  # issue 25: a 5 s backward step, inside Bybit's own request window
        (70, -HOUR, False),  # issue 25: a one-hour backward step
        (61, -61, False),
        (30, -5, True),
        (1, HOUR, True),  # a forward step does not cut a plan's life short
        (59, 5, True),
        (1, -HOUR, True),
    ],
)
async def test_a_plan_lives_its_ttl_of_real_time_whatever_the_wall_clock_does(
    tmp_path: Path, paper: Any, clock: Any, elapsed: int, step: int, fills: bool
) -> None:
    write_policy(tmp_path, **ROOMY)
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        plan = await plan_order(server, market(Side.BUY, "0.0001"))
        assert plan.plan_id is not None
        clock.advance(elapsed)
        clock.step(step)
        placed = await place_order(server, plan.plan_id)
    if fills:
        assert placed.status == "filled", placed
    else:
        assert placed.status == "refused" and rules_of(placed) == {"planExpired"}, placed
    assert paper.request_count(CREATE) == (1 if fills else 0)


@pytest.mark.parametrize(
    ("start", "step"),
    [
        (TODAY + timedelta(seconds=1), -4),  # issue 25: just after 00:00 UTC, back into yesterday
        (TODAY + timedelta(minutes=30), -HOUR),
        (TODAY + timedelta(hours=23, minutes=30), HOUR),  # forward, across midnight into tomorrow
        (TODAY + timedelta(hours=23, minutes=59, seconds=58), 4),
        (TODAY + timedelta(hours=12), -HOUR),  # a step that stays within the day
    ],
    ids=["00:00:01-4s", "00:30-1h", "23:30+1h", "23:59:58+4s", "noon-1h"],
)
async def test_the_daily_order_cap_holds_across_a_step_at_any_time_of_day(
    tmp_path: Path, paper: Any, start: datetime, step: int
) -> None:
    """dailyOrderCap 3: three orders, the clock steps, three more tried within seconds: none passes."""
    from tests.clocks import FakeClock

    clock = FakeClock(start)
    write_policy(tmp_path, dailyOrderCap=3, **ROOMY)
    got = []
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        for index in range(6):
            if index == 3:
                clock.step(step)
            got.append((await plan_and_place(server)).status)
            clock.advance(0.5)
    assert got == ["filled"] * 3 + ["refused"] * 3, got
    assert paper.request_count(CREATE) == 3


async def test_a_day_counted_by_two_clocks_ends_when_both_have_left_it(tmp_path: Path, paper: Any) -> None:
    """The one-hour forward step at 23:30: the three orders count for the day they were sent in by the old
    clock and by the new one; once real time has carried both clocks past them, orders pass again."""
    from tests.clocks import FakeClock

    clock = FakeClock(TODAY + timedelta(hours=23, minutes=30))
    write_policy(tmp_path, dailyOrderCap=3, **ROOMY)
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        for _ in range(3):
            assert (await plan_and_place(server)).status == "filled"
        clock.step(HOUR)  # 00:30 tomorrow by the new clock; the old one says 23:30
        refused = [await plan_and_place(server) for _ in range(2)]
        clock.advance(24 * HOUR)  # a day of real time later, both clocks are in a day of no orders
        again = await plan_and_place(server)
    assert [answer.status for answer in refused] == ["refused", "refused"]
    assert all(rules_of(answer) == {"dailyOrderCap"} for answer in refused)
    assert again.status == "filled"


@pytest.mark.parametrize(
    ("start", "step"),
    [
        (TODAY + timedelta(seconds=1), -4),
        (TODAY + timedelta(minutes=30), -HOUR),
        (TODAY + timedelta(hours=23, minutes=30), HOUR),
    ],
    ids=["00:00:01-4s", "00:30-1h", "23:30+1h"],
)
async def test_the_daily_loss_latch_holds_for_its_day_across_a_step(
    tmp_path: Path, paper: Any, start: datetime, step: int
) -> None:
    from tests.clocks import FakeClock

    clock = FakeClock(start)
    write_policy(tmp_path, dailyLossLimitUsd=100, **ROOMY)
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        await latch_the_loss_limit(server)
        clock.step(step)
        stepped = await plan_order(server, market(Side.BUY, "0.0001"))
        clock.advance(24 * HOUR + abs(step))  # the next day by every clock involved
        next_day = await plan_order(server, market(Side.BUY, "0.0001"))
    assert stepped.status == "refused" and rules_of(stepped) == {"tradingState"}, stepped
    assert next_day.status == "ok", next_day


@pytest.mark.parametrize("step", [6 * 60, 25 * HOUR], ids=["6min", "25h"])
async def test_a_send_held_at_the_exchange_stays_pending_across_a_forward_step(
    tmp_path: Path, paper: Any, clock: Any, step: int
) -> None:
    """The create is held 1.5 s at the exchange; the server stops waiting after 0.3 s (outcome unknown) and its
    clock steps forward. The next order, which fits the $25 cap only without the held one, is refused."""
    write_policy(tmp_path)  # $25 cap
    async with open_test_runtime(tmp_path, Venue.of(paper), clock, timeout_seconds=0.3) as server:
        first = await plan_order(server, market(Side.BUY, "0.0002"))
        assert first.plan_id is not None
        paper.add_fault(CREATE, "latency", delay_ms=1500)
        assert (await place_order(server, first.plan_id)).status == "outcome_unknown"
        clock.step(step)
        second = await plan_and_place(server, "0.0002")
        await until(lambda: paper.working == 0)
        resolved = await server.store.journal.entries(kind=entry_kinds.ORDER_RESOLVED)
    assert second.status == "refused" and "maxNotionalUsd" in rules_of(second), second
    assert [e.data.get("status") for e in resolved] in ([], ["filled"])  # never "never_executed"
    assert paper.request_count(CREATE) == 1
