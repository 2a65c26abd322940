"""The cases issue 24 lists, one small world each, pinned to the behaviour the issue asks for: every refusal of
every tool leads somewhere (its next action replays ok), reducing keeps working, and nothing Pilot lets
through is one the exchange rejects for a reason Pilot could know.

Bybit's BTCUSDT filters (tick 0.1, step 0.001, minimum 0.001) at 80,000; a client that cannot show forms.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.worlds.harness import WorldRun, open_world
from tests.worlds.test_issue_cases import BTC, POLICY, QUOTES, clean, rules
from tests.worlds.tools import succeeded
from tests.worlds.world import Holding, Instrument, Quote, Resting, World

pytestmark = pytest.mark.anyio
STOP_PATH = "/v5/position/trading-stop"
AMEND_PATH = "/v5/order/amend"


def scene(
    position: Decimal = Decimal(0),
    *,
    policy: dict[str, Any] | None = None,
    resting: tuple[Resting, ...] = (),
    instrument: Instrument = BTC,
) -> World:
    held = ()
    if position:
        side = "Buy" if position > 0 else "Sell"
        held = (Holding("BTCUSDT", side, abs(position), Decimal(80000), Decimal(5)),)
    return World(
        (instrument,), QUOTES, {**POLICY, **(policy or {})}, held, {"USDT": Decimal(10_000)}, resting
    )


async def call(run: WorldRun, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    answer = await run.call(tool, args)
    assert answer is not None
    return answer


async def follow(run: WorldRun, answer: dict[str, Any]) -> dict[str, Any]:
    """Make the next safe action exactly as given; its answer."""
    nxt = answer["next_safe_action"]
    assert nxt is not None and nxt["tool"] is not None, answer
    return await call(run, nxt["tool"], nxt["args"])


# --- reducing keeps working ----------------------------------------------------------------------------


async def test_a_reduce_only_close_refused_for_the_orders_that_would_reopen_it_leads_to_close_position(
    tmp_path: Path,
):
    # Long 0.01 BTC ($800) with another client's sell of 0.02 resting above: closing any of it first leaves
    # that sell free to open a larger short than the 0.01 it can open now ($880 at least, past the $850 cap).
    sell = Resting("linear", "BTCUSDT", "Sell", Decimal("0.02"), Decimal(81000))
    world = scene(Decimal("0.01"), policy={"maxNotionalUsd": Decimal(850)}, resting=(sell,))
    async with open_world(world, tmp_path) as run:
        asked = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.01", "reduce_only": True}
        refused = await call(run, "plan_order", asked)
        assert refused["status"] == "refused" and "maxNotionalUsd" in rules(refused)
        assert refused["next_safe_action"]["tool"] == "close_position"
        closed = await follow(run, refused)
        assert closed["status"] == "filled"
        assert [c["qty"] for c in closed["cancelled_first"]] == ["0.02"]
        assert run.paper.position("BTCUSDT").size == 0
        clean(run)


async def test_a_reduce_only_close_cut_for_the_orders_that_would_reopen_it_offers_close_position_too(
    tmp_path: Path,
):
    sell = Resting("linear", "BTCUSDT", "Sell", Decimal("0.02"), Decimal(81000))
    world = scene(Decimal("0.01"), policy={"maxNotionalUsd": Decimal(1000)}, resting=(sell,))
    async with open_world(world, tmp_path) as run:
        asked = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.01", "reduce_only": True}
        refused = await call(run, "plan_order", asked)
        nxt = refused["next_safe_action"]
        assert nxt["tool"] == "plan_order" and nxt["args"]["qty"] == "0.002"  # 0.012 short at worst: $960
        (option,) = nxt["options"]
        assert option["tool"] == "close_position"
        closed = await call(run, option["tool"], option["args"])
        assert closed["status"] == "filled" and run.paper.position("BTCUSDT").size == 0
        clean(run)


async def test_a_reduce_only_order_above_the_confirmation_threshold_needs_no_human(tmp_path: Path):
    world = scene(Decimal("0.02"), policy={"confirm": {"aboveNotionalUsd": Decimal(50)}})
    async with open_world(world, tmp_path) as run:
        asked = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.02", "reduce_only": True}
        plan = await call(run, "plan_order", asked)  # $1,600, far above the $50 a human must approve
        assert plan["status"] == "ok" and not plan["needs_confirmation"]
        placed = await call(run, "place_order", {"plan_id": plan["plan_id"]})
        assert placed["status"] == "filled" and run.paper.position("BTCUSDT").size == 0
        clean(run)


async def test_when_every_order_needs_a_human_a_client_without_one_is_offered_close_position(tmp_path: Path):
    world = scene(Decimal("-0.01"), policy={"confirm": {"actions": ["place_order"]}})
    async with open_world(world, tmp_path) as run:
        asked = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.01", "reduce_only": True}
        refused = await call(run, "plan_order", asked)
        assert rules(refused) == ["confirmationChannelUnavailable"]
        closed = await follow(run, refused)
        assert closed["status"] == "filled" and run.paper.position("BTCUSDT").size == 0
        clean(run)


async def test_a_close_position_named_in_confirm_actions_is_not_offered_to_a_client_without_a_human(
    tmp_path: Path,
):
    world = scene(Decimal("-0.01"), policy={"confirm": {"actions": ["place_order", "close_position"]}})
    async with open_world(world, tmp_path) as run:
        asked = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.01", "reduce_only": True}
        refused = await call(run, "plan_order", asked)
        nxt = refused["next_safe_action"]
        assert nxt["tool"] is None and nxt["human"]  # a human must act: nothing the agent can call passes
        clean(run)


async def test_the_reducing_variant_of_an_order_with_a_stop_drops_the_stop_it_cannot_carry(tmp_path: Path):
    world = scene(Decimal("-0.01"), policy={"tradingState": "reducing"})
    async with open_world(world, tmp_path) as run:
        flip = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.02", "stop_loss": "79000"}
        refused = await call(run, "plan_order", flip)
        nxt = refused["next_safe_action"]
        assert nxt["tool"] == "plan_order" and nxt["args"]["reduce_only"] is True
        assert "stop_loss" not in nxt["args"]
        assert (await follow(run, refused))["status"] == "ok"
        clean(run)


async def test_an_order_that_may_outlive_the_position_is_made_reduce_only_within_the_largest_order(
    tmp_path: Path,
):
    small = Instrument(
        "BTCUSDT", "linear", Decimal("0.1"), Decimal("0.001"), Decimal("0.001"), Decimal("0.5"), Decimal(5)
    )
    policy = {"tradingState": "reducing", "requireStopLoss": True, "maxNotionalUsd": Decimal(10**6)}
    world = scene(Decimal("-0.8"), policy=policy, instrument=small)  # larger than one maximum order
    async with open_world(world, tmp_path) as run:
        rest = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.8", "order_type": "limit", "price": "79000"}
        refused = await call(run, "plan_order", rest)
        assert "requireStopLoss" in rules(refused)
        nxt = refused["next_safe_action"]
        assert nxt["args"]["reduce_only"] is True and Decimal(nxt["args"]["qty"]) <= Decimal("0.5")
        assert (await follow(run, refused))["status"] == "ok"
        clean(run)


# --- set_trading_stop as Bybit applies it ----------------------------------------------------------------


async def test_a_stop_on_a_flat_market_is_refused_and_never_sent(tmp_path: Path):
    async with open_world(scene(), tmp_path) as run:
        refused = await call(run, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "70000"})
        assert rules(refused) == ["noPosition"] and refused["next_safe_action"]["tool"] is None
        assert run.paper.request_count(STOP_PATH) == 0
        clean(run)


async def test_a_take_profit_behind_the_price_is_refused_with_one_beyond_it_that_is_set(tmp_path: Path):
    async with open_world(scene(Decimal("0.01")), tmp_path) as run:
        asked = {"symbol": "BTCUSDT", "stop_loss": "79000", "take_profit": "79500"}  # a long's target below
        refused = await call(run, "set_trading_stop", asked)
        assert rules(refused) == ["takeProfit"] and run.paper.request_count(STOP_PATH) == 0
        done = await follow(run, refused)
        assert succeeded("set_trading_stop", done)
        position = run.paper.position("BTCUSDT")
        assert position.stop_loss == Decimal(79000) and position.take_profit > Decimal("80000.1")
        clean(run)


async def test_a_stop_off_the_tick_is_sent_on_the_tick_towards_the_price(tmp_path: Path):
    async with open_world(scene(Decimal("0.01")), tmp_path) as run:
        done = await call(run, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "79000.04"})
        assert done["status"] == "done"
        assert (done["data"]["stop_loss"], done["data"]["stop_loss_asked"]) == ("79000.1", "79000.04")
        assert run.paper.position("BTCUSDT").stop_loss == Decimal("79000.1")  # a long's stop rounds up
        clean(run)


# --- plan_amend ------------------------------------------------------------------------------------------


async def test_an_amend_that_cannot_grow_the_order_ends_there_instead_of_suggesting_no_change(tmp_path: Path):
    # A buy of 0.001 resting at 79,000 ($79) under an $80 cap: no larger total fits.
    mine = Resting("linear", "BTCUSDT", "Buy", Decimal("0.001"), Decimal(79000))
    caps = {"maxNotionalUsd": Decimal(80), "maxOrderNotionalUsd": Decimal(80)}
    async with open_world(scene(policy=caps, resting=(mine,)), tmp_path) as run:
        order_id = run.paper.open_orders("BTCUSDT")[0].order_id
        asked = {"symbol": "BTCUSDT", "order_id": order_id, "qty": "0.01"}
        refused = await call(run, "plan_amend", asked)
        nxt = refused["next_safe_action"]
        assert "maxNotionalUsd" in rules(refused)
        assert nxt["tool"] is None and nxt["human"]
        one_more = await call(run, "plan_amend", {**asked, "qty": "0.002"})
        assert one_more["status"] == "refused"
        assert run.paper.request_count(AMEND_PATH) == 0
        clean(run)


async def test_an_amend_above_a_cap_is_cut_to_the_largest_total_that_fits(tmp_path: Path):
    mine = Resting("linear", "BTCUSDT", "Buy", Decimal("0.001"), Decimal(79000))
    caps = {"maxNotionalUsd": Decimal(400), "maxOrderNotionalUsd": Decimal(400)}
    async with open_world(scene(policy=caps, resting=(mine,)), tmp_path) as run:
        order_id = run.paper.open_orders("BTCUSDT")[0].order_id
        refused = await call(run, "plan_amend", {"symbol": "BTCUSDT", "order_id": order_id, "qty": "0.01"})
        nxt = refused["next_safe_action"]
        assert nxt["tool"] == "plan_amend" and nxt["args"]["qty"] == "0.005"  # $395 at 79,000
        plan = await follow(run, refused)
        assert plan["status"] == "ok"
        more = await call(run, "plan_amend", {**nxt["args"], "qty": "0.006"})
        assert more["status"] == "refused"
        placed = await call(run, "place_order", {"plan_id": plan["plan_id"]})
        assert placed["status"] == "open" and run.paper.open_orders("BTCUSDT")[0].qty == Decimal("0.005")
        clean(run)


async def test_a_dust_close_blocked_by_a_resting_order_and_the_daily_cap_leads_to_close_position(
    tmp_path: Path,
):
    fine = Instrument(
        "BTCUSDT", "linear", Decimal("0.1"), Decimal("0.0001"), Decimal("0.001"), Decimal(100), Decimal(5)
    )
    sell = Resting("linear", "BTCUSDT", "Sell", Decimal("0.001"), Decimal(81000))
    world = scene(Decimal("0.0005"), policy={"dailyOrderCap": 0}, resting=(sell,), instrument=fine)
    async with open_world(world, tmp_path) as run:
        refused = await call(run, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0006"})
        assert "dailyOrderCap" in rules(refused)
        closed = await follow(run, refused)
        assert closed["status"] == "filled" and run.paper.position("BTCUSDT").size == 0
        clean(run)


async def test_an_order_raised_to_the_minimum_that_would_open_one_market_too_many_says_so_at_once(
    tmp_path: Path,
):
    eth = Instrument(
        "ETHUSDT", "linear", Decimal("0.01"), Decimal("0.01"), Decimal("0.01"), Decimal(1000), Decimal(5)
    )
    quotes = {**QUOTES, "ETHUSDT": Quote(Decimal(3000), Decimal("3000.01"), Decimal("3000.005"))}
    held = (Holding("ETHUSDT", "Buy", Decimal("0.1"), Decimal(3000), Decimal(5)),)
    policy = {**POLICY, "allowedMarkets": ["BTCUSDT", "ETHUSDT"], "maxOpenPositions": 1}
    world = World((BTC, eth), quotes, policy, held, {"USDT": Decimal(10_000)})
    async with open_world(world, tmp_path) as run:
        tiny = {"symbol": "BTCUSDT", "side": "buy", "notional_usd": "1"}  # below one lot: a size of 0
        refused = await call(run, "plan_order", tiny)
        nxt = refused["next_safe_action"]
        assert nxt["tool"] is None and nxt["human"]  # not a minimum order that maxOpenPositions refuses
        clean(run)


async def test_a_leverage_cut_that_would_need_a_human_this_client_cannot_reach_is_terminal(tmp_path: Path):
    world = scene(policy={"confirm": {"actions": ["set_leverage"]}})
    async with open_world(world, tmp_path) as run:
        refused = await call(run, "set_leverage", {"symbol": "BTCUSDT", "leverage": "50"})
        assert rules(refused) == ["maxLeverage"]
        assert refused["next_safe_action"]["tool"] is None and refused["next_safe_action"]["human"]
        clean(run)


async def test_an_amend_asked_to_grow_a_reduce_only_order_already_above_the_position_is_not_cut_to_a_shrink(
    tmp_path: Path,
):
    # A reduce-only buy of 0.02 rests against a 0.01 short (the position shrank since it was placed): no
    # larger total fits; shrinking it is not what was asked (and one more lot step of a shrink would pass).
    mine = Resting("linear", "BTCUSDT", "Buy", Decimal("0.02"), Decimal(79000), reduce_only=True)
    async with open_world(scene(Decimal("-0.01"), resting=(mine,)), tmp_path) as run:
        order_id = run.paper.open_orders("BTCUSDT")[0].order_id
        refused = await call(run, "plan_amend", {"symbol": "BTCUSDT", "order_id": order_id, "qty": "0.05"})
        assert "reduceOnlyQty" in rules(refused)
        assert refused["next_safe_action"]["tool"] is None and refused["next_safe_action"]["human"]
        assert run.paper.request_count(AMEND_PATH) == 0
        clean(run)


@pytest.mark.parametrize(("actions", "way_out"), [([], "cancel_order"), (["cancel_order"], None)])
async def test_an_amend_below_the_minimum_names_cancel_order_only_where_it_can_be_made(
    tmp_path: Path, actions: list[str], way_out: str | None
):
    """Found by the random worlds: an amend to a total below the minimum is answered "cancel it instead";
    where confirm.actions names cancel_order and this client reaches no human, that call is a dead end, so
    the answer says what only a human can do instead."""
    instrument = replace(BTC, min_qty=Decimal("0.005"))
    mine = Resting("linear", "BTCUSDT", "Buy", Decimal("0.01"), Decimal(79000))
    world = scene(policy={"confirm": {"actions": actions}}, resting=(mine,), instrument=instrument)
    async with open_world(world, tmp_path) as run:
        order_id = run.paper.open_orders("BTCUSDT")[0].order_id
        refused = await call(run, "plan_amend", {"symbol": "BTCUSDT", "order_id": order_id, "qty": "0.003"})
        nxt = refused["next_safe_action"]
        assert rules(refused) == ["instrument.minOrderQty"]
        assert nxt["tool"] == way_out
        if way_out is None:
            assert nxt["human"]
        else:
            cancelled = await follow(run, refused)
            assert cancelled["status"] == "done" and run.paper.open_orders("BTCUSDT") == []
        assert run.paper.request_count(AMEND_PATH) == 0
        clean(run)
