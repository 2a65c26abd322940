"""Journal rows written before Pilot's own request keys are read as they were: the journal is insert-only.

Orders are placed through a real MCP client on the paper exchange (filled, resting with a stop, reduce-only,
a cancel). Their journal is then written again twice, entry by entry on one clock: once as recorded, once
with every order.sent request as the gate wrote it before (Bybit's keys, `as_the_old_gate_wrote`). After
every entry the two journals must say the same to the ledger (today's sends, the unsettled ones, the
messages and turnover), and at the end to receipts, the CLI's journal lines and the console's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.receipts import receipt_card
from pilot.app.runtime.ledger import JournalState, Ledger
from pilot.cli.render import entry_summary
from pilot.console.feed import row_of
from pilot.server import build_server
from pilot.store import JournalEntry, Store, open_store
from tests.clocks import FakeClock

from .conftest import call, write_policy

pytestmark = pytest.mark.anyio
ETH = {"symbol": "ETHUSDT", "side": "buy", "order_type": "limit", "price": "3100.01"}
ROOMY = {
    "maxNotionalUsd": 5000,
    "maxOrderNotionalUsd": 5000,
    "maxLeverage": 10,
    "minLiquidationDistancePct": 5,
}


def as_the_old_gate_wrote(request: dict[str, Any]) -> dict[str, Any]:
    """An order.sent request as the gate journaled it before (its `request_dict`): Bybit's keys, in its
    order; a stop, a target and self-match prevention only when set."""
    optional = {"stop_loss": "stopLoss", "take_profit": "takeProfit", "smp_type": "smpType"}
    return {
        "category": request["category"],
        "symbol": request["symbol"],
        "side": request["side"],
        "orderType": request["order_type"],
        "qty": request["qty"],
        "price": request["price"],
        "timeInForce": request["time_in_force"],
        "orderLinkId": request["order_link_id"],
        "reduceOnly": request["reduce_only"],
        **{old: request[new] for new, old in optional.items() if new in request},
    }


async def trade(client: Any) -> None:
    """A filled buy with a stop, a resting buy with a stop, a reduce-only sell, and the resting one cancelled."""
    for order in (
        {**ETH, "qty": "0.2", "stop_loss": "3099"},
        {**ETH, "qty": "0.01", "price": "3000", "stop_loss": "2970"},
        {"symbol": "ETHUSDT", "side": "sell", "qty": "0.05", "reduce_only": True},
    ):
        planned = await call(client, "plan_order", order)
        assert planned["status"] == "ok", planned
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert placed["status"] in ("filled", "open"), placed
        if placed["status"] == "open":
            resting = placed["order_id"]
    cancelled = await call(client, "cancel_order", {"symbol": "ETHUSDT", "order_id": resting})
    assert cancelled["status"] == "done", cancelled


def said(state: JournalState) -> tuple[Any, ...]:
    """What a judgement reads of the ledger (the entries themselves differ in their hashes)."""
    return state.sent_today, state.unsettled, state.activity, state.mark, state.kill_switch_on


async def write_again(store: Store, entry: JournalEntry, clock: FakeClock, *, old: bool) -> JournalEntry:
    data = dict(entry.data)
    if old and entry.kind == entry_kinds.ORDER_SENT:
        data["request"] = as_the_old_gate_wrote(data["request"])
    return await store.journal.append(
        entry.kind, data, now=clock.now(), actor=entry.actor, plan_id=entry.plan_id
    )


async def test_rows_with_bybits_keys_read_as_pilots_own(runtime, tmp_path: Path):
    write_policy(tmp_path, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        await trade(client)
    recorded = await runtime.store.journal.entries()
    assert sum(entry.kind == entry_kinds.ORDER_SENT for entry in recorded) == 3
    assert any("stop_loss" in entry.data.get("request", {}) for entry in recorded)

    clock = FakeClock(recorded[0].at)
    now_store = await open_store(tmp_path / "now" / "pilot.db", clock=clock)
    old_store = await open_store(tmp_path / "old" / "pilot.db", clock=clock)
    try:
        now_ledger, old_ledger = Ledger(now_store.journal), Ledger(old_store.journal)
        pairs = []
        for entry in recorded:
            clock.advance(1)
            pair = (
                await write_again(now_store, entry, clock, old=False),
                await write_again(old_store, entry, clock, old=True),
            )
            pairs.append(pair)
            assert said(await now_ledger.state(clock.now())) == said(await old_ledger.state(clock.now()))
        assert any(
            entry.data["request"].get("orderLinkId") for _, entry in pairs if entry.kind == "order.sent"
        )

        for now_entry, old_entry in pairs:
            assert entry_summary(now_entry) == entry_summary(old_entry)
            assert row_of(now_entry) == row_of(old_entry)
        plans = {entry.plan_id for entry, _ in pairs if entry.plan_id}
        for plan_id in plans:
            cards = [
                receipt_card([entry for entry in side if entry.plan_id == plan_id])
                for side in zip(*pairs, strict=True)
            ]
            now_card, old_card = (card.model_dump(exclude={"seal"}) for card in cards)
            assert now_card == old_card and now_card["sent"]["client_order_id"]
    finally:
        await now_store.close()
        await old_store.close()
