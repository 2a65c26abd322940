"""What the exchange or the approval path would refuse: a spot sell of coin not held, an order the account
cannot pay for, and one that needs a human the caller cannot ask."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.approval import needs_human
from pilot.core.channels import REACH_A_HUMAN
from pilot.core.codes import Code
from pilot.core.facts import BUY, SELL
from pilot.core.rules.situation import ZERO, Situation, closes, is_spot, size_breach
from pilot.core.valuation import TAKER_FEE
from pilot.core.violations import Breach, NextAction, plain, plain_usd, usd


def check_held_qty(s: Situation) -> Breach | None:
    """A spot sell of coin held and not already offered in open sells."""
    if not is_spot(s) or s.order.side is not SELL:
        return None
    free = max(s.position_size - s.pending, ZERO)
    if s.order.qty <= free:
        return None
    return size_breach(
        Code.HELD_QTY,
        plain(free),
        plain(s.order.qty),
        f"a spot sell of {plain(s.order.qty)} {s.base} is more than the {plain(free)} {s.base} held "
        "and not already offered",
    )


def check_funds(s: Situation) -> Breach | None:
    """The available balance pays for it (margin and fee; a spot buy's quote coin).

    Linear: the part of the order that opens a position needs its initial margin at the position's leverage,
    and the whole order the taker fee, out of the available balance (Bybit's order cost; it refuses the
    order otherwise, retCode 110007). Only a reduce-only order is exempt, as at Bybit: a plain order that
    shrinks the position still pays its fee, so with no balance left its next action is the reduce-only one.
    """
    funds = s.facts.funds
    if funds is None or s.order.reduce_only or (s.reducing and is_spot(s)):
        return None
    if is_spot(s):
        if s.order.side is not BUY:
            return None
        needed, available = s.order.qty * s.sent_price, funds.free_quote
    else:
        whole = s.order.qty * s.sent_price
        if whole + whole * TAKER_FEE <= funds.available_usd:
            return None  # the common case: the whole order's cost at leverage 1 bounds linear_cost's
        needed, available = linear_cost(s), funds.available_usd
    if needed <= available:
        return None
    return size_breach(
        Code.AVAILABLE_BALANCE,
        plain_usd(available) if available.is_finite() else plain(available),
        plain_usd(needed),
        f"this order needs {usd(needed)} of the account's available balance, which is {usd(available)}",
    )


def linear_cost(s: Situation) -> Decimal:
    """What a linear order takes from the available balance: the initial margin of the part that opens a
    position, at the position's leverage, and the taker fee on the whole order (tests/core/test_fast_paths.py
    holds check_funds' shortcut to it)."""
    closable = abs(s.position_size) if closes(s.position_size, s.order.side) else ZERO
    opening = max(s.order.qty - closable, ZERO)
    leverage = max(s.facts.position.leverage if s.facts.position else Decimal(1), Decimal(1))
    return opening * s.sent_price / leverage + s.order.qty * s.sent_price * TAKER_FEE


def check_human_reach(s: Situation) -> Breach | None:
    """An order that needs a human is not planned for a caller who cannot ask one.

    It would be a dead end.
    """
    if s.facts.can_reach_human or not needs_human(
        s.policy.confirm, "place_order", s.order_notional, grows=not s.reducing
    ):
        return None
    above = s.policy.confirm.above_notional_usd
    how = REACH_A_HUMAN
    if "place_order" in s.policy.confirm.actions or above is None:
        return Breach(
            rule=Code.CONFIRMATION_CHANNEL_UNAVAILABLE,
            limit="a way to ask a human",
            attempted="none",
            detail="every order needs a human's approval, and this client cannot ask one",
            next=NextAction.stop("stop: no order can be approved from this client", human=how),
        )
    return size_breach(
        Code.CONFIRM_ABOVE,
        plain(above),
        plain(s.order_notional),
        f"an order above {usd(above)} needs a human's approval, and this client cannot ask one "
        f"(this one is {usd(s.order_notional)}); a human can: {how}",
    )
