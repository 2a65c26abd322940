"""The Bybit V5 adapter: Pilot's venue port (pilot.app.road.ports) over Bybit's REST API, through pybit.

Safety, in order of importance:

* Writes are sent exactly once: pybit's resends are off (pilot.exchange.bybit.transport).
* Only allowlisted base URLs: https://api-demo.bybit.com (bybit-demo), https://api-testnet.bybit.com
  (bybit-testnet), a mainnet host Bybit lists (bybit, a live home only) and, for "paper", a loopback http
  URL with a port (pilot.exchange.bybit.urls).
* Bybit's request limits are kept before a request leaves (pilot.exchange.bybit.rate_limits).
* pybit's exception text contains the signed request (api key included); it never leaves this package.
  Every failure is one of the outcomes of pilot.exchange.errors, decided in one place
  (pilot.exchange.bybit.translate_errors); the exchange's retMsg travels only in `untrusted_text`.

The adapter is its parts: the market reads (market_reads.py), the account and order reads
(account_reads.py) and the writes (order_writes.py), over one Transport. Pilot's requests become Bybit's
bodies, and Bybit's rows Pilot's models, in payloads.py alone.
"""

from __future__ import annotations

from pathlib import Path

from pilot.core.venues import BYBIT, VenueProfile
from pilot.exchange.bybit.account_reads import AccountReads
from pilot.exchange.bybit.market_reads import INSTRUMENT_TTL_SECONDS, MarketReads
from pilot.exchange.bybit.order_writes import OrderWrites
from pilot.exchange.bybit.rate_limits import RateLimiter
from pilot.exchange.bybit.translate_errors import system_clock
from pilot.exchange.bybit.transport import Clock, Transport, open_session
from pilot.exchange.bybit.urls import check_base_url
from pilot.exchange.listings import Listings


class BybitExchange(MarketReads, AccountReads, OrderWrites):
    """The Exchange port over Bybit V5 REST (pilot.app.road.ports.Exchange). Build it with `connect`.

    Each instance owns one pybit session and its worker threads (pilot.exchange.bybit.transport): pybit is
    synchronous, so every call runs in a worker thread and the event loop never blocks.
    """

    profile: VenueProfile = BYBIT  # how Bybit applies stops, for the judgements (pilot.core.venues)

    def __init__(self, transport: Transport, environment: str, base_url: str) -> None:
        self._http = transport
        self.environment = environment
        self.base_url = base_url
        self.listings = Listings(INSTRUMENT_TTL_SECONDS)

    @classmethod
    def connect(
        cls,
        environment: str,
        *,
        api_key: str,
        api_secret: str,
        base_url: str | None = None,
        timeout_seconds: float = 10,
        recv_window_ms: int = 5000,
        record_dir: Path | None = None,
        clock: Clock | None = None,
    ) -> BybitExchange:
        """Build an adapter for bybit-demo, bybit-testnet, bybit (mainnet) or paper (no request is sent yet).

        Args:
            record_dir: when given, every request and its answer are written there, redacted (no key,
                signature or secret), one JSON file each, in the format pilot.exchange.bybit.replay serves.
            clock: the time used for retry times (an IP ban's end); the system clock by default.

        Raises:
            ValueError: an unknown environment, a base URL off the allowlist (mainnet included), or no key.
        """
        url = check_base_url(environment, base_url)
        if not api_key or not api_secret:
            raise ValueError("An api key and its secret are required.")
        session, recorder = open_session(
            environment,
            url,
            api_key=api_key,
            api_secret=api_secret,
            timeout_seconds=timeout_seconds,
            recv_window_ms=recv_window_ms,
            record_dir=record_dir,
        )
        limiter = None if environment == "paper" else RateLimiter()  # the paper exchange keeps its own
        transport = Transport(session, clock=clock or system_clock, recorder=recorder, limiter=limiter)
        return cls(transport, environment, url)

    def __repr__(self) -> str:
        return f"BybitExchange(environment={self.environment!r}, base_url={self.base_url!r})"

    async def close(self) -> None:
        self._http.close()
