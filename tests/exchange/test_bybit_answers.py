"""Bybit's other answers as Bybit documents them, replayed to the adapter on loopback.

Each test names the fixture (tests/fixtures/bybit/, whose `source` names the repository, path and commit)
or the documentation page (../shared/reference/bybit-v5-docs/) it checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.exchange.bybit import ret_codes as codes
from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.bybit.ret_codes import Verdict
from pilot.exchange.errors import ExchangeRejected, UnsupportedPositionMode
from pilot.exchange.models import FILL_EXEC_TYPES
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bybit"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TRADING_STOP = "/v5/position/trading-stop"


@asynccontextmanager
async def replayed(name: str) -> AsyncIterator[tuple[ReplayServer, BybitExchange]]:
    with ReplayServer.from_path(FIXTURES / name) as stub:
        adapter = connect_adapter(stub.url, "fixture-key", "fixture-secret", clock=lambda: NOW)
        try:
            yield stub, adapter
        finally:
            await adapter.close()


# ---- error.mdx: which codes are "sent, outcome unknown" ---------------------------------------------


@pytest.mark.parametrize(
    ("code", "meaning"),
    [
        (10000, "Server Timeout"),  # error.mdx UTA
        (10016, "Server error"),  # error.mdx UTA
        (170001, "Internal error"),  # error.mdx Spot Trade
        (170007, "Timeout waiting for response from backend server"),
        (170032, "Network error"),
        (170035, "Submitted to the system for processing"),
        (170234, "System Error"),
    ],
)
def test_error_mdx_system_errors_and_timeouts_are_unknown_outcomes_on_writes(code, meaning):
    rule = codes.rule_for(code)
    assert meaning.lower() in rule.meaning.lower() and rule.source == codes.ERRORS
    assert all(rule.verdict(op) is Verdict.UNKNOWN for op in codes.WRITES)
    assert rule.verdict("read") is Verdict.UNAVAILABLE


def test_order_does_not_exist_170213_is_a_definite_answer_not_a_fault():
    """error.mdx 170213 "Order does not exist.": a cancel of an unknown order, refused, nothing pending."""
    assert codes.verdict(170213, "cancel") is Verdict.REJECTED
    assert codes.rule_for(170213).family == "not_found"


# ---- 34040: the trading stop is already what was asked (error.mdx, position/trading-stop.mdx) ---------


async def test_a_trading_stop_already_set_is_unchanged_not_refused():
    async with replayed("trading_stop_answers.json") as (stub, adapter):
        changed = await adapter.set_trading_stop(
            "linear", "BTCUSDT", stop_loss=Decimal(61000), take_profit=None
        )
        same = await adapter.set_trading_stop("linear", "BTCUSDT", stop_loss=Decimal(60000), take_profit=None)
        with pytest.raises(ExchangeRejected) as refused:
            await adapter.set_trading_stop("linear", "BTCUSDT", stop_loss=Decimal(1), take_profit=None)
    assert (changed, same) == (True, False)
    assert (refused.value.ret_code, refused.value.family) == (10001, "params")
    assert len(stub.requests(TRADING_STOP)) == 3  # each sent once
    assert codes.verdict(34040, "stop") is Verdict.UNCHANGED
    assert codes.verdict(34040, "create") is Verdict.REJECTED  # "not modified" means nothing elsewhere


# ---- hedge mode: what the legs hold together (position.mdx positionIdx) ------------------------------


async def test_a_hedged_symbol_says_what_its_two_legs_hold_together():
    async with replayed("positions_hedge_mode.json") as (_, adapter):
        with pytest.raises(UnsupportedPositionMode) as hedged:
            await adapter.get_position("linear", "BTCUSDT")
    assert (hedged.value.symbol, hedged.value.gross_size) == ("BTCUSDT", Decimal("0.04"))  # 0.01 + 0.03


# ---- linear is USDT and USDC contracts: a list read per settle coin (position.mdx settleCoin) ---------


async def test_linear_positions_are_read_for_every_settle_coin():
    async with replayed("positions_usdt_and_usdc.json") as (stub, adapter):
        positions = await adapter.get_positions("linear")
    assert [(p.symbol, p.size, p.settle_coin, p.unrealised_pnl) for p in positions] == [
        ("BTCUSDT", Decimal("0.5"), "USDT", Decimal("250.00")),
        ("ETHUSDT", Decimal("-5.0"), "USDT", Decimal("250.00")),
        ("BTCPERP", Decimal("0.02"), "USDC", Decimal("-10.00")),
    ]
    coins = sorted(request.params["settleCoin"] for request in stub.requests("/v5/position/list"))
    assert coins == ["USDC", "USDT"]  # one page each; their cursors are ""


async def test_a_position_met_in_two_settle_coin_reads_is_counted_once():
    """The paper exchange, like any stub ignoring settleCoin, answers both reads alike (positions_one_way)."""
    async with replayed("positions_one_way.json") as (_, adapter):
        positions = await adapter.get_positions("linear")
    assert [(p.symbol, p.size) for p in positions] == [("LTCUSDT", Decimal("1.2"))]


# ---- executions: Funding is no fill (enum.mdx execType) ------------------------------------------------


async def test_a_funding_row_is_an_execution_but_not_a_fill():
    async with replayed("executions_funding.json") as (_, adapter):
        page = await adapter.get_executions_page("linear", None, None, 50)
    trade, funding = page.rows
    assert (trade.exec_type, trade.is_fill, trade.exec_qty, trade.exec_fee) == (
        "Trade",
        True,
        Decimal("0.093"),
        Decimal("0.0150"),
    )
    assert (funding.exec_type, funding.is_fill, funding.exec_fee, funding.fee_coin) == (
        "Funding",
        False,
        Decimal("0.7506234"),  # paid: execFee positive
        "USDT",
    )
    assert page.next_cursor is None


def test_fills_are_the_exec_types_that_trade_a_quantity():
    """enum.mdx execType: AdlTrade and BustTrade close a position at a price; Funding and Settle trade nothing."""
    assert {"Trade", "AdlTrade", "BustTrade"} <= FILL_EXEC_TYPES
    assert not {"Funding", "Settle", "CorporateAction", "UNKNOWN"} & FILL_EXEC_TYPES


# ---- demo trading serves only the endpoints demo.mdx lists: 10032 for the rest ---------------------------


async def test_the_key_read_on_demo_is_answered_unsupported_not_a_refused_key():
    async with replayed("query_api_demo_unsupported.json") as (_, adapter):
        with pytest.raises(ExchangeRejected) as unsupported:
            await adapter.get_api_key_info()
    assert (unsupported.value.ret_code, unsupported.value.family) == (10032, codes.UNSUPPORTED)
    assert codes.rule_for(10032).source == codes.DEMO
