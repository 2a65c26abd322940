"""Bybit's recorded and documented answers, replayed to the adapter on loopback: what Pilot concludes.

Each fixture in tests/fixtures/bybit/ names its source (repository, path, commit or date) and says which
exchanges were composed around the recorded ones. The stub (pilot.exchange.bybit.replay) answers recorded bodies
per path and parameters; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.bybit.payloads import band_margin
from pilot.exchange.bybit.replay import Received, ReplayServer
from pilot.exchange.errors import (
    DuplicateOrderLinkId,
    ExchangeRejected,
    ExchangeUnavailable,
    OutcomeUnknown,
    UnsupportedPositionMode,
)
from pilot.exchange.models import OrderRequest
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bybit"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@asynccontextmanager
async def replayed(name: str) -> AsyncIterator[tuple[ReplayServer, BybitExchange]]:
    with ReplayServer.from_path(FIXTURES / name) as stub:
        adapter = connect_adapter(
            stub.url,
            "fixture-key",
            "fixture-secret",
            timeout_seconds=2,
            clock=lambda: NOW,
        )
        try:
            yield stub, adapter
        finally:
            await adapter.close()


def settled_in(stub: ReplayServer, path: str, coin: str) -> list[Received]:
    """The requests to `path` for one settle coin (linear lists are read once per settle coin)."""
    return [request for request in stub.requests(path) if request.params.get("settleCoin") == coin]


def order(link: str, category: str = "linear", symbol: str = "BTCUSDT") -> OrderRequest:
    return OrderRequest(category, symbol, "Buy", Decimal("0.001"), Decimal("100000"), "IOC", link)


def test_every_fixture_names_its_source():
    files = sorted(FIXTURES.glob("*.json"))
    assert len(files) >= 15
    for path in files:
        source = json.loads(path.read_text())["source"]
        parts = source.values() if all(isinstance(v, dict) for v in source.values()) else [source]
        for part in parts:
            assert part["repository"] and part["path"], path.name
            assert part.get("commit") or part.get("recorded"), path.name


# ---- paging: the cursor real Bybit sends on the last page ----------------------------------------


async def test_a_cursor_pointing_back_at_its_own_page_counts_the_open_order_once():
    async with replayed("open_order_cursor_points_back.json") as (stub, adapter):
        orders = await adapter.get_open_orders("linear")
    assert [(o.order_id, o.qty, o.price, o.status) for o in orders] == [
        ("3606515b-e4d7-4ea4-b096-bb247d0661ae", Decimal("0.001"), Decimal("102000"), "New")
    ]
    assert orders[0].avg_price is None and orders[0].cum_exec_fee == 0  # avgPrice "" and cumFeeDetail {}
    # The page, and the cursor once: then it stops. The USDC list (its own read) is empty.
    assert [len(settled_in(stub, "/v5/order/realtime", coin)) for coin in ("USDT", "USDC")] == [2, 1]


async def test_an_empty_page_ends_the_list():
    async with replayed("open_order_then_empty_page.json") as (stub, adapter):
        orders = await adapter.get_open_orders("linear")
    assert len(orders) == 1 and len(settled_in(stub, "/v5/order/realtime", "USDT")) == 2


async def test_a_fill_listed_on_two_pages_is_counted_once():
    async with replayed("executions_duplicate_across_pages.json") as (stub, adapter):
        fills = await adapter.get_executions("linear", "BTCUSDT", "7babd487-21bb-4148-9cb2-3921134cb52b")
    assert [(f.exec_id, f.exec_qty, f.exec_price, f.exec_fee) for f in fills] == [
        ("63efa380-bdb4-5b1c-83d3-937ca3938000", Decimal("0.01"), Decimal("26816.8"), Decimal("0.1609008"))
    ]
    assert len(stub.requests("/v5/execution/list")) == 3


async def test_recorded_closed_pnl_is_read_with_its_fees_in_and_paged_to_the_end():
    since = datetime(2023, 4, 3, tzinfo=UTC)
    async with replayed("closed_pnl_linear.json") as (stub, adapter):
        rows = await adapter.get_closed_pnl_since("linear", since)
    assert [
        (r.symbol, r.side, r.closed_size, r.avg_entry_price, r.avg_exit_price, r.closed_pnl) for r in rows
    ] == [("BTCUSDT", "Sell", Decimal("0.01"), Decimal("28144.7"), Decimal("28149.9"), Decimal("-0.2857676"))]
    assert len(stub.requests("/v5/position/closed-pnl")) == 2  # the page, then the empty one its cursor gives


# ---- positions -------------------------------------------------------------------------------------


async def test_a_recorded_one_way_position_is_read_as_signed_size_and_entry():
    async with replayed("positions_one_way.json") as (_, adapter):
        position = await adapter.get_position("linear", "LTCUSDT")
        positions = await adapter.get_positions("linear")
    assert (position.size, position.entry_price, position.leverage) == (
        Decimal("1.2"),
        Decimal("64.59947917"),
        Decimal("6"),
    )
    assert [(p.symbol, p.size, p.mark_price, p.liq_price, p.unrealised_pnl) for p in positions] == [
        ("LTCUSDT", Decimal("1.2"), Decimal("71.1"), None, Decimal("7.800625"))
    ]


async def test_one_symbols_position_is_one_request_though_real_bybit_sends_a_cursor():
    """A symbol has at most two position rows; following the cursor Bybit sends anyway would cost every plan
    a second round trip. The whole account's list still follows it to the end."""
    async with replayed("positions_one_way.json") as (stub, adapter):
        await adapter.get_position("linear", "LTCUSDT")
        one_symbol = len(stub.requests("/v5/position/list"))
        await adapter.get_positions("linear")
    assert one_symbol == 1
    assert [len(settled_in(stub, "/v5/position/list", coin)) for coin in ("USDT", "USDC")] == [2, 1]


async def test_a_hedge_mode_symbol_is_refused_with_the_symbol_and_never_read_as_its_first_leg():
    async with replayed("positions_hedge_mode.json") as (_, adapter):
        with pytest.raises(UnsupportedPositionMode) as one:
            await adapter.get_position("linear", "BTCUSDT")
        with pytest.raises(UnsupportedPositionMode) as every:
            await adapter.get_positions("linear")
    assert (one.value.symbol, one.value.category) == ("BTCUSDT", "linear")
    assert every.value.symbol == "BTCUSDT" and "one-way" in every.value.human_fix


async def test_an_order_on_a_hedge_leg_carries_its_position_index_and_its_fee_coin():
    async with replayed("open_order_hedge_leg_mnt_fee.json") as (_, adapter):
        (found,) = await adapter.get_open_orders("linear")
    assert (found.order_link_id, found.position_idx, found.qty) == (
        "test-000005",
        1,
        Decimal("0.10"),
    )
    assert (found.fee_coin, found.cum_exec_fee) == ("MNT", Decimal("0.00242968"))


# ---- fees ------------------------------------------------------------------------------------------


async def test_fees_come_from_cum_fee_detail():
    async with replayed("closed_orders_fee_detail.json") as (_, adapter):
        history = await adapter.get_order_history("linear")
    assert [(o.side, o.reduce_only, o.avg_price, o.cum_exec_fee, o.fee_coin) for o in history] == [
        ("Sell", True, Decimal("122529.9"), Decimal("0.06739145"), "USDT"),
        ("Buy", False, Decimal("123498"), Decimal("0.0679239"), "USDT"),
    ]
    assert history[0].fees == (("USDT", Decimal("0.06739145")),)


async def test_a_spot_market_buy_is_sized_in_the_quote_coin_and_its_fee_falls_back_to_cum_exec_fee():
    async with replayed("spot_market_buy_in_quote_coin.json") as (_, adapter):
        found = await adapter.find_order("spot", "BTCUSDT", "1609602210852247041")
    assert found is not None
    assert (found.qty, found.cum_exec_qty, found.status) == (
        Decimal("50.000000"),  # USDT: marketUnit quoteCoin, Bybit's default for spot Market Buy
        Decimal("0.001614"),  # BTC bought
        "PartiallyFilledCanceled",
    )
    assert (found.cum_exec_fee, found.fee_coin, found.fees) == (Decimal("0.000001614"), "", ())


async def test_a_spot_fill_reports_the_coin_its_fee_was_paid_in():
    async with replayed("executions_spot_fee_currency.json") as (_, adapter):
        (fill,) = await adapter.get_executions("spot", "ETHUSDT", "1644387819067894016")
    assert (fill.exec_qty, fill.exec_fee, fill.fee_coin) == (Decimal("0.001"), Decimal("0.000001"), "ETH")


# ---- instruments, risk tiers, price band, balance, market data -------------------------------------


async def test_linear_rules_take_the_lowest_risk_tier_wherever_it_sits_in_the_list():
    async with replayed("instrument_linear_btcusdt.json") as (_, adapter):
        rules = await adapter.get_instrument("linear", "BTCUSDT")
    assert (rules.tick_size, rules.qty_step, rules.min_qty, rules.min_notional, rules.max_leverage) == (
        Decimal("0.10"),
        Decimal("0.001"),
        Decimal("0.001"),
        Decimal("5"),
        Decimal("100.00"),
    )
    assert rules.maintenance_margin_rate == Decimal("0.005")  # isLowestRisk, served last
    assert rules.band_margin == Decimal("0.01")  # riskParameters.priceLimitRatioX (Y 0.02)


async def test_spot_minimums_are_the_ones_bybit_checks_today():
    async with replayed("instrument_spot_btcusdt.json") as (_, adapter):
        rules = await adapter.get_instrument("spot", "BTCUSDT")
    assert rules.min_qty == rules.qty_step == Decimal("0.000001")  # not the deprecated minOrderQty 0.000011
    assert rules.band_margin is None  # spot's limits follow the index with a signed premium: always read
    assert (rules.min_notional, rules.max_qty, rules.tick_size) == (
        Decimal("5"),
        Decimal("83"),
        Decimal("0.1"),
    )


async def test_the_price_band_is_read_with_the_linear_clamp_behaviour():
    async with replayed("price_limit_btcusdt.json") as (_, adapter):
        band = await adapter.get_price_band("linear", "BTCUSDT")
        with pytest.raises(ValueError):
            await adapter.get_price_band("option", "BTC-27MAR26-70000-P-USDT")
    assert (band.buy_limit, band.sell_limit, band.outside) == (
        Decimal("105878.10"),
        Decimal("103781.60"),
        "clamp",
    )


async def test_a_recorded_seven_coin_balance_gives_the_account_equity():
    async with replayed("wallet_balance_seven_coins.json") as (_, adapter):
        balance = await adapter.get_balance()
    assert balance.total_equity_usd == Decimal("92255.96988644")
    usdt = next(c for c in balance.coins if c.coin == "USDT")
    assert (len(balance.coins), usdt.wallet_balance, usdt.equity) == (
        7,
        Decimal("3322.25896609"),
        Decimal("3304.29766609"),
    )


async def test_recorded_market_data_gives_the_touch_and_the_book():
    async with replayed("market_data_btcusdt.json") as (_, adapter):
        touch = await adapter.get_touch("linear", "BTCUSDT")
        book = await adapter.get_orderbook("linear", "BTCUSDT", depth=2)
    assert (touch.bid, touch.ask, touch.mark) == (
        Decimal("51444.30"),
        Decimal("51444.40"),
        Decimal("51444.40"),
    )
    assert [level.price for level in book.asks] == [Decimal("42548"), Decimal("42548.2")]


# ---- outcomes of create and cancel -----------------------------------------------------------------


async def test_an_acknowledged_order_not_yet_visible_is_none_not_a_failed_read():
    async with replayed("create_acknowledged_not_yet_visible.json") as (_, adapter):
        ack = await adapter.create_order(order("any-link", "spot"))
        found = await adapter.find_order("spot", "BTCUSDT", "1609920528444036608")
    assert ack.order_id == "1609920528435648000"
    assert found is None  # both reads worked and hold nothing yet: pending, not failed
    async with replayed("ip_ban_403.json") as (_, adapter):
        with pytest.raises(ExchangeUnavailable):  # a read that fails is never None
            await adapter.get_positions("linear")


@pytest.mark.parametrize(
    ("code", "outcome", "family"),
    [
        (170007, OutcomeUnknown, None),
        (170146, OutcomeUnknown, None),
        (110079, OutcomeUnknown, None),
        (170035, OutcomeUnknown, None),
        (10000, OutcomeUnknown, None),
        (10016, OutcomeUnknown, None),
        (170234, OutcomeUnknown, None),  # error.mdx Spot Trade "System Error"
        (110072, DuplicateOrderLinkId, None),
        (170141, DuplicateOrderLinkId, None),
        (10014, DuplicateOrderLinkId, None),
        (110007, ExchangeRejected, "balance"),
        (170131, ExchangeRejected, "balance"),
        (10001, ExchangeRejected, "params"),
        (110094, ExchangeRejected, "params"),
        (170140, ExchangeRejected, "params"),
        (10006, ExchangeRejected, "rate_limit"),
        (10005, ExchangeRejected, "permission"),
        (110017, ExchangeRejected, "position"),
        (170193, ExchangeRejected, "params"),
        (110121, ExchangeRejected, "params"),
        (99999, ExchangeRejected, "other"),
    ],
)
async def test_each_create_ret_code_has_its_outcome(code, outcome, family):
    async with replayed("error_answers.json") as (stub, adapter):
        with pytest.raises(outcome) as caught:
            await adapter.create_order(order(f"code-{code}"))
    assert type(caught.value) is outcome and caught.value.ret_code == code
    if family is not None:
        assert caught.value.family == family
    if outcome is DuplicateOrderLinkId:
        assert caught.value.order_link_id == f"code-{code}"
    assert len(stub.requests("/v5/order/create")) == 1  # sent once, whatever came back


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (170147, OutcomeUnknown),
        (170212, OutcomeUnknown),
        (110079, OutcomeUnknown),
        (110001, ExchangeRejected),
        (170213, ExchangeRejected),
        (170191, ExchangeRejected),
    ],
)
async def test_each_cancel_ret_code_has_its_outcome(code, outcome):
    async with replayed("error_answers.json") as (_, adapter):
        with pytest.raises(outcome) as caught:
            await adapter.cancel_order("spot", "BTCUSDT", order_link_id=f"code-{code}")
    assert type(caught.value) is outcome and caught.value.ret_code == code


async def test_an_unchanged_leverage_answer_is_success():
    async with replayed("error_answers.json") as (_, adapter):
        assert await adapter.set_leverage("linear", "BTCUSDT", Decimal(10)) is None


async def test_an_ip_ban_is_unavailable_for_ten_minutes_on_reads_and_writes():
    async with replayed("ip_ban_403.json") as (stub, adapter):
        with pytest.raises(ExchangeUnavailable) as read:
            await adapter.get_position("linear", "BTCUSDT")
        with pytest.raises(ExchangeUnavailable) as write:
            await adapter.create_order(order("banned"))
    for caught in (read.value, write.value):
        assert (caught.http_status, caught.retry_at) == (403, NOW + timedelta(minutes=10))
    assert len(stub.requests("/v5/order/create")) == 1


@pytest.mark.parametrize(
    "risk",
    [
        {},
        {"priceLimitRatioX": "0.03", "priceLimitRatioY": "0.02"},  # X above Y: the formula promises nothing
        {"priceLimitRatioX": "", "priceLimitRatioY": "0.02"},
        {"priceLimitRatioX": "NaN", "priceLimitRatioY": "0.02"},
        {"priceLimitRatioX": "-0.01", "priceLimitRatioY": "0.02"},
        {"priceLimitRatioX": "0.01"},
        {"priceLimitRatioX": None, "priceLimitRatioY": None},
    ],
)
def test_a_risk_pair_that_promises_no_margin_leaves_the_band_to_be_read(risk: dict) -> None:
    assert band_margin({"riskParameters": risk}) is None
