"""A session recorded by the adapter (redacted) becomes a fixture the replay stub serves back."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.bybit.recording import REDACTED, load
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.models import OrderRequest
from tests.exchange.conftest import TIMEOUT_SECONDS
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio


async def session_reads(adapter: BybitExchange) -> tuple:
    return (
        await adapter.get_instrument("linear", "BTCUSDT"),
        await adapter.get_positions("linear"),
        await adapter.get_open_orders("linear", "BTCUSDT"),
        await adapter.find_order("linear", "BTCUSDT", "rec-fill"),
        await adapter.get_balance(),
        await adapter.get_api_key_info(),
    )


async def test_a_recorded_session_is_redacted_and_replays_to_the_same_conclusions(paper, tmp_path):
    recording = tmp_path / "demo-session"
    live = connect_adapter(
        paper,
        timeout_seconds=TIMEOUT_SECONDS,
        record_dir=recording,
    )
    await live.create_order(
        OrderRequest("linear", "BTCUSDT", "Buy", Decimal("0.00031"), Decimal("80300"), "IOC", "rec-fill")
    )
    await live.create_order(
        OrderRequest("linear", "BTCUSDT", "Buy", Decimal("0.0002"), Decimal("79000"), "GTC", "rec-rest")
    )
    expected = await session_reads(live)
    await live.close()

    files = sorted(recording.glob("*.json"))
    text = "\n".join(path.read_text() for path in files)
    assert paper.api_key not in text
    assert paper.api_secret not in text
    assert not any(h in text.upper() for h in ("X-BAPI-API-KEY", "X-BAPI-SIGN", "X-BAPI-TIMESTAMP"))
    source, exchanges = load(recording)
    assert source["environment"] == "paper" and len(exchanges) == len(files) - 1
    key_answer = next(e for e in exchanges if e.path == "/v5/user/query-api")
    assert key_answer.answer["result"]["apiKey"] == REDACTED
    assert [e.path for e in exchanges[:2]] == ["/v5/order/create", "/v5/order/create"]
    assert json.loads(files[0].read_text())["body"]["orderLinkId"] == "rec-fill"

    with ReplayServer.from_path(recording) as stub:
        replay = connect_adapter(stub.url, "other", "other")
        assert await session_reads(replay) == expected
        await replay.close()
