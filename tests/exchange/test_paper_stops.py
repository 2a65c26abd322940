"""The paper exchange's TP/SL as Bybit's: on create (tpslMode Full) and via trading-stop, checked against the
base price, triggered when the last price walks through them, and the closed PnL they leave; through pybit
and through Pilot's adapter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from pybit.exceptions import InvalidRequestError

from pilot.exchange.errors import ExchangeRejected
from pilot.paper import start_paper_exchange
from tests.scenarios import article_scenario

pytestmark = pytest.mark.anyio


def create(session, side="Buy", qty="0.001", **extra):
    return session.place_order(
        category="linear", symbol="BTCUSDT", side=side, orderType="Market", qty=qty, positionIdx=0, **extra
    )


def test_a_stop_on_create_lands_on_the_position_and_closes_it_when_the_last_price_reaches_it(paper, session):
    create(session, stopLoss="79000", takeProfit="85000", tpslMode="Full")
    position = paper.position("BTCUSDT")
    assert position.size == Decimal("0.001") and position.stop_loss == Decimal("79000")
    row = session.get_positions(category="linear", symbol="BTCUSDT")["result"]["list"][0]
    assert (row["stopLoss"], row["takeProfit"]) == ("79000", "85000")

    paper.set_prices("BTCUSDT", bid="79050", ask="79050.1", mark="79050")  # above the stop: nothing
    assert paper.position("BTCUSDT").size == Decimal("0.001")
    paper.set_prices("BTCUSDT", bid="78900", ask="78900.1", mark="78900")
    assert paper.position("BTCUSDT").size == 0 and paper.position("BTCUSDT").stop_loss == 0
    [trigger] = [o for o in paper.orders("BTCUSDT") if o.stop_order_type == "StopLoss"]
    assert trigger.status == "Filled" and trigger.reduce_only and trigger.side == "Sell"

    closed = session.get_closed_pnl(category="linear", symbol="BTCUSDT")["result"]["list"]
    assert (
        len(closed) == 1
        and Decimal(closed[0]["closedSize"]) == Decimal("0.001")
        and closed[0]["side"] == "Sell"
    )
    exit_price, entry = Decimal(closed[0]["avgExitPrice"]), Decimal(closed[0]["avgEntryPrice"])
    fees = Decimal("0.001") * (exit_price + entry) * Decimal("0.00055")
    assert Decimal(closed[0]["closedPnl"]) == (exit_price - entry) * Decimal("0.001") - fees


def test_a_take_profit_triggers_too_and_a_short_stop_sits_above(paper, session):
    create(session, side="Sell", stopLoss="81000", takeProfit="79500")
    paper.set_prices("BTCUSDT", bid="79400", ask="79400.1", mark="79400")
    assert paper.position("BTCUSDT").size == 0
    legs = {o.stop_order_type: o for o in paper.orders("BTCUSDT") if o.stop_order_type}
    assert legs["TakeProfit"].status == "Filled" and legs["TakeProfit"].side == "Buy"
    assert (legs["StopLoss"].status, legs["StopLoss"].cancel_type) == ("Deactivated", "CancelByTpSlTsClear")


def test_a_stop_on_the_wrong_side_of_the_base_price_is_refused_with_10001(paper, session):
    with pytest.raises(InvalidRequestError) as caught:
        create(session, stopLoss="81000")
    assert caught.value.status_code == 10001 and paper.orders() == []
    create(session)
    with pytest.raises(InvalidRequestError) as moved:
        session.set_trading_stop(
            category="linear", symbol="BTCUSDT", stopLoss="90000", tpslMode="Full", positionIdx=0
        )
    assert moved.value.status_code == 10001


def test_a_scenario_position_can_carry_a_stop():
    scenario = article_scenario()
    scenario["positions"] = [
        {
            "symbol": "BTCUSDT",
            "side": "Buy",
            "size": "0.002",
            "avgPrice": "80000",
            "leverage": "5",
            "stopLoss": "79000",
        }
    ]
    with start_paper_exchange(scenario) as paper:
        assert paper.position("BTCUSDT").stop_loss == Decimal("79000")
        paper.set_prices("BTCUSDT", bid="78000", ask="78000.1", mark="78000")
        assert paper.position("BTCUSDT").size == 0


async def test_the_adapter_sends_tpsl_reads_them_back_and_pages_closed_pnl(paper, exchange):
    from pilot.exchange.models import OrderRequest

    request = OrderRequest(
        "linear",
        "BTCUSDT",
        "Buy",
        Decimal("0.001"),
        Decimal("80700"),
        "IOC",
        "pilot-tpsl-1",
        stop_loss=Decimal("79000"),
        take_profit=Decimal("85000"),
    )
    await exchange.create_order(request)
    [position] = await exchange.get_positions("linear", "BTCUSDT")
    assert (position.stop_loss, position.take_profit) == (Decimal("79000"), Decimal("85000"))
    await exchange.set_trading_stop("linear", "BTCUSDT", stop_loss=Decimal("79500"), take_profit=None)
    assert paper.position("BTCUSDT").stop_loss == Decimal("79500")
    with pytest.raises(ExchangeRejected):
        await exchange.set_trading_stop("linear", "BTCUSDT", stop_loss=Decimal("90000"), take_profit=None)
    paper.set_prices("BTCUSDT", bid="79000", ask="79000.1", mark="79000")
    since = datetime.now(UTC) - timedelta(hours=1)
    [row] = await exchange.get_closed_pnl_since("linear", since)
    assert row.closed_size == Decimal("0.001") and row.closed_pnl < 0
    page = await exchange.get_closed_pnl_page("linear", "BTCUSDT", None, 20)
    assert [r.order_id for r in page.rows] == [row.order_id] and page.next_cursor
    assert (await exchange.get_closed_pnl_page("linear", "BTCUSDT", page.next_cursor, 20)).rows == ()


async def test_the_adapter_cancels_all_and_amends(paper, exchange):
    from pilot.exchange.models import OrderRequest

    for n in (1, 2):
        await exchange.create_order(
            OrderRequest(
                "linear", "BTCUSDT", "Buy", Decimal("0.001"), Decimal("70000"), "GTC", f"pilot-rest-{n}"
            )
        )
    await exchange.amend_order("linear", "BTCUSDT", order_link_id="pilot-rest-1", qty=Decimal("0.002"))
    assert sorted(o.qty for o in paper.open_orders("BTCUSDT")) == [Decimal("0.001"), Decimal("0.002")]
    cancelled = await exchange.cancel_all_orders("linear", "BTCUSDT")
    assert len(cancelled) == 2 and paper.open_orders("BTCUSDT") == []
