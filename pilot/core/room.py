"""The room left: how much more one side of a market may trade now, as plan_order would judge it.

`room_left` is the size caps' room, found by a search over whole lot steps. `room_now` judges that order with
every check plan_order runs, so what stops any order now is in it too: the trading state (the kill switch,
the daily loss and drawdown latches), the throttles and caps on orders. A rule that refuses growing the
position leaves the room that only shrinks it; one that refuses every order leaves none. Confirmation is the
core's own rule too: the room that needs no human is the room of a caller who cannot ask one
(check_human_reach). The loss limit per trade is left aside (ROOM_CODES): the stop an order carries decides
it, not its size alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from pilot.core.agent_budgets import own_judgement
from pilot.core.codes import PROTECTION_CODES, RESIZE_CODES, SIZE_CAP_CODES, Code
from pilot.core.facts import Facts, OrderType
from pilot.core.policy import Policy
from pilot.core.rules import Situation, run_checks, size_breaches
from pilot.core.sizing import LOSS_CODES, largest
from pilot.core.valuation import floor_to_step

# The caps the room under them is reported for: the loss limit is left out, since the stop an order carries,
# not its size alone, decides it (an order without one has no room under it on a perpetual).
ROOM_CODES = SIZE_CAP_CODES - LOSS_CODES

# What refuses an order for no reason of its size or its stop: the trading state, the throttles, the loss
# rules, a human out of reach (every code but the size groups', the stops' and a missing fact's).
BLOCKERS = frozenset(Code) - RESIZE_CODES - PROTECTION_CODES - {Code.FACTS}


@dataclass(frozen=True, slots=True)
class Room:
    """How much more one side of a market may trade now, priced as evaluate() prices it.

    `qty` is the largest market order (not reduce-only) on that side that passes, counting the position,
    every pending order on that side as filled, and the worst fill; `notional_usd` is that order at its
    worst fill; `limited_by` are the rules one more lot step would break.
    """

    qty: Decimal
    notional_usd: Decimal
    limited_by: tuple[Code, ...]


@dataclass(frozen=True, slots=True)
class RoomNow:
    """One side's room as plan_order judges an order now: `room` passes every check (a stop aside, which
    the order can carry), and `without_approval` is the part of it no human must approve, when that is less
    (None: no part of the room waits for a human)."""

    room: Room
    without_approval: Room | None


def room_left(policy: Policy, facts: Facts) -> Room | None:
    """The room under the size caps on facts.order's side, or None when a fact a growing order needs is
    missing.

    Orders that only shrink the position are never capped, so the room is at least what closes it; past
    that, every cap grows with the size and a binary search over whole lot steps finds the largest.
    """
    base = _base(policy, facts)
    return _sized(policy, *base) if base is not None else None


def _sized(policy: Policy, facts: Facts, situation: Situation) -> Room:
    step = situation.rules.qty_step

    def breaks(steps: int) -> tuple[Code, ...]:
        probe = replace(facts.order, qty=steps * step)
        return tuple(b.rule for b in size_breaches(policy, facts, probe) if b.rule in ROOM_CODES)

    most = int(floor_to_step(situation.rules.max_qty, step) / step)
    best = min(_shrinking_steps(situation), most)
    if best < most and not breaks(best + 1):
        best = largest(best + 1, most, lambda k: not breaks(k)) or best
    qty = best * step
    return Room(qty=qty, notional_usd=qty * situation.price, limited_by=breaks(best + 1))


def room_now(policy: Policy, facts: Facts) -> RoomNow | None:
    """The room on facts.order's side as plan_order would judge it now, and the part of it that needs no
    human's approval; None when a fact a growing order needs is missing. For an agent with a budget, the
    tighter of the account's room and the agent's own (pilot.core.agent_budgets.own_judgement), as evaluate
    judges both."""
    judged = _room_now(policy, facts)
    own = own_judgement(policy, facts)
    if judged is None or own is None:
        return judged
    mine = _room_now(*own)
    if mine is None:
        return None
    room = _tighter(judged.room, mine.room)
    alone = _tighter(judged.without_approval or judged.room, mine.without_approval or mine.room)
    return RoomNow(room, alone if alone.qty < room.qty else None)


def _room_now(policy: Policy, facts: Facts) -> RoomNow | None:
    room = _judged(policy, facts)
    if room is None:
        return None
    alone = _judged(policy, replace(facts, can_reach_human=False))  # confirm.aboveNotionalUsd as a cap
    free = alone if alone is not None and alone.qty < room.qty else None
    return RoomNow(room, free)


def _tighter(account: Room, agent: Room) -> Room:
    """The smaller room; on a tie, what one more step breaks under either."""
    if account.qty != agent.qty:
        return account if account.qty < agent.qty else agent
    return replace(account, limited_by=tuple(dict.fromkeys((*account.limited_by, *agent.limited_by))))


def _judged(policy: Policy, facts: Facts) -> Room | None:
    """room_left judged by every check: cut to what only shrinks the position when a rule refuses growing
    it, and to nothing when a rule refuses any order now; `limited_by` is what one lot step more breaks. A
    stop the policy requires is left aside (the order can carry one)."""
    base = _base(policy, facts)
    if base is None:
        return None
    facts, situation = base
    step, qty = situation.rules.qty_step, _sized(policy, facts, situation).qty
    if _breaks(policy, facts, qty or step, BLOCKERS):
        shrinking = min(_shrinking_steps(situation) * step, qty)
        blocked = shrinking <= 0 or _breaks(policy, facts, shrinking, BLOCKERS)
        qty = Decimal(0) if blocked else shrinking
    limited_by = _breaks(policy, facts, qty + step, BLOCKERS | ROOM_CODES)
    return Room(qty, qty * situation.price, limited_by)


def _breaks(policy: Policy, facts: Facts, qty: Decimal, codes: frozenset[Code]) -> tuple[Code, ...]:
    """The rules among `codes` a market order of `qty` breaks, in the order the checks run."""
    _situation, breaches = run_checks(policy, replace(facts, order=replace(facts.order, qty=qty)))
    return tuple(dict.fromkeys(b.rule for b in breaches if b.rule in codes))


def _base(policy: Policy, facts: Facts) -> tuple[Facts, Situation] | None:
    """The facts for a market order of nothing on facts.order's side, and its situation (None: missing)."""
    order = replace(facts.order, order_type=OrderType.MARKET, limit_price=None, reduce_only=False)
    facts = replace(facts, order=replace(order, qty=Decimal(0)))
    situation, breaches = run_checks(policy, facts)
    if situation is None or any(b.rule is Code.FACTS for b in breaches):
        return None
    return facts, situation


def _shrinking_steps(situation: Situation) -> int:
    """The lot steps of an order on this side that only shrink the position (its pending orders counted)."""
    size, step = situation.position_size, situation.rules.qty_step
    if size == 0 or (size > 0) == (situation.order.side.sign > 0):
        return 0
    return max(int(floor_to_step(abs(size) - situation.pending, step) / step), 0)
