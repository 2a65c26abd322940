"""policy.json parsing: a frozen model, a content version, and errors that name the path and the fix."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot.core.facts import Effect, TradingState
from pilot.core.policy import EXAMPLES, MAX_POLICY_BYTES, Policy, PolicyInvalid, PolicyIssue, parse_policy


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


def _syntax(text: str) -> PolicyIssue:
    with pytest.raises(PolicyInvalid) as caught:
        parse_policy(text)
    [issue] = caught.value.issues
    return issue


@pytest.mark.parametrize(
    ("text", "where", "line", "fixed"),
    [
        # The decoder complains at the "}"; the mistake is the comma on the line before.
        (
            '{\n  "maxLeverage": 3,\n  "dailyOrderCap": 20,\n}\n',
            "line 3 column 22",
            '"dailyOrderCap": 20,',
            "remove",
        ),
        # The decoder complains at the next key; the comma is missing at the end of the line before.
        (
            '{\n  "maxLeverage": 3\n  "dailyOrderCap": 20\n}',
            "line 2 column 19",
            '"maxLeverage": 3',
            "add a comma",
        ),
        # The decoder asks for a key at the second comma; the mistake is the comma itself, not a key.
        (
            '{\n  "dailyOrderCap": 20,,\n  "maxLeverage": 3\n}',
            "line 2 column 23",
            '"dailyOrderCap": 20,,',
            "extra",
        ),
        (
            '{\n  "allowedMarkets": ["BTCUSDT",, "ETHUSDT"]\n}',
            "line 2 column 32",
            '"allowedMarkets": ["BTCUSDT",, "ETHUSDT"]',
            "extra",
        ),
        ('{, "maxLeverage": 3}', "line 1 column 2", '{, "maxLeverage": 3}', "extra"),
        ('{\n  "maxLeverage": 3, // three\n}', "line 2 column 21", '"maxLeverage": 3, // three', "comment"),
        ("{\n  'maxLeverage': 3\n}", "line 2 column 3", "'maxLeverage': 3", "double quotes"),
        ("{\n  maxLeverage: 3\n}", "line 2 column 3", "maxLeverage: 3", "double quotes"),
        (
            '{"confirm": {"cliChannel": True}}',
            "line 1 column 28",
            '{"confirm": {"cliChannel": True}}',
            "lower case",
        ),
        ('{"allowedMarkets": ["BTCUSDT"', "line 1 column 29", '{"allowedMarkets": ["BTCUSDT"', "close every"),
    ],
)
def test_a_json_syntax_error_points_at_the_real_mistake_and_quotes_its_line(text, where, line, fixed):
    issue = _syntax(text)
    assert issue.path == where
    assert issue.problem.endswith(f"reads {line}")
    assert fixed in issue.fix


@pytest.mark.parametrize("value", ['"yes"', '"true"', "1", "0", '"false"', "null"])
def test_a_switch_that_is_not_a_json_boolean_is_an_error_with_the_fix(value):
    found = issues_of('{"confirm": {"cliChannel": ' + value + "}}")
    assert set(found) == {"confirm.cliChannel"} and "false" in found["confirm.cliChannel"]


def test_an_override_for_a_market_outside_allowed_markets_is_an_error_naming_both_fixes():
    found = issues_of('{"allowedMarkets": ["ETHUSDT"], "markets": {"BTCUSDT": {"maxNotionalUsd": 150}}}')
    assert set(found) == {"markets.BTCUSDT"}
    assert (
        "allowedMarkets" in found["markets.BTCUSDT"] and "remove markets.BTCUSDT" in found["markets.BTCUSDT"]
    )


def test_market_overrides_apply_to_their_market_only():
    policy = parse_policy(
        '{"allowedMarkets": ["BTCUSDT", "ETHUSDT"], "maxNotionalUsd": 25,'
        ' "markets": {"BTCUSDT": {"maxNotionalUsd": 50}}}'
    ).policy
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
    from pilot.app.human.desk import DEFAULT_POLICY

    with open("policy.json") as handle:
        assert parse_policy(DEFAULT_POLICY).version == parse_policy(handle.read()).version


# Hostile text: nothing in it may raise anything but PolicyInvalid, recurse without bound or take long.


def test_a_repeated_key_is_an_error_naming_its_path_not_the_last_value_wins():
    found = issues_of('{"maxNotionalUsd": 25, "maxNotionalUsd": 100000, "confirm": {"cliChannel": false}}')
    assert set(found) == {"maxNotionalUsd"}
    nested = issues_of('{"markets": {"BTCUSDT": {"maxLeverage": 2, "maxLeverage": 50}}}')
    assert set(nested) == {"markets.BTCUSDT.maxLeverage"}


def test_the_same_market_under_two_spellings_is_not_a_repeat():
    policy = parse_policy(
        '{"allowedMarkets": ["BTCUSDT", "ETHUSDT"],'
        ' "markets": {"BTCUSDT": {"maxLeverage": 2}, "ETHUSDT": {"maxLeverage": 2}}}'
    ).policy
    assert set(policy.markets) == {"BTCUSDT", "ETHUSDT"}


@pytest.mark.parametrize(
    "number",
    ["9" * 5000, "-" + "9" * 5000, "0." + "1" * 5000, "1e999999999", "1e-999999999", "0e999999999", "1e31"],
)
def test_a_number_no_limit_needs_is_refused_at_its_path(number: str):
    found = issues_of('{"confirm": {"aboveNotionalUsd": ' + number + "}}")
    assert set(found) == {"confirm.aboveNotionalUsd"}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json_numbers(constant: str):
    assert set(issues_of('{"maxNotionalUsd": ' + constant + "}")) == {"maxNotionalUsd"}


def test_thirty_digits_and_plain_exponents_still_parse():
    policy = parse_policy('{"confirm": {"aboveNotionalUsd": 1e30}, "maxNotionalUsd": 2.5e1}').policy
    assert policy.confirm.above_notional_usd == Decimal("1e30") and policy.max_notional_usd == 25


@pytest.mark.parametrize("depth", [11, 30_000, 100_000])
def test_nesting_deeper_than_ten_levels_is_refused_without_recursing(depth: int):
    # 100,000 levels are also over the size limit; either way it is one issue, never a RecursionError.
    found = issues_of('{"markets": ' + "[" * depth + "]" * depth + "}")
    assert len(found) == 1


def test_brackets_inside_strings_are_not_nesting():
    found = issues_of('{"tradingState": "' + "[{" * 100 + '\\"' + "]" * 100 + '"}')
    assert set(found) == {"tradingState"}


def test_text_over_64_kib_is_refused_before_it_is_parsed():
    found = issues_of('{"allowedMarkets": ["BTCUSDT"]}' + " " * MAX_POLICY_BYTES)
    assert set(found) == {"policy.json"}


def test_a_file_of_many_problems_reports_twenty_and_counts_the_rest():
    with pytest.raises(PolicyInvalid) as caught:
        parse_policy(json.dumps({f"typo{index}": 1 for index in range(500)}))
    assert len(caught.value.issues) == 21 and caught.value.issues[-1].path == "$"


def test_what_the_file_says_is_echoed_short_and_printable():
    found = issues_of(json.dumps({"allowedMarkets": ["\ud800\n" + "X" * 5000], "\x00" * 100: 1}))
    assert all(path.isprintable() and len(path) <= 40 for path in found)
    assert all(len(text) < 400 for text in found.values())


NUMBERS = st.integers(-(10**40), 10**40) | st.builds(
    lambda digits, exponent: Decimal(f"{digits}e{exponent}"),
    st.integers(-(10**40), 10**40),
    st.integers(-(10**10), 10**10),
)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
POLICY_SHAPED = st.dictionaries(
    st.sampled_from([*EXAMPLES, "markets", "confirm"]) | st.text(max_size=12), JSON, max_size=8
)


def dumps(value: object) -> str:
    """JSON text with decimals written as JSON numbers in exponent form (json.dumps cannot)."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(key)}:{dumps(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    return json.dumps(value)


def parses_or_says_why(text: str) -> None:
    try:
        loaded = parse_policy(text)
    except PolicyInvalid as invalid:
        assert invalid.issues and all(issue.path.isprintable() and issue.fix for issue in invalid.issues)
    else:
        assert loaded.version.startswith("sha256:")


@given(st.text(max_size=300))
def test_any_text_parses_or_says_why(text: str):
    parses_or_says_why(text)


@given(JSON | POLICY_SHAPED)
def test_any_json_value_parses_or_says_why(value: object):
    parses_or_says_why(dumps(value))


@given(st.lists(st.sampled_from(['{"a":', "[", "]", "}", '"', "\\", "1e9999", ",", "9" * 50]), max_size=60))
def test_any_jumble_of_brackets_quotes_and_numbers_parses_or_says_why(parts: list[str]):
    parses_or_says_why("".join(parts))


def test_the_loss_rules_parse_with_per_market_overrides():
    loaded = parse_policy(
        json.dumps(
            {
                "allowedMarkets": ["BTCUSDT", "ETHUSDT"],
                "maxLossPerTradeUsd": 20,
                "maxLossPerTradePct": 1,
                "requireStopLoss": True,
                "dailyLossLimitUsd": 50,
                "dailyLossLimitPct": 3,
                "maxOpenPositions": 2,
                "tradingHours": [{"start": "08:00", "end": "20:00"}, {"start": "22:00", "end": "02:00"}],
                "markets": {"BTCUSDT": {"maxLossPerTradeUsd": 10, "requireStopLoss": False}},
            }
        )
    )
    btc, eth = loaded.policy.limits_for("BTCUSDT"), loaded.policy.limits_for("ETHUSDT")
    assert (btc.max_loss_per_trade_usd, btc.require_stop_loss) == (Decimal(10), False)
    assert (eth.max_loss_per_trade_usd, eth.max_loss_per_trade_pct, eth.require_stop_loss) == (
        Decimal(20),
        Decimal(1),
        True,
    )
    assert [w.end_minute for w in loaded.policy.trading_hours] == [1200, 120]


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"requireStopLoss": "yes"}, "requireStopLoss"),
        ({"requireStopLoss": 1}, "requireStopLoss"),
        ({"maxLossPerTradePct": 0}, "maxLossPerTradePct"),
        ({"maxLossPerTradePct": 101}, "maxLossPerTradePct"),
        ({"dailyLossLimitUsd": -5}, "dailyLossLimitUsd"),
        ({"maxOpenPositions": 0}, "maxOpenPositions"),
        ({"maxOpenPositions": True}, "maxOpenPositions"),
        ({"tradingHours": [{"start": "8:00", "end": "20:00"}]}, "tradingHours.0.start"),
        ({"tradingHours": [{"start": "08:00", "end": "24:00"}]}, "tradingHours.0.end"),
        ({"tradingHours": [{"start": "08:00", "end": "08:00"}]}, "tradingHours.0"),
        ({"tradingHours": [{"start": "08:00", "end": "09:00", "days": "mon"}]}, "tradingHours.0.days"),
    ],
)
def test_a_bad_loss_rule_names_its_path_and_a_valid_example(policy, path):
    found = issues_of(json.dumps(policy))
    assert list(found) == [path]
    assert "example" in found[path] or "known keys" in found[path] or "leave tradingHours out" in found[path]


def test_each_trading_state_permits_exactly_what_its_name_says():
    """The one statement of the states' permissions (orders, leverage and closes all ask it)."""
    permitted = {(state, effect) for state in TradingState for effect in Effect if state.permits(effect)}
    assert permitted == {
        (TradingState.ACTIVE, Effect.CANCEL),
        (TradingState.ACTIVE, Effect.REDUCE),
        (TradingState.ACTIVE, Effect.GROW),
        (TradingState.REDUCING, Effect.CANCEL),
        (TradingState.REDUCING, Effect.REDUCE),
        (TradingState.HALTED, Effect.CANCEL),
    }


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"maxNotionalUsd": "100"}', "maxNotionalUsd"),  # issue 25: accepted as $100 before
        ('{"dailyOrderCap": "3"}', "dailyOrderCap"),
        ('{"planTtlSeconds": "60"}', "planTtlSeconds"),
        ('{"dailyLossLimitUsd": "50"}', "dailyLossLimitUsd"),
        ('{"confirm": {"aboveNotionalUsd": "20"}}', "confirm.aboveNotionalUsd"),
        (
            '{"allowedMarkets": ["BTCUSDT"], "markets": {"BTCUSDT": {"maxLeverage": "2"}}}',
            "markets.BTCUSDT.maxLeverage",
        ),
    ],
)
def test_a_number_written_as_text_is_an_error_naming_its_path(text, path):
    """policy.json is edited by hand: "100" (text) may be a typo for something else, so it is refused like
    true/false for a number, never read as the number."""
    found = issues_of(text)
    assert set(found) == {path}, found
