"""One world through a real MCP client: one paper exchange, one Runtime, one server, many orders, and the
checks of issue 12 on every answer.

The checks (each failure is a Finding whose `kind` names it and whose `detail` is a reproduction: the order,
the facts the oracle saw, and the answers):

* every rule code an answer carries is in the closed set (`pilot.core.codes.Code`);
* every suggested `plan_order` replays, unchanged, to `ok`; after a size cut, one more lot step is refused;
* following `next_safe_action` unchanged reaches `ok` or a terminal answer (tool null) within 2 hops;
* a terminal answer (tool null) only when no size of that order, nor its reducing variant, passes, as the
  independent oracle (tests/worlds/oracle.py) computes it; the oracle's witness is then planned through
  the same client, so "false nothing fits" is confirmed by Pilot's own verdict;
* suggestions never turn an order that shrinks the position into one that grows it;
* what a plan passes, the oracle passes too (margin, spot balance, price band, caps), and the exchange
  does not reject it; every fill leaves the position under its caps at the worst price it was sent at;
* the market moves while the agent acts: the harness advances the exchange's time (its prices follow
  seeded walks, standing still otherwise) between a plan and its place_order and between cases, so resting
  orders fill and stops trigger. place_order judges the plan again on the facts it then reads: the oracle,
  reading the same facts at that moment, expects a refusal exactly where they break a rule (a cap the new
  price breaks, a stop now on the wrong side), and a send everywhere else;
* after every fill, whoever made it (place_order, close_position, the market crossing a resting order),
  every position with a stop loses at most maxLossPerTradeUsd at the stops the exchange holds on it, where
  the policy sets that limit (restated in tests/worlds/at_stops.py);
* a size that needs a human is not a dead end for a client that cannot confirm when a smaller size that
  needs no human passes; close_position closes what can be closed, and is offered only when it can;
* an unknown symbol is a terminal answer, never "retry".
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from mcp import Client, MCPError

from pilot.app.runtime.runtime import Runtime
from pilot.app.service.upkeep import upkeep
from pilot.core.codes import Code
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import OrderRequest
from pilot.exchange.okx.markets import pilot_client_id
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.validation import SimReject
from pilot.server import build_server
from tests.app.conftest import FakeClock, open_test_runtime, venue_on
from tests.venue import connect_adapter
from tests.worlds.at_stops import loss_at_stops
from tests.worlds.oracle import PILOT_LINK, WORLD_START, Account, Miss, OpenOrder, Oracle, Order, Position
from tests.worlds.strategies import Case, CloseCase, PlanCase
from tests.worlds.tool_runs import ToolRuns
from tests.worlds.tools import SUCCESS
from tests.worlds.world import Quote, Resting, World, plain

CREATE = "/v5/order/create"
# Every request an order message is (docs/policy.md, maxOrderMessagesPerSecond: creates, amends and cancels).
MESSAGES = (CREATE, "/v5/order/amend", "/v5/order/cancel", "/v5/order/cancel-all")
JUDGING = frozenset(
    {"plan_order", "place_order", "plan_amend", "close_position"}
)  # tools that read the equity
ANOTHER_CLIENT = "another-client-"  # the link ids of the orders the world starts with
CODES = frozenset(code.value for code in Code)
CONFIRMATION_CODES = frozenset({"confirmationChannelUnavailable", "confirmationRequired"})
FILLED = ("filled", "partially_filled", "open", "cancelled", "accepted")
# Observations reported by the survey that do not fail the suite.
# A dust position may get a terminal answer (issue 12 allows it) where the oracle would close it as Bybit does.
NOTES = ("terminal-without-human", "cut-smaller-than-oracle", "other-next-tool", "dust-close-not-offered")


@dataclass
class Finding:
    kind: str
    detail: dict[str, Any]

    @property
    def failing(self) -> bool:
        return not self.kind.startswith(NOTES)

    def line(self) -> str:
        return f"{self.kind}: {json.dumps(self.detail, default=str, sort_keys=True)}"


@dataclass
class WorldRun(ToolRuns):
    """A running world: the paper exchange, Pilot's runtime, an MCP client that cannot show forms."""

    world: World
    paper: PaperExchange
    client: Client
    seeded: int
    clock: FakeClock
    runtime: Runtime
    findings: list[Finding] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)
    case_index: int = 0
    pause_ms: int = 0  # exchange time to let pass before placing a plan, in the case being played
    placed_plans: list[str] = field(default_factory=list)
    # What each position lost at its stops, and the quantity no stop closed, when last looked at.
    at_stops: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)
    # What the pre-trade controls count, as seen from outside Pilot (tests/worlds/oracle.py restates them).
    message_times: list[datetime] = field(default_factory=list)  # Pilot's clock at each order message
    turnover: Decimal = Decimal(0)
    first_call: datetime | None = None
    last_call: datetime | None = None
    peak: Decimal | None = None
    drawdown_latched: bool = False
    cooldown_until: datetime | None = None
    cooldown_trade: str | None = None
    kill_switch: bool = False
    dead_man_silence: datetime | None = None  # the last call before the silence the switch fired for

    def tally(self, tool: str, what: str) -> None:
        """Count one event of one tool's answers, for the survey's table per tool."""
        self.stats[f"{tool} | {what}"] += 1

    # --- state -------------------------------------------------------------------------------------

    def account(self) -> Account:
        """The exchange's state now: what Pilot reads if it asks at this moment (the market stands still)."""
        listed = [o for o in reversed(self.paper.orders()) if o.leaves_qty > 0]  # newest first, as listed
        positions = {}
        for instrument in self.world.instruments:
            if instrument.category == "linear":
                p = self.paper.position(instrument.symbol)
                legs = tuple(
                    (o.trigger_price, o.qty - o.cum_exec_qty)
                    for o in listed
                    if o.symbol == p.symbol and o.stop_order_type == "PartialStopLoss"
                )
                positions[p.symbol] = Position(p.size, p.avg_price, p.leverage, p.stop_loss or None, legs)
        coins = {"USDT", *(i.base for i in self.world.instruments), *self.world.balances}
        wallet = {coin: self.paper.balance(coin) for coin in coins}
        orders = tuple(
            OpenOrder(
                o.category,
                o.symbol,
                o.side.lower(),
                o.leaves_qty,
                o.price,
                o.reduce_only,
                o.stop_loss or None,
                order_id=o.order_id,
                kind=o.stop_order_type,
                trigger=o.trigger_price or None,
                qty=o.qty,
                take_profit=o.take_profit or None,
                link=pilot_client_id(o.order_link_id),  # OKX's wire carries Pilot's ids in its alphabet
                order_type=o.order_type,
            )
            for o in listed
        )
        quotes = {}
        for symbol in self.world.symbols:
            quote = self.paper.quote(symbol)
            quotes[symbol] = Quote(quote.bid, quote.ask, quote.mark)
        now = self.clock.now()
        return Account(
            positions,
            wallet,
            orders,
            self.paper.request_count(CREATE) - self.seeded,
            quotes,
            now=now,
            messages=tuple(sorted(now - at for at in self.message_times if now - at < timedelta(minutes=1))),
            turnover=self.turnover,
            session_age=now - self.first_call if self.first_call is not None else None,
            drawdown_latched=self.drawdown_latched,
            cooldown_until=self.cooldown_until,
            kill_switch=self.kill_switch,
        )

    def oracle(self, *, judging: bool = False) -> Oracle:
        """The oracle on the account now; `judging`: as Pilot sees it when it judges an order next (the
        equity's peak and a drawdown or cooldown it would latch then)."""
        if judging:
            self.observe()
        return Oracle(self.world, self.account())

    def reads_equity(self, tool: str, args: dict[str, Any]) -> bool:
        """Whether the call judges an order, reading the equity: close_position with nothing to close answers
        at once, judging nothing."""
        if tool != "close_position":
            return True
        oracle = Oracle(self.world, self.account())
        return (
            oracle.close_order(str(args.get("symbol", "")), str(args.get("category", "linear"))) is not None
        )

    def observe(self) -> None:
        """What a judgement of Pilot's reads and latches (docs/policy.md: the drawdown from the peak equity it
        read, the cooldown from the first judgement that saw the losses)."""
        policy = self.world.policy
        account = self.account()
        oracle = Oracle(self.world, account)
        if policy.get("maxDrawdownUsd") is not None or policy.get("maxDrawdownPct") is not None:
            equity = oracle.equity()
            self.peak = equity if self.peak is None else max(self.peak, equity)
            limit = oracle.policy.drawdown_limit(self.peak)
            if limit is not None and self.peak - equity >= limit:
                self.drawdown_latched = True
        cooldown = policy.get("cooldown")
        if cooldown is not None:
            newest = self._losses_due(cooldown)
            if newest is not None and newest != self.cooldown_trade:
                self.cooldown_trade = newest
                self.cooldown_until = account.now + timedelta(minutes=int(cooldown["minutes"]))

    def _losses_due(self, cooldown: dict[str, Any]) -> str | None:
        """The newest losing trade of enough of them (in a row, or within the window before the newest loss),
        among the account's newest hundred closed trades: a trade that starts a cooldown, or None."""
        rows = list(reversed(self.paper.closed_pnl()))[:100]
        losses = [row for row in rows if row.closed_pnl < 0]
        if not losses:
            return None
        within = cooldown.get("withinMinutes")
        if within is None:
            count = next((i for i, row in enumerate(rows) if row.closed_pnl >= 0), len(rows))
        else:
            span = int(within) * 60_000
            count = sum(1 for row in losses if losses[0].updated_ms - row.updated_ms <= span)
        if count < int(cooldown["afterLosses"]):
            return None
        return f"{losses[0].order_id}@{losses[0].updated_ms}"

    # --- the market moving -------------------------------------------------------------------------

    async def advance(self, ms: int, when: str) -> None:
        """Let `ms` of exchange time pass, on Pilot's clock too: the walks step, resting orders the prices
        cross fill, stops they reach trigger, positions past their liquidation price are taken over. Then
        check every position's loss at its stops, and let Pilot's upkeep look once (the dead-man's switch)."""
        if ms <= 0:
            return
        seen = len(self.paper.executions())
        self.paper.advance(ms)
        self.clock.advance(ms / 1000)
        self.stats["exchange seconds"] += ms // 1000
        others = set()  # markets where an order of another client filled: what it did is not Pilot's
        for execution in self.paper.executions()[seen:]:
            kind = execution.order.stop_order_type or execution.exec_type
            self.stats[f"market fills {kind}" if kind != "Trade" else "market fills resting"] += 1
            if execution.order.order_link_id.startswith(ANOTHER_CLIENT):
                others.add(execution.order.symbol)
        self.check_stops(f"after {when}", excused=others)
        if self.world.policy.get("deadManSwitch") is not None:
            await self.dead_man_round(when)

    async def dead_man_round(self, when: str) -> None:
        """One upkeep round of Pilot's: when no call came for `afterSeconds` and orders Pilot's agent placed
        that can open a position rest, they are cancelled (as many as the throttles allow now), and with
        `reducing` trading turns reducing; nothing is cancelled otherwise (docs/policy.md, deadManSwitch)."""
        rule = self.world.policy["deadManSwitch"]
        oracle = self.oracle()
        before = opening_orders(oracle)
        now = self.clock.now()
        after_seconds = rule.get("afterSeconds")
        idle = (
            after_seconds is not None
            and self.last_call is not None
            and now - self.last_call >= timedelta(seconds=int(after_seconds))
        )
        allowance = min(
            [cap - oracle.messages_in(window) for cap, window, _ in oracle.policy.throttles()],
            default=len(before),
        )
        counts = self.message_counts()
        await upkeep(self.runtime)
        self.note_messages(counts)
        left = opening_orders(self.oracle())
        fires = idle and bool(before)
        expected = len(before) - min(len(before), max(allowance, 0)) if fires else len(before)
        self.stats["dead-man rounds"] += 1
        self.stats["dead-man rounds idle"] += idle
        self.stats["dead-man rounds with opening orders"] += bool(before)
        if fires:
            self.stats["dead-man fired"] += 1
            if self.dead_man_silence != self.last_call:
                self.dead_man_silence = self.last_call
                self.kill_switch = self.kill_switch or bool(rule.get("reducing"))
        if len(left) != expected:
            self.fail(
                f"dead-man-switch[{'fired' if fires else 'quiet'}: {len(before)} -> {len(left)}, expected {expected}]",
                {"when": when, "idle": str(now - self.last_call) if self.last_call else None, "rule": rule},
            )

    def message_counts(self) -> tuple[int, ...]:
        return tuple(self.paper.request_count(path) for path in MESSAGES)

    def note_messages(self, before: tuple[int, ...]) -> None:
        """Each order request Pilot sent since `before`, at Pilot's clock now (it stands still during a call)."""
        sent = sum(self.message_counts()) - sum(before)
        self.message_times.extend([self.clock.now()] * sent)

    def check_stops(self, when: str, excused: Set[str] = frozenset()) -> None:
        """Every position with a stop can lose at most maxLossPerTradeUsd at the stops the exchange holds, or
        no more than it could before: a stop added or moved closer is never refused, even where the position
        already loses more than the cap (a human's far stop, or a price that ran against it)."""
        oracle = self.oracle()
        for symbol in oracle.account.positions:
            now = loss_at_stops(oracle.protected(symbol))
            then = self.at_stops.get(symbol, now)
            self.at_stops[symbol] = now
            if symbol in excused or not stops_widened(then, now):
                continue
            breach = oracle.stops_breach(symbol)
            if breach is not None:
                self.fail(
                    f"loss-at-stops-above-limit[{when}]",
                    {
                        "symbol": symbol,
                        "loss": breach,
                        "facts": oracle.facts(Order(symbol, "linear", "buy", "market")),
                    },
                )

    # --- calls -------------------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """Call a tool; its answer, after checking every code in it against the closed set."""
        self.stats[f"calls {tool}"] += 1
        self.first_call = self.first_call or self.clock.now()  # the client's session begins
        self.last_call = self.clock.now()
        if tool in JUDGING and self.reads_equity(tool, args):
            self.observe()
        counts = self.message_counts()
        try:
            result = await self.client.call_tool(tool, args)
        except MCPError as error:
            self.fail("tool-error", {"tool": tool, "args": args, "error": str(error)})
            return None
        finally:
            self.note_messages(counts)
        if result.is_error or result.structured_content is None:
            text = result.content[0].text if result.content else ""
            self.fail("tool-error", {"tool": tool, "args": args, "error": text})
            return None
        answer = result.structured_content
        if tool == "place_order" and answer.get("status") != "refused":
            self.placed_plans.append(str(args.get("plan_id")))
        if tool in ("place_order", "close_position") and answer.get("sent"):
            self.note_sent(answer)
        if answer.get("status") == "rejected" and tool in SUCCESS:
            self.tally(tool, "exchange rejected")
            self.fail(
                f"exchange-rejected[{tool}: {answer.get('ret_code')}]",
                {"tool": tool, "args": args, "answer": brief(answer)},
            )
        for code in codes_in(answer):
            self.stats[f"rule {code}"] += 1
            if code not in CODES:
                self.fail(
                    f"code-outside-closed-set[{code}]", {"tool": tool, "args": args, "answer": brief(answer)}
                )
        return answer

    def note_sent(self, answer: dict[str, Any]) -> None:
        """The notional a send counts towards turnover (docs/policy.md, maxTurnoverUsdPerDay: a resting order
        in full, an IOC one what it filled, a rejected one nothing; an amend what it adds), and its
        smpType."""
        sent, status = answer["sent"], answer.get("status")
        amend = sent.get("amend")
        if isinstance(amend, dict):
            filled = Decimal(amend.get("filled") or "0")
            now = (Decimal(amend["qty"]) - filled) * Decimal(amend["price"])
            was = (Decimal(amend["was_qty"]) - filled) * Decimal(amend["was_price"])
            self.turnover += max(now - was, Decimal(0))
            return
        qty, price = Decimal(sent["qty"]), Decimal(sent["price"])
        fill = answer.get("fill") or {}
        if status == "rejected":
            notional = Decimal(0)
        elif sent.get("time_in_force") == "IOC" and status in ("filled", "partially_filled", "cancelled"):
            average = fill.get("avg_price")
            notional = Decimal(fill.get("filled_qty") or "0") * (Decimal(average) if average else price)
        else:
            notional = qty * price
        self.turnover += notional
        expected = self.world.policy.get("selfTradePrevention") or "None"
        link = answer.get("order_link_id")
        order = next((o for o in self.paper.orders() if pilot_client_id(o.order_link_id) == link), None)
        if order is not None and order.smp_type != expected:
            self.fail(f"smp-type[{order.smp_type} != {expected}]", {"answer": brief(answer)})

    async def plan(self, args: dict[str, Any], oracle: Oracle) -> dict[str, Any] | None:
        answer = await self.call("plan_order", args)
        if answer is not None:
            self.stats["plans"] += 1
            self.stats[f"plans {answer['status']}"] += 1
            if args.get("stop_loss") is not None:
                self.stats[f"plans with a stop {rules(answer)}"] += 1
            self.check_facts(args, answer, oracle)
        return answer

    def fail(self, kind: str, detail: dict[str, Any]) -> None:
        self.findings.append(Finding(kind, {"case": self.case_index, **detail}))

    def check_facts(self, args: dict[str, Any], answer: dict[str, Any], oracle: Oracle) -> None:
        """The snapshot Pilot judged from is the account the oracle reads (else the harness is wrong)."""
        order = Order.of(args)
        shot = answer.get("snapshot") or {}
        if oracle.instrument(order) is None:
            return
        expected = {
            "position_size": plain(oracle.held(order)),
            "equity_usd": plain(oracle.equity()),
            "orders_today": oracle.account.orders_today,
            "pending_qty": {
                "buy": plain(oracle.pending(order, "buy")),
                "sell": plain(oracle.pending(order, "sell")),
            },
        }
        for name, value in expected.items():
            seen = shot.get(name)
            if seen is None:
                continue
            same = _same(seen, value)
            if not same:
                self.fail(f"facts-mismatch[{name}]", {"args": args, "pilot": seen, "oracle": value})

    # --- cases ------------------------------------------------------------------------------------

    async def run(self, case: Case) -> None:
        self.case_index += 1
        self.stats["cases"] += 1
        if isinstance(case, CloseCase):
            self.pause_ms = 0
            await self.close_case(case)
        elif not isinstance(case, PlanCase):
            self.pause_ms = 0
            await self.tool_case(case)
        else:
            self.pause_ms = case.pause_ms
            await self.plan_case(case)

    async def plan_case(self, case: PlanCase) -> None:
        oracle = self.oracle(judging=True)
        order = Order.of(case.args)
        answer = await self.plan(case.args, oracle)
        if answer is None:
            return
        if oracle.instrument(order) is None:
            self.check_unknown_symbol(case.args, answer)
        if answer["status"] == "ok":
            await self.check_ok(answer, oracle, origin="asked")
            if case.place or answer.get("needs_confirmation"):
                await self.place(answer, oracle)
            return
        asked = self.asked_qty(case.args, oracle)
        if asked and oracle.instrument(order) is not None and oracle.shrinks(order, asked):
            detail = {"args": case.args, "facts": oracle.facts(order)}
            self.reducing_refused("plan_order", answer, detail)
        await self.follow(case.args, answer, oracle, asked, place=case.place)

    def asked_qty(self, args: dict[str, Any], oracle: Oracle) -> Decimal | None:
        order = Order.of(args)
        instrument = oracle.instrument(order)
        if instrument is None:
            return None
        if "qty" in args:
            step = instrument.step
            return (Decimal(args["qty"]) / step).to_integral_value(rounding="ROUND_FLOOR") * step
        return oracle.qty_for_notional(order, Decimal(args["notional_usd"]))

    async def follow(
        self,
        args: dict[str, Any],
        answer: dict[str, Any],
        oracle: Oracle,
        asked: Decimal | None,
        *,
        place: bool,
        origin: str = "plan_order",
    ) -> None:
        """A refusal: follow its next safe action as an agent would, and check where it leads."""
        self.stats["refusals"] += 1
        first = answer["next_safe_action"]
        if first is None:
            self.fail("no-next-action", {"args": args, "answer": brief(answer)})
            return
        if first["tool"] is None:
            self.tally(origin, "refusals")
            self.tally(origin, "terminal")
            await self.check_terminal(args, answer, oracle, origin=origin)
            return
        if first["tool"] != "plan_order":
            await self.chase(origin, args, answer)
            return
        self.tally(origin, "refusals")
        self.tally(origin, "suggestions")
        self.stats["suggestions"] += 1
        suggestion = first["args"]
        self.check_direction(args, asked, suggestion, oracle, answer)
        replay = await self.plan(suggestion, oracle)
        if replay is None:
            return
        if replay["status"] == "ok":
            self.stats["replays ok"] += 1
            self.tally(origin, "replays ok")
            await self.check_ok(replay, oracle, origin="suggested")
            await self.check_one_more_step(args, asked, answer, suggestion, oracle, origin)
            if place or replay.get("needs_confirmation"):
                await self.place(replay, oracle)
            return
        self.stats["replays refused"] += 1
        self.tally(origin, "replays refused")
        self.fail(
            f"replay-refused[{origin}: {rules(answer)} -> {rules(replay)}]",
            {
                "asked": args,
                "facts": oracle.facts(Order.of(args)),
                "answer": brief(answer),
                "replay": brief(replay),
            },
        )
        second = replay["next_safe_action"]
        if second is None or second["tool"] is None:
            if second is not None:
                await self.check_terminal(suggestion, replay, oracle, origin=origin)
            return
        if second["tool"] != "plan_order":
            return
        third = await self.plan(second["args"], oracle)
        if third is None or third["status"] == "ok":
            return
        if third["next_safe_action"] is not None and third["next_safe_action"]["tool"] is not None:
            self.stats["loops"] += 1
            self.tally(origin, "loops")
            self.fail(
                f"loop[{rules(answer)} -> {rules(replay)} -> {rules(third)}]",
                {
                    "asked": args,
                    "facts": oracle.facts(Order.of(args)),
                    "hops": [brief(answer), brief(replay), brief(third)],
                },
            )

    def check_direction(
        self,
        args: dict[str, Any],
        asked: Decimal | None,
        suggestion: dict[str, Any],
        oracle: Oracle,
        answer: dict[str, Any],
    ) -> None:
        """A suggestion never turns an order that only shrinks the position into one that grows it."""
        order, suggested = Order.of(args), Order.of(suggestion)
        if asked is None or asked <= 0 or "qty" not in suggestion:
            return
        if oracle.reducing(order, asked) and not oracle.reducing(suggested, Decimal(suggestion["qty"])):
            self.fail(
                "raise-turns-shrink-into-grow",
                {"asked": args, "facts": oracle.facts(order), "answer": brief(answer)},
            )

    async def check_one_more_step(
        self,
        args: dict[str, Any],
        asked: Decimal | None,
        answer: dict[str, Any],
        suggestion: dict[str, Any],
        oracle: Oracle,
        origin: str = "plan_order",
    ) -> None:
        """After a size cut, the suggested size is the largest: one lot step more is refused."""
        order = Order.of(suggestion)
        instrument = oracle.instrument(order)
        qty = Decimal(suggestion["qty"])
        if instrument is None or asked is None or qty >= asked:
            return
        self.stats["cuts"] += 1
        self.tally(origin, "maximal checked")
        more = await self.plan({**suggestion, "qty": plain(qty + instrument.step)}, oracle)
        if more is not None and more["status"] == "ok":
            self.tally(origin, "not maximal")
            self.fail(
                f"one-more-step-passes[{rules(answer)}]",
                {
                    "asked": args,
                    "facts": oracle.facts(order),
                    "answer": brief(answer),
                    "plus_one_step": brief(more),
                },
            )
        largest = oracle.largest(order, at_most=asked)
        if largest is not None and largest > qty:
            self.fail(
                f"cut-smaller-than-oracle[{rules(answer)}]",
                {
                    "asked": args,
                    "facts": oracle.facts(order),
                    "suggested": plain(qty),
                    "oracle": plain(largest),
                },
            )

    async def check_terminal(
        self, args: dict[str, Any], answer: dict[str, Any], oracle: Oracle, *, origin: str = "plan_order"
    ) -> None:
        """Tool null: nothing of that order (nor its reducing variant) may pass; options must be callable."""
        self.stats["terminal"] += 1
        nxt = answer["next_safe_action"]
        rule = rules(answer)
        if not nxt.get("human") and not nxt.get("retry_after"):
            self.fail(f"terminal-without-human[{rule}]", {"args": args, "answer": brief(answer)})
        self.check_options(args, answer, oracle)
        order = Order.of(args)
        self.check_close_offered(args, answer, oracle, origin)
        found = oracle.witness(order)
        if found is None:
            return
        variant, qty = found
        flavour = "dust-close" if qty == oracle.dust_close_qty(variant) else "size"
        confirm = await self.plan(variant.args(qty), oracle)
        detail = {
            "args": args,
            "facts": oracle.facts(order),
            "answer": brief(answer),
            "witness": variant.args(qty),
            "witness_answer": brief(confirm),
        }
        if confirm is not None and confirm["status"] == "ok":
            self.stats["false nothing fits"] += 1
            self.tally(origin, "false nothing fits")
            self.fail(f"false-nothing-fits[{origin}: {rule}; witness {flavour}]", detail)
        elif flavour == "dust-close":  # the issue allows a terminal answer for dust: noted, not failed
            self.stats["dust close not offered"] += 1
            self.fail(f"dust-close-not-offered[{origin}: {rule}]", detail)
        else:
            self.stats["oracle disagrees"] += 1
            self.fail(f"nothing-fits-oracle-disagrees[{origin}: {rule}]", detail)

    def check_close_offered(
        self, args: dict[str, Any], answer: dict[str, Any], oracle: Oracle, origin: str
    ) -> None:
        """An order meant to shrink the position (reduce-only, or against it) is not answered "nothing fits"
        while close_position, which first cancels the resting orders that would reopen the position, closes
        as much: the way to reduce that works is the next action."""
        order = Order.of(args)
        close = oracle.close_order(order.symbol, order.category)
        if close is None or close.side != order.side or not (order.reduce_only or oracle.opposite(order)):
            return
        asked = self.asked_qty(args, oracle)
        # on linear, close_position first cancels the resting orders that would reopen the position; on spot
        # it sells the coin that is free (coin offered in a resting sell stays offered)
        cleared = oracle if close.category == "spot" else oracle.without_resting(close)

        def at_most_asked(variant: Order, size: Decimal) -> bool:
            return asked is None or size <= max(asked, oracle.dust_close_qty(variant) or Decimal(0))

        if cleared.witness(close, within=at_most_asked) is not None:
            self.tally(origin, "reducing refused")
            self.fail(
                f"reducing-refused[{origin}: {rules(answer)}, terminal while close_position closes it]",
                {"args": args, "facts": oracle.facts(order), "answer": brief(answer)},
            )

    def check_options(self, args: dict[str, Any], answer: dict[str, Any], oracle: Oracle) -> None:
        for option in (answer.get("next_safe_action") or {}).get("options") or []:
            if option.get("tool") != "close_position":
                continue
            option_args = option.get("args") or {}
            close = oracle.close_order(option_args.get("symbol", ""), option_args.get("category", "linear"))
            # close_position first cancels the resting orders on its side that would reopen the position; a
            # throttle that holds it back for now is the throttle's answer (retry_after), not a dead option
            cleared = (oracle.without_resting(close) if close is not None else oracle).unthrottled()
            if close is None or cleared.witness(close) is None:
                self.fail(
                    "dead-option[close_position]",
                    {"args": args, "facts": oracle.facts(Order.of(args)), "answer": brief(answer)},
                )

    def check_unknown_symbol(self, args: dict[str, Any], answer: dict[str, Any]) -> None:
        """A symbol the exchange does not list is a terminal answer, never a retry loop."""
        self.stats["unknown symbols"] += 1
        nxt = answer.get("next_safe_action") or {}
        if (
            answer["status"] == "ok"
            or nxt.get("tool") is not None
            or nxt.get("retry_after")
            or rules(answer) == "facts"
        ):
            self.fail(f"unknown-symbol-as-retry[{rules(answer)}]", {"args": args, "answer": brief(answer)})

    async def check_ok(self, answer: dict[str, Any], oracle: Oracle, *, origin: str) -> None:
        """What Pilot plans, the oracle passes, judged as it will be sent (a limit at the planned price)."""
        planned = answer["order"]
        sent, qty = as_sent(planned), Decimal(planned["qty"])
        if oracle.instrument(sent) is None:
            return
        detail = {
            "origin": origin,
            "facts": oracle.facts(Order.of({**planned, "price": None})),
            "plan": brief(answer),
        }
        for miss in oracle.misses(sent, qty):
            name = f"priceBand {planned['order_type']}" if miss.name == "priceBand" else miss.name
            self.fail(f"ok-plan-fails-oracle[{name}]", {**detail, "oracle": str(miss)})
        worst = oracle.worst(sent)
        if answer.get("notional_usd") is not None and Decimal(answer["notional_usd"]) != qty * worst:
            self.fail(
                f"valuation-mismatch[{sent.category} {planned['order_type']} {sent.side}]",
                {**detail, "oracle_notional": plain(qty * worst)},
            )
        needs = oracle.policy.needs_human("place_order", qty * worst, grows=not oracle.reducing(sent, qty))
        if bool(answer.get("needs_confirmation")) != needs:
            self.fail("confirmation-flag-mismatch", {**detail, "oracle_needs_human": needs})

    async def place(self, plan: dict[str, Any], oracle: Oracle) -> None:
        """Place an ok plan once the case's pause has passed, and check place_order judged it on the facts as
        they then are (the oracle's): refused exactly where they break a rule, sent and not rejected where
        they do not, and every fill under its caps."""
        planned = plan["order"]
        qty, planned_price = Decimal(planned["qty"]), Decimal(planned["price"])
        if self.pause_ms:
            await self.advance(self.pause_ms, "the pause before place_order")
        oracle = self.oracle(judging=True)  # what place_order reads
        intent = as_planned(planned)
        expected = oracle.place_misses(intent, qty, planned_price)
        sent = as_sent({**planned, "price": plain(oracle.sent_price(intent, planned_price))})
        growing = not oracle.reducing(sent, qty)
        answer = await self.call("place_order", {"plan_id": plan["plan_id"]})
        if answer is None:
            return
        self.stats[f"placed {answer['status']}"] += 1
        detail = {
            "paused_ms": self.pause_ms,
            "facts": oracle.facts(intent),
            "plan": brief(plan),
            "placed": brief(answer),
            "oracle": [str(miss) for miss in expected],
        }
        if answer["status"] == "rejected":
            pass  # counted and failed by call(): nothing Pilot sends may be rejected
        elif answer["status"] == "refused":
            await self.check_place_refusal(sent, qty, answer, expected, oracle, detail)
        elif expected:
            self.fail(f"place-sent-what-the-oracle-refuses[{'+'.join(m.name for m in expected)}]", detail)
        fill = answer.get("fill") or {}
        filled = Decimal(fill.get("filled_qty") or "0")
        if filled <= 0:
            return
        self.stats["placed fills with a stop" if sent.stop_loss is not None else "placed fills"] += 1
        self.check_stops("place_order")
        if sent.category == "spot" and sent.side == "buy":
            self.check_spot_stops(sent.symbol, detail)
        if growing:
            self.check_fill(sent, filled, oracle, detail)

    def check_spot_stops(self, symbol: str, detail: dict[str, Any]) -> None:
        """Right after a spot buy of Pilot's filled: the coin held loses at most maxLossPerTradeUsd at its
        stop orders, what none sells at its whole value (docs/policy.md), as the exchange now holds them. A
        fill of another client's order in the same step is not Pilot's."""
        breach = self.oracle().spot_breach(symbol)
        self.stats["spot buys checked at their stops"] += 1
        if breach is not None:
            self.fail("spot-loss-at-stops-above-limit", {**detail, "loss": breach})

    async def check_place_refusal(
        self,
        sent: Order,
        qty: Decimal,
        answer: dict[str, Any],
        expected: list[Miss],
        oracle: Oracle,
        detail: dict[str, Any],
    ) -> None:
        """A refusal at place_order: the oracle must refuse too, for the same kind of reason."""
        code = rules(answer)
        if self.pause_ms:
            self.stats["place refused after a move"] += 1
        judged = [miss for miss in expected if miss.kind != "confirm"]
        if code not in CONFIRMATION_CODES:
            if not judged:
                self.fail(f"place-refused-on-fresh-facts[{code}]", detail)
            return
        if judged or not expected:  # a human is asked only for an order that passes, and only when needed
            self.fail(f"place-confirmation-unexpected[{code}]", detail)
        await self.check_confirmation(sent, qty, answer, oracle, detail)

    def check_fill(self, order: Order, filled: Decimal, before: Oracle, detail: dict[str, Any]) -> None:
        """A growing fill leaves the position under its caps, valued at the worst price it was sent at."""
        after = self.oracle()
        limits = before.policy.limits(order.symbol)
        assert order.price is not None
        worst = order.price if order.side == "buy" else max(order.price, before.quote(order.symbol).bid)
        exposure = abs(after.held(order) + order.sign * after.pending(order)) * worst
        numbers = {**detail, "exposure_after": plain(exposure), "worst": plain(worst)}
        if filled * worst > limits.max_order_notional:
            self.fail("cap-breach-after-fill[maxOrderNotionalUsd]", numbers)
        if exposure > limits.max_notional:
            self.fail("cap-breach-after-fill[maxNotionalUsd]", numbers)
        instrument = before.instrument(order)
        if (
            instrument is not None
            and not instrument.spot
            and exposure > limits.max_leverage * before.equity()
        ):
            self.fail("cap-breach-after-fill[maxLeverage]", numbers)

    async def check_confirmation(
        self, order: Order, qty: Decimal, answer: dict[str, Any], oracle: Oracle, detail: dict[str, Any]
    ) -> None:
        """Refused for want of a human: when a size that needs none passes, the next action leads to it
        within two hops (after a move, place_order's "plan it again" is refused with the size that fits)."""
        self.stats["confirmation refusals"] += 1
        above = oracle.policy.above_notional
        if "place_order" in oracle.policy.confirm_actions or above is None:
            return
        nxt = answer.get("next_safe_action") or {}
        if nxt.get("tool") == "plan_order":
            replay = await self.plan(nxt["args"], oracle)
            hops = [brief(replay)]
            again = (replay or {}).get("next_safe_action") or {}
            if replay is not None and replay["status"] == "refused" and again.get("tool") == "plan_order":
                replay = await self.plan(again["args"], oracle)
                hops.append(brief(replay))
            if replay is None or replay["status"] != "ok" or replay.get("needs_confirmation"):
                self.fail("confirmation-next-does-not-fit", {**detail, "hops": hops})
            return

        def unconfirmed(variant: Order, size: Decimal) -> bool:
            return size * oracle.worst(variant) <= above

        found = oracle.witness(order, within=unconfirmed)
        if found is None:
            return
        variant, size = found
        confirm = await self.plan(variant.args(size), oracle)
        if confirm is not None and confirm["status"] == "ok" and not confirm.get("needs_confirmation"):
            self.fail(
                "confirmation-dead-end",
                {**detail, "witness": variant.args(size), "witness_answer": brief(confirm)},
            )

    async def close_case(self, case: CloseCase) -> None:
        probe = Order(case.symbol, case.category, "sell", "market")
        # close_position judges (and reads the equity) only when there is something to close
        oracle = self.oracle(judging=self.oracle().free_to_close(probe) != 0)
        args: dict[str, Any] = {"symbol": case.symbol, "category": case.category}
        if case.qty is not None:
            args["qty"] = case.qty
        close = oracle.close_order(case.symbol, case.category)
        held = oracle.held(Order(case.symbol, case.category, "sell", "market"))
        answer = await self.call("close_position", args)
        if answer is None:
            return
        self.stats[f"close {answer['status']}"] += 1
        facts = oracle.facts(close or Order(case.symbol, case.category, "sell", "market"))
        detail = {"args": args, "facts": facts, "answer": brief(answer)}
        if answer["status"] == "rejected":
            return  # counted and failed by call()
        if answer["status"] in FILLED:
            self.check_stops("close_position")
            after = self.oracle().held(Order(case.symbol, case.category, "sell", "market"))
            if abs(after) >= abs(held) or (after != 0 and (after > 0) != (held > 0)):
                self.fail("close-made-no-progress", {**detail, "position_after": plain(after)})
            return
        if answer["status"] != "refused":
            return
        code = rules(answer)
        if code in CONFIRMATION_CODES and "close_position" in oracle.policy.confirm_actions:
            return
        self.reducing_refused("close_position", answer, detail)
        nxt = answer.get("next_safe_action") or {}
        if close is None:
            if nxt.get("tool") is None:
                self.stats["terminal"] += 1
                self.check_options(args | {"side": "sell"}, answer, oracle)
            return
        amount = abs(held) if case.qty is None else min(Decimal(case.qty), abs(held))
        asked = close.args(amount)
        if nxt.get("tool") is not None:  # refused, though a close of at most what was asked would pass

            def asked_or_less(variant: Order, size: Decimal) -> bool:
                return size <= amount

            found = oracle.witness(close, within=asked_or_less)
            if found is not None:
                variant, qty = found
                self.fail(
                    f"close-refused-while-a-close-passes[{code}]",
                    {**detail, "witness": variant.args(qty)},
                )
        await self.follow(asked, answer, oracle, amount, place=True, origin="close_position")


async def seed(paper: PaperExchange, world: World) -> int:
    """Leave the world's resting orders on the account, as another client would; return the creates sent."""
    if world.resting:
        adapter = connect_adapter(paper, timeout_seconds=10)
        try:
            for index, resting in enumerate(world.resting):
                if resting.trigger is not None:  # a spot TP/SL order, as another client leaves one
                    with contextlib.suppress(SimReject):
                        paper.leave_order(
                            resting.category, spot_stop_params(resting, f"{ANOTHER_CLIENT}{index}")
                        )
                    continue
                request = OrderRequest(
                    category=resting.category,
                    symbol=resting.symbol,
                    side=resting.side,
                    qty=resting.qty,
                    price=resting.price,
                    time_in_force="GTC",
                    order_link_id=f"{ANOTHER_CLIENT}{index}",
                    reduce_only=resting.reduce_only,
                    stop_loss=resting.stop_loss,
                )
                with contextlib.suppress(ExchangeError):  # a seed the exchange refuses is simply not there
                    await adapter.create_order(request)
        finally:
            await adapter.close()
    return paper.request_count(CREATE)


def spot_stop_params(resting: Resting, link: str) -> dict[str, Any]:
    """A spot TP/SL sell at market, waiting for its trigger (create-order.mdx, orderFilter tpslOrder)."""
    return {
        "symbol": resting.symbol,
        "side": resting.side,
        "orderType": "Market",
        "qty": plain(resting.qty),
        "marketUnit": "baseCoin",
        "triggerPrice": plain(resting.trigger or resting.price),
        "orderFilter": "tpslOrder",
        "orderLinkId": link,
    }


@contextlib.asynccontextmanager
async def open_world(world: World, home: Path) -> AsyncIterator[WorldRun]:
    """Start the world's paper exchange, seed it, and serve Pilot over it to an in-memory MCP client."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "policy.json").write_text(world.policy_text())
    clock = FakeClock(WORLD_START)  # Pilot's clock: it moves with the exchange's time (WorldRun.advance)
    with (
        start_paper_exchange(world.scenario(), ticker_ms=0) as paper,  # it moves only when advanced
        venue_on(world.venue, paper) as venue,  # the paper exchange itself, or the OKX front over it
    ):
        seeded = await seed(paper, world)
        async with (
            open_test_runtime(home, venue.endpoint, clock) as runtime,
            Client(build_server(runtime)) as client,  # declares no elicitation: it cannot show a form
        ):
            run = WorldRun(world, paper, client, seeded, clock, runtime)
            start = run.oracle()
            run.at_stops = {s: loss_at_stops(start.protected(s)) for s in start.account.positions}
            yield run


# --- reading answers ---------------------------------------------------------------------------------


def stops_widened(before: tuple[Decimal, Decimal], after: tuple[Decimal, Decimal]) -> bool:
    """Whether the stops now let the position lose more than before: more of it left without a stop, or as
    much and more lost at them (docs/policy.md, maxLossPerTradeUsd)."""
    if after[1] != before[1]:
        return after[1] > before[1]
    return after[0] > before[0]


def as_sent(planned: dict[str, Any]) -> Order:
    """A planned order as it goes to the exchange: a limit order at the planned price (IOC for a market one)."""
    stop = planned.get("stop_loss")
    return Order(
        planned["symbol"],
        planned["category"],
        planned["side"],
        "limit",
        Decimal(planned["price"]),
        planned["reduce_only"],
        stop_loss=Decimal(stop) if stop is not None else None,
        ioc=planned["time_in_force"] == "IOC",
    )


def as_planned(planned: dict[str, Any]) -> Order:
    """A planned order as place_order judges it again: a market order as a market order (priced afresh), a
    limit order at its price."""
    stop = planned.get("stop_loss")
    return Order(
        planned["symbol"],
        planned["category"],
        planned["side"],
        planned["order_type"],
        Decimal(planned["price"]) if planned["order_type"] == "limit" else None,
        planned["reduce_only"],
        stop_loss=Decimal(stop) if stop is not None else None,
    )


def opening_orders(oracle: Oracle) -> list[OpenOrder]:
    """The orders resting that Pilot's agent placed and that can open a position: the dead-man's switch's."""
    return [
        o
        for o in oracle.account.open_orders
        if o.ordinary
        and o.link.startswith(PILOT_LINK)
        and not o.reduce_only
        and (o.category == "linear" or o.side == "buy")
    ]


def codes_in(answer: dict[str, Any]) -> list[str]:
    found = [v["rule"] for v in answer.get("violations") or []]
    for action in [answer.get("next_safe_action"), *(v.get("next") for v in answer.get("violations") or [])]:
        numbers = (action or {}).get("nothing_fits")
        if numbers:
            found.append(numbers["rule"])
    return found


def rules(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return "none"
    return "+".join(v["rule"] for v in answer.get("violations") or []) or answer.get("status", "?")


def brief(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of an answer a reproduction needs."""
    if answer is None:
        return None
    out: dict[str, Any] = {"status": answer["status"]}
    if answer.get("violations"):
        out["violations"] = [
            {"rule": v["rule"], "limit": v["limit"], "attempted": v["attempted"]}
            for v in answer["violations"]
        ]
    nxt = answer.get("next_safe_action")
    if nxt:
        shown = {
            k: nxt[k] for k in ("tool", "args", "text", "human", "retry_after", "nothing_fits") if nxt.get(k)
        }
        if nxt.get("options"):
            shown["options"] = [{"tool": o["tool"], "args": o["args"]} for o in nxt["options"]]
        out["next"] = shown
    for key in (
        "order",
        "notional_usd",
        "position_notional_usd",
        "needs_confirmation",
        "ret_code",
        "fill",
        "sent",
    ):
        if answer.get(key) is not None:
            out[key] = answer[key]
    return out


def _same(seen: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(seen, dict) and all(_same(seen.get(k), v) for k, v in expected.items())
    if isinstance(expected, int):
        return seen == expected
    try:
        return Decimal(str(seen)) == Decimal(str(expected))
    except ArithmeticError:
        return False
