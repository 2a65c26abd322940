"""Every OKX v5 code the adapter can meet, in one table: what it means for each operation.

OKX answers `{"code": "0", "msg": "", "data": [...]}`. A write of one order answers code "1" when the order
failed, with the order's own code in `data[0].sCode` (and its text in `sMsg`); a batch answers "0", "1" or
"2" with one sCode per row. The adapter reads the row's sCode when there is one, else the envelope's code.

A code is one of five verdicts, and which one depends on what was asked (as Bybit's, in
pilot.exchange.bybit.ret_codes):

* ``REJECTED``: a definite no. Nothing was executed; the code and its family go back to the caller.
* ``UNKNOWN``: the write may have been executed (OKX's own timeout, "system error", "systems are busy").
  Look it up by client order id, never resend.
* ``DUPLICATE``: create only. The client order id is taken, so an earlier send got through (51016).
* ``UNAVAILABLE``: a read that did not get through; worth trying again later.
* ``UNCHANGED``: nothing to change (none of OKX's codes says so today: an unchanged leverage is answered
  code "0"); kept so the writes sort every verdict alike.

Operations: ``create`` (POST /api/v5/trade/order), ``cancel`` (cancel-order, cancel-batch-orders,
cancel-algos), ``amend`` (amend-order), ``leverage`` (account/set-leverage), ``stop`` (order-algo and
amend-algos: the position's TP/SL) and ``read`` (every GET). Meanings are OKX's (docs-v5 "Error Code":
https://www.okx.com/docs-v5/en/#error-code), as ccxt's okx.py quotes them. A code missing from the table is a
definite rejection of family "other": the codes that leave a write's outcome open are all listed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pilot.core.errors import ErrorCode


class Verdict(Enum):
    REJECTED = "rejected"
    UNKNOWN = "unknown"
    DUPLICATE = "duplicate"
    UNAVAILABLE = "unavailable"
    UNCHANGED = "unchanged"


WRITES = ("create", "cancel", "amend", "leverage", "stop")
OPERATIONS = (*WRITES, "read")
R, U, D, A = Verdict.REJECTED, Verdict.UNKNOWN, Verdict.DUPLICATE, Verdict.UNAVAILABLE


@dataclass(frozen=True, slots=True)
class CodeRule:
    """One code: its family, its verdict for writes and for reads, and what OKX says it means."""

    code: int
    family: str
    write: Verdict
    read: Verdict
    meaning: str
    create: Verdict | None = None  # create's own verdict when it differs from the other writes'

    def verdict(self, operation: str) -> Verdict:
        if operation == "read":
            return self.read
        if operation == "create" and self.create is not None:
            return self.create
        return self.write


def _no(code: int, family: str, meaning: str) -> CodeRule:
    return CodeRule(code, family, R, R, meaning)


def _in_flight(code: int, meaning: str) -> CodeRule:
    """A write that may have been carried out; a read that did not get through."""
    return CodeRule(code, "processing", U, A, meaning)


def _busy(code: int, family: str, meaning: str) -> CodeRule:
    """Not processed, try later: a rejection (nothing executed) on writes, unavailable on reads."""
    return CodeRule(code, family, R, A, meaning)


RULES: tuple[CodeRule, ...] = (
    # ---- general (50000-50099) ---------------------------------------------------------------------
    _no(50000, "params", "Body can not be empty"),
    _busy(50001, "busy", "Service temporarily unavailable; try again later"),
    _no(50002, "params", "JSON syntax error"),
    _in_flight(50004, "Endpoint request timeout (does not say whether the request succeeded)"),
    _busy(50005, "busy", "API is offline or unavailable"),
    _no(50006, "params", "Invalid Content-Type"),
    _no(50007, "permission", "Account blocked"),
    _no(50008, "auth", "User does not exist"),
    _no(50009, "permission", "Account is suspended due to ongoing liquidation"),
    _busy(50011, "rate_limit", "Rate limit reached"),
    _no(50012, "permission", "Account status invalid"),
    _in_flight(50013, "Systems are busy; try again later"),
    _no(50014, "params", "Parameter can not be empty"),
    _no(50015, "params", "Either of two parameters is required"),
    _no(50016, "params", "Parameter does not match another"),
    _no(50017, "position", "The position is frozen due to ADL"),
    _no(50020, "position", "The position is frozen due to liquidation"),
    _no(50024, "params", "Two parameters can not exist at the same time"),
    _in_flight(50026, "System error; try again later"),
    _no(50027, "permission", "The account is restricted from trading"),
    _busy(50061, "rate_limit", "Order rate limit reached for this account"),
    # ---- authentication (50100-50199) --------------------------------------------------------------
    _no(50100, "permission", "API frozen, contact customer service"),
    _no(
        50101, "auth", "API key does not match the current environment (a live key on demo, or the other way)"
    ),
    _no(50102, "auth", "Timestamp request expired"),
    _no(50103, "auth", "Request header OK-ACCESS-KEY can not be empty"),
    _no(50104, "auth", "Request header OK-ACCESS-PASSPHRASE can not be empty"),
    _no(50105, "auth", "Request header OK-ACCESS-PASSPHRASE incorrect"),
    _no(50106, "auth", "Request header OK-ACCESS-SIGN can not be empty"),
    _no(50107, "auth", "Request header OK-ACCESS-TIMESTAMP can not be empty"),
    _no(50110, "auth", "Your IP is not on the key's IP allowlist"),
    _no(50111, "auth", "Invalid OK-ACCESS-KEY"),
    _no(50112, "auth", "Invalid OK-ACCESS-TIMESTAMP"),
    _no(50113, "auth", "Invalid signature"),
    _no(50114, "auth", "Invalid authorization"),
    _no(50115, "params", "Invalid request method"),
    _no(
        50119, "auth", "API key doesn't exist (at this host: a key is known only on its own OKX site's host)"
    ),
    # ---- trade (51000-51999) -----------------------------------------------------------------------
    _no(51000, "params", "Parameter error"),
    _no(51001, "not_found", "Instrument ID does not exist"),
    _no(51004, "limits", "Order amount exceeds the current tier limit"),
    _no(51005, "limits", "Order amount exceeds the limit"),
    _no(51006, "price", "Order price is not within the price limit"),
    _no(51008, "balance", "Insufficient balance or margin"),
    _no(51009, "permission", "Order placement function is blocked by the platform"),
    _no(51010, "permission", "The current account mode does not support this"),
    _no(51015, "not_found", "Instrument ID does not match instrument type"),
    CodeRule(51016, "duplicate", U, R, "Duplicated client order ID", create=D),
    _no(51020, "params", "Order amount should be greater than the minimum"),
    _no(51021, "not_found", "Contract to be listed"),
    _no(51022, "not_found", "Contract suspended"),
    _no(51023, "position", "Position does not exist"),
    _no(51024, "permission", "Trading account is blocked"),
    _in_flight(51054, "Request timed out; try again later"),
    _no(51088, "stop", "Only one TP/SL order may close the entire position"),
    _no(51116, "price", "Order price or trigger price exceeds the limit"),
    _no(51119, "balance", "Insufficient balance"),
    _no(51121, "params", "Order quantity must be a multiple of the lot size"),
    _no(51127, "balance", "Available balance is 0"),
    _no(51131, "balance", "Insufficient balance"),
    _in_flight(51149, "Order timed out; try again later"),
    _no(51169, "position", "No position in this direction to reduce or close"),
    _no(51170, "position", "A reduce-only order can not be in the position's own direction"),
    _no(51205, "params", "Reduce-only is not available"),
    _no(51277, "stop", "TP trigger price can not be higher than the last price"),
    _no(51278, "stop", "SL trigger price can not be lower than the last price"),
    _no(51279, "stop", "TP trigger price can not be lower than the last price"),
    _no(51280, "stop", "SL trigger price can not be higher than the last price"),
    _no(51327, "stop", "closeFraction is only available for futures and perpetual swaps"),
    _no(51328, "stop", "closeFraction is only available for reduce-only orders"),
    _no(51329, "position", "closeFraction is only available in net mode"),
    _no(51330, "stop", "closeFraction is only available for stop market orders"),
    _no(51400, "not_found", "Cancellation failed as the order does not exist"),
    _no(51401, "not_found", "Cancellation failed as the order is already canceled"),
    _no(51402, "not_found", "Cancellation failed as the order is already completed"),
    _no(51410, "cancel", "Cancellation failed as the order is already being cancelled"),
    _no(51502, "balance", "Amend failed for insufficient margin or balance"),
    _no(51503, "not_found", "Amend failed as the order does not exist"),
    _no(51509, "not_found", "Amend failed as the order has been canceled"),
    _no(51510, "not_found", "Amend failed as the order has been completed"),
    _no(51603, "not_found", "Order does not exist"),
    # ---- account (59000-59999) ---------------------------------------------------------------------
    _no(59000, "position", "Settings failed: positions or open orders exist"),
    _no(59100, "position", "Positions exist: leverage can not change"),
    _no(59102, "leverage", "Leverage exceeds the maximum"),
    _no(59103, "balance", "Leverage too low for the margin held"),
    _no(59104, "leverage", "Leverage too high for the position held"),
)

TABLE: dict[int, CodeRule] = {rule.code: rule for rule in RULES}

# The codes that refuse the key itself (answered to the permission read at `pilot keys add`, or to any signed
# request), each with the cause a human can act on: the key's own site's host, demo against live, the key's
# IP list, the passphrase, the key as typed, the secret. The other auth codes (an empty header, an expired
# timestamp) are Pilot's to get right, not the human's.
KEY_REFUSALS: dict[int, ErrorCode] = {
    50101: ErrorCode.KEY_WRONG_ENVIRONMENT,
    50105: ErrorCode.KEY_PASSPHRASE_WRONG,
    50110: ErrorCode.KEY_IP_NOT_ALLOWED,
    50111: ErrorCode.KEY_INVALID,
    50113: ErrorCode.KEY_SECRET_WRONG,
    50119: ErrorCode.KEY_UNKNOWN_ON_HOST,
}


def rule_of(code: int) -> CodeRule:
    """The rule of `code`; a code not listed is a definite refusal of family "other"."""
    return TABLE.get(code) or _no(code, "other", "not listed: a definite refusal")


def verdict(code: int, operation: str) -> Verdict:
    return rule_of(code).verdict(operation)


def family(code: int) -> str:
    return rule_of(code).family
