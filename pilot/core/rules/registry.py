"""Every check, registered once and in the order evaluate runs them: whether it can report a size code, and
which policy fields it judges only when set. CHECKS, SIZE_CHECKS, `checks_for` and the numbered list in
pilot.core.rules' docstring are derived from REGISTRY (tests/core/test_rules_registry.py holds the list)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pilot.core.policy import Policy
from pilot.core.rules.acceptance import check_funds, check_held_qty, check_human_reach
from pilot.core.rules.admission import (
    check_allowed_market,
    check_facts,
    check_listed,
    check_reduce_only,
    check_reduce_only_qty,
    check_trading_state,
)
from pilot.core.rules.caps import (
    check_daily_order_cap,
    check_leverage,
    check_liquidation,
    check_order_notional,
    check_position_notional,
)
from pilot.core.rules.grid import (
    check_max_qty,
    check_min_notional,
    check_min_qty,
    check_price_band,
    check_price_tick,
    check_qty_step,
)
from pilot.core.rules.loss import (
    check_daily_loss,
    check_loss_per_trade,
    check_open_positions,
    check_trading_hours,
)
from pilot.core.rules.pretrade import (
    check_authority,
    check_cooldown,
    check_drawdown,
    check_message_rate,
    check_price_collar,
    check_resting_orders,
    check_turnover_24h,
    check_turnover_day,
)
from pilot.core.rules.protective import check_protection
from pilot.core.rules.situation import Situation
from pilot.core.violations import Breach

Check = Callable[[Situation], Breach | None]


@dataclass(frozen=True, slots=True)
class Registered:
    """One check as evaluate runs it.

    `sizes`: it can report a size code (pilot.core.codes: size_cap and size_grid). The size searches of
    pilot.core.sizing look only at those codes, so they run only these: a blocker or a protection breach does
    not tell one size from another there (tests/core/test_properties.py holds it: what these report is what
    all the checks report of those codes).
    `when`: the Policy fields (a market's override of one too) it judges; while policy.json leaves every one
    of them unset the check passes at once, and `checks_for` leaves it out, so an order judged without them
    pays nothing for it (tests/core/test_controls.py holds that it would have passed). Empty: it always runs.
    """

    check: Check
    sizes: bool = False
    when: tuple[str, ...] = ()


# Run before the situation exists, in this order (they judge whether the order can be priced at all).
PRELUDE: tuple[Callable[..., Breach | None], ...] = (check_listed, check_facts)

REGISTRY: tuple[Registered, ...] = (
    Registered(check_trading_state),
    Registered(check_allowed_market),
    Registered(check_authority, when=("valid_until", "max_session_minutes")),
    Registered(check_reduce_only),
    Registered(check_message_rate, when=("max_order_messages_per_second", "max_order_messages_per_minute")),
    Registered(check_qty_step, sizes=True),
    Registered(check_price_tick, sizes=True),
    Registered(check_price_band, sizes=True),
    Registered(check_price_collar, sizes=True, when=("price_collar_pct", "price_collar_ticks")),
    Registered(check_min_qty, sizes=True),
    Registered(check_max_qty, sizes=True),
    Registered(check_reduce_only_qty, sizes=True),
    Registered(check_min_notional, sizes=True),
    Registered(check_held_qty, sizes=True),
    Registered(check_resting_orders, when=("max_resting_orders", "max_resting_orders_per_market")),
    Registered(check_daily_order_cap),
    Registered(check_order_notional, sizes=True),
    Registered(check_position_notional, sizes=True),
    Registered(check_turnover_day, sizes=True, when=("max_turnover_usd_per_day",)),
    Registered(check_turnover_24h, sizes=True, when=("max_turnover_usd_24h",)),
    Registered(check_leverage, sizes=True),
    Registered(check_liquidation, sizes=True),
    Registered(check_funds, sizes=True),
    Registered(check_human_reach, sizes=True),
    Registered(check_trading_hours, when=("trading_hours",)),
    Registered(check_daily_loss, when=("daily_loss_limit_usd", "daily_loss_limit_pct")),
    Registered(check_drawdown, when=("max_drawdown_usd", "max_drawdown_pct")),
    Registered(check_cooldown, when=("cooldown",)),
    Registered(check_open_positions, when=("max_open_positions",)),
    Registered(check_loss_per_trade, sizes=True, when=("max_loss_per_trade_usd", "max_loss_per_trade_pct")),
    Registered(check_protection),
)

CHECKS: tuple[Check, ...] = tuple(entry.check for entry in REGISTRY)
SIZE_CHECKS: tuple[Check, ...] = tuple(entry.check for entry in REGISTRY if entry.sizes)
_WHEN = {entry.check: entry.when for entry in REGISTRY if entry.when}
_CHOSEN: dict[int, tuple[Policy, tuple[Check, ...], tuple[Check, ...]]] = {}  # by id, the policy kept alive


def checks_for(policy: Policy) -> tuple[tuple[Check, ...], tuple[Check, ...]]:
    """CHECKS and SIZE_CHECKS without the checks whose fields `policy` leaves unset, worked out once per
    policy."""
    chosen = _CHOSEN.get(id(policy))
    if chosen is not None and chosen[0] is policy:
        return chosen[1], chosen[2]
    if len(_CHOSEN) >= 64:  # policy.json is read on every call: only the latest few are asked again
        _CHOSEN.clear()
    every = tuple(check for check in CHECKS if check not in _WHEN or is_set(policy, _WHEN[check]))
    sizes = tuple(check for check in SIZE_CHECKS if check in every)
    _CHOSEN[id(policy)] = (policy, every, sizes)
    return every, sizes


def is_set(policy: Policy, fields: tuple[str, ...]) -> bool:
    """Whether policy.json sets any of `fields`, at the top level or in a market's overrides (unset: null,
    or an empty list)."""
    places: list[Any] = [policy, *policy.markets.values()]
    return any(getattr(place, field, None) not in (None, ()) for place in places for field in fields)


def documented_order() -> str:
    """The numbered list of the checks in the order they run, each with its docstring's summary line."""
    checks = [*PRELUDE, *CHECKS]
    lines = []
    for number, check in enumerate(checks, start=1):
        summary = (check.__doc__ or "").strip().splitlines()[0]
        lines.append(f"{number:>2}. {check.__name__:<25} {summary}")
    return "\n".join(lines)
