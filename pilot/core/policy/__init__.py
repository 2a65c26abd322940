"""policy.json: the human's limits, each field declared once (`model`, `parts`, with its `about`), parsed
into a frozen model with a version and errors that say the fix (`parsing`); every list of its fields is
derived in `fields`."""

from pilot.core.policy.about import About, Shown
from pilot.core.policy.fields import EXAMPLES
from pilot.core.policy.model import PER_MARKET, Policy
from pilot.core.policy.parsing import (
    MAX_POLICY_BYTES,
    LoadedPolicy,
    PolicyInvalid,
    PolicyIssue,
    parse_policy,
    policy_too_large,
    policy_version,
    syntax_issue,
)
from pilot.core.policy.parts import (
    CONFIRMABLE_TOOLS,
    MAX_SLIPPAGE_CEILING,
    SYMBOL_PATTERN,
    SYMBOL_SHAPE,
    ApprovalTool,
    ConfirmRule,
    Cooldown,
    DeadManSwitch,
    EffectiveLimits,
    MarketOverrides,
    NtfyChannel,
    SelfTradePrevention,
    TelegramChannel,
    TradingWindow,
)

__all__ = [
    "CONFIRMABLE_TOOLS",
    "EXAMPLES",
    "MAX_POLICY_BYTES",
    "MAX_SLIPPAGE_CEILING",
    "PER_MARKET",
    "SYMBOL_PATTERN",
    "SYMBOL_SHAPE",
    "About",
    "ApprovalTool",
    "ConfirmRule",
    "Cooldown",
    "DeadManSwitch",
    "EffectiveLimits",
    "LoadedPolicy",
    "MarketOverrides",
    "NtfyChannel",
    "Policy",
    "PolicyInvalid",
    "PolicyIssue",
    "SelfTradePrevention",
    "Shown",
    "TelegramChannel",
    "TradingWindow",
    "parse_policy",
    "policy_too_large",
    "policy_version",
    "syntax_issue",
]
