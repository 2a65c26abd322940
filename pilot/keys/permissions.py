"""The least-privilege rule for exchange keys: a pure allowlist check over what the exchange reports.

Each venue's adapter reports its key's permissions as Group.Name strings (pilot.exchange.models.ApiKeyInfo):
Bybit's groups and names as /v5/user/query-api spells them, OKX's as the group "OKX" and the names of its
/api/v5/account/config `perm` (read_only, trade, withdraw).
"""

from __future__ import annotations

from dataclasses import dataclass

from pilot.exchange.models import ApiKeyInfo

# Group.Name exactly as each venue spells them. Anything absent here, including names a venue adds later,
# rejects the key: the list says what is allowed, never what is forbidden. OKX's withdraw is not on it.
ALLOWED_PERMISSIONS: frozenset[str] = frozenset(
    {
        "ContractTrade.Order",
        "ContractTrade.Position",
        "Spot.SpotTrade",
        "OKX.read_only",
        "OKX.trade",
    }
)

# What to tick when creating a key that passes, in each venue's own words (the fix of a rejected key).
LEAST_PRIVILEGE = {
    "bybit": "create a key with only Contract Orders and Positions, Spot Trade, or Read-Only ticked",
    "okx": "create an API key with the Read and Trade permissions only (never Withdraw)",
    "paper": "use the key the paper exchange prints",
}


@dataclass(frozen=True, slots=True)
class PermissionVerdict:
    """The result of checking a key; `disallowed` is empty exactly when the key is accepted."""

    read_only: bool
    granted: tuple[str, ...]  # every permission the key has, as Group.Name, sorted
    disallowed: tuple[str, ...]  # the granted ones not on the allowlist, sorted
    ip_bound: bool  # False: the key works from any address (accepted, but worth a warning)

    @property
    def accepted(self) -> bool:
        return not self.disallowed


def granted_permissions(info: ApiKeyInfo) -> tuple[str, ...]:
    """List the key's permissions as sorted, distinct Group.Name strings; empty groups grant nothing."""
    return tuple(sorted({f"{group}.{name}" for group, names in info.permissions.items() for name in names}))


def check_permissions(info: ApiKeyInfo) -> PermissionVerdict:
    """Accept the key only if every permission it has is on the allowlist.

    A read-only key is held to the same list: one that also lists transfers or withdrawals is
    rejected, so the key on file never holds more than Pilot could use.
    """
    granted = granted_permissions(info)
    return PermissionVerdict(
        read_only=info.read_only,
        granted=granted,
        disallowed=tuple(name for name in granted if name not in ALLOWED_PERMISSIONS),
        ip_bound=bool(info.ips) and "*" not in info.ips,  # Bybit lists "*" for a key open to any address;
        # OKX an empty `ip`: the adapter reports no addresses
    )
