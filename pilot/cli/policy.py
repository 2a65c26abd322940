"""`pilot policy check [FILE]`: validate policy.json and show the effective limits, or each error's fix."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from pilot.core.policy import LoadedPolicy, PolicyInvalid, parse_policy
from pilot.core.violations import plain


@click.group("policy")
def command() -> None:
    """Read and check policy.json (only a human edits it; no tool can change it)."""


@command.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
def check(file: Path | None) -> None:
    """Validate FILE (default: policy.json in PILOT_HOME or the current directory)."""
    path = file or Path(os.environ.get("PILOT_HOME", ".")) / "policy.json"
    console = Console()
    try:
        loaded = parse_policy(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        console.print(f"[red]no policy file at {path}[/red]; create one with `pilot init` or pass its path")
        raise SystemExit(2) from None
    except PolicyInvalid as invalid:
        console.print(f"[red]{path} is invalid[/red]: risk-increasing orders are refused until it is fixed")
        for issue in invalid.issues:
            console.print(f"  [bold]{issue.path}[/bold]: {issue.problem}\n    fix: {issue.fix}")
        raise SystemExit(1) from None
    console.print(format_limits(loaded, path))


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
