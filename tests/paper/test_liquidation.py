"""Liquidation: when the mark reaches the liqPrice /v5/position/list shows, the position is taken over and
closed at its bankruptcy price, in Bybit's words (enum.mdx: createType CreateByTakeOver_PassThrough, execType
BustTrade, cancelType CancelAllBeforeLiq; closed-pnl.mdx: execType BustTrade), the open orders cancelled first.

The oracle restates the two prices for one position on a USDT wallet W (cross margin, position.mdx's estimate):
liqPrice L solves W + q (L - entry) = mmr |q| L; the bankruptcy price B solves W + q (B - entry) = fee |q| B
(the fee to close charged at B), rounded to the tick in the trader's favour.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import pytest

from tests.exchange.conftest import raw_session
from tests.paper.conftest import CRASH_TAPE, bar_points, still, tape, tape_rows, world

MMR, TAKER, TICK = Decimal("0.005"), Decimal("0.00055"), Decimal("0.1")


def liq_price(size: Decimal, entry: Decimal, wallet: Decimal) -> Decimal:
    sign = 1 if size > 0 else -1
    return (size * entry - wallet) / (size * (1 - MMR * sign))


def bankruptcy(size: Decimal, entry: Decimal, wallet: Decimal) -> Decimal:
    sign = 1 if size > 0 else -1
    level = (size * entry - wallet) / (size * (1 - TAKER * sign))
    rounding = ROUND_CEILING if size > 0 else ROUND_FLOOR
    return (level / TICK).to_integral_value(rounding=rounding) * TICK


def open_position(session, side: str, qty: str) -> None:
    session.place_order(category="linear", symbol="BTCUSDT", side=side, orderType="Market", qty=qty)


def at_mark(paper, mark: Decimal) -> None:
    paper.set_prices("BTCUSDT", bid=mark - TICK, ask=mark + TICK, mark=mark)


@pytest.mark.parametrize(("side", "qty"), [("Buy", "0.05"), ("Sell", "0.05")])
def test_the_mark_at_the_liq_price_takes_the_position_over_at_its_bankruptcy_price(side, qty):
    with still(world()) as paper:
        session = raw_session(paper)
        open_position(session, side, qty)
        resting = session.place_order(
            category="linear", symbol="BTCUSDT", side="Buy", orderType="Limit", qty="0.001", price="50000"
        )["result"]["orderId"]
        position = paper.position("BTCUSDT")
        size, entry, wallet = position.size, position.avg_price, paper.balance("USDT")
        level = liq_price(size, entry, wallet)
        shown = Decimal(
            session.get_positions(category="linear", symbol="BTCUSDT")["result"]["list"][0]["liqPrice"]
        )
        assert abs(shown - level) < TICK  # the liqPrice served is the one that triggers
        away = Decimal(1) if size > 0 else Decimal(-1)
        at_mark(paper, level + away)
        assert paper.position("BTCUSDT").size == size  # a dollar short of it: nothing
        at_mark(paper, level - away)
        assert paper.position("BTCUSDT").size == 0

        bust = bankruptcy(size, entry, wallet)
        (row,) = [
            e
            for e in session.get_executions(category="linear", symbol="BTCUSDT")["result"]["list"]
            if e["execType"] != "Trade"
        ]
        assert (row["execType"], Decimal(row["execPrice"]), Decimal(row["closedSize"])) == (
            "BustTrade",
            bust,
            abs(size),
        )
        assert row["side"] == ("Sell" if size > 0 else "Buy") and row["orderLinkId"] == ""
        history = {
            o["orderId"]: o
            for o in session.get_order_history(category="linear", symbol="BTCUSDT")["result"]["list"]
        }
        takeover = history[row["orderId"]]
        assert (takeover["createType"], takeover["orderStatus"], takeover["reduceOnly"]) == (
            "CreateByTakeOver_PassThrough",
            "Filled",
            True,
        )
        assert (history[resting]["orderStatus"], history[resting]["cancelType"]) == (
            "Cancelled",
            "CancelAllBeforeLiq",
        )
        (closed,) = session.get_closed_pnl(category="linear", symbol="BTCUSDT")["result"]["list"]
        assert (closed["execType"], Decimal(closed["avgExitPrice"])) == ("BustTrade", bust)
        left = paper.balance("USDT")
        assert 0 <= left < abs(size) * TICK  # the equity is gone, to the rounding in the trader's favour
        (usdt,) = session.get_wallet_balance(accountType="UNIFIED", coin="USDT")["result"]["list"][0]["coin"]
        assert Decimal(usdt["cumRealisedPnl"]) == left - 1000  # every loss realised, the takeover's too


def test_a_crash_on_the_tape_liquidates_a_long_at_the_first_step_whose_mark_reaches_its_liq_price():
    start = Decimal("80220")
    with still(world({"BTCUSDT": tape(CRASH_TAPE, start=str(start), barMs=4000)})) as paper:
        session = raw_session(paper)
        open_position(session, "Buy", "0.06")  # 10x: liquidated about 20% lower
        position, opened = paper.position("BTCUSDT"), paper.now_ms()
        level = liq_price(position.size, position.avg_price, paper.balance("USDT"))
        paper.advance(34 * 4000)  # the whole tape
    rows = tape_rows(CRASH_TAPE)
    first_price = Decimal(rows[0][1])  # scaled as the tape's `start` does: times the start, over the first
    mids = [p * start / first_price for row in rows for p in bar_points(row)]
    marks = [(mid - TICK / 2) // TICK * TICK + TICK / 2 for mid in mids]  # a tick-wide quote's mid
    first = next(index for index, mark in enumerate(marks) if mark <= level)
    (bust,) = [e for e in paper.executions() if e.exec_type == "BustTrade"]
    assert bust.time_ms == opened + first * 1000 and bust.mark == marks[first]
    assert paper.position("BTCUSDT").size == 0
