"""The paper exchange answers as Bybit does where Pilot's safety depends on it: categories, cursors, empty
fields, position modes, history retention, the price band per category and the acknowledgement lag."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from pybit.exceptions import InvalidRequestError

from pilot.exchange.errors import UnsupportedPositionMode
from pilot.exchange.models import OrderRequest
from pilot.paper import start_paper_exchange
from tests.exchange.conftest import TIMEOUT_SECONDS, raw_session
from tests.exchange.test_paper_matching import code_of, default_scenario, order
from tests.venue import connect_adapter

DAY_MS = 86_400_000


@pytest.mark.parametrize("category", ["inverse", "option"])
def test_every_category_bybit_accepts_is_answered_with_empty_lists(session, category):
    instruments = session.get_instruments_info(category=category, baseCoin="BTC")["result"]
    assert (instruments["category"], instruments["list"], instruments["nextPageCursor"]) == (category, [], "")
    assert session.get_tickers(category=category, baseCoin="BTC")["result"]["list"] == []
    assert session.get_positions(category=category)["result"]["list"] == []
    assert session.get_open_orders(category=category)["result"]["list"] == []
    assert session.get_order_history(category=category)["result"]["list"] == []
    assert session.get_executions(category=category)["result"]["list"] == []


def test_an_unknown_category_gets_bybits_illegal_category(session):
    with pytest.raises(InvalidRequestError) as caught:
        session.get_instruments_info(category="futures")
    assert (caught.value.status_code, caught.value.message) == (10001, "Illegal category")
    assert code_of(session.get_positions, category="spot", symbol="BTCUSDT") == 10001


def test_order_lists_carry_a_cursor_on_their_last_page_and_following_it_ends_the_list(session):
    order(session, qty="0.0002", price="79000", tif="GTC")
    first = session.get_open_orders(category="linear", symbol="BTCUSDT")["result"]
    assert len(first["list"]) == 1 and first["nextPageCursor"]  # as real Bybit: non-empty on the only page
    after = session.get_open_orders(category="linear", symbol="BTCUSDT", cursor=first["nextPageCursor"])
    assert (after["result"]["list"], after["result"]["nextPageCursor"]) == ([], "")
    listed = session.get_instruments_info(category="linear")["result"]
    assert len(listed["list"]) == 3 and listed["nextPageCursor"] == ""  # instruments end with ""


def test_unset_prices_are_empty_strings_as_bybit_writes_them(session):
    order(session, qty="0.0002", price="79000", tif="GTC")
    resting = session.get_open_orders(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert [resting[k] for k in ("avgPrice", "triggerPrice", "takeProfit", "stopLoss")] == ["", "", "", ""]
    assert resting["cumFeeDetail"] == {} and resting["lastPriceOnCreated"] == "80220.0"
    flat = session.get_positions(category="linear", symbol="SOLUSDT")["result"]["list"][0]
    assert [flat[k] for k in ("side", "positionValue", "unrealisedPnl", "liqPrice", "takeProfit")] == [""] * 5
    order(session)
    (filled,) = session.get_order_history(category="linear", symbol="BTCUSDT")["result"]["list"]
    assert filled["cumFeeDetail"] == {"USDT": filled["cumExecFee"]} and filled["avgPrice"] == "80220.1"


def test_a_hedge_position_index_in_one_way_mode_is_refused(session):
    assert (
        code_of(
            session.place_order,
            category="linear",
            symbol="BTCUSDT",
            side="Buy",
            orderType="Limit",
            qty="0.00031",
            price="80300",
            positionIdx=1,
        )
        == 10001
    )
    assert order(session, positionIdx=0)["orderId"]


def test_cancelled_orders_leave_history_after_a_day_and_filled_ones_stay(paper, session):
    order(session, orderLinkId="kept")
    order(session, qty="0.0002", price="79000", tif="GTC", orderLinkId="gone")
    session.cancel_order(category="linear", symbol="BTCUSDT", orderLinkId="gone")
    paper.set_clock_offset(DAY_MS + 60_000)  # a day later on the exchange's clock
    later = raw_session(paper)
    later.recv_window = 2 * DAY_MS  # so this client's (unmoved) timestamps stay inside the window
    history = later.get_order_history(category="linear", symbol="BTCUSDT")["result"]["list"]
    assert [row["orderLinkId"] for row in history] == ["kept"]
    assert code_of(later.get_order_history, category="linear", startTime=1, endTime=8 * DAY_MS) == 10001


def test_the_price_band_rejects_on_spot_and_clamps_on_linear(paper, session):
    band = session.get_price_limit(category="linear", symbol="BTCUSDT")["result"]
    assert Decimal(band["buyLmt"]) == Decimal("84231.0")  # mark 80220.0 x 1.05, floored to the tick
    placed = order(session, qty="0.0001", price="90000")  # far above the band: moved to its edge, filled
    (sim_order,) = paper.orders()
    assert (sim_order.order_id, sim_order.price, sim_order.status) == (
        placed["orderId"],
        Decimal("84231.0"),
        "Filled",
    )
    assert (
        code_of(
            session.place_order,
            category="spot",
            symbol="BTCUSDT",
            side="Buy",
            orderType="Limit",
            qty="0.0001",
            price="90000",
            timeInForce="IOC",
        )
        == 170193
    )


@pytest.mark.anyio
async def test_an_order_inside_its_acknowledgement_lag_is_found_only_after_the_lag(paper, exchange):
    paper.set_ack_lag(2)
    request = OrderRequest("linear", "BTCUSDT", "Buy", Decimal("0.0002"), Decimal("79000"), "GTC", "lagging")
    ack = await exchange.create_order(request)
    assert await exchange.get_open_orders("linear", "BTCUSDT") == []  # read 1: acknowledged, not visible
    assert await exchange.find_order("linear", "BTCUSDT", "lagging") is not None  # reads 2-3: it shows
    assert [o.order_id for o in await exchange.get_open_orders("linear", "BTCUSDT")] == [ack.order_id]


def hedge_scenario() -> dict:
    scenario = copy.deepcopy(default_scenario())
    scenario["positions"] = [
        {"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "80000", "positionIdx": 1},
        {"symbol": "BTCUSDT", "side": "Sell", "size": "0.03", "avgPrice": "80100", "positionIdx": 2},
    ]
    return scenario


@pytest.mark.anyio
async def test_a_hedge_mode_account_is_refused_by_the_adapter_end_to_end():
    with start_paper_exchange(hedge_scenario()) as paper:
        legs = raw_session(paper).get_positions(category="linear", symbol="BTCUSDT")["result"]["list"]
        assert [(row["positionIdx"], row["side"], row["size"]) for row in legs] == [
            (1, "Buy", "0.01000"),
            (2, "Sell", "0.03000"),
        ]
        adapter = connect_adapter(paper, timeout_seconds=TIMEOUT_SECONDS)
        with pytest.raises(UnsupportedPositionMode) as caught:
            await adapter.get_position("linear", "BTCUSDT")
        assert caught.value.symbol == "BTCUSDT"
        assert (await adapter.get_position("linear", "ETHUSDT")).size == 0  # other symbols still read
        await adapter.close()
        assert (
            code_of(
                raw_session(paper).place_order,
                category="linear",
                symbol="BTCUSDT",
                side="Buy",
                orderType="Limit",
                qty="0.001",
                price="80300",
                timeInForce="IOC",
            )
            == 10001
        )


def test_the_account_info_ccxt_asks_for_says_unified(session):
    info = session._submit_request(
        method="GET", path=f"{session.endpoint}/v5/account/info", query={}, auth=True
    )
    assert info["result"]["unifiedMarginStatus"] == 6
