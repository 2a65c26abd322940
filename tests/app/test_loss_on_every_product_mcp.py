"""Issue 36 through a real MCP client on the paper exchange, with prices that move between trades: the day's
loss and the losing trades counted on spot as on derivatives (pilot.core.day_pnl), latches that cancel what
rests, and the drawdown's peak from every equity Pilot reads.

The oracles are written apart from the code: the paper exchange's own account (an account that began the
day with dollars only lost, on spot alone, what its dollars and its coin at the exchange's price say) and
the fills it records."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from decimal import ROUND_DOWN, Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.runtime.latches import cooldown_state, start_cooldown
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.app.service.upkeep import upkeep
from pilot.core.facts import ClosedTrade
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.server import build_server
from pilot.store import open_store
from tests.clocks import FakeClock
from tests.scenarios import article_scenario
from tests.store.contract.conftest import ENGINES, drop_schema, fresh_schema, server_url
from tests.venue import connect_adapter

from .conftest import call, write_policy
from .test_streams_runtime import streamed_runtime, streams, until

pytestmark = pytest.mark.anyio
CANCEL = "/v5/order/cancel"
ROOMY = {"maxNotionalUsd": 200, "maxOrderNotionalUsd": 200}
HIGH, LOW = "80220", "78300"  # a round trip bought at the one and sold at the other loses about $2 a 0.001
START_USDT = Decimal(1000)  # the article's account: dollars only


@pytest.fixture
def paper() -> Iterator[PaperExchange]:
    """The article's world without its request limits: the trades here follow each other at once."""
    with start_paper_exchange({**article_scenario(), "rateLimits": False}) as exchange:
        yield exchange


def rules(answer: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in answer.get("violations") or []}


def at(paper: PaperExchange, price: str) -> None:
    paper.set_prices("BTCUSDT", bid=price, ask=str(Decimal(price) + Decimal("0.1")), mark=price)


async def placed(client: Any, order: dict[str, Any]) -> dict[str, Any]:
    plan = await call(client, "plan_order", order)
    assert plan["status"] == "ok", plan.get("violations")
    return await call(client, "place_order", {"plan_id": plan["plan_id"]})


def spot(side: str, qty: Any, **more: Any) -> dict[str, Any]:
    return {"symbol": "BTCUSDT", "category": "spot", "side": side, "qty": str(qty), **more}


async def losing_round_trip(client: Any, paper: PaperExchange) -> None:
    """Buy 0.001 BTC at HIGH, the price falls, sell all the coin held (to the lot step) at LOW."""
    at(paper, HIGH)
    assert (await placed(client, spot("buy", "0.001")))["status"] == "filled"
    at(paper, LOW)
    held = paper.balance("BTC").quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
    assert (await placed(client, spot("sell", held)))["status"] == "filled"


def account_loss(paper: PaperExchange) -> Decimal:
    """The oracle: what an account that began with START_USDT alone has lost, its coin at the exchange's
    mid price (as the paper exchange values it)."""
    quote = paper.quote("BTCUSDT")
    return START_USDT - paper.balance("USDT") - paper.balance("BTC") * (quote.bid + quote.ask) / 2


async def test_three_losing_spot_round_trips_past_the_daily_limit_latch_the_day_on_every_product(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, dailyLossLimitUsd=5, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        for trip in range(3):
            await losing_round_trip(client, paper)
            day = (await call(client, "get_policy"))["data"]["loss_rules"]["day_loss"]
            assert day is not None and abs(Decimal(day["loss_usd"]) - account_loss(paper)) <= Decimal("0.01")
            assert Decimal(day["spot_realised_pnl_usd"]) < 0 and Decimal(day["loss_usd"]) > 0
            if trip < 2:
                assert Decimal(day["loss_usd"]) < 5  # about $2 a trip: under the limit after two
        assert account_loss(paper) > 5
        at(paper, HIGH)
        for category in ("spot", "linear"):
            refused = await call(client, "plan_order", {**spot("buy", "0.0002"), "category": category})
            assert refused["status"] == "refused" and "dailyLossLimitUsd" in rules(refused), refused
        latched = await runtime.store.journal.entries(kind=entry_kinds.LOSS_LIMIT)
        assert len(latched) == 1 and latched[0].data["on"] is True
        # reached as the third coin lay unsold at the low: two trips realised, the third's coin unrealised
        spot_pnl = Decimal(latched[0].data["spot_realised_usd"]) + Decimal(
            latched[0].data["spot_unrealised_usd"]
        )
        assert spot_pnl <= -5 and Decimal(latched[0].data["spot_unrealised_usd"]) < 0
        policy = (await call(client, "get_policy"))["data"]
        assert policy["trading_state"] == "reducing" and policy["loss_rules"]["daily_loss_limit_reached"]
        assert Decimal(policy["loss_rules"]["day_loss"]["loss_usd"]) > 5


async def test_the_cooldown_counts_losing_spot_round_trips(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, cooldown={"afterLosses": 2, "minutes": 30}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        await losing_round_trip(client, paper)
        at(paper, HIGH)
        assert (await call(client, "plan_order", spot("buy", "0.001")))["status"] == "ok"  # one loss: not yet
        await losing_round_trip(client, paper)
        at(paper, HIGH)
        refused = await call(client, "plan_order", spot("buy", "0.001"))
        assert rules(refused) == {"cooldown"}, refused
        linear = await call(client, "plan_order", {**spot("buy", "0.0002"), "category": "linear"})
        assert rules(linear) == {"cooldown"}
        started = await runtime.store.journal.entries(kind=entry_kinds.COOLDOWN)
        assert len(started) == 1 and started[0].data["losses"] == 2
        # the oracle: each sell order lost against what its buy cost, by the paper exchange's own fills
        sells = [e for e in paper.executions() if e.order.category == "spot" and not e.order.is_buy]
        buys = [e for e in paper.executions() if e.order.category == "spot" and e.order.is_buy]
        assert len(sells) == len(buys) == 2
        assert all(s.qty * s.price - s.fee < b.qty * b.price for s, b in zip(sells, buys, strict=True))
        assert Decimal(started[0].data["trade_pnl"]) < 0
        clock.advance(30 * 60 + 1)
        assert (await call(client, "plan_order", spot("buy", "0.001")))["status"] == "ok"


# --- the drawdown's peak from every equity Pilot reads ----------------------------------------------------


async def test_a_peak_the_agent_read_through_get_balances_counts_for_the_drawdown(
    runtime, paper, tmp_path, clock
):
    write_policy(tmp_path, maxDrawdownUsd=5, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        at(paper, HIGH)
        assert (await placed(client, spot("buy", "0.002")))["status"] == "filled"  # judged near $1000
        at(paper, "84000")  # the coin is worth about $7.56 more
        read = await call(client, "get_balances")
        peak = Decimal(read["data"]["total_equity_usd"])
        at(paper, "81000")  # back down: about $6 below what get_balances read, above what the buy judged
        quote = paper.quote("BTCUSDT")
        now = paper.balance("USDT") + paper.balance("BTC") * (quote.bid + quote.ask) / 2
        assert peak - now > 5  # the oracle: the fall from the peak the agent read passed the limit
        refused = await call(client, "plan_order", spot("buy", "0.0002"))
        assert "maxDrawdownUsd" in rules(refused), refused.get("violations")
        latched = await runtime.store.journal.entries(kind=entry_kinds.DRAWDOWN)
        assert len(latched) == 1 and Decimal(latched[0].data["peak_usd"]) == peak
        linear = await call(client, "plan_order", {**spot("buy", "0.0002"), "category": "linear"})
        assert linear["status"] == "refused"


def sold_elsewhere(paper: PaperExchange) -> None:
    """A market sell of a little BTC by another client of the key (the trader's app, say): the wallet changes,
    so Bybit's wallet topic pushes it, valued at the prices now."""
    sell = {"symbol": "BTCUSDT", "side": "Sell", "orderType": "Market", "qty": "0.0001"}
    paper.leave_order("spot", sell)


async def test_a_peak_the_wallet_stream_pushed_counts_for_the_drawdown(paper, tmp_path, clock):
    async with streamed_runtime(tmp_path, paper, clock) as runtime:
        write_policy(tmp_path, maxDrawdownUsd=5, **ROOMY)
        async with Client(build_server(runtime), raise_exceptions=True) as client:
            at(paper, HIGH)
            assert (await placed(client, spot("buy", "0.002")))["status"] == "filled"
            facts = streams(runtime).facts
            facts.take_equity()  # what was pushed up to the buy
            at(paper, "84000")  # no call reads this equity: only the wallet stream pushes it, as on Bybit
            sold_elsewhere(paper)  # when the balance changes (not on a price move alone)
            await until(runtime, lambda: facts.equity_seen is not None and facts.equity_seen[0] > 1005)
            assert facts.equity_seen is not None
            pushed = facts.equity_seen[0]
            await upkeep(runtime)  # the server's round takes what the stream pushed
            marks = await runtime.store.journal.entries(kind=entry_kinds.EQUITY)
            assert Decimal(marks[-1].data["equity_usd"]) == pushed
            at(paper, "81000")
            sold_elsewhere(paper)
            fallen = lambda: facts.equity_seen is not None and facts.equity_seen[1] < pushed - 5  # noqa: E731
            await until(runtime, fallen)  # the judgement below reads the streamed balance
            refused = await call(client, "plan_order", spot("buy", "0.0002"))
            assert "maxDrawdownUsd" in rules(refused), refused.get("violations")


# --- a latch also stops what rests ------------------------------------------------------------------------


def resting(paper: PaperExchange) -> list[Any]:
    return [order for order in paper.orders() if order.leaves_qty > 0 and not order.stop_order_type]


async def cancels_by(runtime: Any, origin: str) -> int:
    entries = await runtime.store.journal.entries(kind=entry_kinds.ACTION)
    return sum(1 for e in entries if e.data.get("origin") == origin and e.data.get("phase") == "sent")


@pytest.fixture(params=ENGINES)
def homes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Path]]:
    """Two servers' homes on one store: on SQLite one home (its file is the store: two processes of one
    machine), on PostgreSQL a home per host on a fresh schema of the test server (two hosts)."""
    if request.param == "sqlite":
        yield [tmp_path, tmp_path]
        return
    base = server_url()
    schema, url = fresh_schema(base)
    try:
        hosts = [tmp_path / f"host-{index}" for index in range(2)]
        for home in hosts:
            home.mkdir()
            (home / "store.json").write_text(json.dumps({"url": url}))
        yield hosts
    finally:
        drop_schema(base, schema)


@contextlib.asynccontextmanager
async def server(home: Path, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    """A server on `home` as `pilot serve` assembles it, on the home's store (SQLite on the test's clock)."""
    location = Home(home).store()
    adapter = connect_adapter(paper)
    store = await open_store(location, home=home, clock=clock if location.url is None else None)
    try:
        yield assemble_runtime(home, store, adapter, clock)
    finally:
        await store.close()
        await adapter.close()


async def test_a_drawdown_latch_cancels_what_could_grow_once_with_two_servers_on_one_store(
    homes, paper, clock
):
    for home in homes:
        write_policy(home, maxDrawdownUsd=5, **ROOMY)
    async with (
        server(homes[0], paper, clock) as first,
        server(homes[1], paper, clock) as second,
        Client(build_server(first), raise_exceptions=True) as client,
    ):
        at(paper, HIGH)
        linear = {**spot("buy", "0.001"), "category": "linear"}
        assert (await placed(client, linear))["status"] == "filled"  # a long of 0.001 BTC
        below = {"order_type": "limit", "price": "70000"}
        assert (await placed(client, spot("buy", "0.001", **below)))["status"] == "open"  # grows
        assert (await placed(client, {**linear, "qty": "0.0005", **below}))["status"] == "open"  # grows
        exit_ = {**linear, "side": "sell", "order_type": "limit", "price": "90000"}
        assert (await placed(client, exit_))["status"] == "open"  # the long's exit: stays
        at(paper, "74000")  # the long loses about $6.2
        read = await call(client, "get_balances")  # the agent reads the fall: the latch trips
        assert read["status"] == "ok"
        assert len(await first.store.journal.entries(kind=entry_kinds.DRAWDOWN)) == 1
        await asyncio.gather(upkeep(first), upkeep(second))
        left = resting(paper)
        assert [(o.category, o.side) for o in left] == [("linear", "Sell")]
        swept = await second.store.journal.entries(kind=entry_kinds.LATCH_CANCEL)
        assert len(swept) == 1 and swept[0].data["latch"] == entry_kinds.DRAWDOWN
        assert len(swept[0].data["orders"]) == 2
        assert await cancels_by(first, entry_kinds.DRAWDOWN) == 2  # each once, across both servers
        assert paper.request_count(CANCEL) == 2
        await asyncio.gather(upkeep(first), upkeep(second))
        assert len(await first.store.journal.entries(kind=entry_kinds.LATCH_CANCEL)) == 1
        bought = paper.balance("BTC")
        at(paper, "69000")  # through the cancelled buys' price: nothing fills
        assert paper.balance("BTC") == bought and paper.position("BTCUSDT").size == Decimal("0.001")


async def test_the_day_s_loss_on_spot_latches_and_cancels_the_spot_buy_resting(runtime, paper, tmp_path):
    write_policy(tmp_path, dailyLossLimitUsd=5, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        at(paper, HIGH)
        waiting = spot("buy", "0.0005", order_type="limit", price="60000")
        assert (await placed(client, waiting))["status"] == "open"
        for _ in range(3):
            await losing_round_trip(client, paper)
        assert len(await runtime.store.journal.entries(kind=entry_kinds.LOSS_LIMIT)) == 1
        assert len(resting(paper)) == 1
        await upkeep(runtime)
        assert resting(paper) == []
        swept = await runtime.store.journal.entries(kind=entry_kinds.LATCH_CANCEL)
        assert len(swept) == 1 and swept[0].data["latch"] == entry_kinds.LOSS_LIMIT
        assert await cancels_by(runtime, entry_kinds.LOSS_LIMIT) == 1


async def test_a_cooldown_after_spot_losses_cancels_the_spot_buy_resting(runtime, paper, tmp_path, clock):
    write_policy(tmp_path, cooldown={"afterLosses": 1, "minutes": 30}, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        at(paper, HIGH)
        assert (await placed(client, spot("buy", "0.0005", order_type="limit", price="60000")))[
            "status"
        ] == "open"
        await losing_round_trip(client, paper)
        at(paper, HIGH)
        assert rules(await call(client, "plan_order", spot("buy", "0.001"))) == {"cooldown"}
        await upkeep(runtime)
        assert resting(paper) == []
        swept = await runtime.store.journal.entries(kind=entry_kinds.LATCH_CANCEL)
        assert len(swept) == 1 and swept[0].data["latch"] == entry_kinds.COOLDOWN


async def test_a_closing_order_filled_in_parts_starts_one_cooldown(runtime, tmp_path):
    write_policy(tmp_path, cooldown={"afterLosses": 1, "minutes": 30})
    policy = runtime.policy().policy
    now = runtime.now()
    first = ClosedTrade(now - timedelta(minutes=2), Decimal("-1.5"), "sell-1")
    state, due = cooldown_state(policy, await runtime.journal_state(), (first,), now)
    assert due == first
    await start_cooldown(runtime.store.journal, policy, state, first, now)
    more = ClosedTrade(now - timedelta(minutes=1), Decimal("-2.5"), "sell-1")  # the same sell, filled further
    assert cooldown_state(policy, await runtime.journal_state(), (more,), now)[1] is None
    other = ClosedTrade(now, Decimal("-1"), "sell-2")
    assert cooldown_state(policy, await runtime.journal_state(), (other, more), now)[1] == other


async def test_an_exit_kept_under_a_latch_is_cancelled_once_the_position_it_closed_is_gone(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxDrawdownUsd=5, maxLossPerTradeUsd=20, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        at(paper, HIGH)
        long = {**spot("buy", "0.001"), "category": "linear", "stop_loss": "74000"}
        assert (await placed(client, long))["status"] == "filled"
        exit_ = {**long, "side": "sell", "order_type": "limit", "price": "81000", "stop_loss": "82000"}
        assert (await placed(client, exit_))["status"] == "open"  # the long's exit: a short if it is gone
        at(paper, "74600")  # the long loses about $5.6
        assert (await call(client, "get_balances"))["status"] == "ok"  # the fall is read: the latch trips
        await upkeep(runtime)
        assert len(resting(paper)) == 1  # the exit only shrinks the long: it stays
        at(paper, "73900")  # the long's stop closes it
        assert paper.position("BTCUSDT").size == 0
        await upkeep(runtime)
        assert resting(paper) == []  # the sell would now open a short: it could grow, and is cancelled
        at(paper, "81500")
        assert paper.position("BTCUSDT").size == 0
        swept = await runtime.store.journal.entries(kind=entry_kinds.LATCH_CANCEL)
        assert len(swept) == 1 and [o["side"] for o in swept[0].data["orders"]] == ["Sell"]
