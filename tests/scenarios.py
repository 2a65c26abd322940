"""The paper exchange worlds (and the policy) the tests run on, by name.

The packaged default scenario carries Bybit's real instrument filters (BTCUSDT step 0.001, minimum notional
$5) and `pilot init` writes a policy sized for them. Most tests were written against the article's numbers
instead (BTCUSDT step 0.00001, a $25 cap, a 0.00031 BTC short worth $24.87), so they start the paper
exchange on ARTICLE and, where they used `pilot init`'s policy, write ARTICLE_POLICY; only a test about the
defaults themselves uses them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ARTICLE = Path(__file__).parent / "fixtures" / "scenarios" / "article.json"


def article_scenario() -> dict[str, Any]:
    """A fresh copy of the article's scenario, to change before starting an exchange on it."""
    return json.loads(ARTICLE.read_text())


# The policy the tests run on, written out once: the article's $25 caps on its three markets. A test that
# needs another writes policy_with(...) its changes, so what it changes is all it spells out.
TEST_POLICY: dict[str, Any] = {
    "allowedMarkets": ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
    "maxNotionalUsd": 25,
    "maxOrderNotionalUsd": 25,
    "maxLeverage": 3,
    "minLiquidationDistancePct": 20,
    "dailyOrderCap": 20,
    "maxSlippagePct": 0.5,
    "planTtlSeconds": 60,
}


def policy_with(**changes: Any) -> dict[str, Any]:
    """TEST_POLICY with `changes` (policy.json's keys), as a new dict."""
    return {**TEST_POLICY, **changes}


# `pilot init`'s policy before the default scenario used Bybit's filters: $25 caps, a human above $20.
ARTICLE_POLICY: dict[str, Any] = policy_with(
    confirm={"aboveNotionalUsd": 20, "actions": [], "cliChannel": False, "pendingTtlSeconds": 300},
    tradingState="active",
    markets={"BTCUSDT": {"maxNotionalUsd": 25}},
)
