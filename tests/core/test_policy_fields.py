"""Each policy.json field is declared once (its model field with its About): every list of the fields is
derived from the models, and held to them here."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path

from pilot.core.policy import (
    EXAMPLES,
    PER_MARKET,
    ConfirmRule,
    Cooldown,
    DeadManSwitch,
    EffectiveLimits,
    MarketOverrides,
    NtfyChannel,
    Policy,
    Shown,
    TelegramChannel,
    TradingWindow,
    parse_policy,
)
from pilot.core.policy.about import About, about
from pilot.core.policy.fields import (
    REFERENCE_HEADER,
    REFERENCE_PAGE,
    SHOWN,
    init_policy,
    init_policy_text,
    reference_table,
)

ROOT = Path(__file__).resolve().parents[2]
# Every part of policy.json, written out here apart from the code that finds them (fields.parts).
PARTS = (Policy, ConfirmRule, TelegramChannel, NtfyChannel, TradingWindow, Cooldown, DeadManSwitch)
# The fields get_policy does not show, and why: shown through their parts or per market, or the human's.
NOT_SHOWN = {
    "confirm",  # its fields are the answer's `confirm`
    "markets",  # each market's effective limits are the answer's `markets`
    "console_url",  # where the human's browser reaches the console
    "telegram",  # the approvers' Telegram ids
    "ntfy",  # the topic is the channel's password
}


def keys(model: type) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def test_every_field_of_every_part_declares_one_about_and_has_an_example():
    for part in PARTS:
        for field in part.model_fields.values():
            assert isinstance(about(field), About)
    assert set(EXAMPLES) == {key for part in PARTS for key in keys(part)}
    assert all(EXAMPLES.values())


def test_pilot_init_writes_every_field_in_the_models_order_and_a_valid_policy():
    written = init_policy()
    assert list(written) == keys(Policy)
    assert list(written["confirm"]) == keys(ConfirmRule)
    assert json.loads(init_policy_text(), parse_float=Decimal) == written
    assert parse_policy(init_policy_text()).policy.allowed_markets


def test_the_reference_table_has_a_row_for_every_field():
    rows = [line.split("`")[1] for line in reference_table().splitlines()[2:]]
    expected: list[str] = []
    for key in keys(Policy):
        if key == "confirm":
            expected += [f"confirm.{inner}" for inner in keys(ConfirmRule)]
        else:
            expected.append("markets.SYMBOL.*" if key == "markets" else key)
    assert rows == expected


def test_the_reference_page_holds_the_table_rendered_from_the_declarations():
    # On a failure: scripts/regenerate-policy-table writes the table from pilot/core/policy/.
    text = (ROOT / REFERENCE_PAGE).read_text(encoding="utf-8")
    lines = text[text.index(REFERENCE_HEADER) :].split("\n")
    table = "\n".join(lines[: next(i for i, line in enumerate(lines) if not line.startswith("|"))])
    assert table == reference_table()


def test_get_policy_shows_every_field_but_the_ones_kept_out_on_purpose():
    shown = [name for group in Shown for name, _ in SHOWN[group]]
    every = [*Policy.model_fields, *ConfirmRule.model_fields]
    assert len(shown) == len(set(shown))
    assert set(shown) | NOT_SHOWN == set(every) and not set(shown) & NOT_SHOWN
    assert {name for name, _ in SHOWN[Shown.CONFIRM]} <= set(ConfirmRule.model_fields)
    assert [name for name, _ in SHOWN[Shown.MARKET]] == [
        name for name in PER_MARKET if name in dict(SHOWN[Shown.MARKET])
    ]


def test_a_field_a_market_overrides_is_declared_alike_in_the_overrides_and_the_effective_limits():
    assert list(MarketOverrides.model_fields) == list(PER_MARKET)
    assert [field.name for field in dataclasses.fields(EffectiveLimits)] == list(PER_MARKET)
    for name in PER_MARKET:
        top, override = Policy.model_fields[name], MarketOverrides.model_fields[name]
        assert override.alias == top.alias and override.default is None
        assert [item for item in top.metadata if not isinstance(item, About)] == override.metadata
        assert override.annotation in (top.annotation, top.annotation | None)
