"""The paper exchange's matching engine and account: fills, resting orders, fees, balances, Bybit's refusals."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from pybit.exceptions import InvalidRequestError

from pilot.core.valuation import liquidation_price
from pilot.paper import start_paper_exchange
from tests.exchange.conftest import raw_session
from tests.scenarios import article_scenario


def default_scenario() -> dict:
    """The scenario these tests' figures assume: the article's (BTCUSDT step 0.00001), not the packaged one."""
    return article_scenario()


def code_of(call, **params) -> int:
    with pytest.raises(InvalidRequestError) as caught:
        call(**params)
    return caught.value.status_code


def order(
    session, symbol="BTCUSDT", side="Buy", qty="0.00031", price="80300", tif="IOC", category="linear", **extra
):
    return session.place_order(
        category=category,
        symbol=symbol,
        side=side,
        orderType="Limit",
        qty=qty,
        price=price,
        timeInForce=tif,
        **extra,
    )["result"]


@pytest.fixture
def thin_book():
    """BTCUSDT with three ask levels of 0.001 BTC each, 1 tick apart."""
    scenario = default_scenario()
    scenario["prices"]["BTCUSDT"]["depth"] = {"levels": 3, "size": "0.001"}
    with start_paper_exchange(scenario) as paper:
        yield paper


def test_ioc_fills_level_by_level_up_to_its_limit_and_cancels_the_rest(thin_book):
    session = raw_session(thin_book)
    placed = order(session, qty="0.005", price="80220.2")
    sim_order = thin_book.orders()[0]
    assert sim_order.order_id == placed["orderId"]
    assert [(e.price, e.qty) for e in thin_book.executions()] == [
        (Decimal("80220.1"), Decimal("0.001")),
        (Decimal("80220.2"), Decimal("0.001")),
    ]
    assert (sim_order.status, sim_order.cum_exec_qty) == ("Cancelled", Decimal("0.002"))
    assert thin_book.position("BTCUSDT").avg_price == Decimal("80220.15")


def test_fok_that_cannot_fill_completely_fills_nothing(thin_book):
    order(raw_session(thin_book), qty="0.005", price="80220.2", tif="FOK")
    assert thin_book.orders()[0].reject_reason == "EC_CancelForNoFullFill" and thin_book.executions() == []


def test_gtc_rests_then_fills_as_maker_when_the_price_crosses(paper, session):
    order(session, qty="0.0002", price="80000.0", tif="GTC")
    assert len(paper.open_orders()) == 1
    paper.set_prices("BTCUSDT", bid="79990.0", ask="79999.9")
    fill = paper.executions()[0]
    assert (fill.price, fill.is_maker, fill.fee) == (
        Decimal("80000.0"),
        True,
        Decimal("80000.0") * Decimal("0.0002") * Decimal("0.0002"),
    )
    assert paper.open_orders() == [] and paper.position("BTCUSDT").size == Decimal("0.0002")


def test_post_only_that_would_take_liquidity_is_cancelled(paper, session):
    order(session, qty="0.0002", price="80300.0", tif="PostOnly")
    assert paper.orders()[0].reject_reason == "EC_PostOnlyWillTakeLiquidity" and paper.executions() == []


def test_taker_fee_is_charged_to_the_wallet(paper, session):
    order(session)
    assert paper.balance("USDT") == Decimal(1000) - Decimal("0.00031") * Decimal("80220.1") * Decimal(
        "0.00055"
    )


def test_reduce_only_is_capped_at_the_position_and_refused_when_it_would_increase(paper, session):
    assert (
        code_of(
            session.place_order,
            category="linear",
            symbol="BTCUSDT",
            side="Sell",
            orderType="Limit",
            qty="0.0001",
            price="80000",
            timeInForce="IOC",
            reduceOnly=True,
        )
        == 110017
    )
    order(session)
    assert (
        code_of(
            session.place_order,
            category="linear",
            symbol="BTCUSDT",
            side="Buy",
            orderType="Limit",
            qty="0.0001",
            price="80300",
            timeInForce="IOC",
            reduceOnly=True,
        )
        == 110017
    )
    order(session, side="Sell", qty="0.001", price="80000", reduceOnly=True)
    assert paper.orders()[-1].qty == Decimal("0.00031") and paper.position("BTCUSDT").size == 0


def test_position_averages_entries_and_reports_the_cores_liquidation_price(paper, session):
    order(session, qty="0.01")
    paper.set_prices("BTCUSDT", bid="81000.0", ask="81000.1")
    order(session, qty="0.01", price="81100")
    position = session.get_positions(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert Decimal(position["avgPrice"]) == (Decimal("80220.1") + Decimal("81000.1")) / 2
    equity = paper.balance("USDT") + (Decimal("81000.05") - Decimal(position["avgPrice"])) * Decimal("0.02")
    expected = liquidation_price(Decimal("0.02"), Decimal("81000.05"), equity, Decimal("0.005"))
    assert expected is not None
    assert Decimal(position["liqPrice"]) == expected.quantize(Decimal("0.1"), rounding="ROUND_HALF_EVEN")


def test_short_position_has_a_liquidation_price_above_the_mark(session):
    order(session, side="Sell", qty="0.1", price="80000")
    position = session.get_positions(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert position["side"] == "Sell" and Decimal(position["liqPrice"]) > Decimal(position["markPrice"])


def test_spot_buy_spends_usdt_and_credits_the_base_coin(paper, session):
    order(session, category="spot", qty="0.001", price="80300")
    assert paper.balance("USDT") == Decimal(1000) - Decimal("0.001") * Decimal("80220.1")
    assert paper.balance("BTC") == Decimal("0.001") * (1 - Decimal("0.00055"))
    assert (
        code_of(
            session.place_order,
            category="spot",
            symbol="BTCUSDT",
            side="Sell",
            orderType="Limit",
            qty="0.01",
            price="80000",
            timeInForce="IOC",
        )
        == 170131
    )


@pytest.mark.parametrize(
    ("category", "qty", "price", "expected"),
    [
        ("linear", "0.000315", "80300", 10001),  # qty off the lot step
        ("linear", "101", "80300", 10001),  # above maxOrderQty
        ("linear", "0.00031", "80300.05", 10001),  # price off the tick
        ("linear", "0.00001", "80300", 110094),  # notional below minNotionalValue
        ("linear", "1", "80300", 110007),  # margin: 80,000 USDT at 10x from 1,000
        ("spot", "0.0000001", "80300", 170137),
        ("spot", "0.00031", "80300.05", 170134),
        ("spot", "0.00001", "80300", 170140),
        ("spot", "0.1", "80300", 170131),
        ("spot", "0.0001", "90000", 170193),  # spot buy above the price band: rejected
    ],
)
def test_order_rules_are_refused_with_bybits_codes(session, category, qty, price, expected):
    assert (
        code_of(
            session.place_order,
            category=category,
            symbol="BTCUSDT",
            side="Buy",
            orderType="Limit",
            qty=qty,
            price=price,
            timeInForce="IOC",
        )
        == expected
    )


def test_duplicate_order_link_id_is_refused(session):
    order(session, orderLinkId="same")
    assert (
        code_of(
            session.place_order,
            category="linear",
            symbol="BTCUSDT",
            side="Buy",
            orderType="Limit",
            qty="0.00031",
            price="80300",
            orderLinkId="same",
        )
        == 110072
    )


def test_read_only_key_cannot_trade():
    scenario = default_scenario()
    scenario["apiKeys"].append({"key": "readonly1", "secret": "readonly-secret", "readOnly": True})
    with start_paper_exchange(scenario) as paper:
        session = raw_session(paper, "readonly1", "readonly-secret")
        assert session.get_api_key_information()["result"]["readOnly"] == 1
        assert (
            code_of(
                session.place_order,
                category="linear",
                symbol="BTCUSDT",
                side="Buy",
                orderType="Limit",
                qty="0.00031",
                price="80300",
            )
            == 10005
        )


def test_random_walk_is_deterministic_per_seed():
    scenario = copy.deepcopy(default_scenario())
    scenario["prices"]["BTCUSDT"] = {"walk": {"start": "80000", "volatilityPct": "0.5", "seed": 7}}
    quotes = []
    for _ in range(2):
        with start_paper_exchange(scenario) as paper:
            session = raw_session(paper)
            for _ in range(3):
                paper.tick()
            quotes.append(
                session.get_tickers(category="linear", symbol="BTCUSDT")["result"]["list"][0]["bid1Price"]
            )
    assert quotes[0] == quotes[1] and quotes[0] != "80000.0"
