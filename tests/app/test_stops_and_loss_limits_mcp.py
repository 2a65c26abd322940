"""Issue 15 through a real MCP client on the paper exchange: stops sent with the order and triggered when the
price walks through them, the loss rules, a day that crosses its loss limit, cancel_all_orders, set_trading_stop
and the history reads. The tests that take a venue run on Bybit's wire and on OKX's (tests/okx_front)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.cli import main
from pilot.paper import start_paper_exchange
from pilot.server import build_server
from tests.scenarios import article_scenario

from .conftest import CREATE, VENUES, call, next_of, open_test_runtime, venue_on, write_policy

pytestmark = pytest.mark.anyio
BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0003"}


async def _client_call(runtime: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        return await call(client, tool, args)


async def test_a_stop_sent_with_the_order_is_on_the_position_and_closes_it_when_the_price_walks_through(
    venue_runtime, venue, tmp_path
):
    paper, sym = venue.paper, venue.sym("BTCUSDT")
    venue.write_policy(tmp_path, requireStopLoss=True, maxLossPerTradeUsd=1)
    async with Client(build_server(venue_runtime), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", venue.args(BUY))
        assert [v["rule"] for v in refused["violations"]] == ["requireStopLoss"]
        fix = refused["next_safe_action"]
        assert fix["tool"] == "plan_order" and fix["args"]["qty"] == "0.0003" and "stop_loss" in fix["args"]
        stop = Decimal(fix["args"]["stop_loss"])
        assert stop < Decimal("80220")  # below the price, as a buy's stop must be

        planned = await call(client, "plan_order", fix["args"])
        assert planned["status"] == "ok" and planned["order"]["stop_loss"] == fix["args"]["stop_loss"]
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert placed["status"] == "filled"
        assert placed["sent"]["stop_loss"] == fix["args"]["stop_loss"]
        assert placed["protection"] == {"stop_loss": fix["args"]["stop_loss"], "missing_stop": False}
        # the position's stop (Bybit), the partial stop of what filled (OKX)
        assert venue.stop_loss("BTCUSDT") == stop

        gap = stop - 100  # the price walks through the stop: the venue closes the position at market
        paper.set_prices("BTCUSDT", bid=gap, ask=gap + Decimal("0.1"), mark=gap)
        assert paper.position("BTCUSDT").size == 0 and paper.position("BTCUSDT").stop_loss == 0

        closed = await call(client, "get_closed_pnl", {"symbol": sym})
        fills = await call(client, "get_fills", {"symbol": sym})
        history = await call(client, "get_order_history", {"symbol": sym})
    rows = closed["data"]["rows"]
    assert len(rows) == 1 and rows[0]["closed_size"] == "0.0003" and rows[0]["side"] == "sell"
    assert Decimal(rows[0]["closed_pnl"]) < 0
    assert Decimal(rows[0]["avg_exit_price"]) <= stop
    assert [f["side"] for f in fills["data"]["rows"]] == ["sell", "buy"]
    assert all("untrusted_text" in row for row in history["data"]["rows"])
    assert len(history["data"]["rows"]) == 2
    assert bool(history["data"]["next_cursor"]) is (venue.name == "bybit")  # Bybit gives one even at the end
    protection = await venue_runtime.store.journal.entries(kind=entry_kinds.PROTECTION)
    assert protection[0].data["missing_stop"] is False and protection[0].data["stop_loss"] == str(stop)


async def test_a_loss_refusal_gives_the_size_that_fits_and_the_stop_that_fits_the_size(
    venue_runtime, venue, tmp_path
):
    paper = venue.paper
    venue.write_policy(tmp_path, maxLossPerTradeUsd=1)
    async with Client(build_server(venue_runtime), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", venue.args({**BUY, "stop_loss": "70000"}))
        loss = refused["violations"][0]
        assert loss["rule"] == "maxLossPerTradeUsd" and loss["limit"] == "1"
        assert Decimal(loss["attempted"]) > 1
        smaller, option = refused["next_safe_action"], refused["next_safe_action"]["options"][0]
        assert Decimal(smaller["args"]["qty"]) < Decimal("0.0003") and smaller["args"]["stop_loss"] == "70000"
        assert option["args"]["qty"] == "0.0003" and Decimal(option["args"]["stop_loss"]) > 70000
        for replay in (smaller["args"], option["args"]):
            assert (await call(client, "plan_order", replay))["status"] == "ok"
        one_more = {**smaller["args"], "qty": str(Decimal(smaller["args"]["qty"]) + Decimal("0.00001"))}
        assert (await call(client, "plan_order", one_more))["status"] == "refused"
    assert paper.request_count(CREATE) == 0


async def test_a_day_that_crosses_its_loss_limit_turns_reducing_by_itself(venue_runtime, venue, tmp_path):
    paper, runtime = venue.paper, venue_runtime
    venue.write_policy(tmp_path, dailyLossLimitUsd=5)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        plan = await call(client, "plan_order", venue.args({**BUY, "qty": "0.0002"}))
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "filled"
        small = venue.args({**BUY, "qty": "0.00002"})
        first = await call(client, "plan_order", small)
        assert first["status"] == "ok", (first["violations"], first["snapshot"])  # no loss yet

        paper.set_prices("BTCUSDT", bid="50000", ask="50000.1", mark="50000")  # about $6 unrealised loss
        crossed = await call(client, "plan_order", small)
        assert crossed["status"] == "refused"
        day = next(v for v in crossed["violations"] if v["rule"] == "dailyLossLimitUsd")
        assert day["limit"] == "5" and Decimal(day["attempted"]) > 6
        assert next_of(crossed, day)["retry_after"].endswith("00:00:00+00:00")

        latched = await runtime.store.journal.entries(kind=entry_kinds.LOSS_LIMIT)
        assert len(latched) == 1 and latched[0].data["on"] is True
        assert latched[0].data["trading_state"] == "reducing" and Decimal(latched[0].data["loss_usd"]) > 6

        again = await call(client, "plan_order", small)
        assert {"tradingState", "dailyLossLimitUsd"} <= {v["rule"] for v in again["violations"]}
        assert again["snapshot"]["trading_state"] == "reducing"
        policy = (await call(client, "get_policy"))["data"]
        assert (
            policy["trading_state"] == "reducing" and policy["loss_rules"]["daily_loss_limit_reached"] is True
        )
        closing = await call(client, "plan_order", {**small, "side": "sell", "reduce_only": True})
        assert closing["status"] == "ok"  # shrinking still works
        assert len(await runtime.store.journal.entries(kind=entry_kinds.LOSS_LIMIT)) == 1  # journaled once

        status = await human("loss-limit", "status", "--home", str(tmp_path), "--format", "json")
        assert status.exit_code == 0 and json.loads(status.stdout)["reached"] is True
        reset = await human("loss-limit", "reset", "--home", str(tmp_path), "--format", "json")
        assert reset.exit_code == 0 and json.loads(reset.stdout)["reached"] is False
        again = await human("loss-limit", "reset", "--home", str(tmp_path), "--format", "json")
        assert again.exit_code == 1 and json.loads(again.stdout)["error"]["code"] == "loss_limit_not_reached"

        after = await call(client, "plan_order", small)  # counted afresh from where the limit was reached
        assert after["status"] == "ok" and after["snapshot"]["trading_state"] == "active"
    entries = await runtime.store.journal.entries(kind=entry_kinds.LOSS_LIMIT)
    assert [(e.data["on"], e.actor) for e in entries] == [(True, "pilot"), (False, "human")]


async def human(*args: str) -> Any:
    runner = CliRunner()
    return await anyio.to_thread.run_sync(lambda: runner.invoke(main, list(args)))


async def test_cancel_all_orders_works_while_halted(venue_runtime, venue, tmp_path):
    paper = venue.paper
    async with Client(build_server(venue_runtime), raise_exceptions=True) as client:
        for price in ("70000", "70100"):
            plan = await call(
                client,
                "plan_order",
                venue.args({**BUY, "qty": "0.0001", "order_type": "limit", "price": price}),
            )
            assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "open"
        assert len(paper.open_orders("BTCUSDT")) == 2
        venue.write_policy(tmp_path, tradingState="halted")
        cancelled = await call(client, "cancel_all_orders", {"symbol": venue.sym("BTCUSDT")})
    assert cancelled["status"] == "done" and len(cancelled["journal_seq"]) == 2
    assert paper.open_orders("BTCUSDT") == []
    assert len(cancelled["data"]["result"].split(", ")) == 2


async def test_set_trading_stop_moves_closer_freely_and_farther_only_within_the_loss_limit(
    venue_runtime, venue, tmp_path
):
    paper, sym = venue.paper, venue.sym("BTCUSDT")
    venue.write_policy(tmp_path, maxLossPerTradeUsd=1, requireStopLoss=True)
    async with Client(build_server(venue_runtime), raise_exceptions=True) as client:
        plan = await call(client, "plan_order", venue.args({**BUY, "stop_loss": "79000"}))
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "filled"

        closer = await call(client, "set_trading_stop", {"symbol": sym, "stop_loss": "79500"})
        assert closer["status"] == "done" and paper.position("BTCUSDT").stop_loss == Decimal("79500")
        if (
            venue.name == "okx"
        ):  # the order's stop is one of its own there (79000): the whole stop alone stays
            await cancel_partial_stop(client, sym)

        farther = await call(client, "set_trading_stop", {"symbol": sym, "stop_loss": "60000"})
        assert farther["status"] == "refused"
        assert farther["violations"][0]["rule"] == "maxLossPerTradeUsd"
        fits = farther["next_safe_action"]
        assert fits["tool"] == "set_trading_stop" and Decimal(fits["args"]["stop_loss"]) < Decimal("79500")
        assert paper.position("BTCUSDT").stop_loss == Decimal("79500")  # nothing was sent
        moved = await call(client, "set_trading_stop", fits["args"])
        assert moved["status"] == "done"
        assert paper.position("BTCUSDT").stop_loss == Decimal(fits["args"]["stop_loss"])

        removed = await call(client, "set_trading_stop", {"symbol": sym, "stop_loss": "0"})
        assert removed["status"] == "refused" and removed["violations"][0]["rule"] == "requireStopLoss"
        target = await call(client, "set_trading_stop", {"symbol": sym, "take_profit": "90000"})
        assert target["status"] == "done" and paper.position("BTCUSDT").take_profit == Decimal("90000")


async def cancel_partial_stop(client: Any, symbol: str) -> None:
    """Cancel the stop OKX made of a stop sent with an order (a stop of what filled, beside the position's
    whole stop, pilot.core.venues.OKX), as an agent would: listed by get_open_orders, cancelled by its id."""
    listed = await call(client, "get_open_orders", {"symbol": symbol})
    (partial,) = [row for row in listed["data"] if row.get("stop_type") == "PartialStopLoss"]
    cancelled = await call(client, "cancel_order", {"symbol": symbol, "order_id": partial["order_id"]})
    assert cancelled["status"] == "done", cancelled


async def test_plan_amend_is_redeemed_by_place_order_growing_judged_shrinking_free(
    venue_runtime, venue, tmp_path
):
    paper, runtime, sym = venue.paper, venue_runtime, venue.sym("BTCUSDT")
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        plan = await call(
            client,
            "plan_order",
            venue.args({**BUY, "qty": "0.0001", "order_type": "limit", "price": "70000"}),
        )
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        assert placed["status"] == "open"
        order_id = placed["order_id"]

        grown = await call(client, "plan_amend", {"symbol": sym, "order_id": order_id, "qty": "0.0003"})
        assert grown["status"] == "ok" and grown["order"]["qty"] == "0.0003"
        assert paper.open_orders("BTCUSDT")[0].qty == Decimal("0.0001")  # planning sends nothing
        amended = await call(client, "place_order", {"plan_id": grown["plan_id"]})
        assert amended["status"] == "open" and amended["order_id"] == order_id
        assert paper.open_orders("BTCUSDT")[0].qty == Decimal("0.0003")
        again = await call(client, "place_order", {"plan_id": grown["plan_id"]})
        assert again["violations"][0]["rule"] == "planAlreadyUsed"

        too_big = await call(client, "plan_amend", {"symbol": sym, "order_id": order_id, "qty": "0.0005"})
        assert too_big["status"] == "refused" and too_big["violations"][0]["rule"] == "maxOrderNotionalUsd"
        fits = too_big["next_safe_action"]
        assert fits["tool"] == "plan_amend" and fits["args"]["order_id"] == order_id
        assert Decimal("0.0003") <= Decimal(fits["args"]["qty"]) < Decimal("0.0005")
        replayed = await call(client, "plan_amend", fits["args"])
        assert replayed["status"] == "ok"

        venue.write_policy(tmp_path, tradingState="reducing")  # shrinking at the same price is always allowed
        shrunk = await call(client, "plan_amend", {"symbol": sym, "order_id": order_id, "qty": "0.0002"})
        assert shrunk["status"] == "ok"
        assert (await call(client, "place_order", {"plan_id": shrunk["plan_id"]}))["status"] == "open"
        assert paper.open_orders("BTCUSDT")[0].qty == Decimal("0.0002")

        missing = await call(client, "plan_amend", {"symbol": sym, "order_id": "nope", "qty": "0.0002"})
        assert missing["violations"][0]["rule"] == "orderNotOpen"
        assert missing["next_safe_action"]["tool"] == "get_open_orders"
    actions = [e.data for e in await runtime.store.journal.entries(kind=entry_kinds.ACTION)]
    assert [a["phase"] for a in actions if a["tool"] == "amend_order"] == ["sent", "outcome"] * 2


@pytest.mark.parametrize("name", VENUES)
async def test_a_fill_without_its_stop_is_journaled_and_answered_with_the_call_that_sets_it(
    tmp_path, clock, name
):
    scenario = article_scenario()
    scenario["tpslOnCreate"] = False  # the exchange takes the order and loses its stop
    with start_paper_exchange(scenario) as paper, venue_on(name, paper) as venue:
        venue.write_policy(tmp_path, maxLossPerTradeUsd=1)
        async with (
            open_test_runtime(tmp_path, venue.endpoint, clock) as runtime,
            Client(build_server(runtime), raise_exceptions=True) as client,
        ):
            plan = await call(client, "plan_order", venue.args({**BUY, "stop_loss": "79000"}))
            placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
            assert placed["status"] == "filled" and paper.position("BTCUSDT").stop_loss == 0
            protection = placed["protection"]
            assert protection["missing_stop"] is True and protection.get("stop_loss") is None
            fix = protection["set_with"]
            assert fix["tool"] == "set_trading_stop" and fix["args"] == {
                "symbol": venue.sym("BTCUSDT"),
                "stop_loss": "79000",
            }
            missing = await runtime.store.journal.entries(kind=entry_kinds.PROTECTION)
            assert missing[0].data["missing_stop"] is True and missing[0].plan_id == plan["plan_id"]

            done = await call(client, fix["tool"], fix["args"])
            assert done["status"] == "done" and paper.position("BTCUSDT").stop_loss == Decimal("79000")


async def test_a_stop_moved_away_waits_while_the_days_loss_cannot_be_read_and_a_closer_one_does_not(
    runtime, paper, tmp_path
):
    """Fail closed: under a daily loss limit, a stop moved away is judged on the day's loss read at the call;
    when that read fails the move is refused (held by dayLossUnread, nothing sent), while a closer stop, which
    only reduces what can be lost, still goes."""
    write_policy(tmp_path, maxLossPerTradeUsd=5, dailyLossLimitUsd=50)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        plan = await call(client, "plan_order", {**BUY, "stop_loss": "79000"})
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "filled"
        paper.add_fault("/v5/position/closed-pnl", "http_5xx", every=True)

        farther = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "78990"})
        assert farther["status"] == "refused"
        assert [v["rule"] for v in farther["violations"]] == ["tradingState"]
        assert [h["source"] for h in farther["violations"][0]["held_by"]] == ["dayLossUnread"]
        assert paper.position("BTCUSDT").stop_loss == Decimal("79000")  # nothing was sent

        closer = await call(client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "79500"})
        assert closer["status"] == "done" and paper.position("BTCUSDT").stop_loss == Decimal("79500")


async def test_leverage_raised_waits_while_the_days_loss_cannot_be_read_and_lowered_does_not(
    runtime, paper, tmp_path
):
    """A higher leverage grows what a position can lose before liquidation: under a daily loss limit it is
    judged on the day's loss read at the call, and waits when that read fails (dayLossUnread, nothing sent);
    a lower one still goes."""
    write_policy(tmp_path, maxLeverage=10, dailyLossLimitUsd=50)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        assert (await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "3"}))[
            "status"
        ] == "done"
        paper.add_fault("/v5/position/closed-pnl", "http_5xx", every=True)
        raised = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "5"})
        assert raised["status"] == "refused"
        assert [h["source"] for v in raised["violations"] for h in v.get("held_by", [])] == ["dayLossUnread"]
        assert paper.position("BTCUSDT").leverage == Decimal(3)  # nothing was sent
        lowered = await call(client, "set_leverage", {"symbol": "BTCUSDT", "leverage": "2"})
        assert lowered["status"] == "done" and paper.position("BTCUSDT").leverage == Decimal(2)
