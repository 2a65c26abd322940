"""Every Bybit V5 retCode the adapter can meet, in one table: what it means for each operation.

A retCode answer is one of four verdicts, and which one depends on what was asked:

* ``REJECTED``: a definite no. Nothing was executed; the code and its family go back to the caller.
* ``UNKNOWN``: the write may have been executed (a timeout inside Bybit, "processing"). Look it up by
  client order id, never resend; it counts as pending until a read finds it.
* ``DUPLICATE``: create only. An order with this client order id exists, so an earlier send got
  through: raised as DuplicateOrderLinkId (an OutcomeUnknown), looked up, never "nothing executed".
* ``UNAVAILABLE``: nothing was processed and it is worth trying again later (busy, rate limited reads).
* ``UNCHANGED``: "not modified": the setting already is the asked value, so nothing was changed and nothing
  refused. Leverage 110043; a trading stop 34040.

Operations: ``create`` (/v5/order/create), ``cancel`` (/v5/order/cancel), ``amend`` (/v5/order/amend),
``leverage`` (/v5/position/set-leverage), ``stop`` (/v5/position/trading-stop) and ``read`` (every GET). Each row cites the page of Bybit's V5
documentation it comes from (bybit-exchange/docs, docs/v5/...; copies in ../shared/reference/bybit-v5-docs).
A code missing from the table is a definite rejection of family "other" on writes and reads alike:
Bybit's in-flight and timeout codes are all listed here, every other code documents a refusal.

HTTP statuses (error.mdx "HTTP Code", rate-limit.mdx "IP Limit") are in `http_verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pilot.core.errors import ErrorCode
from pilot.exchange.errors import UNSUPPORTED


class Verdict(Enum):
    REJECTED = "rejected"
    UNKNOWN = "unknown"
    DUPLICATE = "duplicate"
    UNAVAILABLE = "unavailable"
    UNCHANGED = "unchanged"


OPERATIONS = ("create", "cancel", "amend", "leverage", "stop", "read")
WRITES = ("create", "cancel", "amend", "leverage", "stop")
R, U, D, A, N = Verdict.REJECTED, Verdict.UNKNOWN, Verdict.DUPLICATE, Verdict.UNAVAILABLE, Verdict.UNCHANGED

ERRORS = "error.mdx"  # docs/v5/error.mdx: UTA (10000-110137) and Spot Trade (170001-170810) tables
RATE_LIMIT = "rate-limit/rate-limit.mdx"
LEVERAGE = "position/leverage.mdx"
CREATE = "order/create-order.mdx"
DEMO = "demo.mdx"  # demo trading serves only the endpoints it lists; others answer 10032

# 10032 on demo: an endpoint this environment does not serve (pilot.exchange.errors.UNSUPPORTED)


@dataclass(frozen=True, slots=True)
class CodeRule:
    """One retCode: its family, its verdict per operation, and the documentation page it comes from."""

    code: int
    family: str
    create: Verdict
    cancel: Verdict
    amend: Verdict
    leverage: Verdict
    stop: Verdict
    read: Verdict
    source: str
    meaning: str

    def verdict(self, operation: str) -> Verdict:
        verdict: Verdict = getattr(self, operation)
        return verdict


def _no(code: int, family: str, meaning: str, source: str = ERRORS) -> CodeRule:
    """A definite refusal whatever was asked."""
    return CodeRule(code, family, R, R, R, R, R, R, source, meaning)


def _in_flight(code: int, meaning: str, *, writes: tuple[str, ...] = WRITES) -> CodeRule:
    """A write that may have happened (listed operations) and a read that did not get through."""
    verdicts = {op: (U if op in writes else R) for op in WRITES}
    return CodeRule(code, "processing", **verdicts, read=A, source=ERRORS, meaning=meaning)


def _busy(code: int, family: str, meaning: str, *, write: Verdict = R, source: str = ERRORS) -> CodeRule:
    """Not processed, try later: a rejection with a retry time on writes, unavailable on reads."""
    return CodeRule(code, family, write, write, write, write, write, A, source, meaning)


def _duplicate(code: int, meaning: str) -> CodeRule:
    """A client order id already in use: on create, the earlier send got through."""
    return CodeRule(code, "duplicate", D, U, U, R, R, R, ERRORS, meaning)


def _unchanged(code: int, operation: str, meaning: str, source: str) -> CodeRule:
    """What "not modified" means for `operation` (the value already is the asked one); else a refusal."""
    verdicts = {op: (N if op == operation else R) for op in WRITES}
    return CodeRule(code, "unchanged", **verdicts, read=R, source=source, meaning=meaning)


RULES: tuple[CodeRule, ...] = (
    # ---- UTA general (error.mdx "UTA") -------------------------------------------------------------
    _in_flight(10000, "Server Timeout"),
    _no(10001, "params", "Request parameter error"),
    _no(10002, "auth", "The request time exceeds the time window range"),
    _no(10003, "auth", "API key is invalid (key and environment do not match)"),
    _no(10004, "auth", "Error sign"),
    _no(10005, "permission", "Permission denied, check your API key permissions"),
    _busy(10006, "rate_limit", "Too many visits: the API rate limit", source=RATE_LIMIT),
    _no(10007, "auth", "User authentication failed"),
    _no(10008, "permission", "Common banned, check your account mode"),
    _no(10009, "permission", "Service restricted for your region"),
    _no(10010, "auth", "Unmatched IP, check your API key's bound IP addresses"),
    _duplicate(10014, "Invalid duplicate request"),
    _in_flight(10016, "Server error / service is restarting"),
    _no(10017, "params", "Route not found"),
    # Not in error.mdx: what api-demo.bybit.com answers for an endpoint demo trading does not serve
    # ("Demo trading are not supported."); demo.mdx lists the ones it does. Nothing was done.
    _no(10032, UNSUPPORTED, "Demo trading does not support this endpoint", source=DEMO),
    _busy(10018, "rate_limit", "Exceeded the IP rate limit (deprecated code)"),
    _no(10024, "permission", "Compliance rules triggered"),
    _no(10027, "permission", "Transactions are banned"),
    _no(10028, "permission", "The API can only be accessed by unified account users"),
    _no(10029, "params", "The requested symbol is invalid (symbol whitelist)"),
    _busy(429, "busy", "The trading service is under high load, retry", write=A),
    _busy(30034, "rate_limit", "Option: too fast to cancel"),
    _busy(30035, "rate_limit", "Option: too fast to cancel, try it later"),
    # ---- derivatives orders and positions (error.mdx "UTA", 110xxx) --------------------------------
    _no(110001, "not_found", "Order does not exist"),
    _no(110003, "params", "Order price exceeds the allowable range"),
    _no(110004, "balance", "Wallet balance is insufficient"),
    _no(110005, "position", "Position status error"),
    _no(110006, "balance", "The assets are estimated to be unable to cover the position margin"),
    _no(110007, "balance", "Available balance is insufficient"),
    _no(110008, "not_found", "The order has been completed or cancelled"),
    _no(110009, "limits", "The number of stop orders exceeds the maximum allowable limit"),
    _no(110010, "not_found", "The order has been cancelled"),
    _no(110012, "balance", "Insufficient available balance"),
    _no(110013, "position", "Cannot set leverage due to risk limit level"),
    _no(110017, "position", "orderQty will be truncated to zero (reduce-only with no position)"),
    _no(110020, "limits", "Not allowed to have more than 500 active orders"),
    _no(110021, "position", "Not allowed to exceed position limits due to open interest"),
    _no(110023, "trading", "You can only reduce your position on this contract"),
    _no(110025, "position", "Position mode has not been modified"),
    _no(110026, "position", "Cross/isolated margin mode has not been modified"),
    _no(110029, "position", "Hedge mode is not supported for this symbol"),
    _no(110036, "position", "Leverage cannot change in cross margin mode"),
    _no(110038, "position", "Leverage cannot change in portfolio margin mode"),
    _no(110042, "trading", "Pre-delivery: only reducing orders are accepted"),
    _unchanged(110043, "leverage", "Set leverage has not been modified", LEVERAGE),
    _no(110044, "balance", "Available margin is insufficient"),
    _no(110045, "balance", "Wallet balance is insufficient"),
    _no(110051, "balance", "Available balance cannot cover the lowest price of the current market"),
    _no(110052, "balance", "Available balance is insufficient to set the price"),
    _no(110053, "balance", "Available balance cannot cover the current market price and upper limit"),
    _no(110057, "params", "Conditional or limit order contains TP/SL related params"),
    _no(110058, "position", "Cannot set TP/SL: remaining position size too small"),
    _no(110064, "params", "The modified quantity cannot be at or below the filled quantity"),
    _no(110066, "trading", "Trading is currently not allowed"),
    _duplicate(110072, "OrderLinkedID is duplicate"),
    _no(110074, "trading", "This contract is not live"),
    _in_flight(110079, "The order is processing and cannot be operated, try again later"),
    _no(110090, "position", "The position may exceed the max limit: lower the leverage"),
    _no(110094, "params", "Order notional value below the lower limit"),
    _no(110120, "params", "Order price below the price limitation"),
    _no(110121, "params", "Order price above the price limitation"),
    # error.mdx also says 34040 when a required parameter is missing; Pilot always sends tpslMode and
    # positionIdx with a stopLoss or takeProfit, so for its requests it means "already so".
    _unchanged(34040, "stop", "Not modified: the TP/SL already is the asked value", ERRORS),
    # ---- spot (error.mdx "Spot Trade", 170xxx) ------------------------------------------------------
    _in_flight(170001, "Internal error"),
    _busy(170005, "rate_limit", "Too many new orders"),
    _in_flight(170007, "Timeout waiting for response from backend server"),
    _in_flight(170032, "Network error, try again later"),
    _in_flight(170035, "Submitted to the system for processing"),
    _no(170105, "params", "Parameter was empty"),
    _no(170115, "params", "Invalid timeInForce"),
    _no(170116, "params", "Invalid orderType"),
    _no(170117, "params", "Invalid side"),
    _no(170121, "params", "Invalid symbol"),
    _no(170124, "params", "Order amount too large"),
    _no(170130, "params", "Data sent for a parameter is not valid"),
    _no(170131, "balance", "Balance insufficient"),
    _no(170132, "params", "Order price too high"),
    _no(170133, "params", "Order price lower than the minimum"),
    _no(170134, "params", "Order price decimal too long"),
    _no(170136, "params", "Order quantity lower than the minimum"),
    _no(170137, "params", "Order volume decimal too long"),
    _no(170139, "not_found", "Order has been filled"),
    _no(170140, "params", "Order value below the lower limit (minOrderAmt)"),
    _duplicate(170141, "Duplicate clientOrderId"),
    _no(170142, "not_found", "Order has been cancelled"),
    _no(170143, "not_found", "Cannot be found on order book"),
    _in_flight(170146, "Order creation timeout", writes=("create",)),
    _in_flight(170147, "Order cancellation timeout", writes=("cancel",)),
    _no(170148, "params", "Market order amount decimal too long"),
    _no(170149, "other", "Create order failed"),
    _no(170150, "other", "Cancel order failed"),
    _no(170151, "trading", "The trading pair is not open yet"),
    _no(170157, "trading", "The trading pair is not available for API trading"),
    _no(170190, "not_found", "Cancel order has been finished"),
    _busy(170191, "busy", "Can not cancel order, try again later"),
    _no(170193, "params", "Buy order price above the limit"),
    _no(170194, "params", "Sell order price below the limit"),
    _in_flight(170212, "Cancel order request processing", writes=("cancel",)),
    _no(170213, "not_found", "Order does not exist"),  # a definite answer about an order id, not a fault
    _in_flight(170234, "System Error"),
    _busy(170222, "rate_limit", "Too many requests in this time frame"),
    _in_flight(170310, "Order modification timeout", writes=("amend",)),
    _no(170311, "other", "Order modification failed"),
    _no(170312, "params", "The current order does not support modification"),
    _no(170313, "params", "The modified quantity cannot be less than the filled quantity"),
    _no(170371, "params", "Order price below the price limitation"),
    _no(170372, "params", "Order price above the price limitation"),
    _no(170381, "params", "Order quantity too large"),
    _no(170382, "params", "Order quantity too large"),
    _no(170810, "limits", "Cannot exceed 500 conditional, TP/SL and active orders"),
)

TABLE: dict[int, CodeRule] = {rule.code: rule for rule in RULES}
UNLISTED = "other"

# What Bybit's refusal says about the key itself when asked for the key's permissions (error.mdx): 10003
# "API key is invalid. Check whether the key and domain are matched" (another environment's key, another
# site's host, or one mistyped or deleted), 10004 "Error sign" (not this key's secret), 10010 "Unmatched IP".
KEY_REFUSALS: dict[int, ErrorCode] = {
    10003: ErrorCode.KEY_UNKNOWN_ON_HOST,
    10004: ErrorCode.KEY_SECRET_WRONG,
    10010: ErrorCode.KEY_IP_NOT_ALLOWED,
}


def rule_for(code: int) -> CodeRule:
    """The row for a retCode; an unlisted code is a definite refusal of family "other"."""
    return TABLE.get(code) or _no(code, UNLISTED, "not in Pilot's table")


def verdict(code: int, operation: str) -> Verdict:
    """What `code` means for `operation` (one of OPERATIONS)."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    return rule_for(code).verdict(operation)


# ---- HTTP statuses ----------------------------------------------------------------------------------

IP_BAN_SECONDS = 600  # rate-limit.mdx: "403, access too frequent": wait at least 10 minutes


def http_verdict(status: int, operation: str) -> Verdict:
    """What a non-200 HTTP status means (error.mdx "HTTP Code").

    4xx are refusals at Bybit's gateway, before any engine sees the request: 400 bad method, 401 bad or
    missing key, 403 the IP is banned (rate limit breached; lifted after ten minutes) or the region is
    refused, 404 wrong path or category, 429 system-level protection ("retry"). Nothing was executed, so
    reads and writes alike are UNAVAILABLE. A 5xx comes from behind the gateway: a write may have been
    executed (UNKNOWN), a read simply failed (UNAVAILABLE).
    """
    if status >= 500 and operation != "read":
        return U
    return A
