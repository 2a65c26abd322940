"""Pure `format_*` and `*_record` functions for setting a home up and checking it (`pilot init`, `pilot policy
check`, `pilot doctor`): policy.json's limits or its problems, and the doctor's checks. Values in, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, TypedDict

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pilot.app.human.desk import InitReport
from pilot.app.service.doctor import Check
from pilot.core.policy import LoadedPolicy, Policy, PolicyIssue
from pilot.core.violations import plain


class CheckRecord(TypedDict):
    """`pilot doctor --format json`: one check."""

    name: str
    ok: bool
    detail: str
    fix: str | None


def format_init(report: InitReport, exchange: str | None = "paper") -> RenderableType:
    """What init did, the limits now in force (the confirmation threshold included), and the next commands,
    for `exchange` when the home was made for another venue than paper (None: the caller says them, as a
    live home's `pilot init --live` does)."""
    policy = (
        "created policy.json with the default policy"
        if report.policy_created
        else "kept the existing policy.json (init never overwrites it)"
    )
    where = (
        "journal/pilot.db" if report.store.endswith("journal/pilot.db") else f"the journal in {report.store}"
    )
    journal = f"created {where}" if report.journal_created else f"{where} already there"
    head = Text(f"Pilot home {report.home}:\n  {policy}\n  {journal}")
    limits: RenderableType = (
        format_limits(report.policy, report.home / "policy.json")
        if isinstance(report.policy, LoadedPolicy)
        else format_problems(report.policy, report.home / "policy.json")
    )
    if exchange is None:
        return Group(head, limits)
    return Group(head, limits, Text(_next_commands(report.home, exchange)))


def _next_commands(home: Path, exchange: str) -> str:
    if exchange != "paper":  # its markets are spelled for that venue: paper's commands would not read them
        on = f"--exchange {exchange} --home {home}"
        return (
            f"Store its key with `pilot keys add {on}`, check it with `pilot doctor {on}`, and connect an "
            f"agent with `pilot serve {on}`."
        )
    return (
        f"Check it with `pilot doctor --home {home}`; connect an agent with "
        f"`pilot serve --home {home}` (on paper; for Bybit add `--exchange bybit-demo` or "
        "`bybit-testnet` to both, for OKX `--exchange okx-demo`, once `pilot keys add` has stored its key)."
    )


def init_record(report: InitReport) -> dict[str, Any]:
    return {
        "home": str(report.home),
        "policy_created": report.policy_created,
        "journal_created": report.journal_created,
        **policy_record(report.home / "policy.json", report.policy),
    }


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


def _controls_line(policy: Policy) -> str:
    """The pre-trade controls set (docs/controls.md), for the limits table's caption."""
    parts = []
    if policy.price_collar_pct is not None or policy.price_collar_ticks is not None:
        pct = f"{plain(policy.price_collar_pct)} %" if policy.price_collar_pct is not None else ""
        ticks = f"{policy.price_collar_ticks} ticks" if policy.price_collar_ticks is not None else ""
        parts.append(f"price collar {' or '.join(p for p in (pct, ticks) if p)}")
    per = [
        f"{n}/{unit}"
        for n, unit in (
            (policy.max_order_messages_per_second, "s"),
            (policy.max_order_messages_per_minute, "min"),
        )
        if n
    ]
    if per:
        parts.append(f"messages {', '.join(per)}")
    if policy.max_resting_orders_per_market or policy.max_resting_orders:
        parts.append(
            f"resting {policy.max_resting_orders_per_market or '-'} a market, {policy.max_resting_orders or '-'} in all"
        )
    named = {
        "drawdown": policy.max_drawdown_usd is not None or policy.max_drawdown_pct is not None,
        "cooldown": policy.cooldown is not None,
        "turnover": policy.max_turnover_usd_per_day is not None or policy.max_turnover_usd_24h is not None,
        "validUntil": policy.valid_until is not None,
        "maxSessionMinutes": policy.max_session_minutes is not None,
        "deadManSwitch": policy.dead_man_switch is not None,
    }
    parts += [name for name, on in named.items() if on]
    if policy.self_trade_prevention:
        parts.append(f"smpType {policy.self_trade_prevention}")
    return " · " + " · ".join(parts) if parts else ""


def format_limits(loaded: LoadedPolicy, path: Path) -> Table:
    """The effective limits for each allowed market, with what applies to all of them as the caption."""
    policy = loaded.policy
    confirm = policy.confirm
    above = f"above ${plain(confirm.above_notional_usd)}" if confirm.above_notional_usd else "never by size"
    actions = f" and for {', '.join(confirm.actions)}" if confirm.actions else ""
    channel = "on" if confirm.cli_channel else "off"
    console = "on" if confirm.console_channel else "off"
    table = Table(
        title=f"{path}: valid, version {loaded.version[:19]}…",
        caption=(
            f"a human confirms orders {above}{actions} (CLI channel {channel}, console {console}) · "
            f"tradingState {policy.trading_state.value} · dailyOrderCap {policy.daily_order_cap} · "
            f"planTtlSeconds {policy.plan_ttl_seconds}{_controls_line(policy)}"
        ),
    )
    for header in ("market", "position cap $", "order cap $", "max leverage", "min liq. %", "max slip. %"):
        table.add_column(header, justify="left" if header == "market" else "right")
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


# An agent's limits as policy.md's "Agents' budgets" has them bind: the tighter of its own and the account's
# (TIGHTER), or its own on its own count beside the account's on the account's (OWN_COUNT).
TIGHTER = {
    "maxNotionalUsd": "max_notional_usd",
    "maxOrderNotionalUsd": "max_order_notional_usd",
    "maxLossPerTradeUsd": "max_loss_per_trade_usd",
    "dailyLossLimitUsd": "daily_loss_limit_usd",
}
OWN_COUNT = {"dailyOrderCap": "daily_order_cap", "maxTurnoverUsdPerDay": "max_turnover_usd_per_day"}


def agent_budgets(policy: Policy) -> dict[str, dict[str, Any]]:
    """Each agent's budget in policy.json as it binds: its markets, and per limit its own value, the
    account's, and whose binds ("agent", "account", "both": each on its own count; None: no limit)."""
    found: dict[str, dict[str, Any]] = {}
    for name, budget in sorted(policy.agents.items()):
        markets = budget.allowed_markets
        limits: dict[str, Any] = {
            "allowedMarkets": [m for m in policy.allowed_markets if markets is None or m in markets]
        }
        for key, field in {**TIGHTER, **OWN_COUNT}.items():
            own, account = getattr(budget, field), getattr(policy, field)
            limits[key] = {
                "agent": _shown(own),
                "account": _shown(account),
                "binds": _binds(key, own, account),
            }
        limits["markets"] = sorted(budget.markets)
        found[name] = limits
    return found


def _shown(value: Decimal | int | None) -> str | int | None:
    if value is None or isinstance(value, int):
        return value
    return plain(value)


def _binds(key: str, own: Any, account: Any) -> str | None:
    if own is None:
        return None if account is None else "account"
    if key in OWN_COUNT:
        return "agent" if account is None else "both"
    return "agent" if account is None or own < account else "account"


def format_agent_budgets(policy: Policy) -> Table:
    """The agents' budgets as they bind, a row per agent (`pilot policy check`, beside the account's limits)."""
    table = Table(
        title="agents' budgets (policy.json's agents: the tighter of its own and the account's binds)",
        caption="own: the agent's limit binds; acct: the account's; own + acct: each on its own count",
    )
    table.add_column("agent")
    table.add_column("markets")
    for header in ("position $", "order $", "loss/trade $", "day loss $", "orders/day", "turnover/day $"):
        table.add_column(header, justify="right")
    for name, limits in agent_budgets(policy).items():
        cells = [_cell(limits[key]) for key in (*TIGHTER, *OWN_COUNT)]
        table.add_row(name, "\n".join(limits["allowedMarkets"]) or "(none)", *cells)
    return table


def _cell(limit: dict[str, Any]) -> str:
    binds = limit["binds"]
    if binds is None:
        return "-"
    if binds == "both":
        return f"{limit['agent']} own + {limit['account']} acct"
    return f"{limit[binds]} {'own' if binds == 'agent' else 'acct'}"


def policy_record(path: Path, outcome: LoadedPolicy | Sequence[PolicyIssue]) -> dict[str, Any]:
    """policy.json as JSON-ready data: valid with its limits per market, or each problem with its fix."""
    if not isinstance(outcome, LoadedPolicy):
        problems = [{"path": i.path, "problem": i.problem, "fix": i.fix} for i in outcome]
        return {"policy": str(path), "valid": False, "problems": problems}
    policy = outcome.policy
    markets = {}
    for symbol in policy.allowed_markets:
        limits = policy.limits_for(symbol)
        markets[symbol] = {
            "max_notional_usd": plain(limits.max_notional_usd),
            "max_order_notional_usd": plain(limits.max_order_notional_usd),
            "max_leverage": plain(limits.max_leverage),
            "min_liquidation_distance_pct": plain(limits.min_liquidation_distance_pct),
            "max_slippage_pct": plain(limits.max_slippage_pct),
        }
    confirm = policy.confirm
    return {
        "policy": str(path),
        "valid": True,
        "version": outcome.version,
        "trading_state": policy.trading_state.value,
        "daily_order_cap": policy.daily_order_cap,
        "plan_ttl_seconds": policy.plan_ttl_seconds,
        "confirm": {
            "above_notional_usd": plain(confirm.above_notional_usd) if confirm.above_notional_usd else None,
            "actions": list(confirm.actions),
            "cli_channel": confirm.cli_channel,
            "console_channel": confirm.console_channel,
            "pending_ttl_seconds": confirm.pending_ttl_seconds,
        },
        "markets": markets,
        "agents": agent_budgets(policy),
    }


def format_checks(checks: Sequence[Check]) -> str:
    lines = []
    for check in checks:
        lines.append(f"{'✓' if check.ok else '✗'} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"    fix: {check.fix}")
    failed = sum(not check.ok for check in checks)
    lines.append("all checks passed" if not failed else f"{failed} check(s) failed")
    return "\n".join(lines)


def check_record(check: Check) -> CheckRecord:
    return {"name": check.name, "ok": check.ok, "detail": check.detail, "fix": check.fix}
