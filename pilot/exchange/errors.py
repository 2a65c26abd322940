"""The three ways an exchange call can end badly, kept apart on purpose, and two refinements of them.

    ExchangeError
     ├── ExchangeRejected         the exchange answered with a definite no (a retCode); nothing was executed
     ├── ExchangeUnavailable      the request was not processed (connection refused before sending, HTTP 4xx
     │                            before acceptance, an IP ban, rate limited); safe to try again later
     ├── OutcomeUnknown           a write may or may not have been executed (timeout after sending, 5xx,
     │    │                       a "processing" or "timeout" retCode, a broken connection): look it up,
     │    │                       never resend
     │    └── DuplicateOrderLinkId  the exchange says an order with this client order id already exists
     │                              (Bybit 110072 / 170141 / 10014, OKX 51016): an earlier send got
     │                              through; look it up
     └── UnsupportedPositionMode  the account holds the symbol in hedge mode (Bybit's positionIdx 1/2,
                                  OKX's long/short mode); Pilot reads and sizes one-way (net) positions
                                  only, so it refuses instead of guessing

Messages here are Pilot's own words. Whatever the exchange said travels only in `untrusted_text`.

Every error has `retry_at`: the time before which asking again will not help (a rate limit's reset, the
end of an IP ban), None when the exchange gave none. Reads and writes carry it alike.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

UNSUPPORTED = "unsupported"  # the family of a refusal for an endpoint this environment does not serve


class ExchangeError(Exception):
    """Base of every exchange failure Pilot reports."""

    def __init__(self, message: str, *, untrusted_text: str = "", retry_at: datetime | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.untrusted_text = untrusted_text
        self.retry_at = retry_at


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
        super().__init__(message, untrusted_text=untrusted_text, retry_at=retry_at)
        self.ret_code = ret_code
        self.family = family  # e.g. "auth", "rate_limit", "balance", "params", "not_found", "position"

    @property
    def unlisted(self) -> bool:
        """Whether a read of one symbol was refused because the exchange lists no such instrument."""
        return self.family in ("not_found", "params")

    @property
    def unsupported(self) -> bool:
        """Whether this environment does not serve the endpoint at all (no answer will ever come)."""
        return self.family == UNSUPPORTED


class ExchangeUnavailable(ExchangeError):
    """The exchange could not be reached or did not process the request."""

    def __init__(
        self,
        message: str,
        *,
        untrusted_text: str = "",
        retry_at: datetime | None = None,
        http_status: int | None = None,
        ret_code: int | None = None,
    ) -> None:
        super().__init__(message, untrusted_text=untrusted_text, retry_at=retry_at)
        self.http_status = http_status  # e.g. 403: Bybit's IP ban (ten minutes)
        self.ret_code = ret_code


class OutcomeUnknown(ExchangeError):
    """A write was sent and its result is not known. Never resend: look the order up."""

    def __init__(self, message: str, *, untrusted_text: str = "", ret_code: int | None = None) -> None:
        super().__init__(message, untrusted_text=untrusted_text)
        self.ret_code = ret_code  # the retCode that said so (170007, 170146, 110079, ...), None for transport


class DuplicateOrderLinkId(OutcomeUnknown):
    """The exchange refused a create because an order with the same client order id exists.

    Pilot sends each client order id once, so this means an earlier attempt reached the exchange: the order
    is there (or was, and has closed). It is never "nothing executed": look it up by `order_link_id`.
    """

    def __init__(self, message: str, *, order_link_id: str, ret_code: int, untrusted_text: str = "") -> None:
        super().__init__(message, untrusted_text=untrusted_text, ret_code=ret_code)
        self.order_link_id = order_link_id


class UnsupportedPositionMode(ExchangeError):
    """A symbol is held in hedge mode (two legs, positionIdx 1 and 2); Pilot supports one-way mode only.

    Reading the first leg as "the position" would be wrong (Buy 0.01 + Sell 0.03 is net -0.02), so no
    position is returned. The fix is the human's: switch the account to one-way mode for `symbol`.
    `gross_size` is what the legs hold together (0.04 there): the coin's exposure in that market for an
    order that has no position mode of its own (spot).
    """

    def __init__(
        self,
        message: str,
        *,
        symbol: str,
        category: str,
        gross_size: Decimal = Decimal(0),
        human_fix: str | None = None,
        per_symbol: bool = True,
    ) -> None:
        super().__init__(message)
        self.symbol = symbol
        self.category = category
        self.gross_size = gross_size
        # What only a human can do, in the venue's words (Bybit's by default: one-way mode per symbol), and
        # whether the mode is the symbol's alone (Bybit) or the whole account's (OKX: every market refused).
        self.human_fix = human_fix or (
            f"close both {symbol} legs and cancel its open orders on Bybit, then switch the Bybit account to "
            f"one-way mode for {symbol} ({category}); Bybit switches only a symbol with no position and no "
            "open order"
        )
        self.per_symbol = per_symbol
