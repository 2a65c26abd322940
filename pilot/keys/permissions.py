"""The least-privilege rule for exchange keys: a pure allowlist check over what the exchange reports.

A key for a live home (mainnet, real money) is held to more: it must be able to trade (not read-only), be
bound to at least one IP address (Bybit lets an unbound key work from anywhere, and expire after 90 days),
and not be near its expiry. Each way a key fails is named with the box to change on Bybit's API page.

Each venue's adapter reports its key's permissions as Group.Name strings (pilot.exchange.models.ApiKeyInfo):
Bybit's groups and names as /v5/user/query-api spells them, OKX's as the group "OKX" and the names of its
/api/v5/account/config `perm` (read_only, trade, withdraw).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

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
# What a live key must not be, as listed among its refusals (beside permission names, which never start "(").
READ_ONLY = "(read-only)"
NOT_IP_BOUND = "(no IP binding)"
EXPIRING = "(expires soon)"
EXPIRY_MARGIN = timedelta(days=14)  # a live key this close to its expiry is refused: renew it first
# Where each permission is ticked on Bybit's API key page (user_apikey-info.mdx names the groups).
BOXES: dict[str, str] = {
    "Wallet.AccountTransfer": "Assets: Account Transfer",
    "Wallet.SubMemberTransfer": "Assets: Subaccount Transfer",
    "Wallet.SubMemberTransferList": "Assets: Subaccount Transfer",
    "Wallet.Withdraw": "Assets: Withdrawal",
    "Options.OptionsTrade": "USDC Contracts: Trade",
    "Derivatives.DerivativesTrade": "Unified Trading: Trade",
    "Exchange.ExchangeHistory": "Exchange: Convert",
    "Earn.Earn": "Earn",
    "CopyTrading.CopyTrading": "Copy Trading",
    "BlockTrade.BlockTrade": "Block Trade",
    "FiatP2P.FiatP2POrder": "P2P",
    "FiatP2P.Advertising": "P2P",
    "FiatBitPay.FaitPayOrder": "Bybit Pay",
    "FiatConvertBroker.FiatConvertBrokerOrder": "Fiat Convert",
    "BitCard.BitCard": "Bybit Card",
    "ByXPost.ByXPost": "Community Post",
    "Affiliate.Affiliate": "Affiliate",
}
LIVE_FIXES: dict[str, str] = {
    READ_ONLY: "choose Read-Write (with only Contract Orders and Positions and Spot Trade ticked)",
    NOT_IP_BOUND: "under IP restriction, bind the key to this machine's public IP address",
    EXPIRING: "create a new key bound to your IP (a bound key does not expire) and `pilot keys replace` it",
}

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
    disallowed: tuple[str, ...]  # what refuses it: granted permissions off the allowlist, then live rules
    ip_bound: bool  # False: the key works from any address (refused live; a warning elsewhere)
    main_account: bool | None = None  # None: the exchange did not say

    @property
    def accepted(self) -> bool:
        return not self.disallowed


def granted_permissions(info: ApiKeyInfo) -> tuple[str, ...]:
    """List the key's permissions as sorted, distinct Group.Name strings; empty groups grant nothing."""
    return tuple(sorted({f"{group}.{name}" for group, names in info.permissions.items() for name in names}))


def check_permissions(
    info: ApiKeyInfo, *, live: bool = False, now: datetime | None = None
) -> PermissionVerdict:
    """Accept the key only if every permission it has is on the allowlist and, `live`, it can trade, is
    bound to an IP address and is not within EXPIRY_MARGIN of its expiry (at `now`).

    A read-only key is held to the same list: one that also lists transfers or withdrawals is
    rejected, so the key on file never holds more than Pilot could use.
    """
    granted = granted_permissions(info)
    # Bybit lists "*" for a key open to any address; OKX an empty `ip`: the adapter reports no addresses
    ip_bound = bool(info.ips) and "*" not in info.ips
    disallowed = [name for name in granted if name not in ALLOWED_PERMISSIONS]
    if live:
        disallowed += live_problems(info, ip_bound, now)
    return PermissionVerdict(
        read_only=info.read_only,
        granted=granted,
        disallowed=tuple(disallowed),
        ip_bound=ip_bound,
        main_account=info.is_master,
    )


def live_problems(info: ApiKeyInfo, ip_bound: bool, now: datetime | None) -> list[str]:
    """What keeps a key with allowed permissions off a live home."""
    found = []
    if info.read_only:
        found.append(READ_ONLY)
    if not ip_bound:
        found.append(NOT_IP_BOUND)
    if info.expires_at is not None and (now is None or info.expires_at - now < EXPIRY_MARGIN):
        found.append(EXPIRING)
    return found


def fixes(disallowed: tuple[str, ...]) -> str:
    """What to change on Bybit's API key page, one clause per refusal, boxes named."""
    boxes = sorted(
        {
            BOXES.get(name, f"{name.split('.')[0]}: {name.split('.')[-1]}")
            for name in disallowed
            if not name.startswith("(")
        }
    )
    clauses = [f"untick {', '.join(boxes)}"] if boxes else []
    clauses += [LIVE_FIXES[name] for name in disallowed if name in LIVE_FIXES]
    return "; ".join(clauses)


# What to change on OKX's API page for each of a live key's refusals (OKX's own words for its permissions).
OKX_LIVE_FIXES: dict[str, str] = {
    READ_ONLY: "add the Trade permission (Read and Trade, never Withdraw)",
    NOT_IP_BOUND: "bind the key to this machine's public IP address",
    EXPIRING: "create a new key bound to your IP and `pilot keys replace` it",
}


def okx_fixes(disallowed: tuple[str, ...]) -> str:
    """What to change for an OKX key: the least-privilege rule, then each live refusal's fix."""
    clauses = [LEAST_PRIVILEGE["okx"]] if any(not name.startswith("(") for name in disallowed) else []
    clauses += [OKX_LIVE_FIXES[name] for name in disallowed if name in OKX_LIVE_FIXES]
    return "; ".join(clauses) or LEAST_PRIVILEGE["okx"]
