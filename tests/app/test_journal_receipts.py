"""The journal as a receipt: every plan, every attempt (written before the request leaves) and every outcome,
in one verifiable chain that never holds the api key or secret."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.responses import snake_keys
from pilot.app.answers.sent_requests import sent_request
from pilot.app.runtime.runtime import assemble_runtime
from pilot.server import build_server

from .conftest import BTC_SHORT, CREATE, call

pytestmark = pytest.mark.anyio


class JournalAtSend:
    """The real adapter, noting which order.sent entries the journal held when a create left."""

    def __init__(self, inner: Any, journal: Any) -> None:
        self._inner, self._journal = inner, journal
        self.sent_before_create: list[list[str | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def create_order(self, request: Any) -> Any:
        entries = await self._journal.entries(kind=entry_kinds.ORDER_SENT)
        self.sent_before_create.append([sent_request(e.data["request"])["order_link_id"] for e in entries])
        return await self._inner.create_order(request)


async def test_every_plan_attempt_and_outcome_is_journalled_in_order_without_secrets(runtime, paper):
    spy = JournalAtSend(runtime.exchange, runtime.store.journal)
    observed = assemble_runtime(runtime.home.path, runtime.store, spy, runtime.clock)
    async with Client(build_server(observed), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0005"})
        planned = await call(client, "plan_order", BTC_SHORT)
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        again = await call(client, "place_order", {"plan_id": planned["plan_id"]})
    journal = runtime.store.journal
    entries = await journal.entries()

    assert [e.kind for e in entries] == [
        entry_kinds.PLAN,
        entry_kinds.PLAN,
        entry_kinds.ORDER_SENT,
        entry_kinds.ORDER_OUTCOME,
        entry_kinds.PLACE_REFUSED,
    ]
    plan_refused, plan_ok, sent, outcome, place_refused = entries
    assert plan_refused.data["status"] == refused["status"] == "refused" and plan_refused.plan_id is None
    assert plan_ok.data["status"] == "ok" and plan_ok.plan_id == planned["plan_id"]
    assert sent.plan_id == outcome.plan_id == place_refused.plan_id == planned["plan_id"]
    # The answer shows the request as the journal keeps it, in Pilot's keys (the answers' one key style).
    assert snake_keys(sent.data["request"]) == placed["sent"] and outcome.data["status"] == placed["status"]
    assert placed["sent"]["order_link_id"] == placed["order_link_id"]
    assert placed["journal_seq"] == [sent.seq, outcome.seq]
    assert place_refused.data["violations"][0]["rule"] == again["violations"][0]["rule"]
    assert spy.sent_before_create == [[placed["order_link_id"]]]
    assert paper.request_count(CREATE) == 1

    report = await journal.verify()
    assert report.ok and report.count == len(entries)
    everything = json.dumps([e.data for e in entries])
    assert paper.api_key not in everything and paper.api_secret not in everything
    for stored in runtime.home.database_path.parent.iterdir():  # the database, its WAL and shared memory
        raw = stored.read_bytes()
        assert paper.api_key.encode() not in raw and paper.api_secret.encode() not in raw


async def test_a_send_whose_outcome_is_unknown_is_journalled_as_sent_before_and_unknown_after(
    server, runtime, paper
):
    async with Client(server, raise_exceptions=True) as client:
        planned = await call(client, "plan_order", BTC_SHORT)
        paper.add_fault(CREATE, "http_5xx")
        answer = await call(client, "place_order", {"plan_id": planned["plan_id"]})
    trail = await runtime.store.journal.entries(plan_id=planned["plan_id"])
    assert [(e.kind, e.data.get("status")) for e in trail] == [
        (entry_kinds.PLAN, "ok"),
        (entry_kinds.ORDER_SENT, None),
        (entry_kinds.ORDER_OUTCOME, "outcome_unknown"),
    ]
    assert answer["status"] == "outcome_unknown" and (await runtime.store.journal.verify()).ok
