"""OKX's recorded and documented answers, replayed to the OKX adapter on loopback: what Pilot concludes.

Each fixture in tests/fixtures/okx/ names its source (NautilusTrader's OKX test data, ccxt's recorded
responses, OKX's docs-v5 examples) and says what was composed around the recorded answers. The replay stub
(pilot.exchange.bybit.replay: recorded bodies by path and parameters, whatever the venue) answers them;
nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.core.venues import StopScope
from pilot.exchange.bybit.recording import load
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.errors import (
    DuplicateOrderLinkId,
    ExchangeRejected,
    ExchangeUnavailable,
    OutcomeUnknown,
    UnsupportedPositionMode,
)
from pilot.exchange.models import OrderRequest
from pilot.exchange.okx import payloads
from pilot.exchange.okx.adapter import OkxExchange
from pilot.exchange.okx.markets import Named
from pilot.keys.permissions import check_permissions
from tests.venue import connect_okx

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "okx"


@asynccontextmanager
async def replayed(*names: str) -> AsyncIterator[tuple[ReplayServer, OkxExchange]]:
    """The exchanges of the fixtures `names`, replayed together, and the OKX adapter on them."""
    exchanges = [exchange for name in names for exchange in load(FIXTURES / name)[1]]
    with ReplayServer(exchanges).start() as stub:
        adapter = connect_okx(stub.url)
        try:
            yield stub, adapter
        finally:
            await adapter.close()


def test_every_fixture_names_its_source() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        fixture = json.loads(path.read_text())
        assert fixture["source"] and fixture["summary"] and fixture["exchanges"], path.name


async def test_a_perpetual_s_rules_are_in_coins_converted_from_contracts_exactly() -> None:
    async with replayed("instruments_swap.json") as (_, okx):
        btc = await okx.get_instrument("linear", "BTC-USDT")
        eth = await okx.get_instrument("linear", "ETH-USDT")
    # ctVal 0.01 BTC: a lot of 0.01 contract is 0.0001 BTC; maxLmtSz 100000000 contracts is 1000000 BTC
    assert (btc.qty_step, btc.min_qty, btc.max_qty) == (
        Decimal("0.0001"),
        Decimal("0.0001"),
        Decimal("1000000"),
    )
    assert (btc.tick_size, btc.max_leverage, btc.base, btc.quote_coin) == (Decimal("0.1"), 100, "BTC", "USDT")
    assert btc.maintenance_margin_rate == Decimal("0.03")  # the first tier's
    assert btc.min_notional == 0  # OKX sets no minimum order value
    assert (eth.qty_step, eth.tick_size, eth.base) == (Decimal("0.001"), Decimal("0.01"), "ETH")
    assert eth.maintenance_margin_rate == Decimal("0.01")  # no tier answered: the cautious default


async def test_an_inverse_perpetual_is_no_linear_market_of_pilot_s() -> None:
    async with replayed("instruments_swap.json") as (_, okx):
        with pytest.raises(ExchangeRejected) as refused:
            await okx.get_instrument("linear", "BTC-USD")
        assert okx.listed("linear", "BTC-USD") is False
    assert refused.value.unlisted


async def test_a_symbol_in_okx_s_perpetual_spelling_names_no_market_and_nothing_is_asked() -> None:
    async with replayed("instruments_swap.json") as (stub, okx):
        with pytest.raises(ExchangeRejected) as refused:
            await okx.get_instrument("linear", "BTC-USDT-SWAP")  # Pilot's name is BTC-USDT
    assert refused.value.unlisted and stub.requests() == []


async def test_a_spot_pair_s_rules_are_its_own_coins() -> None:
    async with replayed("instruments_spot.json") as (_, okx):
        pair = await okx.get_instrument("spot", "BTC-USD")
    assert (pair.qty_step, pair.min_qty, pair.tick_size) == (
        Decimal("0.00000001"),
        Decimal("0.00001"),
        Decimal("0.1"),
    )
    assert (pair.base, pair.quote_coin, pair.max_leverage, pair.maintenance_margin_rate) == (
        "BTC",
        "USD",
        1,
        0,
    )


async def test_the_documented_key_with_withdraw_is_refused_and_the_account_s_long_short_mode_too() -> None:
    async with replayed("account_config_documented.json", "instruments_swap.json") as (_, okx):
        info = await okx.get_api_key_info()
        with pytest.raises(UnsupportedPositionMode) as mode:
            await okx.get_position("linear", "BTC-USDT")
    verdict = check_permissions(info)
    assert verdict.granted == ("OKX.read_only", "OKX.trade", "OKX.withdraw")
    assert verdict.disallowed == ("OKX.withdraw",) and not verdict.read_only and not verdict.ip_bound
    assert mode.value.symbol == "BTC-USDT" and not mode.value.per_symbol  # OKX's mode is the account's


async def test_long_and_short_legs_are_refused_with_what_they_hold_together() -> None:
    async with replayed("positions_long_short.json") as (_, okx):
        info = await okx.get_api_key_info()
        with pytest.raises(UnsupportedPositionMode) as legs:
            await okx.get_positions("linear")
    assert check_permissions(info).accepted and check_permissions(info).ip_bound
    assert legs.value.symbol == "BTC-USDT"
    assert legs.value.gross_size == Decimal("0.07")  # 5 + 2 contracts of 0.01 BTC


async def test_a_net_position_is_in_coins_with_its_whole_stop() -> None:
    async with replayed("positions_net_close_order_algo.json") as (_, okx):
        position = await okx.get_position("linear", "BTC-USDT")
        [listed] = await okx.get_positions("linear")
    assert (position.size, position.entry_price, position.leverage) == (Decimal("0.0005"), 10000, 10)
    assert position.stop_loss == Decimal("50000")  # closeOrderAlgo with closeFraction 1
    assert (listed.symbol, listed.mark_price, listed.liq_price, listed.settle_coin) == (
        "BTC-USDT",
        10000,
        Decimal("9000"),
        "BTC",
    )


async def test_open_orders_are_the_ordinary_ones_and_the_algo_orders_in_the_port_s_kinds() -> None:
    async with replayed("open_orders_and_algos.json", "instruments_swap.json") as (_, okx):
        orders = await okx.get_open_orders("linear")
    by_id = {order.order_id: order for order in orders}
    entry = by_id["2234567890123456789"]
    assert (entry.symbol, entry.qty, entry.price, entry.status) == ("ETH-USDT", Decimal("0.001"), 2300, "New")
    assert (entry.stop_loss, entry.take_profit, entry.position_idx) == (1500, 2600, 1)  # a long leg
    assert entry.is_ordinary and entry.order_link_id == "O-attached-entry"  # untrusted text, as OKX wrote it
    whole = by_id["algo:close-frac-algo"]
    assert (whole.stop_order_type, whole.trigger_price, whole.side) == ("StopLoss", 50000, "Sell")
    assert whole.is_stop_loss and not whole.is_partial_stop_loss and whole.trigger_direction == 2
    trigger = by_id["algo:123456789"]
    assert trigger.is_conditional and not trigger.reduce_only
    assert (trigger.qty, trigger.trigger_price, trigger.price) == (Decimal("0.01"), 40000, 40000)


async def test_the_balance_is_the_account_s_usd_equity_and_each_coin_s_cash() -> None:
    async with replayed("balance.json") as (_, okx):
        balance = await okx.get_balance()
    assert balance.total_equity_usd == Decimal("99.88870288820581")
    assert balance.available_usd is None  # single-currency margin: OKX gives no account-level availEq
    [usdt] = balance.coins
    assert (usdt.coin, usdt.wallet_balance, usdt.free) == (
        "USDT",
        Decimal("94.42612990333333"),
        Decimal("94.42612990333333"),
    )


async def test_mark_price_band_and_book_as_recorded() -> None:
    async with replayed("market_data.json", "instruments_swap.json", "instruments_spot.json") as (_, okx):
        band = await okx.get_price_band("linear", "BTC-USDT")
        book = await okx.get_orderbook("spot", "BTC-USD", 3)
    assert (band.buy_limit, band.sell_limit, band.outside) == (
        Decimal("17057.9"),
        Decimal("16388.9"),
        "reject",
    )
    assert (book.bids[0].price, book.bids[0].size) == (Decimal("41006.7"), Decimal("0.48792100"))
    assert (book.asks[0].price, len(book.asks)) == (Decimal("41006.8"), 3)


def _request(link: str) -> OrderRequest:
    return OrderRequest("linear", "BTC-USDT", "Buy", Decimal("0.0002"), Decimal("50000"), "IOC", link)


async def test_an_accepted_create_is_acknowledged_with_okx_s_order_id_and_sent_in_contracts() -> None:
    async with replayed("order_answers.json") as (stub, okx):
        ack = await okx.create_order(_request("6b9ad766b55dBCDE63969a1144bfb943"))
    assert (ack.order_id, ack.order_link_id) == ("2896576259728695296", "6b9ad766b55dBCDE63969a1144bfb943")
    [sent] = stub.requests("/api/v5/trade/order")
    assert sent.params["sz"] == "0.02" and sent.params["ordType"] == "ioc"  # 0.0002 BTC in 0.01 BTC contracts
    assert (sent.params["tdMode"], sent.params["instId"]) == ("cross", "BTC-USDT-SWAP")


@pytest.mark.parametrize(
    ("link", "outcome", "code", "family"),
    [
        ("Ousdcnotactive1", ExchangeRejected, 54109, "other"),
        ("nofunds1", ExchangeRejected, 51008, "balance"),
        ("badkey1", ExchangeRejected, 50111, "auth"),
        ("toofast1", ExchangeRejected, 50011, "rate_limit"),
        ("duplicated1", DuplicateOrderLinkId, 51016, None),
        ("timedout1", OutcomeUnknown, 50004, None),
    ],
)
async def test_each_create_answer_is_one_of_the_three_outcomes(link, outcome, code, family) -> None:
    async with replayed("order_answers.json") as (stub, okx):
        with pytest.raises(outcome) as failed:
            await okx.create_order(_request(link))
    assert type(failed.value) is outcome and failed.value.ret_code == code
    if family is not None:
        assert failed.value.family == family
    assert len(stub.requests("/api/v5/trade/order")) == 1  # sent once, never resent


async def test_a_rate_limited_read_is_unavailable_not_refused() -> None:
    async with replayed("order_answers.json") as (_, okx):
        with pytest.raises(ExchangeUnavailable):
            await okx.get_balance()


async def test_the_documented_spot_market_buy_in_the_quote_coin_and_its_fill() -> None:
    fixture = json.loads((FIXTURES / "spot_market_buy_docs.json").read_text())
    row = fixture["exchanges"][0]["answer"]["data"][0]
    order = payloads.exchange_order(Named("spot", "BTC-USDT"), row, payloads.contract(row))
    assert (order.qty, order.cum_exec_qty, order.avg_price) == (Decimal("0.00192834"),) * 2 + (
        Decimal("51858"),
    )
    assert (order.status, order.order_type, order.cum_exec_fee, order.fee_coin) == (
        "Filled",
        "Market",
        Decimal("0.00000192834"),
        "BTC",
    )
    async with replayed("spot_market_buy_docs.json") as (_, okx):
        [fill] = await okx.get_executions("spot", "BTC-USDT", "680800019749904384")
    assert (fill.exec_qty, fill.exec_price, fill.exec_fee, fill.fee_coin) == (
        Decimal("0.00192834"),
        Decimal("51858"),
        Decimal("0.00000192834"),  # OKX's -0.00000192834: a fee charged, positive in Pilot's words
        "BTC",
    )
    assert fill.is_fill and fill.side == "Buy"


def test_a_stop_sent_with_an_order_asks_okx_for_the_order_s_size_only() -> None:
    request = OrderRequest(
        "linear",
        "BTC-USDT",
        "Buy",
        Decimal("0.0003"),
        Decimal("80000"),
        "IOC",
        "pilot-" + "0" * 30,
        stop_loss=Decimal("79000"),
        stop_scope=StopScope.ORDER,
    )
    body = payloads.order_body(
        request, "BTC-USDT-SWAP", payloads.contract({"instType": "SWAP", "ctVal": "0.001"})
    )
    assert body["attachAlgoOrds"] == [{"slTriggerPx": "79000", "slOrdPx": "-1", "slTriggerPxType": "last"}]
    assert body["sz"] == "0.3" and body["clOrdId"].startswith("pilot") and len(body["clOrdId"]) == 26
    whole = replace(request, stop_scope=StopScope.POSITION)  # not what OKX does with a stop: never sent so
    with pytest.raises(ValueError):
        payloads.order_body(whole, "BTC-USDT-SWAP", payloads.contract({"instType": "SWAP", "ctVal": "0.001"}))


def test_a_spot_tp_sl_algo_is_the_coin_s_stop_and_a_spot_trigger_order_a_conditional_one() -> None:
    # The fields of OKX's docs-v5 "GET / Algo order list" response (instType, ordType, side, sz, tdMode,
    # slTriggerPx, slOrdPx -1: at market), on spot: what a spot order's attachAlgoOrds become, and a trigger.
    name = Named("spot", "BTC-USDT")
    spot = payloads.contract({"instType": "SPOT"})
    tpsl = {
        "instType": "SPOT",
        "instId": "BTC-USDT",
        "algoId": "681096944655273984",
        "ordType": "conditional",
        "side": "sell",
        "sz": "0.0003",
        "tdMode": "cash",
        "reduceOnly": "false",
        "slTriggerPx": "79000",
        "slOrdPx": "-1",
        "tpTriggerPx": "",
        "tpOrdPx": "",
        "state": "live",
        "cTime": "1724751378980",
        "uTime": "1724751378980",
    }
    stop = payloads.algo_order(name, tpsl, spot)
    assert (stop.stop_order_type, stop.order_id) == ("tpslOrder", "algo:681096944655273984")
    assert stop.is_spot_stop_sell and stop.is_untriggered
    assert (stop.trigger_price, stop.qty) == (Decimal("79000"), Decimal("0.0003"))
    trigger = {**tpsl, "ordType": "trigger", "triggerPx": "78000", "ordPx": "-1", "slTriggerPx": ""}
    assert payloads.algo_order(name, trigger, spot).stop_order_type == "Stop"
