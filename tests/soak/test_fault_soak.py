"""Soak: many plan/place rounds with random faults on the paper exchange; the invariants hold every time.

Marked `soak`. CI runs it bounded (PILOT_SOAK_SCALE=1: 60 rounds); raise the scale for a long run, e.g.
`PILOT_SOAK_SCALE=20 ./test tests/soak`. The seed is printed so a failure can be replayed.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.server import build_server
from tests.app.conftest import FakeClock, open_test_runtime, write_policy
from tests.scenarios import ARTICLE

pytestmark = [pytest.mark.anyio, pytest.mark.soak]
CREATE = "/v5/order/create"
WRITE_FAULTS = ("drop", "http_5xx", "rate_limit", "processing", "non_json", "latency")
READ_PATHS = ("/v5/market/tickers", "/v5/position/list", "/v5/account/wallet-balance")
CAP = Decimal(25)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def random_order(rng: random.Random) -> dict[str, str]:
    symbol, steps = rng.choice([("BTCUSDT", "0.00001"), ("ETHUSDT", "0.001")])
    qty = Decimal(steps) * rng.randint(1, 600 if symbol == "BTCUSDT" else 12)
    return {"symbol": symbol, "side": rng.choice(["buy", "sell"]), "qty": format(qty.normalize(), "f")}


def arm_a_fault(paper: PaperExchange, rng: random.Random) -> None:
    roll = rng.random()
    if roll < 0.35:
        kind = rng.choice(WRITE_FAULTS)
        paper.add_fault(CREATE, kind, delay_ms=400 if kind == "latency" else 0)
    elif roll < 0.5:
        paper.add_fault(rng.choice(READ_PATHS), "http_5xx")


async def test_random_faults_never_cause_a_resend_a_cap_breach_or_a_broken_journal(tmp_path: Path) -> None:
    seed = int(os.environ.get("PILOT_SOAK_SEED", random.randrange(1 << 30)))
    rounds = 60 * int(os.environ.get("PILOT_SOAK_SCALE", "1"))
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    write_policy(tmp_path, dailyOrderCap=100_000, maxOrderNotionalUsd=25)
    clock = FakeClock(datetime.now(UTC))
    with start_paper_exchange(ARTICLE) as paper:
        async with (
            open_test_runtime(tmp_path, paper, clock, timeout_seconds=0.25) as runtime,
            Client(build_server(runtime)) as client,
        ):
            for _ in range(rounds):
                planned = (await client.call_tool("plan_order", random_order(rng))).structured_content
                outcomes[f"plan {planned['status']}"] += 1
                if planned["status"] != "ok":
                    assert planned["next_safe_action"] is not None, seed
                    continue
                arm_a_fault(paper, rng)
                before = paper.request_count(CREATE)
                placed = (
                    await client.call_tool("place_order", {"plan_id": planned["plan_id"]})
                ).structured_content
                paper.clear_faults()
                outcomes[f"place {placed['status']}"] += 1
                sent = paper.request_count(CREATE) - before
                assert sent <= 1, (seed, placed)  # never a resend, whatever the fault
                assert (sent == 0) == (placed["status"] == "refused"), (seed, placed)
                for symbol in ("BTCUSDT", "ETHUSDT"):
                    mark = (await runtime.exchange.get_touch("linear", symbol)).mark
                    held = abs(paper.position(symbol).size) * mark
                    assert held <= CAP * Decimal("1.01"), (seed, symbol, held)  # caps hold at worst fill
            report = await runtime.store.journal.verify()
            sent_ids = {
                sent_request(e.data["request"])["order_link_id"]
                for e in await runtime.store.journal.entries(kind=entry_kinds.ORDER_SENT)
            }
    print(f"soak seed {seed}, {rounds} rounds: {dict(sorted(outcomes.items()))}")
    assert report.ok, seed
    exchange_ids = [order.order_link_id for order in paper.orders()]
    assert len(exchange_ids) == len(set(exchange_ids)), seed  # one order per client order id
    assert set(exchange_ids) <= sent_ids, seed  # every order on the exchange was journaled before it left
