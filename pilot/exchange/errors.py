"""The three ways an exchange call can end badly, kept apart on purpose.

    ExchangeError
     ├── ExchangeRejected     the exchange answered with a definite no (a retCode); nothing was executed
     ├── ExchangeUnavailable  the request was not processed (connection refused before sending, HTTP 4xx
     │                        before acceptance, rate limited); safe to try again later
     └── OutcomeUnknown       a write may or may not have been executed (timeout after sending, 5xx,
                              a "processing" retCode, a broken connection): look it up, never resend

Messages here are Pilot's own words. Whatever the exchange said travels only in `untrusted_text`.
"""

from __future__ import annotations

from datetime import datetime


class ExchangeError(Exception):
    """Base of every exchange failure Pilot reports."""

    def __init__(self, message: str, *, untrusted_text: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.untrusted_text = untrusted_text


class ExchangeRejected(ExchangeError):
    """A definite refusal by the exchange, with its retCode and the family that code belongs to."""

    def __init__(
        self,
        message: str,
        *,
        ret_code: int,
        family: str,
        untrusted_text: str = "",
        retry_at: datetime | None = None,
    ) -> None:
        super().__init__(message, untrusted_text=untrusted_text)
        self.ret_code = ret_code
        self.family = family  # e.g. "auth", "rate_limit", "balance", "order_params", "duplicate", "position"
        self.retry_at = retry_at


class ExchangeUnavailable(ExchangeError):
    """The exchange could not be reached or did not process the request."""

    def __init__(self, message: str, *, untrusted_text: str = "", retry_at: datetime | None = None) -> None:
        super().__init__(message, untrusted_text=untrusted_text)
        self.retry_at = retry_at


class OutcomeUnknown(ExchangeError):
    """A write was sent and its result is not known. Never resend: look the order up."""
