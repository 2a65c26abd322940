"""A full disk under the Pilot home, through a real MCP client: every answer is Pilot's own, and says what was sent.

The home lives on a small tmpfs mounted for the test (root only; skipped with the reason elsewhere). The disk
is filled with a file of zeros and freed by deleting it. To fill it at one exact step of a send, the real
adapter is wrapped so the disk fills right after one chosen exchange call returns: the world changing under
Pilot, not a stand-in for Pilot's own code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.responses import ActionAnswer, OrderAnswer, PlanAnswer
from pilot.app.facts.reads import ReadAnswer
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.exchange.bybit.adapter import BybitExchange
from pilot.paper import PaperExchange
from pilot.server import build_server
from pilot.server.store_refusals import answer_for
from pilot.store import StoreBusy, StoreCorrupt, StoreError, StoreFull, open_store
from tests.full_disk import Disk
from tests.venue import connect_adapter

from .conftest import BTC_SHORT, CREATE, FakeClock, call, write_policy

pytestmark = pytest.mark.anyio
CANCEL = "/v5/order/cancel"
LEVERAGE = "/v5/position/set-leverage"
WRITES = (CREATE, CANCEL, LEVERAGE)
RESTING_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0002", "order_type": "limit", "price": "70000"}


class DiskFillsAfter:
    """The real adapter; once armed, the disk fills as soon as the named exchange call has returned."""

    def __init__(self, adapter: BybitExchange, disk: Disk) -> None:
        self._adapter = adapter
        self._disk = disk
        self._armed: str | None = None

    def arm(self, method: str) -> None:
        self._armed = method

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._adapter, name)
        if name != self._armed:
            return real

        async def then_fill(*args: Any, **kwargs: Any) -> Any:
            self._armed = None
            try:
                return await real(*args, **kwargs)
            finally:
                self._disk.fill()

        return then_fill


@pytest.fixture
async def world(disk: Disk, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[tuple[Runtime, Any]]:
    home = disk.path / "home"
    home.mkdir()
    write_policy(home)
    adapter = connect_adapter(paper, timeout_seconds=10)
    exchange = DiskFillsAfter(adapter, disk)
    store = await open_store(Home(home).database_path)
    try:
        yield assemble_runtime(home, store, exchange, clock), exchange  # type: ignore[arg-type]
    finally:
        await store.close()
        await adapter.close()


def writes(paper: PaperExchange) -> dict[str, int]:
    return {path: paper.request_count(path) for path in WRITES}


def store_stop(answer: dict[str, Any]) -> None:
    """The answer names storeUnavailable and says to stop until a human has acted: no call, no retry time."""
    assert [v["rule"] for v in answer["violations"]] == ["storeUnavailable"], answer
    step = answer["next_safe_action"]
    assert step["tool"] is None and step["human"] and step.get("retry_after") is None


async def test_on_a_full_disk_every_write_tool_refuses_in_pilots_words_and_sends_nothing(world, disk, paper):
    runtime, _ = world
    async with Client(build_server(runtime)) as client:
        resting = await call(
            client, "place_order", {"plan_id": (await call(client, "plan_order", RESTING_BUY))["plan_id"]}
        )
        planned = await call(client, "plan_order", BTC_SHORT)
        assert resting["status"] == "open" and planned["status"] == "ok"
        before = writes(paper)
        disk.fill()
        answers = {
            "plan_order": await call(client, "plan_order", BTC_SHORT),
            "place_order": await call(client, "place_order", {"plan_id": planned["plan_id"]}),
            "close_position": await call(client, "close_position", {"symbol": "BTCUSDT"}),
            "cancel_order": await call(
                client, "cancel_order", {"symbol": "BTCUSDT", "order_id": resting["order_id"]}
            ),
            "set_leverage": await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"}),
            "activate_kill_switch": await call(client, "activate_kill_switch", {"reason": "test"}),
        }
        policy = await call(client, "get_policy")  # reads still work on a full disk
        assert writes(paper) == before

        disk.free()
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        cancelled = await call(client, "cancel_order", {"symbol": "BTCUSDT", "order_id": resting["order_id"]})
    for answer in answers.values():
        assert answer["status"] == "refused"
        store_stop(answer)
    assert answers["plan_order"].get("plan_id") is None and answers["place_order"].get("sent") is None
    assert policy["status"] == "ok"
    # nothing was claimed or sent while the disk was full, so the same plan and the same cancel now work
    assert placed["status"] == "filled" and cancelled["status"] == "done"
    assert paper.request_count(CREATE) == before[CREATE] + 1 and paper.open_orders() == []
    assert (await runtime.store.journal.verify()).ok


async def test_a_disk_that_fills_after_the_plan_is_claimed_refuses_the_send_and_the_agent_plans_again(
    world, disk, paper
):
    runtime, exchange = world
    async with Client(build_server(runtime)) as client:
        planned = await call(client, "plan_order", BTC_SHORT)
        exchange.arm("get_balance")  # read while place_order evaluates, after the claim, before order.sent
        refused = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert paper.request_count(CREATE) == 0
        disk.free()
        again = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        step = again["next_safe_action"]
        replanned = await call(client, step["tool"], step["args"])
        placed = await call(client, "place_order", {"plan_id": replanned["plan_id"]})
    assert refused["status"] == "refused" and refused.get("sent") is None
    store_stop(refused)
    # the claimed plan that sent nothing is released: plan the same order again, never "look it up"
    assert [v["rule"] for v in again["violations"]] == ["planAlreadyUsed"] and step["tool"] == "plan_order"
    assert replanned["order"] == planned["order"]
    assert placed["status"] == "filled" and paper.request_count(CREATE) == 1
    assert await runtime.store.journal.entries(plan_id=planned["plan_id"], kind=entry_kinds.ORDER_SENT) == []


@pytest.mark.parametrize(
    ("method", "tool", "path"),
    [("create_order", "place_order", CREATE), ("cancel_order", "cancel_order", CANCEL)],
)
async def test_a_disk_that_fills_while_a_request_is_at_the_exchange_still_says_what_was_sent(
    world, disk, paper, method, tool, path
):
    runtime, exchange = world
    async with Client(build_server(runtime)) as client:
        if tool == "place_order":
            args = {"plan_id": (await call(client, "plan_order", BTC_SHORT))["plan_id"]}
        else:
            resting = await call(
                client, "place_order", {"plan_id": (await call(client, "plan_order", RESTING_BUY))["plan_id"]}
            )
            args = {"symbol": "BTCUSDT", "order_id": resting["order_id"]}
        exchange.arm(method)
        answer = await call(client, tool, args)
        disk.free()
        afterwards = await call(client, "plan_order", BTC_SHORT)
    assert paper.request_count(path) == 1
    assert answer["status"] in ("filled", "done")  # what the exchange did, not a refusal
    if tool == "place_order":
        assert answer["sent"]["qty"] == BTC_SHORT["qty"] and answer["fill"]["filled_qty"] == BTC_SHORT["qty"]
    else:
        assert paper.open_orders() == []
    problem = answer["journal_problem"]
    assert problem["rule"] == "storeUnavailable" and problem["next"]["human"]
    assert answer["next_safe_action"]["tool"] is None and len(answer["journal_seq"]) == 1
    assert afterwards["status"] in ("ok", "refused") and not afterwards.get("journal_problem")


@pytest.mark.parametrize(
    "error",
    [
        StoreFull("the disk holding the database is full"),
        StoreBusy("the database is locked by another process"),
        StoreCorrupt("the database is damaged"),
        StoreError("database operation failed: disk I/O error"),
    ],
)
@pytest.mark.parametrize(
    ("answer_type", "status"),
    [
        (PlanAnswer, "refused"),
        (OrderAnswer, "refused"),
        (ActionAnswer, "refused"),
        (ReadAnswer, "unavailable"),
    ],
)
def test_every_kind_of_store_failure_is_each_tools_own_answer_with_nothing_sent(error, answer_type, status):
    answer = answer_for(answer_type, error).model_dump(mode="json")
    assert answer["status"] == status
    if status == "refused":
        store_stop(answer)
        assert answer.get("sent") is None
