"""policy.json parsing: a frozen model, a content version, and errors that name the path and the fix."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from pilot.core.policy import Policy, PolicyInvalid, parse_policy


def issues_of(text: str) -> dict[str, str]:
    with pytest.raises(PolicyInvalid) as caught:
        parse_policy(text)
    return {issue.path: f"{issue.problem}; {issue.fix}" for issue in caught.value.issues}


def test_the_shipped_example_policy_is_valid():
    with open("policy.json") as handle:
        loaded = parse_policy(handle.read())
    assert loaded.policy.allowed_markets
    assert loaded.version.startswith("sha256:")


def test_the_version_ignores_formatting_but_not_content():
    a = parse_policy('{"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": 25}')
    b = parse_policy('{\n  "maxNotionalUsd": 25.0,\n  "allowedMarkets": ["BTCUSDT"]\n}')
    c = parse_policy('{"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": 26}')
    assert a.version == b.version != c.version


def test_a_typo_is_named_with_the_key_it_probably_meant():
    found = issues_of('{"maxNotionalUSD": 25}')
    assert "maxNotionalUSD" in found and "maxNotionalUsd" in found["maxNotionalUSD"]


def test_wrong_types_and_absurd_values_name_the_json_path():
    found = issues_of(
        json.dumps(
            {
                "maxSlippagePct": 5,
                "planTtlSeconds": 1,
                "dailyOrderCap": True,
                "maxNotionalUsd": -1,
                "tradingState": "paused",
                "markets": {"BTCUSDT": {"maxLeverage": 0}},
                "confirm": {"actions": ["rm"]},
            }
        )
    )
    assert set(found) == {
        "maxSlippagePct",
        "planTtlSeconds",
        "dailyOrderCap",
        "maxNotionalUsd",
        "tradingState",
        "markets.BTCUSDT.maxLeverage",
        "confirm.actions",
    }
    assert all("example" in text or "choose" in text for text in found.values())


def test_invalid_json_names_line_and_column():
    found = issues_of('{"allowedMarkets": ["BTCUSDT"],}')
    assert any(path.startswith("line 1 column") for path in found)


def test_market_overrides_apply_to_their_market_only():
    policy = parse_policy('{"maxNotionalUsd": 25, "markets": {"BTCUSDT": {"maxNotionalUsd": 50}}}').policy
    assert policy.limits_for("BTCUSDT").max_notional_usd == Decimal(50)
    assert policy.limits_for("ETHUSDT").max_notional_usd == Decimal(25)


def test_the_fail_closed_policy_allows_nothing_to_grow():
    policy = Policy.fail_closed()
    assert policy.allowed_markets == () and policy.trading_state.value == "reducing"


def test_the_policy_is_frozen():
    policy = parse_policy("{}").policy
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error type is an implementation detail
        policy.max_leverage = Decimal(50)  # type: ignore[misc]


def test_pilot_init_writes_the_same_policy_as_the_repository_example():
    from pilot.app.human import DEFAULT_POLICY

    with open("policy.json") as handle:
        assert parse_policy(DEFAULT_POLICY).version == parse_policy(handle.read()).version
