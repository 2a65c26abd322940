"""The OKX adapter: Pilot's venue port (pilot.app.road.ports) over OKX's v5 REST API, demo trading first.

Safety, in order of importance:

* Writes are sent exactly once: the client never resends (pilot.exchange.okx.client).
* Only OKX demo trading (https://www.okx.com with `x-simulated-trading: 1`), OKX's real account on a host
  OKX lists (`okx`: a live home's only), or a loopback stand-in for either (pilot.exchange.okx.urls).
* The key, its secret and its passphrase never leave its clients (REST, and the streams' login): failures
  are the outcomes of pilot.exchange.errors, decided in one place, and OKX's own words travel only in
  `untrusted_text`.
* Sizes are judged in coins and sent in contracts, converted exactly; stops are judged as OKX applies them
  (pilot.core.venues.OKX: a stop sent with an order covers the quantity that filled).

The adapter is its parts: the market reads (market_reads.py), the account and order reads (account_reads.py)
and the writes (order_writes.py), each over the one client. OKX's JSON is read and written in payloads.py.
Its WebSocket streams (pilot.exchange.okx.stream) are opened by `open_streams`, with the same key and the
contracts the market reads learnt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pilot.core.venues import OKX, VenueProfile
from pilot.exchange.listings import Listings
from pilot.exchange.okx.client import Clock, Keys, Transport, system_clock
from pilot.exchange.okx.market_reads import INSTRUMENT_TTL_SECONDS
from pilot.exchange.okx.markets import Contract
from pilot.exchange.okx.order_writes import OrderWrites
from pilot.exchange.okx.urls import DEMO, check_base_url, is_loopback_base, route
from pilot.exchange.recordings import Recorder
from pilot.exchange.stream_events import StreamEvent

if TYPE_CHECKING:
    from pilot.exchange.okx.stream import OkxStreams

log = logging.getLogger("pilot.exchange.okx")


class OkxExchange(OrderWrites):
    """The Exchange port over OKX v5 REST (pilot.app.road.ports.Exchange). Build it with `connect`."""

    profile: VenueProfile = OKX  # how OKX applies stops, for the judgements (pilot.core.venues)

    def __init__(
        self,
        transport: Transport,
        environment: str,
        base_url: str,
        keys: Keys | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self._http = transport
        self._keys = keys
        self._clock = clock
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
        record_dir: Path | None = None,
    ) -> OkxExchange:
        """Build an adapter for okx-demo or okx (no request is sent yet). With `record_dir`, every request and its
        answer are written there, redacted, in the format pilot.exchange.recordings loads and replays.

        Raises:
            ValueError: an unknown or live environment, a base URL off the allowlist, or no key, secret or
                passphrase.
        """
        # OKX's own, unless the suite stands a stub in
        url = route(check_base_url(environment, base_url), environment)
        if not api_key or not api_secret or not passphrase:
            raise ValueError("An OKX api key, its secret and its passphrase are required.")
        keys = Keys(api_key, api_secret, passphrase)
        recorder = None
        if record_dir is not None:
            recorder = Recorder(
                Path(record_dir),
                secrets=(api_key, api_secret, passphrase),
                environment=environment,
                recorded_by="pilot (OkxExchange.connect(record_dir=...))",
            )
        transport = Transport(
            url,
            keys,
            demo=environment == DEMO,
            timeout_seconds=timeout_seconds,
            clock=clock or system_clock,
            recorder=recorder,
        )
        return cls(transport, environment, url, keys, clock or system_clock)

    def __repr__(self) -> str:
        return f"OkxExchange(environment={self.environment!r}, base_url={self.base_url!r})"

    def open_streams(
        self,
        markets: Mapping[str, Iterable[str]],
        sink: Callable[[StreamEvent], None],
        loopback_url: str | None = None,
    ) -> OkxStreams:
        """The account's streams for `markets` (not connected yet: its `start` connects), on OKX demo's
        WebSocket or the real account's of this key's host, or for a stand-in on loopback on `loopback_url`
        (ws://127.0.0.1:PORT), else on the one it names itself (GET /pilot/streams; blocking: call it off the
        event loop).

        Raises:
            ValueError: no key, or a stand-in that names no WebSocket on loopback.
        """
        from pilot.exchange.okx.stream import OkxStreams, discover_stand_in

        if self._keys is None:
            raise ValueError("OKX's private streams need the key, its secret and its passphrase.")
        if loopback_url is None and is_loopback_base(self.base_url):
            try:
                loopback_url = discover_stand_in(self.base_url, demo=self.environment == DEMO)
            except ValueError as error:
                log.warning("OKX streams off, facts are read over REST: %s", error)
                raise
        return OkxStreams(
            self.environment,
            keys=self._keys,
            markets=markets,
            sink=sink,
            contract=self._contracts.get,
            clock=self._clock,
            loopback_url=loopback_url,
            rest_host=urlsplit(self.base_url).hostname,
        )

    async def close(self) -> None:
        self._http.close()
