"""`--record` on okx-demo: the OKX adapter writes every request and its answer in the one recording format
(pilot.exchange.recordings), with no key, secret or passphrase anywhere, and the replay stub serves the
recording back to the same conclusions."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.models import OrderRequest
from pilot.exchange.recordings import load
from pilot.paper import PaperExchange
from tests.okx_front import OkxFront
from tests.venue import connect_okx

pytestmark = pytest.mark.anyio
LINK = "pilot-" + "cd" * 15


@pytest.fixture
def front(paper: PaperExchange) -> Iterator[OkxFront]:
    with OkxFront(paper) as stub:
        yield stub


async def test_a_recording_holds_every_exchange_redacted_and_replays_to_the_same_answers(
    front: OkxFront, tmp_path: Path
) -> None:
    adapter = connect_okx(front, record_dir=tmp_path)
    try:
        rules = await adapter.get_instrument("linear", "BTC-USDT")
        balance = await adapter.get_balance()
        order = OrderRequest("linear", "BTC-USDT", "Buy", Decimal("0.0001"), Decimal("70000"), "GTC", LINK)
        await adapter.create_order(order)
        found = await adapter.find_order("linear", "BTC-USDT", LINK)
    finally:
        await adapter.close()
    source, exchanges = load(tmp_path)
    assert source["environment"] == "okx-demo"
    paths = [exchange.path for exchange in exchanges]
    assert "/api/v5/public/instruments" in paths and "/api/v5/account/balance" in paths
    assert [e.body["px"] for e in exchanges if e.path == "/api/v5/trade/order" and e.body] == ["70000"]
    written = "".join(p.read_text() for p in tmp_path.glob("*.json"))
    for secret in (front.api_key, front.api_secret, front.passphrase):
        assert secret not in written

    with ReplayServer(exchanges).start() as stub:
        replayed = connect_okx(stub.url)
        try:
            assert await replayed.get_instrument("linear", "BTC-USDT") == rules
            assert await replayed.get_balance() == balance
            again = await replayed.find_order("linear", "BTC-USDT", LINK)
        finally:
            await replayed.close()
    assert found is not None and again is not None and again.order_id == found.order_id
