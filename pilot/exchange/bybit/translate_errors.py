"""Bybit's failures in Pilot's words: every pybit, requests or urllib3 error becomes one of the outcomes of
pilot.exchange.errors, here and nowhere else.

Every retCode is sorted through the table of pilot.exchange.bybit.ret_codes (per operation: create, cancel,
amend, leverage, read), every HTTP status through `ret_codes.http_verdict`. HTTP 403 is Bybit's IP ban:
ExchangeUnavailable with `retry_at` ten minutes ahead, on reads and writes (the gateway refused the request;
nothing was executed). pybit's exception text contains the signed request (api key included): messages are
built from Pilot's own words, and the exchange's retMsg travels only in `untrusted_text`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from pybit.exceptions import FailedRequestError, InvalidRequestError
from urllib3.exceptions import MaxRetryError, NewConnectionError

from pilot.exchange.bybit import ret_codes as codes
from pilot.exchange.bybit.payloads import ms_to_datetime
from pilot.exchange.bybit.ret_codes import Verdict
from pilot.exchange.errors import (
    DuplicateOrderLinkId,
    ExchangeError,
    ExchangeRejected,
    ExchangeUnavailable,
    OutcomeUnknown,
)

UNTRUSTED_LIMIT = 500


def system_clock() -> datetime:
    return datetime.now(UTC)


def _retry_at(headers: Any) -> datetime | None:
    try:
        stamp = headers.get("X-Bapi-Limit-Reset-Timestamp") if headers is not None else None
        return ms_to_datetime(stamp) if stamp else None
    except (TypeError, ValueError):
        return None


def _connect_failed(error: requests.exceptions.RequestException) -> bool:
    """True when the request never left: no connection could be opened."""
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return True
    reason = error.args[0] if error.args else None
    if isinstance(reason, MaxRetryError):
        reason = reason.reason
    return isinstance(reason, NewConnectionError)


def translate(
    error: Exception,
    action: str,
    *,
    operation: str,
    now: datetime | None = None,
    order_link_id: str = "",
) -> ExchangeError:
    """Map a pybit/requests exception to an outcome, in our own words (no request text).

    `operation` is "create", "cancel", "amend", "leverage" or "read" (see pilot.exchange.bybit.ret_codes).
    """
    write = operation != "read"
    if isinstance(error, InvalidRequestError):
        code = int(error.status_code)
        return _from_ret_code(code, str(error.message), error.resp_headers, action, operation, order_link_id)
    if isinstance(error, FailedRequestError):
        return _from_http(error, action, operation, now or system_clock())
    if isinstance(error, requests.exceptions.RequestException):
        if _connect_failed(error):
            return ExchangeUnavailable(f"{action}: could not connect to the exchange; nothing was sent.")
        if write:
            kind = "timed out" if isinstance(error, requests.exceptions.Timeout) else "lost the connection"
            return OutcomeUnknown(
                f"{action}: the request was sent and the exchange {kind} before answering. "
                "Look it up; do not resend."
            )
        return ExchangeUnavailable(
            f"{action}: the exchange did not answer in time or dropped the connection."
        )
    if write:
        return OutcomeUnknown(f"{action}: the answer could not be read; the request may have been executed.")
    return ExchangeUnavailable(f"{action}: the answer could not be read.")


def _from_http(error: FailedRequestError, action: str, operation: str, now: datetime) -> ExchangeError:
    status = int(error.status_code)
    unreadable = error.message.startswith("Conflict")  # pybit's synthetic 409 for a body that is not JSON
    retries = error.message.startswith("Bad Request. Retries")  # pybit's synthetic 400 after a retry code
    what = "a body that is not JSON" if unreadable else f"HTTP {status}"
    if operation != "read" and (unreadable or retries):
        return OutcomeUnknown(
            f"{action}: the exchange answered {what}; the request may have been executed. "
            "Look it up; do not resend."
        )
    verdict = Verdict.UNAVAILABLE if unreadable else codes.http_verdict(status, operation)
    if verdict is Verdict.UNKNOWN:
        return OutcomeUnknown(
            f"{action}: the exchange answered {what}; the request may have been executed. "
            "Look it up; do not resend."
        )
    if status == 403:  # rate-limit.mdx: the IP is banned for at least ten minutes; nothing was executed
        return ExchangeUnavailable(
            f"{action}: the exchange refused this IP (HTTP 403: IP rate limit breached or region "
            "refused); nothing was executed. Bybit lifts the ban after ten minutes.",
            retry_at=now + timedelta(seconds=codes.IP_BAN_SECONDS),
            http_status=status,
        )
    return ExchangeUnavailable(
        f"{action}: the exchange answered {what}; nothing usable came back.",
        retry_at=_retry_at(error.resp_headers),
        http_status=status,
    )


def _from_ret_code(
    code: int, text: str, headers: Any, action: str, operation: str, order_link_id: str = ""
) -> ExchangeError:
    untrusted = text[:UNTRUSTED_LIMIT]
    rule = codes.rule_for(code)
    verdict = rule.verdict(operation)
    if verdict is Verdict.DUPLICATE:
        return DuplicateOrderLinkId(
            f"{action}: the exchange says an order with client order id {order_link_id} already exists "
            f"(retCode {code}): an earlier send got through. Look it up; do not resend.",
            order_link_id=order_link_id,
            ret_code=code,
            untrusted_text=untrusted,
        )
    if verdict is Verdict.UNKNOWN:
        return OutcomeUnknown(
            f"{action}: the exchange answered retCode {code} ({rule.family}: still processing or timed "
            "out inside the exchange); the outcome is not known. Look it up; do not resend.",
            untrusted_text=untrusted,
            ret_code=code,
        )
    if verdict is Verdict.UNAVAILABLE:
        return ExchangeUnavailable(
            f"{action}: the exchange did not process it (retCode {code}, {rule.family}); try again later.",
            untrusted_text=untrusted,
            retry_at=_retry_at(headers),
            ret_code=code,
        )
    return ExchangeRejected(
        f"{action}: the exchange refused it (retCode {code}, {rule.family}).",
        ret_code=code,
        family=rule.family,
        untrusted_text=untrusted,
        retry_at=_retry_at(headers) if rule.family in ("rate_limit", "busy") else None,
    )
