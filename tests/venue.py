"""The one way the tests connect a venue's adapter: to a venue on loopback (the paper exchange, a replay stub,
an interposer, the OKX front), as `pilot serve` connects it. A module of its own, light on imports:
processes the tests spawn import it too.

    adapter = connect_adapter(paper)                           # a paper exchange: its URL, key and secret
    adapter = connect_adapter(stub.url)                        # a replay stub: any key will do
    adapter = connect_adapter(url, key, secret, timeout_seconds=0.3, record_dir=path)
    adapter = connect_okx(front)                               # the OKX front (tests/okx_front): okx-demo
    adapter = connect_okx(stub.url)                            # an OKX replay stub: any key will do

The tests of `BybitExchange.connect` and `OkxExchange.connect` themselves (which environments and URLs they
refuse) call them directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.okx.adapter import OkxExchange


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


class OkxVenue(LoopbackVenue, Protocol):
    """A stand-in for OKX demo trading on loopback (tests/okx_front.OkxFront): its key needs a passphrase."""

    @property
    def passphrase(self) -> str: ...


def connect_okx(venue: OkxVenue | str, **options: Any) -> OkxExchange:
    """The OKX adapter for okx-demo on `venue` (the OKX front, or a base URL of a stub that checks no
    signature). `options` are connect's: timeout_seconds (10 by default, as `pilot serve`), clock."""
    if isinstance(venue, str):
        url, key, secret, passphrase = venue, "k", "s", "p"
    else:
        url, key, secret, passphrase = venue.url, venue.api_key, venue.api_secret, venue.passphrase
    return OkxExchange.connect(
        "okx-demo", api_key=key, api_secret=secret, passphrase=passphrase, base_url=url, **options
    )


def modules_naming(seam: str) -> set[str]:
    """The modules of the `pilot` package (paths below it) whose source names `seam`: a venue's test seam
    (a stand-in on loopback for an address a shell's `pilot` always reaches) may be named where it is
    defined and nowhere a command, variable, file or tool could reach it."""
    package = Path(__file__).resolve().parents[1] / "pilot"
    return {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if seam in path.read_text(encoding="utf-8")
    }
