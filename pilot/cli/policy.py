"""`pilot policy check [FILE]`: validate policy.json and show the effective limits, or each error's fix."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pilot.app.policy_file import read_policy_file
from pilot.core.policy import LoadedPolicy, PolicyIssue
from pilot.core.violations import plain


@click.group("policy")
def command() -> None:
    """Read and check policy.json (only a human edits it; no tool can change it)."""


@command.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
def check(file: Path | None) -> None:
    """Validate FILE (default: policy.json in PILOT_HOME or the current directory); exit 1 on any problem."""
    path = file or Path(os.environ.get("PILOT_HOME", ".")) / "policy.json"
    console = Console()
    outcome = read_policy_file(path)
    if not isinstance(outcome, LoadedPolicy):
        console.print(format_problems(outcome, path))
        raise SystemExit(1)
    console.print(format_limits(outcome, path))


def format_problems(issues: Sequence[PolicyIssue], path: Path) -> Text:
    """Each problem with its fix, under a line saying what an invalid file means."""
    text = Text()
    text.append(f"{path} is invalid", style="red")
    text.append(": risk-increasing orders are refused until it is fixed")
    for issue in issues:
        text.append("\n  ")
        text.append(issue.path, style="bold")
        text.append(f": {issue.problem}\n    fix: {issue.fix}")
    return text


def format_limits(loaded: LoadedPolicy, path: Path) -> Table:
    """The effective limits for each allowed market, as a table."""
    policy = loaded.policy
    table = Table(
        title=f"{path}: valid, version {loaded.version[:19]}…",
        caption=(
            f"tradingState {policy.trading_state.value} · dailyOrderCap {policy.daily_order_cap} · "
            f"planTtlSeconds {policy.plan_ttl_seconds} · confirm above "
            f"{'$' + plain(policy.confirm.above_notional_usd) if policy.confirm.above_notional_usd else 'never'}"
            f"{' and for ' + ', '.join(policy.confirm.actions) if policy.confirm.actions else ''}"
        ),
    )
    for header in (
        "market",
        "position cap $",
        "order cap $",
        "max leverage",
        "min liq. distance %",
        "max slippage %",
    ):
        table.add_column(header, justify="right" if header != "market" else "left")
    for symbol in policy.allowed_markets or ("(none allowed)",):
        limits = policy.limits_for(symbol)
        table.add_row(
            symbol,
            plain(limits.max_notional_usd),
            plain(limits.max_order_notional_usd),
            plain(limits.max_leverage),
            plain(limits.min_liquidation_distance_pct),
            plain(limits.max_slippage_pct),
        )
    return table
