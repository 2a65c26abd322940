"""The exchange gate: the one road to the exchange for every write (create, cancel, leverage; a close is a create).

Only the gate holds the ExchangeWriter. For each write it checks the exchange key, journals the attempt
before the request leaves, sends it once, and sorts what came back in one place (`sort_failure`):

    rejected         a definite no from the exchange (a retCode), or the exchange could not take it
                     (unreachable, rate limited: family "unavailable", with a retry time when known);
                     nothing was executed
    outcome_unknown  sent, result not known: an order is looked up by its client order id at once, and
                     until found it counts as pending exposure; never resent

A write the exchange answers "not modified" (a trading stop's 34040) is no failure: its status is
"unchanged", the asked state already holds.

Refusals decided before this point (policy, approvals, lifecycle) never reach the gate: nothing is sent
for them. The gate's own refusal is a key that may no longer trade.

A growing send is linearised with whatever turns trading reducing (the kill switch, the daily loss latch,
a policy edit): its `order.sent` entry is appended only on the `SendCondition` its judgement was made on (no
such entry after the judgement's place in the journal, the policy file unchanged), in the same statement as
the insert; otherwise nothing is sent and the caller judges again (`NotSent`). So once the journal holds "on",
no growing order is journaled as sent after it, by any process of the home.

Once a request has left, no StoreError escapes the gate: if the journal cannot record the outcome (disk
full, I/O error), the answer still says what was sent and carries `journal_problem` (pilot.app.answers.store_faults).
So a StoreError that reaches a tool always means nothing was sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, TypeVar

from pilot.app.answers import entry_kinds, store_faults
from pilot.app.answers.refusals import journal_action_refusal, journal_order_refusal, key_violation
from pilot.app.answers.responses import (
    ActionAnswer,
    ExchangeText,
    Fill,
    NextActionOut,
    OrderAnswer,
    Refusal,
    next_out,
)
from pilot.app.road.clock import Clock
from pilot.app.road.ports import ExchangeReader, ExchangeWriter
from pilot.core.violations import NextAction, plain
from pilot.exchange.errors import ExchangeError, ExchangeRejected, ExchangeUnavailable, OutcomeUnknown
from pilot.exchange.models import ExchangeOrder, OrderRequest
from pilot.store import Journal, JournalEntry, Leases, Preempted, StoreError, Unless, holder_id

ORDER_LINK_PREFIX = "pilot-"
TURN_LEASE = "send-turn"
# Longer than any one turn can take (evaluation, a create with its 10 s timeout, the lookups after it), so
# a live holder never loses the lease; a crashed one loses it after this long.
TURN_TTL = timedelta(minutes=2)
TURN_WAIT = timedelta(seconds=60)
TURN_POLL_SECONDS = 0.02
DRAIN_TIMEOUT = timedelta(seconds=30)
# How long turning the kill switch on waits for a send journaled before it to finish (a create's 10 s timeout
# and its lookups); the switch itself is on from its own entry, without waiting.
SETTLE_WAIT = timedelta(seconds=15)
T = TypeVar("T")
# What a write returns when the exchange answered "not modified" (a trading stop's 34040): what was asked
# already holds.
ALREADY_SO = object()

# Re-checks the exchange key's permissions when the last check is old; raises pilot.keys.errors.KeysError
# when the key may now do more than the allowlist permits or cannot be checked. None on paper.
KeyCheck = Callable[[datetime], Awaitable[object]]


def order_link_id(plan_id: str) -> str:
    """The client order id for a plan: derived, so the order can always be found again (36 chars max)."""
    return ORDER_LINK_PREFIX + hashlib.sha256(plan_id.encode()).hexdigest()[:30]


def look_up(symbol: str, category: str, text: str) -> NextAction:
    """The next action after a send whose result is not fully known: read open orders, never resend."""
    return NextAction.call("get_open_orders", {"symbol": symbol, "category": category}, text)


@dataclass(frozen=True, slots=True)
class Failure:
    """A write that did not succeed, sorted: a definite no (rejected) or an unknown outcome."""

    status: Literal["rejected", "outcome_unknown"]
    detail: str
    family: str
    ret_code: int | None = None
    retry_after: datetime | None = None
    untrusted_text: str = ""

    @property
    def exchange_text(self) -> ExchangeText | None:
        return ExchangeText(untrusted_text=self.untrusted_text) if self.untrusted_text else None

    @property
    def retry_text(self) -> str | None:
        return self.retry_after.isoformat() if self.retry_after else None


def sort_failure(error: ExchangeError, what: str) -> Failure:
    """The one sorting of exchange errors for every write, in Pilot's own words.

    The adapter's message may name the order by an id the agent gave (possibly copied from exchange text),
    so the sentence is built from the error's type and code alone.
    """
    if isinstance(error, ExchangeRejected):
        detail = f"{what}: the exchange refused it (retCode {error.ret_code}, {error.family}); nothing was executed"
        return Failure("rejected", detail, error.family, error.ret_code, error.retry_at, error.untrusted_text)
    if isinstance(error, OutcomeUnknown):
        detail = f"{what}: sent, but the exchange's answer was lost or unclear, so the outcome is not known"
        return Failure("outcome_unknown", detail, "unknown", untrusted_text=error.untrusted_text)
    retry = error.retry_at if isinstance(error, ExchangeUnavailable) else None
    detail = f"{what}: the exchange could not be reached or did not take it; nothing was executed"
    return Failure("rejected", detail, "unavailable", retry_after=retry, untrusted_text=error.untrusted_text)


class TurnBusy(Exception):
    """Another process held the send turn for longer than a caller may wait; nothing was sent."""


@dataclass(frozen=True, slots=True)
class SendCondition:
    """What a send's judgement depended on that anyone may change at any instant, checked as its attempt is
    journaled: `unless`, the entries that would have changed the verdict (a kill switch, a loss latch)
    after the judgement's place in the journal; `unchanged`, whether what it read outside the journal still
    stands (the policy file's version)."""

    unless: Unless
    unchanged: Callable[[], bool]


@dataclass(frozen=True, slots=True)
class NotSent:
    """A send held back at the last moment because its `SendCondition` no longer held: nothing was sent or
    journaled as sent; judge it again on what changed."""

    why: str


class ExchangeGate:
    """Holds the only ExchangeWriter. One per Runtime."""

    def __init__(
        self,
        writer: ExchangeWriter,
        reader: ExchangeReader,
        journal: Journal,
        leases: Leases,
        clock: Clock,
        key_check: KeyCheck | None = None,
    ) -> None:
        self._writer = writer
        self._reader = reader
        self._journal = journal
        self._leases = leases
        self._clock = clock
        self._key_check = key_check
        self._turn = asyncio.Lock()
        self._holding = (
            False  # this gate holds the send turn (its growing sends are journaled only while it does)
        )
        self._holder = holder_id(secrets.token_hex(6))
        self._in_flight: set[asyncio.Task[Any]] = set()

    @property
    def holder(self) -> str:
        """This gate's name as a holder of the send turn, of plan claims and of this process's heartbeat row
        (host, pid and a token)."""
        return self._holder

    @property
    def checks_key(self) -> bool:
        """Whether writes re-check a stored exchange key's permissions first (False on paper)."""
        return self._key_check is not None

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the send turn of this home from evaluating on fresh facts until the send's outcome is journaled.

        Concurrent sends are then evaluated one after another, each seeing the order.sent entries and the
        position the previous one left; otherwise each passes a cap alone and together they break it. The
        turn is a lease in the store, so it holds across processes serving one home; within this process an
        asyncio lock queues the tasks first.

        Raises:
            TurnBusy: another process kept the turn for longer than TURN_WAIT.
        """
        async with self._turn:
            await self._take_lease()
            self._holding = True
            try:
                yield
            finally:
                self._holding = False
                await self._leases.release(TURN_LEASE, self._holder)

    def _fenced(self, unless: Unless) -> Unless:
        """`unless`, and, while this gate holds the send turn, that it still does as the send is journaled."""
        return replace(unless, turn=(TURN_LEASE, self._holder)) if self._holding else unless

    async def settle(self, wait: timedelta = SETTLE_WAIT) -> bool:
        """Wait until no send that was in flight when this was called is still under way, in this process or
        another (take the send turn once, and give it back). False when that took longer than `wait`."""
        try:
            async with asyncio.timeout(wait.total_seconds()), self._turn:
                try:
                    await self._take_lease(wait)
                finally:  # taken or not (a timeout may land just after the take): never keep the turn
                    await self._leases.release(TURN_LEASE, self._holder)
        except (TimeoutError, TurnBusy):
            return False
        return True

    async def _take_lease(self, wait: timedelta = TURN_WAIT) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + wait.total_seconds()
        while not await self._leases.try_acquire(
            TURN_LEASE, self._holder, now=self._clock.now(), ttl=TURN_TTL
        ):
            if loop.time() >= give_up:
                raise TurnBusy
            await asyncio.sleep(TURN_POLL_SECONDS)  # another process holds it: a real wait, not a test's

    async def complete(self, work: Awaitable[T]) -> T:
        """Run `work` to its end even if the caller goes away (a client that quits mid-order).

        The caller still gets the answer when it waits; when it is cancelled, the work goes on, so a send
        is journaled with its outcome and its plan's status follows. `drain` waits for such work at exit.
        """
        task = asyncio.ensure_future(work)
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        return await asyncio.shield(task)

    async def drain(self, timeout: timedelta = DRAIN_TIMEOUT) -> None:
        """Wait, up to `timeout`, for work whose caller went away; call before closing the store."""
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=timeout.total_seconds())

    async def key_problem(self) -> str | None:
        """None when the exchange key may trade; else why not, with the fix (never the key itself)."""
        if self._key_check is None:
            return None
        from pilot.keys.errors import KeysError

        try:
            await self._key_check(self._clock.now())
        except KeysError as error:
            return str(error)
        return None

    # ---- orders ------------------------------------------------------------------------------------

    async def send_order(
        self, request: OrderRequest, *, plan_id: str, origin: str, condition: SendCondition | None = None
    ) -> OrderAnswer | NotSent:
        """Send `request` exactly once and say what became of it; NotSent when `condition` no longer held
        as the send was about to be journaled (nothing was sent)."""
        problem = await self.key_problem()
        if problem is not None:
            refusal = Refusal.of(key_violation(problem), "nothing was sent")
            return await journal_order_refusal(self._journal, refusal, now=self._clock.now(), plan_id=plan_id)
        journal, sent = self._journal, request.as_record()
        attempt = await self._attempt(
            entry_kinds.ORDER_SENT, {"request": sent, "origin": origin}, plan_id, condition
        )
        if isinstance(attempt, NotSent):
            return attempt
        try:
            ack = await self._writer.create_order(request)
        except ExchangeError as error:
            failure = sort_failure(error, "the order")
            if failure.status == "outcome_unknown":
                answer = await self._reconnoitre(request, sent, failure)
            else:
                answer = _rejected_order(failure, sent)
        else:
            answer = await self._read_back(request, sent, ack.order_id)
        # An outcome_unknown or accepted answer leaves the send unsettled: pending exposure until a lookup
        # finds it (pilot.app.facts.pending).
        answer = answer.model_copy(update={"plan_id": plan_id, "order_link_id": request.order_link_id})
        try:
            # Not durable: an outcome lost to a power cut leaves the (durable) send unsettled, and it is
            # looked up by its client order id at start-up (pilot.app.facts.pending).
            outcome = await journal.append(
                entry_kinds.ORDER_OUTCOME,
                answer.model_dump(mode="json", exclude_none=True),
                now=self._clock.now(),
                plan_id=plan_id,
                durable=False,
            )
        except StoreError as error:  # sent all the same: say what was sent, never lose it in an exception
            answer = answer.model_copy(update={"journal_seq": [attempt.seq]})
            return store_faults.unrecorded(answer, error, "the outcome of this order", sent=True)
        return answer.model_copy(update={"journal_seq": [attempt.seq, outcome.seq]})

    async def _attempt(
        self, kind: str, data: dict[str, Any], plan_id: str | None, condition: SendCondition | None
    ) -> JournalEntry | NotSent:
        """Journal a write's attempt (durably, before the request leaves), on its condition if it has one."""
        if condition is not None and not condition.unchanged():
            return NotSent("what the judgement read changed before the send")
        try:
            return await self._journal.append(
                kind,
                data,
                now=self._clock.now(),
                plan_id=plan_id,
                unless=self._fenced(condition.unless) if condition is not None else None,
            )
        except Preempted as preempted:
            if preempted.turn_lost:
                return NotSent("the send turn was lost before the send was journaled")
            if not preempted.seqs:
                return NotSent("the journal was rolled back")
            return NotSent(f"journal entries {', '.join(map(str, preempted.seqs))} came first")

    async def _reconnoitre(
        self, request: OrderRequest, sent: dict[str, Any], failure: Failure
    ) -> OrderAnswer:
        """The send may or may not have happened: look the order up by its client id. Never resend."""
        try:
            found = await self._reader.find_order(request.category, request.symbol, request.order_link_id)
        except ExchangeError:
            found, checked = None, "the lookup itself failed"
        else:
            checked = "open orders and order history were checked and it is not there (yet)"
        if found is not None:
            answer = _from_order(found, sent)
            return answer.model_copy(
                update={"found_by_reconnaissance": True, "detail": "accepted (found by lookup)"}
            )
        return OrderAnswer(
            status="outcome_unknown",
            sent=sent,
            found_by_reconnaissance=False,
            exchange=failure.exchange_text,
            detail=f"{failure.detail}; {checked}",
            next_safe_action=next_out(
                look_up(
                    request.symbol,
                    request.category,
                    f"do not resend: look for client order id {request.order_link_id} with get_open_orders "
                    "and get_positions; the order may still appear",
                )
            ),
        )

    async def _read_back(self, request: OrderRequest, sent: dict[str, Any], order_id: str) -> OrderAnswer:
        try:
            found = await self._reader.find_order(request.category, request.symbol, request.order_link_id)
        except ExchangeError:
            found = None
        if found is None:
            return OrderAnswer(
                status="accepted",
                order_id=order_id,
                sent=sent,
                detail="accepted by the exchange; reading it back failed, so its fill is not known yet",
                next_safe_action=next_out(
                    look_up(
                        request.symbol,
                        request.category,
                        "check the order's state with get_open_orders; do not resend",
                    )
                ),
            )
        return _from_order(found, sent)

    # ---- cancel and leverage ---------------------------------------------------------------------------

    async def cancel_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None,
        order_link_id: str | None,
        origin: str | None = None,
    ) -> ActionAnswer:
        """Cancel one order, once. `origin` says who asked when it was not the agent (the dead-man's switch)."""
        action = {
            "symbol": symbol,
            "category": category,
            "order_id": order_id,
            "order_link_id": order_link_id,
            **({"origin": origin} if origin is not None else {}),
        }

        async def call() -> object:
            return await self._writer.cancel_order(
                category, symbol, order_id=order_id, order_link_id=order_link_id
            )

        return await self.complete(self._write("cancel_order", action, call, check="get_open_orders"))

    async def set_leverage(
        self, category: str, symbol: str, leverage: Decimal, action: Mapping[str, Any]
    ) -> ActionAnswer:
        """Set one-way leverage, once. `action` is what the journal records of it (with the leverage before)."""

        async def call() -> object:
            await self._writer.set_leverage(category, symbol, leverage)
            return None

        return await self.complete(self._write("set_leverage", action, call, check="get_positions"))

    async def cancel_all_orders(
        self, category: str, symbol: str | None, *, include_stops: bool
    ) -> ActionAnswer:
        """Cancel the open orders of a category (or one symbol), once: the ordinary orders, and with
        `include_stops` the positions' stops and the conditional orders too."""
        # The journal and the answer have always named the reach as Bybit's orderFilter: "Order" for the
        # ordinary orders alone, null for every kind. Kept so, for old and new rows to read alike.
        action = {"symbol": symbol, "category": category, "order_filter": None if include_stops else "Order"}

        async def call() -> object:
            cancelled = await self._writer.cancel_all_orders(category, symbol, include_stops=include_stops)
            return ", ".join(cancelled)

        return await self.complete(self._write("cancel_all_orders", action, call, check="get_open_orders"))

    async def set_trading_stop(
        self,
        category: str,
        symbol: str,
        *,
        stop_loss: Decimal | None,
        take_profit: Decimal | None,
        action: Mapping[str, Any],
    ) -> ActionAnswer:
        """Set (0: remove) the position's stop-loss and take-profit, once. `action` is what the journal keeps."""

        async def call() -> object:
            changed = await self._writer.set_trading_stop(
                category, symbol, stop_loss=stop_loss, take_profit=take_profit
            )
            return None if changed else ALREADY_SO

        return await self.complete(self._write("set_trading_stop", action, call, check="get_positions"))

    async def amend_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None,
        order_link_id: str | None,
        qty: Decimal | None,
        price: Decimal | None,
        action: Mapping[str, Any],
        condition: SendCondition | None = None,
    ) -> ActionAnswer | NotSent:
        """Amend one open order's quantity and/or price, once; NotSent when `condition` no longer held."""

        async def call() -> object:
            return await self._writer.amend_order(
                category, symbol, order_id=order_id, order_link_id=order_link_id, qty=qty, price=price
            )

        return await self.complete(
            self._conditional_write("amend_order", action, call, check="get_open_orders", condition=condition)
        )

    async def _write(
        self,
        tool: str,
        action: Mapping[str, Any],
        call: Callable[[], Awaitable[object]],
        *,
        check: str,
        condition: SendCondition | None = None,
    ) -> ActionAnswer:
        written = await self._conditional_write(tool, action, call, check=check, condition=condition)
        assert not isinstance(written, NotSent), "only a write with a condition is held back"
        return written

    async def _conditional_write(
        self,
        tool: str,
        action: Mapping[str, Any],
        call: Callable[[], Awaitable[object]],
        *,
        check: str,
        condition: SendCondition | None,
    ) -> ActionAnswer | NotSent:
        journal = self._journal
        problem = await self.key_problem()
        if problem is not None:
            refusal = Refusal.of(key_violation(problem), "nothing was sent")
            return await journal_action_refusal(journal, tool, action, refusal, now=self._clock.now())
        attempt = await self._attempt(
            entry_kinds.ACTION, {"tool": tool, "phase": "sent", **action}, None, condition
        )
        if isinstance(attempt, NotSent):
            return attempt
        try:
            result = await call()
        except ExchangeError as error:
            answer = _failed_action(sort_failure(error, tool), action, check)
        else:
            answer = _done(tool, action, result)
        try:
            outcome = await journal.append(
                entry_kinds.ACTION,
                {"tool": tool, "phase": "outcome", **answer.model_dump(mode="json", exclude_none=True)},
                now=self._clock.now(),
            )
        except StoreError as error:  # sent all the same: say what became of it
            answer = answer.model_copy(update={"journal_seq": [attempt.seq]})
            return store_faults.unrecorded(answer, error, f"the outcome of this {tool}", sent=True)
        return answer.model_copy(update={"journal_seq": [attempt.seq, outcome.seq]})


def _done(tool: str, action: Mapping[str, Any], result: object) -> ActionAnswer:
    if result is ALREADY_SO:  # the exchange changed nothing because nothing needed changing
        data = {**action, "result": "unchanged"}
        return ActionAnswer(
            status="unchanged", detail=f"{tool}: already as asked; nothing changed", data=data
        )
    done = {**action, "result": result if isinstance(result, str | None) else str(result)}
    return ActionAnswer(status="done", detail=f"{tool} done", data=done)


def _rejected_order(failure: Failure, sent: dict[str, Any]) -> OrderAnswer:
    return OrderAnswer(
        status="rejected",
        sent=sent,
        ret_code=failure.ret_code,
        reject_family=failure.family,
        exchange=failure.exchange_text,
        detail=failure.detail,
        next_safe_action=NextActionOut(
            tool=None,
            args=None,
            text="the exchange refused this order and nothing was executed; plan again if it still makes sense",
            retry_after=failure.retry_text,
        ),
    )


def _failed_action(failure: Failure, action: Mapping[str, Any], check: str) -> ActionAnswer:
    if failure.status == "outcome_unknown":
        next_action = NextActionOut(
            tool=check,
            args={"symbol": action["symbol"], "category": action["category"]},
            text="do not resend; check the current state first",
        )
    else:
        next_action = NextActionOut(
            tool=None,
            args=None,
            text="nothing was done; try again later if it still makes sense",
            retry_after=failure.retry_text,
        )
    return ActionAnswer(
        status=failure.status,
        detail=failure.detail,
        ret_code=failure.ret_code,
        reject_family=failure.family if failure.status == "rejected" else None,
        exchange=failure.exchange_text,
        next_safe_action=next_action,
    )


STATUS_OF: dict[str, Literal["filled", "partially_filled", "open", "rejected"]] = {
    "Filled": "filled",
    "PartiallyFilled": "partially_filled",
    "New": "open",
    "Untriggered": "open",
    "Created": "open",
    "Rejected": "rejected",
}


def answer_status(
    order: ExchangeOrder,
) -> Literal["filled", "partially_filled", "open", "rejected", "cancelled"]:
    """What an order the exchange reports means for the agent (Bybit's orderStatus, in Pilot's words)."""
    # Cancelled, PartiallyFilledCanceled, Deactivated: an IOC remainder, or cancelled.
    remainder: Literal["partially_filled", "cancelled"] = (
        "partially_filled" if order.cum_exec_qty > 0 else "cancelled"
    )
    return STATUS_OF.get(order.status) or remainder


def _from_order(order: ExchangeOrder, sent: dict[str, Any]) -> OrderAnswer:
    filled = order.cum_exec_qty
    status = answer_status(order)
    text = (
        order.reject_reason if order.reject_reason and order.reject_reason not in ("EC_NoError", "") else ""
    )
    return OrderAnswer(
        status=status,
        order_id=order.order_id,
        sent=sent,
        fill=Fill(
            filled_qty=plain(filled),
            avg_price=plain(order.avg_price) if order.avg_price and filled > 0 else None,
            fee=plain(order.cum_exec_fee),
            fee_coin=order.fee_coin or None,
            fees={coin: plain(fee) for coin, fee in order.fees} if len(order.fees) > 1 else None,
        ),
        exchange=ExchangeText(untrusted_text=text) if text else None,
        detail=_fill_words(status, filled, order.qty),
    )


def _fill_words(status: str, filled: Decimal, qty: Decimal) -> str:
    if status == "filled":
        return f"filled {plain(filled)} of {plain(qty)}"
    if status == "partially_filled":
        return f"filled {plain(filled)} of {plain(qty)}; the rest was not filled within the price limit"
    if status == "cancelled":
        return "nothing filled within the price limit; the order was cancelled (Limit IOC)"
    if status == "open":
        return "resting on the book"
    return "the exchange rejected the order after accepting it"
