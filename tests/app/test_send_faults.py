"""Every fault of the paper exchange on /v5/order/create: exactly one create request, and an honest answer.

A definite no is "rejected"; a send that may have happened is looked up by its client order id and is
either found (found_by_reconnaissance) or "outcome_unknown". Nothing is ever resent.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.road.gate import order_link_id
from pilot.exchange.models import OrderRequest
from pilot.server import build_server

from .conftest import BTC_SHORT, CREATE, call, open_test_runtime, write_policy

pytestmark = pytest.mark.anyio
# The adapter's timeout: short enough for the faults below to outlast it (a create held 3 s, a reply dripped
# a byte every 2 s), long enough that a loaded machine's reads of fresh facts never do.
TIMEOUT_SECONDS = 1.0


@pytest.mark.parametrize(
    ("kind", "status", "found", "created"),
    [
        ("rate_limit", "rejected", None, False),
        ("http_4xx", "rejected", None, False),
        ("http_5xx", "outcome_unknown", False, False),
        ("processing", "outcome_unknown", False, False),  # linear: 110079, nothing done
        ("drop", "filled", True, True),
        ("drip", "filled", True, True),
        ("non_json", "filled", True, True),
        ("latency", "outcome_unknown", False, None),  # executed 3 s later, after the lookup
    ],
)
async def test_a_create_fault_gives_one_request_and_the_right_outcome(
    tmp_path, venue, clock, kind, status, found, created
):
    """On Bybit's wire and on OKX's: the OKX front carries the create out on the paper exchange, which makes
    the fault, and serves what came back as OKX would (a lost answer, an HTTP error, a code)."""
    paper = venue.paper
    venue.write_policy(tmp_path)
    async with (
        open_test_runtime(tmp_path, venue.endpoint, clock, timeout_seconds=TIMEOUT_SECONDS) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))
        paper.add_fault(CREATE, kind, delay_ms=3000, interval_ms=2000)
        answer = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        again = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        outcomes = await runtime.store.journal.entries(kind=entry_kinds.ORDER_OUTCOME)

    assert paper.request_count(CREATE) == 1
    assert answer["status"] == status and answer["sent"] is not None
    assert again["violations"][0]["rule"] == "planAlreadyUsed"
    assert [e.data["status"] for e in outcomes] == [status]
    if created is not None:
        made = [o.order_link_id for o in paper.orders()]
        assert made == ([venue.client_id(order_link_id(plan["plan_id"]))] if created else [])
    assert answer.get("found_by_reconnaissance") is found
    if status == "outcome_unknown":
        assert answer["next_safe_action"]["tool"] == "get_open_orders"


async def test_a_rate_limited_create_says_when_to_retry(tmp_path, venue, clock):
    """Bybit names its window's reset (a header); OKX names none, and counts each endpoint's requests in
    windows of 2 s: the next one is when (pilot.exchange.okx.client.RATE_WINDOW)."""
    paper = venue.paper
    venue.write_policy(tmp_path)
    async with (
        open_test_runtime(tmp_path, venue.endpoint, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))
        paper.add_fault(CREATE, "rate_limit")
        answer = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert answer["status"] == "rejected" and answer["reject_family"] == "rate_limit"
    assert answer["ret_code"] == {"bybit": 10006, "okx": 50011}[venue.name]
    assert answer["next_safe_action"]["retry_after"] is not None
    assert paper.request_count(CREATE) == 1 and paper.orders() == []


@pytest.mark.parametrize(
    ("kind", "family"), [("rate_limit", "rate_limit"), ("http_4xx", "unavailable"), ("http_5xx", None)]
)
@pytest.mark.parametrize(
    ("tool", "path", "args"),
    [
        ("cancel_order", "/v5/order/cancel", {"symbol": "BTCUSDT", "order_id": "x"}),
        ("set_leverage", "/v5/position/set-leverage", {"symbol": "BTCUSDT", "leverage": "2"}),
    ],
)
async def test_cancel_and_leverage_faults_are_sorted_like_orders_by_the_one_gate(
    venue_runtime, venue, kind, family, tool, path, args
):
    """On Bybit's wire and on OKX's: the OKX front carries the write out on the paper exchange, which makes
    the fault, and serves what came back as OKX would."""
    runtime, paper = venue_runtime, venue.paper
    paper.add_fault(path, kind)
    async with Client(build_server(runtime)) as client:
        answer = await call(client, tool, venue.args(args))
    assert paper.request_count(path) == 1  # sent once, never resent
    if venue.name == "okx" and kind == "http_4xx":  # a 429, which is OKX's rate limit (50011), not Bybit's
        family = "rate_limit"
    if family is None:  # a 5xx on a write: it may have happened
        assert answer["status"] == "outcome_unknown" and answer["next_safe_action"]["tool"]
    else:
        assert answer["status"] == "rejected" and answer["reject_family"] == family
        assert answer["next_safe_action"]["tool"] is None
    if family == "rate_limit":
        assert answer["next_safe_action"]["retry_after"]
    outcomes = await runtime.store.journal.entries(kind=entry_kinds.ACTION)
    assert [e.data["phase"] for e in outcomes] == ["sent", "outcome"]


async def test_an_order_accepted_but_not_yet_visible_counts_as_pending_until_a_read_finds_it(runtime, paper):
    """Bybit acknowledges a create before the order shows in any list; the next plan must still count it."""
    resting = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.00014", "order_type": "limit", "price": "70000"}
    async with Client(build_server(runtime)) as client:
        paper.set_ack_lag(6)  # more reads than the read-back after the create makes
        plan = await call(client, "plan_order", resting)
        accepted = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        paper.set_ack_lag(0)
        more = await call(client, "plan_order", {**resting, "qty": "0.00025"})  # $27.30 with the first
        for _ in range(10):  # each plan reads the lists again, until the first order shows
            settled = await runtime.store.journal.entries(kind=entry_kinds.ORDER_RESOLVED)
            if settled:
                break
            await call(client, "plan_order", resting)
    assert accepted["status"] == "accepted"
    assert more["status"] == "refused" and more["snapshot"]["pending_qty"]["buy"] == "0.00014"
    assert [v["rule"] for v in more["violations"]] == ["maxNotionalUsd"]
    assert [e.data["status"] for e in settled] == ["open"]
    assert paper.request_count(CREATE) == 1


async def test_a_duplicate_client_order_id_answer_is_looked_up_not_taken_for_nothing_executed(runtime, paper):
    """110072 on create means an order with that id exists (sent by a server that then died, say)."""
    write_policy(runtime.home.path, maxNotionalUsd=100)  # room for both, so only the exchange can say no
    async with Client(build_server(runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        earlier = OrderRequest(
            category="linear",
            symbol="BTCUSDT",
            side="Sell",
            qty=Decimal("0.00031"),
            price=Decimal(plan["order"]["price"]),
            time_in_force="IOC",
            order_link_id=order_link_id(plan["plan_id"]),
        )
        await runtime.exchange.create_order(earlier)  # type: ignore[attr-defined] # the test plays the lost send
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled" and placed["found_by_reconnaissance"] is True
    assert paper.request_count(CREATE) == 2 and len(paper.orders("BTCUSDT")) == 1
