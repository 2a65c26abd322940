"""Bybit's request limits kept on this side of the wire, so a burst is never what gets a live key banned.

Bybit counts per IP (600 requests in any 5 s to api.bybit.com and the regional hosts; "403, access too
frequent" bans the IP for at least 10 minutes) and per UID and endpoint each second (10/s to create, amend
or cancel a linear order, 5/s for DCP, 50/s for order and position reads: rate-limit.mdx). Pilot keeps
below both, with a margin (the docs advise against running at the edge): before a request leaves, it takes
a place in every window it counts in, waiting for one when none is free. A request that would have to wait
longer than MAX_WAIT_SECONDS is not sent at all and fails as ExchangeUnavailable (nothing was sent, try
later): waiting is not a resend, and a write is never sent twice.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable

IP_LIMIT = (500, 5.0)  # requests per seconds, for every request from this address (Bybit's: 600 per 5 s)
# Per UID, per second, by pybit method: Bybit's UTA limits for linear (spot's are equal or higher).
ENDPOINT_LIMITS: dict[str, int] = {
    "place_order": 10,
    "amend_order": 10,
    "cancel_order": 10,
    "cancel_all_orders": 10,
    "set_leverage": 10,
    "set_trading_stop": 10,
    "set_dcp": 5,
    "get_open_orders": 50,
    "get_order_history": 50,
    "get_executions": 50,
    "get_positions": 50,
    "get_wallet_balance": 50,
    "get_closed_pnl": 50,
}
DEFAULT_ENDPOINT_LIMIT = 10  # a signed endpoint not listed above: the lowest common limit
MAX_WAIT_SECONDS = 2.0


class RateLimiter:
    """Places in sliding windows: one for the IP, one per endpoint. Thread-safe (pybit runs in workers)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._sent: dict[str, list[float]] = {}

    def reserve(self, method: str) -> float | None:
        """Take a place for one `method` request: the seconds to wait before sending it, or None when that
        would be over MAX_WAIT_SECONDS (nothing is reserved then: the request must not be sent)."""
        windows = [("ip", *IP_LIMIT), (method, ENDPOINT_LIMITS.get(method, DEFAULT_ENDPOINT_LIMIT), 1.0)]
        with self._lock:
            now = self._clock()
            at = now
            for name, limit, span in windows:
                times = self._sent.setdefault(name, [])
                del times[: bisect.bisect_right(times, now - span)]  # gone from every window from now on
                if len(times) >= limit:
                    # any window holding `at` then holds at most the limit - 1 places after times[-limit]
                    at = max(at, times[-limit] + span)
            if at - now > MAX_WAIT_SECONDS:
                return None
            for name, _, _ in windows:
                bisect.insort(self._sent[name], at)
            return at - now
