"""Exchange requests per order over REST, counted at the real paper exchange (issue 41).

One order is plan_order + place_order. What cannot have changed since the plan (the instrument's rules) is
read once within its life; what can (the touch, the position, the balance, the open orders of both
categories) is read again at place; the price band only for an order priced where the band could move or
refuse it (beyond the margin around the mark the instrument's rules vouch for); the create's outcome is read
once, by the order's own id; the day's closed PnL is read on from where the last read ended, not from the
day's start.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.core.day_pnl import OVERLAP
from pilot.paper import PaperExchange
from pilot.paper.handlers import ROUTES
from tests.app.conftest import open_test_runtime, write_policy
from tests.clocks import FakeClock

pytestmark = pytest.mark.anyio

SELL = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}
BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.00031"}
# What a judgement reads fresh over REST for a linear BTCUSDT order (spot BTCUSDT is listed): the touch,
# the linear position, the balance, and the open orders on linear and on spot. A market order at the
# policy's 0.5 % slippage lies inside BTCUSDT's 1 % (priceLimitRatioX, default scenario): no band read.
FRESH_READS = Counter(
    {
        "/v5/market/tickers": 1,
        "/v5/position/list": 1,
        "/v5/account/wallet-balance": 1,
        "/v5/order/realtime": 2,
    }
)
PRICE_LIMIT = "/v5/market/price-limit"


def counts(paper: PaperExchange) -> Counter[str]:
    return Counter({path: n for path in ROUTES if (n := paper.request_count(path))})


async def one_order(runtime: Runtime, paper: PaperExchange, order: dict) -> tuple[Counter, Counter]:
    """Plan and place `order` (it must fill); the requests of the plan and of the place, by path."""
    before = counts(paper)
    planned = await plan_order(runtime, PlanRequest.parse(order))
    assert planned.plan_id is not None, planned
    between = counts(paper)
    placed = await place_order(runtime, planned.plan_id)
    assert placed.status == "filled", placed
    return between - before, counts(paper) - between


async def test_an_order_over_rest_reads_the_fresh_facts_twice_and_its_outcome_once_by_its_id(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock
) -> None:
    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, paper, clock) as runtime:
        await one_order(runtime, paper, SELL)  # the first reads the instruments' rules and risk limits
        for order in (BUY, SELL, BUY):
            plan, place = await one_order(runtime, paper, order)
            assert plan == FRESH_READS
            # the same fresh reads again, the create, and the outcome read once by the order's id
            assert place == FRESH_READS + Counter({"/v5/order/create": 1, "/v5/order/realtime": 1})
            assert sum(plan.values()) + sum(place.values()) == 12  # 15 before issue 41


async def band_of(runtime: Runtime) -> tuple[Decimal, Decimal, Decimal]:
    """BTCUSDT linear's mark and its band's edges as the exchange serves them now."""
    touch = await runtime.exchange.get_touch("linear", "BTCUSDT")
    band = await runtime.exchange.get_price_band("linear", "BTCUSDT")
    return touch.mark, band.buy_limit, band.sell_limit


@pytest.mark.parametrize("side", ["buy", "sell"])
async def test_the_band_is_read_only_for_a_price_it_could_move_or_refuse(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock, side: str
) -> None:
    """A limit price at the mark reads no band; one past the band's edge reads it and is refused at the
    exchange's own edge, as before the margin the instrument's rules vouch for was known."""
    write_policy(tmp_path, priceCollarPct=None, priceCollarTicks=None)
    async with open_test_runtime(tmp_path, paper, clock) as runtime:
        rules = await runtime.exchange.get_instrument("linear", "BTCUSDT")
        assert rules.band_margin is not None and rules.band_margin > 0  # riskParameters.priceLimitRatioX
        mark, buy_limit, sell_limit = await band_of(runtime)
        beyond = buy_limit + rules.tick_size if side == "buy" else sell_limit - rules.tick_size
        for price, reads, passes in ((mark, 0, True), (beyond, 1, False)):
            before = paper.request_count(PRICE_LIMIT)
            order = {"symbol": "BTCUSDT", "side": side, "qty": "0.0002", "order_type": "limit"}
            planned = await plan_order(runtime, PlanRequest.parse({**order, "price": str(price)}))
            assert paper.request_count(PRICE_LIMIT) - before == reads
            codes = {violation.rule for violation in planned.violations or ()}
            assert (planned.status == "ok") is passes, codes
            if not passes:
                band = next(v for v in planned.violations or () if v.rule == "instrument.priceBand")
                assert Decimal(band.limit) == (buy_limit if side == "buy" else sell_limit)


async def test_a_market_order_whose_slippage_reaches_past_the_margin_is_sent_inside_the_read_band(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock
) -> None:
    """A market buy whose IOC price (the ask and 3 % slippage) lies past the margin the mark vouches for: the
    band is read at plan and at place, and the price sent is the band's highest buy (as before)."""
    write_policy(tmp_path, maxSlippagePct=3)
    async with open_test_runtime(tmp_path, paper, clock) as runtime:
        rules = await runtime.exchange.get_instrument("linear", "BTCUSDT")
        assert rules.band_margin is not None
        mark = (await runtime.exchange.get_touch("linear", "BTCUSDT")).mark
        paper.set_prices("BTCUSDT", bid=mark, ask=mark * (1 + rules.band_margin), mark=mark)
        plan, place = await one_order(runtime, paper, {**BUY, "qty": "0.0002"})
        assert plan[PRICE_LIMIT] == place[PRICE_LIMIT] == 1
        sent = [order for order in paper.orders("BTCUSDT") if order.side == "Buy"][-1]
        _, buy_limit, _ = await band_of(runtime)
        assert sent.price == buy_limit


CLOSED_PNL = "/v5/position/closed-pnl"


def close_positions(paper: PaperExchange, times: int) -> None:
    """Open and close a short `times` times, as another client of the key would: a closed-PnL row each."""
    for side in ("Sell", "Buy") * times:
        order = {"symbol": "BTCUSDT", "side": side, "orderType": "Market", "qty": "0.00031"}
        paper.leave_order("linear", order)


def clear_of_midnight(paper: PaperExchange, clock: FakeClock) -> None:
    """Past the next 00:00 UTC (on the exchange and at Pilot) when the test's 12 minutes would cross it."""
    midnight = datetime.combine(clock.now().date() + timedelta(days=1), time(0), tzinfo=UTC)
    if midnight - clock.now() < timedelta(minutes=30):
        passed = midnight - clock.now() + timedelta(minutes=1)
        paper.advance(int(passed.total_seconds() * 1000))
        clock.advance(passed.total_seconds())


def later(paper: PaperExchange, clock: FakeClock) -> None:
    """Time passes, on the exchange and at Pilot, a minute more than OVERLAP."""
    passed = OVERLAP + timedelta(minutes=1)
    paper.advance(int(passed.total_seconds() * 1000))
    clock.advance(passed.total_seconds())


async def test_the_daily_loss_rule_reads_the_days_closed_pnl_on_from_its_mark(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock
) -> None:
    """The first judgement of the day reads the day's closed PnL whole (pages of 100 and the empty page
    Bybit's last cursor leads to); the next reads on from OVERLAP before the newest row held, and the day's
    realised PnL so kept equals a whole-day read's (the exchange's own rows since the day's start)."""
    write_policy(tmp_path, dailyLossLimitUsd=1000)
    clear_of_midnight(paper, clock)
    close_positions(paper, 201)
    later(paper, clock)
    close_positions(paper, 1)
    async with open_test_runtime(tmp_path, paper, clock) as runtime:
        await plan_order(runtime, PlanRequest.parse(SELL))
        assert paper.request_count(CLOSED_PNL) == 4  # 202 rows: 100, 100, 2, and the empty page
        later(paper, clock)
        close_positions(paper, 1)
        await plan_order(runtime, PlanRequest.parse(SELL))
        # from OVERLAP before the newest row held: it and the one closed since, and the empty page
        assert paper.request_count(CLOSED_PNL) == 4 + 2
        (start, day), *others = runtime.day_closed.items()
        assert not others
        whole_day = await runtime.exchange.get_closed_pnl_since("linear", start)
        assert len(whole_day) == len(day.rows) == 203
        assert day.realised == sum((row.closed_pnl for row in whole_day), Decimal(0))
        assert day.since == max(row.updated_at for row in whole_day) - OVERLAP
        clock.advance(timedelta(days=1).total_seconds())  # the next day: the day gone by is dropped
        await plan_order(runtime, PlanRequest.parse(SELL))
        assert list(runtime.day_closed) != [start] and len(runtime.day_closed) == 1
