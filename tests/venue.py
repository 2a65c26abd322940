"""The one way the tests connect the Bybit adapter: to a venue on loopback (the paper exchange, a replay stub,
an interposer), as `pilot serve` connects it to paper. A module of its own, light on imports: processes the
tests spawn import it too.

    adapter = connect_adapter(paper)                           # a paper exchange: its URL, key and secret
    adapter = connect_adapter(stub.url)                        # a replay stub: any key will do
    adapter = connect_adapter(url, key, secret, timeout_seconds=0.3, record_dir=path)

The tests of `BybitExchange.connect` itself (which environments and URLs it refuses) call it directly.
"""

from __future__ import annotations

from typing import Any, Protocol

from pilot.exchange.bybit.adapter import BybitExchange


class LoopbackVenue(Protocol):
    """What a running paper exchange (or a stand-in for one) says about where and how to reach it."""

    @property
    def url(self) -> str: ...
    @property
    def api_key(self) -> str: ...
    @property
    def api_secret(self) -> str: ...


def connect_adapter(
    venue: LoopbackVenue | str, api_key: str | None = None, api_secret: str | None = None, **options: Any
) -> BybitExchange:
    """The Bybit adapter on `venue` (a paper exchange, or a base URL), with the paper exchange's key and secret
    unless others are given (a stub that checks no signature takes any: "k", "s"). `options` are connect's:
    timeout_seconds (10 by default, as `pilot serve`), recv_window_ms, record_dir, clock."""
    if isinstance(venue, str):
        url, key, secret = venue, api_key or "k", api_secret or "s"
    else:
        url, key, secret = venue.url, api_key or venue.api_key, api_secret or venue.api_secret
    return BybitExchange.connect("paper", api_key=key, api_secret=secret, base_url=url, **options)
