"""What a move does (through Engine.rematch, as the engine has it today): resting limits fill when the path
crosses them, stops and take-profits trigger, unrealised PnL and equity follow the mark; each at the time of
the step that caused it, even when the time came in one jump. Driven through pybit on the hourly tape
(ccxt's recorded BTCUSDT 1h klines: 43350.7, then 43204.5, 43492.5, 43488, ... a point every 15 minutes)."""

from __future__ import annotations

from decimal import Decimal

from tests.exchange.conftest import raw_session

STEP = 900_000  # the hourly tape's points are a quarter of an hour apart


def buy(session, qty="0.001", **extra):
    return session.place_order(category="linear", symbol="BTCUSDT", side="Buy", qty=qty, **extra)["result"]


def test_a_resting_limit_fills_as_maker_at_the_step_that_crosses_it(hourly):
    session = raw_session(hourly)
    placed = buy(session, orderType="Limit", price="43250", timeInForce="GTC")
    start = hourly.now_ms()
    assert hourly.open_orders()[0].order_id == placed["orderId"]
    hourly.advance(STEP)  # the low of the first bar, 43204.5
    (fill,) = session.get_executions(category="linear", symbol="BTCUSDT")["result"]["list"]
    assert (fill["execPrice"], fill["isMaker"], fill["feeRate"]) == ("43250.00", True, "0.0002")
    assert int(fill["execTime"]) == start + STEP
    assert hourly.position("BTCUSDT").size == Decimal("0.001")


def test_a_stop_triggers_at_the_step_that_reaches_it_even_when_the_time_comes_in_one_jump(hourly):
    session = raw_session(hourly)
    buy(session, orderType="Market", stopLoss="43300")
    start = hourly.now_ms()
    hourly.advance(3 * STEP)  # through the low (43204.5) and back up (43488): the stop was reached on the way
    assert hourly.position("BTCUSDT").size == 0
    close = hourly.orders("BTCUSDT")[-1]
    assert (close.stop_order_type, close.side, close.reduce_only) == ("StopLoss", "Sell", True)
    fills = session.get_executions(category="linear", symbol="BTCUSDT", orderId=close.order_id)["result"][
        "list"
    ]
    assert [f["execPrice"] for f in fills] == ["43204.40"]  # the bid of the step that reached the stop
    # The stop is the order that waited (it keeps its id when it fires): its fill says when it triggered.
    assert [int(f["execTime"]) for f in fills] == [start + STEP]


def test_a_take_profit_triggers_when_the_path_rises_to_it(hourly):
    session = raw_session(hourly)
    buy(session, orderType="Market", takeProfit="43450")
    hourly.advance(STEP)
    assert hourly.position("BTCUSDT").size == Decimal("0.001")  # the dip does not reach a target above
    hourly.advance(STEP)  # the high, 43492.5
    assert hourly.position("BTCUSDT").size == 0
    assert hourly.orders("BTCUSDT")[-1].stop_order_type == "TakeProfit"


def test_unrealised_pnl_and_equity_follow_the_mark(hourly):
    session = raw_session(hourly)
    buy(session, qty="0.01", orderType="Market")
    entry = hourly.position("BTCUSDT").avg_price
    wallet = hourly.balance("USDT")
    for _ in range(3):
        hourly.advance(STEP)
        mark = hourly.quote("BTCUSDT").mark
        row = session.get_positions(category="linear", symbol="BTCUSDT")["result"]["list"][0]
        account = session.get_wallet_balance(accountType="UNIFIED")["result"]["list"][0]
        upl = (mark - entry) * Decimal("0.01")
        assert Decimal(row["unrealisedPnl"]) == upl and Decimal(row["markPrice"]) == mark
        assert Decimal(account["totalPerpUPL"]) == upl
        assert Decimal(account["totalMarginBalance"]) == wallet + upl
    assert hourly.balance("USDT") == wallet  # unrealised moves, the wallet does not
