"""Whether an action needs a human's approval: one pure rule, read from policy.json's `confirm`."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.policy import ApprovalTool, ConfirmRule


def needs_human(
    confirm: ConfirmRule, tool: ApprovalTool, notional_usd: Decimal | None = None, *, grows: bool = True
) -> bool:
    """True when `confirm` wants a human for `tool`, given the order's worst-fill notional if it has one.

    `confirm.actions` names tools that always ask. `confirm.aboveNotionalUsd` guards placing orders that can
    grow the worst-case exposure: an order that only shrinks it (`grows` False: a reduce-only close, a sell
    of coin held), like close_position, never waits on a threshold meant for growing it.
    """
    if tool in confirm.actions:
        return True
    above = confirm.above_notional_usd
    if tool != "place_order" or not grows or above is None or notional_usd is None:
        return False
    return notional_usd > above


def may_need_human(confirm: ConfirmRule, tool: ApprovalTool) -> bool:
    """Whether any action of `tool` could need a human under `confirm` (False: none ever does, whatever its
    notional), so a caller can skip reading what it would judge."""
    return needs_human(confirm, tool, Decimal("Infinity"))
