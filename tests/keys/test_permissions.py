"""The allowlist check: every permission must be on the list, whatever Bybit calls it tomorrow."""

from __future__ import annotations

from hypothesis import given

from pilot.exchange.models import ApiKeyInfo
from pilot.keys.permissions import check_permissions

from .strategies import forbidden_names, key_info, narrow_keys, unknown_names, wide_keys


@given(narrow_keys())
def test_a_key_with_only_allowed_permissions_is_accepted(info: ApiKeyInfo) -> None:
    verdict = check_permissions(info)
    assert verdict.accepted
    assert verdict.disallowed == ()


@given(wide_keys())
def test_a_key_with_any_other_permission_is_rejected_naming_each_one(
    case: tuple[ApiKeyInfo, set[str]],
) -> None:
    info, forbidden = case
    verdict = check_permissions(info)
    assert not verdict.accepted
    assert set(verdict.disallowed) == forbidden


@given(unknown_names)
def test_a_permission_name_pilot_has_never_seen_rejects_the_key(name: str) -> None:
    assert check_permissions(key_info({name, "ContractTrade.Order"})).disallowed == (name,)


@given(forbidden_names)
def test_read_only_does_not_excuse_a_permission_off_the_list(name: str) -> None:
    verdict = check_permissions(key_info({name}, read_only=True))
    assert verdict.read_only
    assert verdict.disallowed == (name,)


def test_a_read_only_key_without_permission_groups_is_accepted() -> None:
    verdict = check_permissions(ApiKeyInfo(read_only=True, permissions={"Options": (), "Wallet": ()}))
    assert verdict.accepted and verdict.read_only and verdict.granted == ()


def test_the_reference_example_key_is_rejected_for_transfers_derivatives_exchange_and_earn() -> None:
    info = ApiKeyInfo(
        read_only=True,
        permissions={
            "ContractTrade": ("Order", "Position"),
            "Spot": ("SpotTrade",),
            "Wallet": ("AccountTransfer", "SubMemberTransfer"),
            "Options": (),
            "Derivatives": ("DerivativesTrade",),
            "Exchange": ("ExchangeHistory",),
            "Earn": ("Earn",),
        },
        ips=("18.181.170.164",),
    )
    verdict = check_permissions(info)
    assert verdict.disallowed == (
        "Derivatives.DerivativesTrade",
        "Earn.Earn",
        "Exchange.ExchangeHistory",
        "Wallet.AccountTransfer",
        "Wallet.SubMemberTransfer",
    )
    assert verdict.ip_bound


def test_permission_names_are_matched_exactly_not_case_insensitively() -> None:
    assert check_permissions(key_info({"contracttrade.order"})).disallowed == ("contracttrade.order",)


def test_a_key_open_to_any_address_is_accepted_but_reported_as_not_ip_bound() -> None:
    assert not check_permissions(key_info({"Spot.SpotTrade"}, ips=("*",))).ip_bound
    assert not check_permissions(key_info({"Spot.SpotTrade"})).ip_bound
    assert check_permissions(key_info({"Spot.SpotTrade"}, ips=("203.0.113.7",))).ip_bound
