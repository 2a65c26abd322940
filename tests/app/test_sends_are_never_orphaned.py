"""A send whose server stops, or whose client goes away, is still finished, journaled and counted.

Issue 11, part 1: after kill -9 mid-send, or a client that quits while place_order waits, the journal held
order.sent with no outcome, nothing looked it up, it was not counted as pending, and a second order planned
afterwards passed: $48 under a $25 cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import PlanOutcome
from pilot.app.facts.pending import settle_sends, unsettled_sends
from pilot.server import build_server

from .conftest import BTC_SHORT, CREATE, call, open_test_runtime, write_policy

pytestmark = pytest.mark.anyio
HELD_MS = 1500  # how long the paper exchange holds the create before executing it


async def until(condition: Callable[[], bool], seconds: float = 20) -> None:
    """Wait for something another task, thread or process does (polling, bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.005)


async def test_a_client_that_quits_mid_order_does_not_end_the_sends_bookkeeping(runtime, paper):
    paper.add_fault(CREATE, "latency", delay_ms=HELD_MS)
    planned: dict[str, Any] = {}

    async def agent() -> None:
        async with Client(build_server(runtime)) as client:
            planned.update(await call(client, "plan_order", BTC_SHORT))
            await client.call_tool("place_order", {"plan_id": planned["plan_id"]})

    task = asyncio.ensure_future(agent())
    await until(lambda: paper.request_count(CREATE) == 1)
    task.cancel()  # the client goes away while the create is held at the exchange
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await runtime.gate.drain()

    journal = runtime.store.journal
    [outcome] = await journal.entries(kind=entry_kinds.ORDER_OUTCOME, plan_id=planned["plan_id"])
    assert outcome.data["status"] == "filled"
    plan = await runtime.store.plans.get(planned["plan_id"])
    assert plan is not None and PlanOutcome.read(plan.outcome).status == "filled"  # type: ignore[union-attr]
    assert paper.request_count(CREATE) == 1 and paper.position("BTCUSDT").size != 0


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from decimal import Decimal
    from pathlib import Path
    from pilot.app.road.clock import SystemClock
    from pilot.app.orders.inputs import PlanRequest
    from pilot.app.orders.place import place_order
    from pilot.app.orders.plan import plan_order
    from pilot.app.runtime.runtime import Home, assemble_runtime
    from pilot.core.facts import OrderType, Side
    from pilot.store import open_store
    from tests.venue import connect_adapter

    async def main(home, url, key, secret):
        adapter = connect_adapter(url, key, secret, timeout_seconds=30)
        store = await open_store(Home(Path(home)).database_path)
        runtime = assemble_runtime(Path(home), store, adapter, SystemClock())
        request = PlanRequest("BTCUSDT", Side.SELL, OrderType.MARKET, Decimal("0.00031"), None, None, False, "linear")
        plan = await plan_order(runtime, request)
        print(plan.plan_id, flush=True)
        await place_order(runtime, plan.plan_id)
        print("placed", flush=True)

    asyncio.run(main(*sys.argv[1:]))
    """
)


async def test_a_server_killed_mid_send_leaves_a_send_that_is_counted_then_looked_up_and_settled(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path)
    # Long enough to plan while the create is held, and inside the 5 s recv window, so it still executes.
    paper.add_fault(CREATE, "latency", delay_ms=3500)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), paper.url, paper.api_key, paper.api_secret],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        plan_id = (await asyncio.to_thread(child.stdout.readline)).strip()  # type: ignore[union-attr]
        await until(lambda: paper.request_count(CREATE) == 1)
        child.send_signal(signal.SIGKILL)  # kill -9 while the create is at the exchange
    finally:
        child.wait(timeout=10)
        child.stdout.close()  # type: ignore[union-attr]

    async with open_test_runtime(tmp_path, paper, clock) as restarted:
        journal = restarted.store.journal
        assert [e.plan_id for e in await journal.entries(kind=entry_kinds.ORDER_SENT)] == [plan_id]
        assert (
            await journal.entries(kind=entry_kinds.ORDER_OUTCOME) == []
        )  # the server died before the answer
        async with Client(build_server(restarted)) as client:
            second = await call(client, "plan_order", BTC_SHORT)  # the create is still held: pending
            assert paper.position("BTCUSDT").size == 0, "the exchange executed before the check"
            await until(lambda: paper.position("BTCUSDT").size != 0)
            assert await settle_sends(restarted) == 0
            third = await call(client, "plan_order", BTC_SHORT)
        [resolved] = await journal.entries(kind=entry_kinds.ORDER_RESOLVED)
        plan = await restarted.store.plans.get(plan_id)
        assert await unsettled_sends(restarted, clock.now()) == []
    assert second["status"] == "refused", second
    assert second["snapshot"]["pending_qty"]["sell"] == "0.00031"
    assert "maxNotionalUsd" in {v["rule"] for v in second["violations"]}
    assert resolved.plan_id == plan_id and resolved.data["status"] == "filled"
    assert plan is not None and plan.outcome is not None and plan.outcome["status"] == "filled"
    assert third["status"] == "refused"  # now the position itself fills the cap
    assert paper.request_count(CREATE) == 1


async def test_a_send_never_found_is_given_up_as_never_executed_only_after_minutes(runtime, paper, clock):
    """kill -9 before the request left: the send is pending until lookups have missed it for minutes."""
    sent = await runtime.store.journal.append(
        entry_kinds.ORDER_SENT,
        {
            "request": {
                "category": "linear",
                "symbol": "BTCUSDT",
                "side": "Sell",
                "qty": "0.00031",
                "orderLinkId": "pilot-neverleft0000000000000000000",
                "reduceOnly": False,
            },
            "origin": "place_order",
        },
        now=clock.now(),
    )
    assert await settle_sends(runtime) == 1  # not found yet: still pending
    clock.advance(4 * 60)
    assert await settle_sends(runtime) == 1
    clock.advance(2 * 60)
    assert await settle_sends(runtime) == 0
    [resolved] = await runtime.store.journal.entries(kind=entry_kinds.ORDER_RESOLVED)
    assert resolved.data["status"] == "never_executed" and json.dumps(sent.data)


CLAIMING_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from pilot.app.road.clock import SystemClock
    from pilot.app.orders.place import place_order
    from pilot.app.runtime.runtime import Home, assemble_runtime
    from pilot.store import open_store
    from tests.venue import connect_adapter

    async def main(home, url, key, secret, plan_id):
        adapter = connect_adapter(url, key, secret, timeout_seconds=30)
        store = await open_store(Home(Path(home)).database_path)
        await place_order(assemble_runtime(Path(home), store, adapter, SystemClock()), plan_id)

    asyncio.run(main(*sys.argv[1:]))
    """
)


def claiming_child(home: Path, paper: Any, plan_id: str) -> subprocess.Popen[bytes]:
    """A server in a process of its own that places `plan_id` on `home` (the test kills it mid-use)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLAIMING_CHILD,
            str(home),
            paper.url,
            paper.api_key,
            paper.api_secret,
            plan_id,
        ],
        env=os.environ.copy(),
    )


async def test_a_plan_claimed_by_a_server_killed_before_it_sent_is_released_at_the_next_start(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    """kill -9 between the claim and the send: the plan said 'first use still in progress' for ever (then,
    for three and a half minutes). Its claimer's process is gone, so the next start releases it at once."""
    from pilot.app.service.boot import open_runtime
    from tests.scenarios import ARTICLE

    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, paper, clock) as runtime, Client(build_server(runtime)) as client:
        plan_id = (await call(client, "plan_order", BTC_SHORT))["plan_id"]
    paper.add_fault("/v5/market/tickers", "latency", delay_ms=4000)  # the re-check's facts are held
    child = claiming_child(tmp_path, paper, plan_id)
    try:
        await until(lambda: paper.working > 0)  # claimed, and reading fresh facts
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=10)
    async with open_runtime(tmp_path, paper_url=paper.url, scenario=ARTICLE, clock=clock) as restarted:
        plan = await restarted.store.plans.get(plan_id)  # released by the start's upkeep round
        async with Client(build_server(restarted)) as client:
            again = await call(client, "place_order", {"plan_id": plan_id})
    assert plan is not None and plan.outcome == {"status": "refused"}
    assert [v["rule"] for v in again["violations"]] == ["planAlreadyUsed"]
    assert again["next_safe_action"]["tool"] == "plan_order"  # nothing was sent: plan it again
    assert paper.request_count(CREATE) == 0


async def test_a_plan_whose_answer_was_journaled_but_not_recorded_takes_it_at_the_next_start(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    """kill -9 between journaling the exchange's answer and recording it on the plan."""
    from pilot.app.service.boot import open_runtime
    from tests.scenarios import ARTICLE

    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, paper, clock) as runtime, Client(build_server(runtime)) as client:
        plan_id = (await call(client, "plan_order", BTC_SHORT))["plan_id"]
        assert (await runtime.store.plans.claim(plan_id, now=clock.now())).status == "claimed"
        await runtime.store.journal.append(
            entry_kinds.ORDER_OUTCOME,
            {
                "status": "filled",
                "order_id": "o-1",
                "order_link_id": "pilot-x",
                "fill": {"filled_qty": "0.00031"},
            },
            now=clock.now(),
            plan_id=plan_id,
        )
    async with open_runtime(tmp_path, paper_url=paper.url, scenario=ARTICLE, clock=clock) as restarted:
        plan = await restarted.store.plans.get(plan_id)
    assert plan is not None and plan.outcome is not None
    assert (plan.outcome["status"], plan.outcome["filled_qty"]) == ("filled", "0.00031")
