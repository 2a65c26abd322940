"""Hypothesis strategies for key permissions as /v5/user/query-api reports them."""

from __future__ import annotations

import string

from hypothesis import strategies as st

from pilot.exchange.models import ApiKeyInfo
from pilot.keys.permissions import ALLOWED_PERMISSIONS

allowed_names = st.sampled_from(sorted(ALLOWED_PERMISSIONS))
known_forbidden_names = st.sampled_from(
    [
        "Wallet.AccountTransfer",
        "Wallet.SubMemberTransfer",
        "Withdraw.Withdraw",
        "Exchange.ExchangeHistory",
        "Options.OptionsTrade",
        "Derivatives.DerivativesTrade",
        "NFT.NFTQueryProductList",
        "Earn.Earn",
        "CopyTrading.CopyTrading",
        "BlockTrade.BlockTrade",
    ]
)
_identifier = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=12)
unknown_names = st.builds("{}.{}".format, _identifier, _identifier).filter(
    lambda n: n not in ALLOWED_PERMISSIONS
)
forbidden_names = st.one_of(known_forbidden_names, unknown_names)


def key_info(
    names: list[str] | set[str], *, read_only: bool = False, ips: tuple[str, ...] = ()
) -> ApiKeyInfo:
    """Build an ApiKeyInfo with the given Group.Name permissions, grouped as Bybit reports them."""
    groups: dict[str, list[str]] = {}
    for name in names:
        group, _, permission = name.partition(".")
        groups.setdefault(group, []).append(permission)
    return ApiKeyInfo(
        read_only=read_only,
        permissions={group: tuple(permissions) for group, permissions in groups.items()},
        ips=ips,
    )


@st.composite
def narrow_keys(draw: st.DrawFn) -> ApiKeyInfo:
    """A key whose permissions are all on the allowlist, possibly with empty groups listed too."""
    info = key_info(draw(st.sets(allowed_names)), read_only=draw(st.booleans()))
    empty_groups = draw(st.sets(st.sampled_from(["Options", "Wallet", "NFT", "Earn", "Exchange"])))
    return ApiKeyInfo(
        read_only=info.read_only, permissions={**dict.fromkeys(empty_groups, ()), **info.permissions}
    )


@st.composite
def wide_keys(draw: st.DrawFn) -> tuple[ApiKeyInfo, set[str]]:
    """A key with at least one permission off the allowlist, and the set of those permissions."""
    forbidden = draw(st.sets(forbidden_names, min_size=1, max_size=4))
    allowed = draw(st.sets(allowed_names))
    return key_info(allowed | forbidden, read_only=draw(st.booleans())), forbidden
