"""The tools beside plan_order played in a world (issue 24), and the loop-closure checks on every answer.

For every tool that can refuse, per tool (the survey's table, tests/worlds/report.py):

* a suggested call, made unchanged, does what it says (a plan passes, a cancel or a stop is done);
* a suggested size or stop is the largest that fits: one lot step more (one tick farther) is refused;
* following the next actions ends in that or in a terminal answer within two hops (else a loop);
* a terminal answer ("nothing fits") only when no variant of the action passes (tests/worlds/tools.py);
* an action that only reduces risk is refused only by the rules docs/refusals.md names for it;
* nothing Pilot lets through is rejected by the exchange (WorldRun.call counts every rejection).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tests.worlds.oracle import Miss, Oracle, Order, ceil_steps, floor_steps
from tests.worlds.tools import (
    AmendCase,
    CancelAllCase,
    CancelCase,
    LeverageCase,
    LifecycleCase,
    StopCase,
    ToolCase,
    amend_misses,
    amend_witness,
    find,
    leverage_misses,
    stop_loss_after,
    stop_misses,
    succeeded,
    widens,
)
from tests.worlds.world import plain

if TYPE_CHECKING:
    from tests.worlds.harness import WorldRun

# Codes that may refuse an action that only reduces risk (docs/refusals.md, "What can stop a reducing
# action"): halted trading, the instrument's grid and band (with the fixed call), a reduce-only order larger
# than the position or with nothing to reduce, the coin held (spot), a position held in hedge mode, a fact
# that could not be read, a misplaced stop or target the action itself carries, a confirmation the policy asks
# for this tool by name, and what only concerns Pilot's own store, idempotency keys and send turn.
MAY_REFUSE_REDUCING = frozenset(
    {
        "tradingState",
        "instrument.qtyStep",
        "instrument.tickSize",
        "instrument.minOrderQty",
        "instrument.minNotionalValue",
        "instrument.maxOrderQty",
        "instrument.priceBand",
        "reduceOnly",
        "reduceOnlyQty",
        "account.heldQty",
        "account.availableBalance",  # a plain order pays its fee; the next action makes it reduce-only
        "positionMode",
        "facts",
        "stopLoss",
        "takeProfit",
        "unknownSymbol",
        "orderNotOpen",
        "confirmationRequired",
        "confirmationChannelUnavailable",
        "idempotencyConflict",
        "idempotencyInProgress",
        "storeUnavailable",
        "sendTurnBusy",
        # An order that closes the position now but may rest on after it is gone is asked to be reduce-only
        # (or to carry a stop): these refuse it with that fix as the next action.
        "requireStopLoss",
        "maxLossPerTradeUsd",
        "maxLossPerTradePct",
        # The pre-trade controls that bind reducing actions too (docs/refusals.md): the exchange counts every
        # message, a limit price is collared whatever the order does, and a limit order rests.
        "maxOrderMessagesPerSecond",
        "maxOrderMessagesPerMinute",
        "priceCollar",
        "maxRestingOrdersPerMarket",
        "maxRestingOrders",
    }
)
THROTTLES = frozenset({"maxOrderMessagesPerSecond", "maxOrderMessagesPerMinute"})

Terminal = Callable[[dict[str, Any]], Awaitable[None]]
Maximal = Callable[[dict[str, Any], dict[str, Any]], Awaitable[None]]


def codes(answer: dict[str, Any] | None) -> list[str]:
    return [v["rule"] for v in (answer or {}).get("violations") or []]


def tag(answer: dict[str, Any] | None) -> str:
    return "+".join(codes(answer)) or (answer or {}).get("status", "none")


class ToolRuns:
    """The cases of tests/worlds/tools.py, played by a WorldRun (a mixin: it calls the run's tools)."""

    async def chase(
        self: WorldRun,
        origin: str,
        args: dict[str, Any],
        answer: dict[str, Any],
        *,
        terminal: Terminal | None = None,
        maximal: Maximal | None = None,
    ) -> None:
        """A refusal of `origin`: follow its next safe action unchanged, as an agent would, for two hops."""
        self.tally(origin, "refusals")
        first = answer.get("next_safe_action")
        if first is None:
            self.fail(f"no-next-action[{origin}]", {"args": args, "answer": _brief(answer)})
            return
        if first["tool"] is None:
            self.tally(origin, "terminal")
            if not first.get("human") and not first.get("retry_after"):
                self.fail(f"terminal-without-human[{origin}: {tag(answer)}]", {"args": args})
            if terminal is not None:
                await terminal(answer)
            return
        self.tally(origin, "suggestions")
        replay = await self.call(first["tool"], first["args"] or {})
        if succeeded(first["tool"], replay):
            self.tally(origin, "replays ok")
            if maximal is not None and replay is not None:
                await maximal(first, replay)
            return
        self.tally(origin, "replays refused")
        self.fail(
            f"replay-refused[{origin}: {tag(answer)} -> {first['tool']}: {tag(replay)}]",
            {
                "args": args,
                "answer": _brief(answer),
                "replay": _brief(replay),
                "facts": self.world_facts(args),
            },
        )
        second = (replay or {}).get("next_safe_action")
        if second is None or second["tool"] is None:
            return
        third = await self.call(second["tool"], second["args"] or {})
        if succeeded(second["tool"], third):
            return
        if ((third or {}).get("next_safe_action") or {}).get("tool") is not None:
            self.tally(origin, "loops")
            self.fail(
                f"loop[{origin}: {tag(answer)} -> {tag(replay)} -> {tag(third)}]",
                {"args": args, "hops": [_brief(answer), _brief(replay), _brief(third)]},
            )

    def world_facts(self: WorldRun, args: dict[str, Any]) -> dict[str, Any]:
        symbol = args.get("symbol")
        if not symbol:
            return {}
        oracle = self.oracle()
        order = Order(str(symbol), str(args.get("category", "linear")), "buy", "market")
        if oracle.instrument(order) is None:
            return {}
        facts = oracle.facts(order)
        protected = oracle.protected(str(symbol)) if order.category == "linear" else None
        if protected is not None:
            facts["stops"] = {
                "entry": plain(protected.entry),
                "whole": plain(protected.stop) if protected.stop else None,
                "legs": [(plain(p), plain(q)) for p, q in protected.legs],
            }
        facts["open_orders"] = [
            {
                "id": o.order_id[:8],
                "kind": o.kind or "ordinary",
                "side": o.side,
                "qty": plain(o.qty),
                "leaves": plain(o.leaves),
                "price": plain(o.price),
                "trigger": plain(o.trigger) if o.trigger else None,
                "stop": plain(o.stop_loss) if o.stop_loss else None,
                "reduce_only": o.reduce_only,
            }
            for o in oracle.account.open_orders
            if o.symbol == symbol
        ]
        return facts

    def reducing_refused(self: WorldRun, tool: str, answer: dict[str, Any], detail: dict[str, Any]) -> None:
        """An action that only reduces risk was refused: only by the rules docs/refusals.md names for it."""
        found = [code for code in codes(answer) if code not in MAY_REFUSE_REDUCING]
        state = self.oracle().state
        if "tradingState" in codes(answer) and state != "halted":
            found.append("tradingState")
        if found:
            self.tally(tool, "reducing refused")
            self.fail(f"reducing-refused[{tool}: {'+'.join(found)}]", {**detail, "answer": _brief(answer)})

    def throttled(
        self: WorldRun, tool: str, answer: dict[str, Any], oracle: Oracle, detail: dict[str, Any]
    ) -> bool:
        """Whether `answer` refused a message for the throttle alone, as the throttle's count holds it
        (docs/policy.md: one more message passes unless the cap's worth were sent in its window)."""
        found = set(codes(answer))
        if not found or not found <= THROTTLES:
            return False
        full = [code for cap, window, code in oracle.policy.throttles() if oracle.messages_in(window) >= cap]
        if not full:
            self.fail(
                f"throttled-with-room[{tool}]",
                {**detail, "messages": [str(a) for a in oracle.account.messages]},
            )
        return True

    # --- the cases -------------------------------------------------------------------------------

    async def tool_case(self: WorldRun, case: ToolCase) -> None:
        if isinstance(case, AmendCase):
            await self.amend_case(case)
        elif isinstance(case, StopCase):
            await self.stop_case(case)
        elif isinstance(case, CancelCase):
            await self.cancel_case(case)
        elif isinstance(case, CancelAllCase):
            await self.cancel_all_case(case)
        elif isinstance(case, LeverageCase):
            await self.leverage_case(case)
        else:
            await self.lifecycle_case(case)

    async def amend_case(self: WorldRun, case: AmendCase) -> None:
        oracle = self.oracle(judging=True)  # plan_amend judges the order it becomes: it reads the equity
        args = case.args
        resting = find(oracle, args["order_id"])
        assert resting is not None, "drawn from the orders resting now"
        total, price = amend_asked(oracle, resting.qty, resting.price, resting.side, args)
        misses = amend_misses(oracle, resting, total, price) if total is not None else None
        answer = await self.call("plan_amend", args)
        if answer is None:
            return
        self.tally("plan_amend", f"answers {answer['status']}")
        detail = {"args": args, "facts": self.world_facts(args), "answer": _brief(answer)}
        if answer["status"] == "ok":
            if misses:
                self.fail(
                    f"ok-amend-fails-oracle[{'+'.join(m.name for m in misses)}]",
                    {**detail, "oracle": [str(m) for m in misses]},
                )
            if case.place:
                await self.place_amend(answer, detail)
            return
        if total is not None and total <= resting.qty and price == resting.price and misses == []:
            self.reducing_refused("plan_amend", answer, detail)

        async def terminal(refused: dict[str, Any]) -> None:
            if total is None:
                return
            witness = amend_witness(oracle, resting, total, price)
            if witness is None:
                return
            probe = await self.call("plan_amend", {**args, "qty": plain(witness), "price": plain(price)})
            if succeeded("plan_amend", probe):
                self.tally("plan_amend", "false nothing fits")
                self.fail(
                    f"false-nothing-fits[plan_amend: {tag(refused)}]", {**detail, "witness": plain(witness)}
                )

        async def maximal(suggestion: dict[str, Any], replay: dict[str, Any]) -> None:
            if suggestion["tool"] != "plan_amend" or total is None:
                return
            cut = Decimal(suggestion["args"].get("qty", plain(resting.qty)))
            step = oracle.world.instrument(resting.category, resting.symbol).step  # type: ignore[union-attr]
            if cut >= total:
                return
            self.tally("plan_amend", "maximal checked")
            more = await self.call("plan_amend", {**suggestion["args"], "qty": plain(cut + step)})
            if succeeded("plan_amend", more):
                self.tally("plan_amend", "not maximal")
                self.fail(f"one-more-step-passes[plan_amend: {tag(answer)}]", {**detail, "cut": plain(cut)})

        await self.chase("plan_amend", args, answer, terminal=terminal, maximal=maximal)

    async def place_amend(self: WorldRun, plan: dict[str, Any], detail: dict[str, Any]) -> None:
        """Place an amend plan at once (nothing moved): it is sent, never refused on the same facts."""
        placed = await self.call("place_order", {"plan_id": plan["plan_id"]})
        if placed is None:
            return
        self.tally("plan_amend", f"placed {placed['status']}")
        if placed["status"] == "refused":
            self.fail(f"amend-refused-at-place[{tag(placed)}]", {**detail, "placed": _brief(placed)})

    async def stop_case(self: WorldRun, case: StopCase) -> None:
        oracle = self.oracle()
        args = case.args
        symbol = args["symbol"]
        stop = Decimal(args["stop_loss"])
        asked = None if stop == 0 else stop
        sent = asked if asked is None else _stop_on_tick(oracle, symbol, asked)
        misses = stop_misses(oracle, symbol, sent) + _target_misses(oracle, symbol, args.get("take_profit"))
        before = stop_loss_after(oracle, symbol, oracle.protected(symbol).stop)
        after = stop_loss_after(oracle, symbol, sent) if oracle.protected(symbol).size else before
        answer = await self.call("set_trading_stop", args)
        if answer is None:
            return
        self.tally("set_trading_stop", f"answers {answer['status']}")
        detail = {"args": args, "facts": self.world_facts(args), "answer": _brief(answer)}
        if succeeded("set_trading_stop", answer):
            if misses:
                self.fail(
                    f"stop-passed-what-the-oracle-refuses[{'+'.join(m.name for m in misses)}]",
                    {**detail, "oracle": [str(m) for m in misses]},
                )
            self.check_stops("set_trading_stop")
            return
        if not misses:
            self.fail(f"stop-refused-while-the-oracle-passes[{tag(answer)}]", detail)
        if oracle.protected(symbol).size and not widens(before, after):
            self.reducing_refused("set_trading_stop", answer, detail)

        async def maximal(suggestion: dict[str, Any], replay: dict[str, Any]) -> None:
            given = suggestion["args"].get("stop_loss")
            if suggestion["tool"] != "set_trading_stop" or given in (None, "0") or asked is None:
                return
            self.check_farthest(symbol, Decimal(given), asked, detail)

        await self.chase("set_trading_stop", args, answer, maximal=maximal)

    def check_farthest(
        self: WorldRun, symbol: str, given: Decimal, asked: Decimal, detail: dict[str, Any]
    ) -> None:
        """A stop offered as "no farther than" is the farthest that fits: one tick farther does not (the
        oracle, on the account before the suggestion was followed)."""
        oracle = self.oracle()
        held = oracle.protected(symbol)
        instrument = oracle.world.instrument("linear", symbol)
        if held.size == 0 or instrument is None:
            return
        farther = given - instrument.tick if held.size > 0 else given + instrument.tick
        if (held.size > 0 and farther < asked) or (held.size < 0 and farther > asked) or farther <= 0:
            return  # the agent's own stop is the farthest asked for
        self.tally("set_trading_stop", "maximal checked")
        if not stop_misses(oracle, symbol, farther):
            self.tally("set_trading_stop", "not maximal")
            self.fail("stop-not-the-farthest", {**detail, "given": plain(given), "farther": plain(farther)})

    async def cancel_case(self: WorldRun, case: CancelCase) -> None:
        oracle = self.oracle()
        args = case.args
        resting = find(oracle, args["order_id"])
        assert resting is not None
        answer = await self.call("cancel_order", args)
        if answer is None:
            return
        self.tally("cancel_order", f"answers {answer['status']}")
        if succeeded("cancel_order", answer):
            self.check_stops("cancel_order")
            return
        detail = {
            "args": args,
            "facts": self.world_facts(args),
            "answer": _brief(answer),
            "kind": resting.kind,
        }
        self.tally("cancel_order", f"refused {resting.kind or 'ordinary'}: {tag(answer)}")
        throttled = self.throttled("cancel_order", answer, oracle, detail)
        if resting.ordinary and "cancel_order" not in oracle.policy.confirm_actions and not throttled:
            self.tally("cancel_order", "reducing refused")
            self.fail(f"reducing-refused[cancel_order: {tag(answer)}]", detail)
        await self.chase("cancel_order", args, answer)

    async def cancel_all_case(self: WorldRun, case: CancelAllCase) -> None:
        args = case.args
        answer = await self.call("cancel_all_orders", args)
        if answer is None:
            return
        self.tally("cancel_all_orders", f"answers {answer['status']}")
        if succeeded("cancel_all_orders", answer):
            self.check_stops("cancel_all_orders")
            return
        detail = {"args": args, "answer": _brief(answer)}
        throttled = self.throttled("cancel_all_orders", answer, self.oracle(), detail)
        if not args.get("include_stops") and not throttled:
            self.tally("cancel_all_orders", "reducing refused")
            self.fail(f"reducing-refused[cancel_all_orders: {tag(answer)}]", detail)
        await self.chase("cancel_all_orders", args, answer)

    async def leverage_case(self: WorldRun, case: LeverageCase) -> None:
        oracle = self.oracle()
        args = case.args
        symbol, leverage = args["symbol"], Decimal(args["leverage"])
        misses = leverage_misses(oracle, symbol, leverage)
        answer = await self.call("set_leverage", args)
        if answer is None:
            return
        self.tally("set_leverage", f"answers {answer['status']}")
        detail = {"args": args, "current": plain(oracle.leverage(symbol)), "answer": _brief(answer)}
        if succeeded("set_leverage", answer):
            if misses:
                self.fail(f"leverage-passed-what-the-oracle-refuses[{misses[0].name}]", detail)
            return
        if not misses and "set_leverage" not in oracle.policy.confirm_actions:
            self.fail(f"leverage-refused-while-the-oracle-passes[{tag(answer)}]", detail)
        if leverage <= oracle.leverage(symbol):
            self.reducing_refused("set_leverage", answer, detail)

        async def terminal(refused: dict[str, Any]) -> None:
            current = oracle.leverage(symbol)
            if leverage <= current or (
                "set_leverage" in oracle.policy.confirm_actions and not oracle.reaches_human
            ):
                return  # nothing to raise to, or every change needs a human this client cannot reach
            step = Decimal("0.01")
            for candidate in (current + 1, (current + leverage) / 2, leverage - step):
                candidate = candidate.quantize(step)
                if current < candidate < leverage and not leverage_misses(oracle, symbol, candidate):
                    self.tally("set_leverage", "false nothing fits")
                    self.fail(
                        f"false-nothing-fits[set_leverage: {tag(refused)}]",
                        {**detail, "witness": plain(candidate)},
                    )
                    return

        await self.chase("set_leverage", args, answer, terminal=terminal)

    async def lifecycle_case(self: WorldRun, case: LifecycleCase) -> None:
        plan_id = self.placed_plans[-1] if case.kind == "used" and self.placed_plans else "pln_" + "0" * 32
        answer = await self.call("place_order", {"plan_id": plan_id})
        if answer is None:
            return
        self.tally("place_order", f"lifecycle {tag(answer)}")
        if answer["status"] != "refused":
            self.fail("lifecycle-not-refused", {"plan_id": plan_id, "answer": _brief(answer)})
            return
        await self.chase("place_order", {"plan_id": plan_id}, answer)


def amend_asked(
    oracle: Oracle, qty: Decimal, price: Decimal, side: str, args: dict[str, Any]
) -> tuple[Decimal | None, Decimal]:
    """The new total and price as Pilot judges them: the total floored to the lot step, the price on the
    tick on the side that costs less (buys down, sells up). None: a total the grid cannot hold."""
    instrument = oracle.world.instrument(args.get("category", "linear"), args["symbol"])
    assert instrument is not None
    total = Decimal(args["qty"]) if "qty" in args else qty
    asked = Decimal(args["price"]) if "price" in args else price
    tick, step = instrument.tick, instrument.step
    on_tick = floor_steps(asked, tick) if side == "buy" else ceil_steps(asked, tick)
    total = floor_steps(total, step) * step
    return (total if total > 0 else None), max(on_tick * tick, tick)


def _stop_on_tick(oracle: Oracle, symbol: str, stop: Decimal) -> Decimal:
    """A stop as it is sent: on the tick towards the price (a long's up, a short's down)."""
    instrument = oracle.world.instrument("linear", symbol)
    assert instrument is not None
    tick, long = instrument.tick, oracle.protected(symbol).size >= 0
    steps = ceil_steps(stop, tick) if long else floor_steps(stop, tick)
    return max(steps * tick, tick)


def _target_misses(oracle: Oracle, symbol: str, target: str | None) -> list[Miss]:
    """A take-profit beyond the price in the position's favour (Bybit checks it against the last price)."""
    if target is None or Decimal(target) == 0 or oracle.protected(symbol).size == 0:
        return []
    price, quote = Decimal(target), oracle.quote(symbol)
    long = oracle.protected(symbol).size > 0
    if (long and price <= max(quote.ask, quote.mark)) or (not long and price >= min(quote.bid, quote.mark)):
        return [Miss("protection", "takeProfit", f"{target} not beyond the price")]
    return []


def _brief(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    from tests.worlds.harness import brief

    return brief(answer)
