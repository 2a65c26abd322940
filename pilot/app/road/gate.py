"""The exchange gate: the one road to the exchange for every write (create, cancel, leverage; a close is a create).

Only the gate holds the ExchangeWriter. For each write it checks the exchange key, journals the attempt
before the request leaves, sends it once, and sorts what came back in one place (`sort_failure`, in
pilot.app.road.outcomes with the answers built from it):

    rejected         a definite no from the exchange (a retCode), or the exchange could not take it
                     (unreachable, rate limited: family "unavailable", with a retry time when known);
                     nothing was executed
    outcome_unknown  sent, result not known: an order is looked up by its client order id at once, and
                     until found it counts as pending exposure; never resent

A write the exchange answers "not modified" (a trading stop's 34040) is no failure: its status is
"unchanged", the asked state already holds.

Refusals decided before this point (policy, approvals, lifecycle) never reach the gate: nothing is sent
for them. The gate's own refusal is a key that may no longer trade, for every write that could add risk
(an order that grows, a higher leverage, a stop, an amend); closes, cancels and a lower leverage still go.

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
from typing import TYPE_CHECKING, Any, TypeVar

from pilot.app.answers import entry_kinds, store_faults
from pilot.app.answers.refusals import (
    agent_violation,
    journal_action_refusal,
    journal_order_refusal,
    key_violation,
)
from pilot.app.answers.responses import (
    ActionAnswer,
    OrderAnswer,
    Refusal,
    next_out,
)
from pilot.app.road.clock import Clock
from pilot.app.road.outcomes import (
    ALREADY_SO,
    Failure,
    done,
    failed_action,
    from_order,
    rejected_order,
    sort_failure,
)
from pilot.app.road.ports import ExchangeReader, ExchangeWriter
from pilot.core.agent_budgets import Role
from pilot.core.facts import Effect
from pilot.core.violations import NextAction, Violation
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import OrderRequest
from pilot.store import ACTING, Journal, JournalEntry, Leases, Preempted, StoreError, Unless, holder_id

if TYPE_CHECKING:
    from pilot.keys.errors import KeysError

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

# The exchange key's standing before a write (read again when due); raises pilot.keys.errors.KeysError when
# the key may now do more than the allowlist permits or cannot be checked. None on paper.
KeyCheck = Callable[[datetime], Awaitable[object]]


def order_link_id(plan_id: str) -> str:
    """The client order id for a plan: derived, so the order can always be found again (36 chars max)."""
    return ORDER_LINK_PREFIX + hashlib.sha256(plan_id.encode()).hexdigest()[:30]


def look_up(symbol: str, category: str, text: str) -> NextAction:
    """The next action after a send whose result is not fully known: read open orders, never resend."""
    return NextAction.call("get_open_orders", {"symbol": symbol, "category": category}, text)


def reduces(request: OrderRequest) -> bool:
    """Whether an order can only shrink what is held: reduce-only, or a spot sell (it sells coin held)."""
    return request.reduce_only or (request.category == "spot" and request.side == "Sell")


def role_violation(tool: str, *, grows: bool) -> Violation | None:
    """The gate's own check of the acting agent's role, whatever a use case judged: a read-only agent's
    credential sends nothing; a reduce-only one's nothing that can grow (pilot.core.agent_budgets.Role)."""
    holder = ACTING.get()
    if holder is None or holder.role is None:
        return None
    try:
        role = Role(holder.role)
    except ValueError:  # a role this Pilot does not know: the narrowest
        role = Role.READ
    if role.permits(Effect.GROW if grows else Effect.REDUCE):
        return None
    return agent_violation(holder.name, role.value, tool)


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
    def key_check(self) -> KeyCheck | None:
        """The key check writes run (the server's watch on its stored key, pilot.app.service.key_watch)."""
        return self._key_check

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

    def _key_violation(self, problem: KeysError | None) -> Violation:
        """The refusal for a key problem: one a timer of Pilot's clears (`passes_within`) is waited out."""
        passes = problem.passes_within if problem is not None else None
        retry_after = self._clock.now() + passes if passes is not None else None
        return key_violation(str(problem), retry_after)

    async def key_problem(self) -> KeysError | None:
        """None when the exchange key may trade; else why not, with the fix (its text never the key)."""
        if self._key_check is None:
            return None
        from pilot.keys.errors import KeysError

        try:
            await self._key_check(self._clock.now())
        except KeysError as error:
            return error
        return None

    # ---- orders ------------------------------------------------------------------------------------

    async def send_order(
        self, request: OrderRequest, *, plan_id: str, origin: str, condition: SendCondition | None = None
    ) -> OrderAnswer | NotSent:
        """Send `request` exactly once and say what became of it; NotSent when `condition` no longer held
        as the send was about to be journaled (nothing was sent)."""
        # A key that may do more than trade stops growing orders; one that shrinks what is held still goes.
        grows = not reduces(request)
        problem = await self.key_problem() if grows else None
        role = role_violation("place_order", grows=grows)
        if problem is not None or role is not None:
            refusal = Refusal.of(role or self._key_violation(problem), "nothing was sent")
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
                answer = rejected_order(failure, sent)
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
            answer = from_order(found, sent)
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
        """The acknowledged order read once by its own id (the create's answer names it; Bybit's says only
        that it was accepted, not whether it filled)."""
        try:
            found = await self._reader.find_order(
                request.category, request.symbol, request.order_link_id, order_id
            )
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
        return from_order(found, sent)

    # ---- cancel and leverage ---------------------------------------------------------------------------

    async def cancel_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None,
        order_link_id: str | None,
        origin: str | None = None,
        waiting_kind: str = "",
    ) -> ActionAnswer:
        """Cancel one order, once. `origin` says who asked when it was not the agent (the dead-man's switch);
        `waiting_kind` the kind of a spot order waiting for its trigger (the venue finds it by its kind)."""
        action = {
            "symbol": symbol,
            "category": category,
            "order_id": order_id,
            "order_link_id": order_link_id,
            **({"origin": origin} if origin is not None else {}),
            **({"waiting_kind": waiting_kind} if waiting_kind else {}),
        }

        async def call() -> object:
            return await self._writer.cancel_order(
                category, symbol, order_id=order_id, order_link_id=order_link_id, waiting_kind=waiting_kind
            )

        return await self.complete(
            self._write("cancel_order", action, call, check="get_open_orders", reduces=True)
        )

    async def set_leverage(
        self, category: str, symbol: str, leverage: Decimal, action: Mapping[str, Any]
    ) -> ActionAnswer:
        """Set one-way leverage, once. `action` is what the journal records of it (with the leverage before)."""

        async def call() -> object:
            await self._writer.set_leverage(category, symbol, leverage)
            return None

        lowers = action.get("from") is not None and Decimal(str(action["from"])) > leverage
        return await self.complete(
            self._write("set_leverage", action, call, check="get_positions", reduces=lowers)
        )

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

        return await self.complete(
            self._write("cancel_all_orders", action, call, check="get_open_orders", reduces=True)
        )

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
        reduces: bool = False,
    ) -> ActionAnswer:
        written = await self._conditional_write(
            tool, action, call, check=check, condition=condition, reduces=reduces
        )
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
        reduces: bool = False,
    ) -> ActionAnswer | NotSent:
        journal = self._journal
        # A write that only takes risk off (a cancel: the dead-man's switch, a latch, a human or the agent
        # stopping; a lower leverage) goes with a key that may no longer trade; any other may add risk.
        problem = None if reduces else await self.key_problem()
        role = role_violation(tool, grows=False)
        if problem is not None or role is not None:
            refusal = Refusal.of(role or self._key_violation(problem), "nothing was sent")
            return await journal_action_refusal(journal, tool, action, refusal, now=self._clock.now())
        attempt = await self._attempt(
            entry_kinds.ACTION, {"tool": tool, "phase": "sent", **action}, None, condition
        )
        if isinstance(attempt, NotSent):
            return attempt
        try:
            result = await call()
        except ExchangeError as error:
            answer = failed_action(sort_failure(error, tool), action, check)
        else:
            answer = done(tool, action, result)
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
