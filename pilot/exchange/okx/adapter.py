"""The OKX adapter: Pilot's venue port (pilot.app.road.ports) over OKX's v5 REST API, demo trading first.

Safety, in order of importance:

* Writes are sent exactly once: the client never resends (pilot.exchange.okx.client).
* Only OKX demo trading (https://www.okx.com with `x-simulated-trading: 1`) or a loopback stand-in for it
  (pilot.exchange.okx.urls). Live OKX is refused until Pilot trades live.
* The key, its secret and its passphrase never leave the client: failures are the outcomes of
  pilot.exchange.errors, decided in one place, and OKX's own words travel only in `untrusted_text`.
* Sizes are judged in coins and sent in contracts, converted exactly; stops are judged as OKX applies them
  (pilot.core.venues.OKX: a stop sent with an order covers the quantity that filled).

The adapter is its parts: the market reads (market_reads.py), the account and order reads (account_reads.py)
and the writes (order_writes.py), each over the one client. OKX's JSON is read and written in payloads.py.
Streams are not wired for OKX yet: facts are read over REST (pilot.exchange.adapters.open_streams says so).
"""

from __future__ import annotations

from pilot.core.venues import OKX, VenueProfile
from pilot.exchange.listings import Listings
from pilot.exchange.okx.client import Clock, Keys, Transport, system_clock
from pilot.exchange.okx.market_reads import INSTRUMENT_TTL_SECONDS
from pilot.exchange.okx.markets import Contract
from pilot.exchange.okx.order_writes import OrderWrites
from pilot.exchange.okx.urls import DEMO, check_base_url


class OkxExchange(OrderWrites):
    """The Exchange port over OKX v5 REST (pilot.app.road.ports.Exchange). Build it with `connect`."""

    profile: VenueProfile = OKX  # how OKX applies stops, for the judgements (pilot.core.venues)

    def __init__(self, transport: Transport, environment: str, base_url: str) -> None:
        self._http = transport
        self.environment = environment
        self.base_url = base_url
        self.listings = Listings(INSTRUMENT_TTL_SECONDS)
        self._contracts: dict[str, Contract] = {}
        self._mode: tuple[float, str] | None = None

    @classmethod
    def connect(
        cls,
        environment: str,
        *,
        api_key: str,
        api_secret: str,
        passphrase: str | None,
        base_url: str | None = None,
        timeout_seconds: float = 10,
        clock: Clock | None = None,
    ) -> OkxExchange:
        """Build an adapter for okx-demo (no request is sent yet).

        Raises:
            ValueError: an unknown or live environment, a base URL off the allowlist, or no key, secret or
                passphrase.
        """
        url = check_base_url(environment, base_url)
        if not api_key or not api_secret or not passphrase:
            raise ValueError("An OKX api key, its secret and its passphrase are required.")
        keys = Keys(api_key, api_secret, passphrase)
        transport = Transport(
            url, keys, demo=environment == DEMO, timeout_seconds=timeout_seconds, clock=clock or system_clock
        )
        return cls(transport, environment, url)

    def __repr__(self) -> str:
        return f"OkxExchange(environment={self.environment!r}, base_url={self.base_url!r})"

    async def close(self) -> None:
        self._http.close()
