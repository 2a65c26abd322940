"""The story `pilot demo` plays, step by step, with the exact answers each step must get from Pilot.

An oversized short without a stop is refused with the size and the stop that fit (a short with no stop can
lose without bound, past the $2 a trade may lose); the agent re-plans with exactly that call; a human approves
it in a form and it fills with its stop; an add where nothing fits stops the agent; a buy whose stop would lose
too much is sized to its stop and fills with the stop on the position; a small add with a far stop is
refused, because its stop would become the whole position's; the market falls and the exchange closes the
position at its stop; the kill switch lets only a close through. Statuses, rule codes and quantities are
checked exactly: these numbers come from the paper exchange's default scenario, which has Bybit's real
BTCUSDT filters (bid 80220, step and minimum 0.001), with ETHUSDT on a seeded walk that stands still until
the story runs it (pilot/demo/paper_market.py), and from `pilot init`'s policy (BTCUSDT capped at $150 a position
and an order, a human above $50) with one loss limit added: a trade may lose at most $2 at its stop.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import anyio

from pilot.app.human.desk import DEFAULT_POLICY
from pilot.demo.agent import Agent, StepFailed, next_call
from pilot.demo.paper_market import Moment, run_until_flat
from pilot.paper import PaperExchange

BTC_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.002"}
BTC_ADD = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.001"}
ETH_BUY = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.01", "stop_loss": "2900"}
ETH_WITH_STOP = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.03", "stop_loss": "3000"}
ETH_FAR_STOP = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.01", "stop_loss": "2950"}
MAX_LOSS_PER_TRADE_USD = 2
RATE_WINDOW_SECONDS = 1  # Bybit's per-second request limits (rate-limit.mdx)
BTC_CAPS = ("maxOrderNotionalUsd", "maxNotionalUsd")  # BTCUSDT's $150 caps, per order and per position
# The farthest stop for the 0.001 BTC short the caps leave, within the $2 a trade may lose (from its worst
# fill, the bid less maxSlippagePct, taker fees both ways).
BTC_STOP = "81730"  # 0.001 x (81730 - 79818.9) + fees = $1.99995
# What the seeded ETHUSDT walk does to the 0.01 ETH long bought at 3100.01 with its stop at 3000.
STOP_FILL = {"price": "2999.64", "closed_pnl": "-1.037248075"}
# The receipt cards the run must leave, oldest first: one per plan_order (close_position plans too).
EXPECTED_CARDS = ("refused", "filled", "refused", "refused", "filled", "refused", "refused", "filled")


def demo_policy() -> dict[str, Any]:
    """`pilot init`'s policy with one loss limit added: what a new home does on Bybit's real filters.

    0.002 BTC ($160.44 at the bid) breaks BTCUSDT's $150 caps, per order and per position, and with no stop
    the loss limit too (a short with no stop has no bound); one call fixes all three: 0.001 BTC ($80.22), the
    venue's minimum, which asks a human because it is above $50, with its stop at 81730, where it loses at most
    $2 from its worst fill (the bid less 0.5 %). A second 0.001 would leave $160.44, and the short's stop
    would then lose twice that, so with one lot held nothing fits. An ETH buy of 0.03 with its stop at 3000
    would lose $3.57 at the stop (from its worst fill 3115.52, fees both ways), above the $2 a trade may
    lose: 0.01 ETH ($1.19) fits. Holding it, another 0.01 with its stop at 2950 would lose $1.69 on its own,
    but its stop becomes the whole position's: the 0.02 ETH left would lose $3.22 at 2950.
    """
    policy: dict[str, Any] = json.loads(DEFAULT_POLICY)
    policy["maxLossPerTradeUsd"] = MAX_LOSS_PER_TRADE_USD
    return policy


class Story:
    """The steps the agent plays, each checking Pilot's answers exactly; `market` is the paper exchange
    `pilot serve` is attached to, which the story runs when the market is to move."""

    def __init__(self, agent: Agent, market: PaperExchange) -> None:
        self.agent = agent
        self.market = market
        self.suggested: tuple[str, dict[str, Any]] | None = None
        self.plan_id: str | None = None

    async def oversized_short(self) -> None:
        answer = await self.agent.call("plan_order", BTC_SHORT)
        _status(answer, "refused")
        violations = _only_violations(answer, (*BTC_CAPS, "maxLossPerTradeUsd"))
        for violation in violations:
            expected = ("2", "unbounded") if violation["rule"] == "maxLossPerTradeUsd" else ("150", "160.44")
            _expect(
                (violation["limit"], violation["attempted"]) == expected,
                f"expected limit {expected[0]} and attempted {expected[1]} for {violation['rule']}, got "
                f"{violation['limit']} and {violation['attempted']}",
            )
        follow = next_call(answer)
        if follow is None or follow[0] != "plan_order":
            raise StepFailed(f"expected plan_order as the next safe action, got {follow}")
        args = follow[1]
        _expect(args.get("qty") == "0.001", f"expected the next action's qty 0.001, got {args.get('qty')}")
        _expect(
            (args.get("symbol"), args.get("side"), args.get("stop_loss")) == ("BTCUSDT", "sell", BTC_STOP),
            f"expected the same BTCUSDT sell with its stop at {BTC_STOP}, got {args.get('symbol')} "
            f"{args.get('side')} at {args.get('stop_loss')}",
        )
        self.agent.say(
            f"a short with no stop can lose without bound: the call that fits carries a stop at {BTC_STOP}, "
            "where 0.001 BTC loses at most the $2 a trade may lose"
        )
        self.suggested = follow

    async def replan_as_told(self) -> None:
        if self.suggested is None:
            raise StepFailed("step 1 left no next safe action to follow")
        tool, args = self.suggested
        self.agent.say(
            f"the agent makes the next safe action's call unchanged: {tool} with qty {args['qty']}"
        )
        answer = await self.agent.call(tool, args)
        _status(answer, "ok")
        order = answer.get("order") or {}
        _expect(order.get("qty") == "0.001", f"expected a planned qty of 0.001, got {order.get('qty')}")
        _expect(answer.get("needs_confirmation") is True, "expected the plan to need a human's confirmation")
        notional = Decimal(answer.get("position_notional_usd") or "Infinity")
        _expect(notional <= 150, f"expected a position under the $150 cap, got ${notional}")
        self.plan_id = answer["plan_id"]

    async def human_confirms(self) -> None:
        answer = await self.agent.call("place_order", {"plan_id": self.plan_id})
        forms = self.agent.last_forms
        _expect(
            len(forms) == 1 and "Sell 0.001 BTCUSDT" in forms[0],
            f"expected the human to be shown one form naming Sell 0.001 BTCUSDT, got {len(forms)} form(s)",
        )
        _filled(answer, "0.001")

    async def nothing_fits(self) -> None:
        agent = self.agent
        agent.say(
            "holding the 0.001 BTC short, the agent plans another 0.001: about $80, under $150 on its own"
        )
        answer = await agent.call("plan_order", BTC_ADD)
        _status(answer, "refused")
        _only_violations(answer, ("maxNotionalUsd", "maxLossPerTradeUsd"))
        action = answer.get("next_safe_action") or {}
        text = action.get("text") or ""
        _expect(next_call(answer) is None, f"expected no tool to call, got {action.get('tool')}")
        _expect(
            "room left is 0 BTC" in text and "minimum 0.001" in text,
            f"expected room 0 BTC below the minimum 0.001, got {text!r}",
        )
        _expect(bool(action.get("human")), "expected the refusal to say what a human must change")
        agent.say(f"no tool is named, so the agent stops and tells the user: {action['human']}")

    async def sized_to_its_stop(self) -> None:
        agent = self.agent
        agent.say("the agent buys 0.03 ETH with its stop at 3000; a trade may lose at most $2 at its stop")
        answer = await agent.call("plan_order", ETH_WITH_STOP)
        _status(answer, "refused")
        [loss] = _only_violations(answer, ("maxLossPerTradeUsd",))
        _expect(
            (loss["limit"], loss["attempted"]) == ("2", "3.57"),
            f"expected limit 2 and attempted 3.57, got {loss['limit']} and {loss['attempted']}",
        )
        follow = next_call(answer)
        if follow is None or follow[0] != "plan_order":
            raise StepFailed(f"expected plan_order as the next safe action, got {follow}")
        args = follow[1]
        _expect(
            (args.get("qty"), args.get("stop_loss")) == ("0.01", "3000"),
            f"expected 0.01 ETH with the same stop, got {args.get('qty')} at {args.get('stop_loss')}",
        )
        options = (answer.get("next_safe_action") or {}).get("options") or []
        _expect(
            any((o.get("args") or {}).get("qty") == "0.03" for o in options),
            "expected the other way out as an option: the same 0.03 with a closer stop",
        )
        agent.say("the agent takes the size that fits its stop, unchanged")
        planned = await agent.call(*follow)
        _status(planned, "ok")
        placed = await agent.call("place_order", {"plan_id": planned["plan_id"]})
        _filled(placed, "0.01")
        protection = placed.get("protection") or {}
        _expect(
            protection.get("stop_loss") == "3000" and protection.get("missing_stop") is False,
            f"expected the stop at 3000 on the position, got {protection}",
        )

    async def far_stop_is_the_positions(self) -> None:
        agent = self.agent
        agent.say(
            "holding 0.01 ETH with its stop at 3000, the agent adds 0.01 with its stop at 2950: on its own it "
            "would lose $1.69 there, within the $2"
        )
        answer = await agent.call("plan_order", ETH_FAR_STOP)
        _status(answer, "refused")
        [loss] = _only_violations(answer, ("maxLossPerTradeUsd",))
        _expect(
            (loss["limit"], loss["attempted"]) == ("2", "3.22"),
            f"expected limit 2 and attempted 3.22, got {loss['limit']} and {loss['attempted']}",
        )
        agent.say(
            "the agent does not add: its task was this stop, and the closer one offered would be the stop of "
            "all 0.02 ETH; it keeps 0.01 ETH with its stop at 3000"
        )

    async def stop_triggers(self) -> None:
        agent = self.agent
        orders = await agent.call("get_open_orders", {"symbol": "ETHUSDT"})
        stops = [row for row in orders.get("data") or [] if row.get("stop_type") == "StopLoss"]
        _expect(
            [(row.get("trigger_price"), row.get("status")) for row in stops] == [("3000", "Untriggered")],
            f"expected the position's stop waiting at 3000, got {stops}",
        )
        agent.say("the market runs: the demo moves the paper exchange's clock on, five minutes at a time")
        opened_ms = self.market.now_ms()
        moments = await anyio.to_thread.run_sync(run_until_flat, self.market, "ETHUSDT")
        for moment in moments:
            agent.say(_moment_line(moment))
        _expect(moments[-1].size == 0, "expected the stop to close the ETH position as the price fell")
        history = await agent.call("get_order_history", {"symbol": "ETHUSDT"})
        [fired] = [row for row in history.get("data", {}).get("rows") or [] if row.get("stop_type")]
        _expect(
            (fired["stop_type"], fired["trigger_price"], fired["status"], fired["filled_qty"])
            == ("StopLoss", "3000", "Filled", "0.01"),
            f"expected the StopLoss at 3000 filled for 0.01, got {fired}",
        )
        fills = await agent.call("get_fills", {"symbol": "ETHUSDT"})
        fill = (fills.get("data", {}).get("rows") or [{}])[0]
        _expect(
            (fill.get("side"), fill.get("qty"), fill.get("price")) == ("sell", "0.01", STOP_FILL["price"]),
            f"expected a sell of 0.01 at {STOP_FILL['price']}, got {fill}",
        )
        seconds = (round(datetime.fromisoformat(fill["at"]).timestamp() * 1000) - opened_ms) // 1000
        agent.say(
            f"the stop triggered {seconds // 60} min {seconds % 60} s into the run, when the last price reached "
            f"3000: the exchange sold the 0.01 ETH at the bid, {fill['price']}"
        )
        closed = await agent.call("get_closed_pnl", {"symbol": "ETHUSDT"})
        pnl = (closed.get("data", {}).get("rows") or [{}])[0].get("closed_pnl")
        _expect(
            pnl == STOP_FILL["closed_pnl"], f"expected a closed PnL of {STOP_FILL['closed_pnl']}, got {pnl}"
        )
        lost = Decimal(pnl).copy_abs().quantize(Decimal("0.01"))
        agent.say(f"the trade lost ${lost}, fees included: within the $2 it was sized to")

    async def kill_switch(self) -> None:
        agent = self.agent
        switched = await agent.call("activate_kill_switch", {"reason": "demo: the agent halts itself"})
        _expect(switched.get("status") == "done", f"expected done, got {switched.get('status')}")
        state = (switched.get("data") or {}).get("trading_state")
        _expect(state == "reducing", f"expected trading state reducing, got {state}")
        refused = await agent.call("plan_order", ETH_BUY)
        _status(refused, "refused")
        _only_violations(refused, ("tradingState",))
        # Every judgement reads the open orders, and the short's stop is one more to list: a scripted agent
        # this quick would pass Bybit's 50 reads a second (10006), so it waits that second out first.
        await anyio.sleep(RATE_WINDOW_SECONDS)
        closed = await agent.call("close_position", {"symbol": "BTCUSDT"})
        _filled(closed, "0.001")
        _expect((closed.get("sent") or {}).get("reduce_only") is True, "expected the close to be reduce-only")
        positions = await agent.call("get_positions", {})
        held = {row["symbol"]: row["size"] for row in positions.get("data") or []}
        _expect(held == {}, f"expected no position left, got {held}")


Play = Callable[[Story], Awaitable[None]]
STORY: tuple[tuple[str, str, Play], ...] = (
    (
        "An oversized BTC short without a stop is refused",
        "the refusal names each broken rule with its numbers and one call that fits them all, a stop that "
        "bounds the loss included; nothing was sent",
        Story.oversized_short,
    ),
    (
        "The agent re-plans with exactly that call",
        "the next safe action is a real call: sent unchanged, it passes every check",
        Story.replan_as_told,
    ),
    (
        "place_order: a human approves in a form, and it fills",
        "the order above the confirmation threshold waited for a human; the agent cannot approve itself",
        Story.human_confirms,
    ),
    (
        "An add where nothing fits",
        "when no size fits, Pilot names no tool and says what only a human can change, so the agent stops",
        Story.nothing_fits,
    ),
    (
        "A buy sized to its stop",
        "a stop-loss sets how much a trade may lose: the size that fits comes from the same sizing, and the "
        "stop goes with the order onto the position",
        Story.sized_to_its_stop,
    ),
    (
        "A small add whose far stop would become the whole position's",
        "a stop sent with an order becomes the stop of the whole position, as Bybit applies it: Pilot judges "
        "the loss of all of it at that stop, not of the small order alone",
        Story.far_stop_is_the_positions,
    ),
    (
        "The market falls and the stop closes the position",
        "a stop is an order on the exchange that waits for its price: as the market moves it triggers, fills, "
        "and the loss is what the stop was sized to, with nobody asking",
        Story.stop_triggers,
    ),
    (
        "The kill switch: new orders refused, closing allowed",
        "with the kill switch on only what shrinks a position works, and closing still does",
        Story.kill_switch,
    ),
)
RECEIPTS = (
    "Receipt cards and a verified journal",
    "every decision, refusals included, is a receipt in a hash-chained journal anyone can verify",
)


def _moment_line(moment: Moment) -> str:
    held = f"{moment.size} ETH held" if moment.size else "the position is closed"
    return f"market +{moment.minutes} min: ETHUSDT bid {moment.bid}, ask {moment.ask}; {held}"


def _expect(condition: bool, why: str) -> None:
    if not condition:
        raise StepFailed(why)


def _status(answer: dict[str, Any], expected: str) -> None:
    status = answer.get("status")
    if status != expected:
        rules = [violation.get("rule") for violation in answer.get("violations") or []]
        raise StepFailed(
            f"expected status {expected}, got {status}" + (f" ({', '.join(rules)})" if rules else "")
        )


def _only_violations(answer: dict[str, Any], expected: tuple[str, ...]) -> list[dict[str, Any]]:
    violations = answer.get("violations") or []
    rules = tuple(violation.get("rule") for violation in violations)
    _expect(
        sorted(rules) == sorted(expected),
        f"expected exactly the rules {', '.join(expected)}, got {', '.join(map(str, rules)) or 'none'}",
    )
    return list(violations)


def _filled(answer: dict[str, Any], qty: str) -> None:
    status = answer.get("status")
    if status != "filled":
        raise StepFailed(f"expected filled, got {status}: {answer.get('detail')}")
    filled = (answer.get("fill") or {}).get("filled_qty")
    _expect(filled == qty, f"expected {qty} filled, got {filled}")
