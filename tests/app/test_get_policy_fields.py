"""get_policy answers with the policy's fields where their declarations say (pilot.core.policy.fields.SHOWN),
each followed by where this home stands against it; nothing else of the policy is shown."""

from __future__ import annotations

from typing import Any

import pytest

from pilot.app.facts.reads import get_policy
from pilot.core.policy import Shown
from pilot.core.policy.fields import SHOWN

pytestmark = pytest.mark.anyio

# What the answer adds of its own: the answer's state, and where this home stands against the limits.
OWN = {
    "policy_version",
    "valid",
    "issues",
    "trading_state",
    "held_by",
    "kill_switch",
    "orders_sent_today",
    "orders_left_today",
    "confirm",
    "loss_rules",
    "controls",
    "equity_usd",
    "markets",
    "daily_loss_limit_reached",
    "day_loss",
    "messages_last_second",
    "messages_last_minute",
    "drawdown_peak_usd",
    "drawdown_reached",
    "turnover_today_usd",
    "turnover_24h_usd",
    "position_size",
    "position_notional_usd_at_mark",
    "pending_qty",
    "room",
    "missing",
    "blocked_by",
}


def groups(data: dict[str, Any]) -> dict[Shown, dict[str, Any]]:
    return {
        Shown.TOP: data,
        Shown.STATE: data,
        Shown.CONFIRM: data["confirm"],
        Shown.LOSS_RULES: data["loss_rules"],
        Shown.CONTROLS: data["controls"],
        Shown.MARKET: data["markets"]["BTCUSDT"],
    }


async def test_each_group_shows_its_declared_fields_in_order_and_no_other_field(runtime) -> None:
    answer = await get_policy(runtime)
    assert isinstance(answer.data, dict)
    found = groups(answer.data)
    declared = {group: [entry.key or name for name, entry in SHOWN[group]] for group in Shown}
    for group, where in found.items():
        assert [key for key in where if key in declared[group]] == declared[group], group
    everywhere = {key for names in declared.values() for key in names}
    for where in found.values():
        assert set(where) <= everywhere | OWN
