"""The Bybit adapter against the paper exchange: the Exchange port, the three outcomes, exactly-once writes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.errors import (
    DuplicateOrderLinkId,
    ExchangeError,
    ExchangeRejected,
    ExchangeUnavailable,
    OutcomeUnknown,
)
from pilot.exchange.models import OrderRequest
from pilot.paper import start_paper_exchange
from tests.scenarios import ARTICLE
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio
CREATE = "/v5/order/create"


def btc_buy(link: str, qty: str = "0.00031", price: str = "80300", tif: str = "IOC", **extra) -> OrderRequest:
    return OrderRequest(
        category="linear",
        symbol="BTCUSDT",
        side="Buy",
        qty=Decimal(qty),
        price=Decimal(price),
        time_in_force=tif,
        order_link_id=link,
        **extra,
    )


async def test_reads_map_bybit_answers_to_pilot_models(exchange):
    rules = await exchange.get_instrument("linear", "BTCUSDT")
    assert (rules.tick_size, rules.qty_step, rules.min_notional) == (Decimal("0.1"), Decimal("0.00001"), 1)
    assert rules.maintenance_margin_rate == Decimal("0.005") and rules.max_leverage == 100
    spot_rules = await exchange.get_instrument("spot", "BTCUSDT")
    assert spot_rules.qty_step == Decimal("0.000001") and spot_rules.maintenance_margin_rate == 0
    touch = await exchange.get_touch("linear", "BTCUSDT")
    assert (touch.bid, touch.ask, touch.mark) == (Decimal("80220.0"), Decimal("80220.1"), Decimal("80220.0"))
    spot_touch = await exchange.get_touch("spot", "BTCUSDT")
    assert spot_touch.mark == Decimal("80220.05")
    assert (await exchange.get_ticker("spot", "SOLUSDT")).mark is None
    book = await exchange.get_orderbook("linear", "ETHUSDT", depth=2)
    assert [level.price for level in book.asks] == [Decimal("3100.01"), Decimal("3100.02")]
    balance = await exchange.get_balance()
    assert balance.total_equity_usd == 1000 and balance.coins[0].coin == "USDT"
    info = await exchange.get_api_key_info()
    assert not info.read_only and info.permissions["Spot"] == ("SpotTrade",)
    assert await exchange.get_position("linear", "SOLUSDT") == (
        await exchange.get_position("linear", "SOLUSDT")
    )
    assert (await exchange.get_position("linear", "SOLUSDT")).size == 0


async def test_instrument_rules_are_cached_per_instance(paper, exchange):
    await exchange.get_instrument("linear", "ETHUSDT")
    await exchange.get_instrument("linear", "ETHUSDT")
    assert paper.request_count("/v5/market/instruments-info") == 1


async def test_order_round_trip_through_the_port(paper, exchange):
    ack = await exchange.create_order(btc_buy("trip-1"))
    assert ack.order_link_id == "trip-1"
    position = await exchange.get_position("linear", "BTCUSDT")
    assert (position.size, position.entry_price) == (Decimal("0.00031"), Decimal("80220.1"))
    found = await exchange.find_order("linear", "BTCUSDT", "trip-1")
    assert found is not None and found.status == "Filled" and found.avg_price == Decimal("80220.1")
    fills = await exchange.get_executions("linear", "BTCUSDT", ack.order_id)
    assert [fill.exec_qty for fill in fills] == [Decimal("0.00031")]
    positions = await exchange.get_positions("linear")
    assert [(p.symbol, p.size) for p in positions] == [("BTCUSDT", Decimal("0.00031"))]
    assert positions[0].liq_price is None  # 25 USDT long on 1,000 USDT equity: never liquidated

    resting = await exchange.create_order(btc_buy("rest-1", qty="0.0002", price="79000.0", tif="GTC"))
    assert [o.order_id for o in await exchange.get_open_orders("linear", "BTCUSDT")] == [resting.order_id]
    assert await exchange.cancel_order("linear", "BTCUSDT", order_link_id="rest-1") == resting.order_id
    history = await exchange.get_order_history("linear", "BTCUSDT", order_link_id="rest-1")
    assert [o.status for o in history] == ["Cancelled"]
    assert await exchange.find_order("linear", "BTCUSDT", "never-sent") is None


async def test_unchanged_leverage_is_not_an_error(paper, exchange):
    await exchange.set_leverage("linear", "BTCUSDT", Decimal(5))
    await exchange.set_leverage("linear", "BTCUSDT", Decimal(5))
    assert paper.position("BTCUSDT").leverage == 5


@pytest.mark.parametrize(
    ("request_", "ret_code", "family"),
    [
        (btc_buy("bal", qty="1"), 110007, "balance"),
        (btc_buy("tick", price="80300.05"), 10001, "params"),
        (btc_buy("ro", reduce_only=True), 110017, "position"),
    ],
)
async def test_exchange_refusals_carry_code_and_family(exchange, request_, ret_code, family):
    with pytest.raises(ExchangeRejected) as caught:
        await exchange.create_order(request_)
    assert (caught.value.ret_code, caught.value.family) == (ret_code, family)
    assert caught.value.untrusted_text


async def test_a_duplicate_client_id_means_the_order_exists_and_is_looked_up(exchange):
    await exchange.create_order(btc_buy("dup"))
    with pytest.raises(DuplicateOrderLinkId) as caught:
        await exchange.create_order(btc_buy("dup"))
    assert isinstance(caught.value, OutcomeUnknown)  # never "nothing executed"
    assert (caught.value.ret_code, caught.value.order_link_id) == (110072, "dup")
    assert (await exchange.find_order("linear", "BTCUSDT", "dup")) is not None


@pytest.mark.parametrize(
    ("kind", "outcome", "created"),
    [
        ("drop", OutcomeUnknown, True),
        ("http_5xx", OutcomeUnknown, False),
        ("non_json", OutcomeUnknown, True),
        ("processing", OutcomeUnknown, False),
        ("rate_limit", ExchangeRejected, False),
        ("http_4xx", ExchangeUnavailable, False),
        ("drip", OutcomeUnknown, True),
        ("latency", OutcomeUnknown, None),  # the exchange processes after the client gave up
    ],
)
async def test_every_create_fault_sends_exactly_one_request(paper, exchange, kind, outcome, created):
    paper.add_fault(CREATE, kind, delay_ms=600, interval_ms=500)
    with pytest.raises(outcome):
        await exchange.create_order(btc_buy(f"fault-{kind}"))
    assert paper.request_count(CREATE) == 1
    if created is not None:
        assert [o.order_link_id for o in paper.orders()] == (["fault-" + kind] if created else [])


async def test_a_stale_timestamp_is_refused_once_and_not_resent(paper, exchange):
    paper.set_clock_offset(60_000)
    with pytest.raises(ExchangeRejected) as caught:
        await exchange.create_order(btc_buy("stale"))
    assert (caught.value.ret_code, caught.value.family) == (10002, "auth")
    assert paper.request_count(CREATE) == 1 and paper.orders() == []


async def test_rate_limit_is_rejected_on_writes_and_unavailable_on_reads(paper, exchange):
    paper.add_fault(CREATE, "rate_limit")
    paper.add_fault("/v5/position/list", "rate_limit")
    with pytest.raises(ExchangeRejected) as write:
        await exchange.create_order(btc_buy("rl"))
    assert write.value.family == "rate_limit" and write.value.retry_at is not None
    with pytest.raises(ExchangeUnavailable) as read:
        await exchange.get_position("linear", "BTCUSDT")
    assert read.value.retry_at is not None


async def test_spot_processing_answer_is_unknown_and_the_order_exists(paper, exchange):
    paper.add_fault(CREATE, "processing")
    request = OrderRequest("spot", "BTCUSDT", "Buy", Decimal("0.0001"), Decimal("80300"), "IOC", "spot-proc")
    with pytest.raises(OutcomeUnknown):
        await exchange.create_order(request)
    assert (await exchange.find_order("spot", "BTCUSDT", "spot-proc")) is not None


async def test_read_timeouts_and_dropped_reads_are_unavailable(paper, exchange):
    paper.add_fault("/v5/market/tickers", "drip", interval_ms=500)
    with pytest.raises(ExchangeUnavailable):
        await exchange.get_touch("linear", "BTCUSDT")
    paper.add_fault("/v5/account/wallet-balance", "drop")
    with pytest.raises(ExchangeUnavailable):
        await exchange.get_balance()


async def test_connection_refused_is_unavailable():
    with start_paper_exchange(ARTICLE) as paper:
        url, key, secret = paper.url, paper.api_key, paper.api_secret
    closed = connect_adapter(url, key, secret, timeout_seconds=0.3)
    with pytest.raises(ExchangeUnavailable):
        await closed.create_order(btc_buy("nobody-home"))
    await closed.close()


@pytest.mark.parametrize(
    ("environment", "url"),
    [
        ("bybit-demo", "https://api.bybit.com"),
        ("bybit-demo", "https://api.bytick.com"),
        ("bybit-testnet", "https://api-demo.bybit.com"),
        ("paper", "https://api.bybit.com"),
        ("paper", "http://10.0.0.1:8080"),
        ("paper", "http://127.0.0.1"),
        ("bybit", None),  # mainnet's host is named, never defaulted
        ("bybit", "https://api.bybit.co"),
        ("bybit", "http://api.bybit.com"),
        ("bybit", "https://api.bybit.com:8443"),
        ("bybit", "http://127.0.0.1:8080"),
    ],
)
def test_mainnet_and_unlisted_urls_are_refused(environment, url):
    with pytest.raises(ValueError):
        BybitExchange.connect(environment, api_key="k", api_secret="s", base_url=url)


def test_listed_urls_are_accepted():
    for environment, url in [
        ("bybit-demo", None),
        ("bybit-testnet", "https://api-testnet.bybit.com/"),
        ("paper", "http://localhost:9"),
        ("paper", "http://[::1]:9"),
    ]:
        assert BybitExchange.connect(environment, api_key="k", api_secret="s", base_url=url).base_url


async def test_secrets_never_appear_in_adapter_errors(paper, exchange):
    paper.add_fault(CREATE, "drop")
    paper.add_fault(CREATE, "http_5xx", nth=2)
    paper.add_fault(CREATE, "non_json", nth=3)
    paper.add_fault(CREATE, "drip", nth=4, interval_ms=500)
    errors: list[ExchangeError] = []
    for index in range(6):
        try:
            await exchange.create_order(btc_buy("leak", qty="1") if index == 5 else btc_buy(f"leak-{index}"))
        except ExchangeError as error:
            errors.append(error)
    wrong = connect_adapter(paper, api_secret="x" + paper.api_secret)
    try:
        await wrong.get_balance()
    except ExchangeError as error:
        errors.append(error)
    await wrong.close()
    assert len(errors) == 6
    for error in errors:
        chain = [error, error.__cause__, error.__context__]
        text = " ".join(f"{e!s} {e!r} {getattr(e, 'untrusted_text', '')}" for e in chain if e is not None)
        assert paper.api_key not in text and paper.api_secret not in text and "X-BAPI" not in text
    assert paper.api_secret not in repr(exchange) and paper.api_key not in repr(exchange)
