"""Which venue's adapter serves an environment: the one place outside a venue's own package that names it.

The use cases reach a venue through these and the port (pilot.app.road.ports), never through a venue's
package: `connect_exchange` builds the REST adapter, `open_streams` its WebSocket streams, and
`paper_streams_url` asks an attached paper exchange where its streams are. Every environment Pilot knows
today is Bybit V5's: bybit-demo, bybit-testnet, bybit (mainnet, a live home only), and paper (the Bybit V5 paper exchange on loopback,
pilot.paper). The streams' client is imported only when streams are opened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.bybit.urls import MAINNET_HOSTS, mainnet_url, standing_in_for_mainnet
from pilot.exchange.stream_events import StreamEvent

if TYPE_CHECKING:
    from pilot.exchange.bybit.stream import BybitStreams
    from pilot.exchange.bybit.stream import DcpConnection as BybitDcp


__all__ = [
    "MAINNET_HOSTS",
    "connect_exchange",
    "mainnet_url",
    "open_dcp_connection",
    "open_streams",
    "paper_streams_url",
    "standing_in_for_mainnet",
]


def connect_exchange(
    environment: str,
    *,
    api_key: str,
    api_secret: str,
    base_url: str | None = None,
    timeout_seconds: float = 10,
    record_dir: Path | None = None,
    clock: Callable[[], datetime] | None = None,
) -> BybitExchange:
    """The adapter for `environment` (no request is sent yet).

    Raises:
        ValueError: an unknown environment, a base URL off its allowlist (mainnet included), or no key.
    """
    return BybitExchange.connect(
        environment,
        api_key=api_key,
        api_secret=api_secret,
        base_url=base_url,
        timeout_seconds=timeout_seconds,
        record_dir=record_dir,
        clock=clock,
    )


def open_streams(
    environment: str,
    *,
    api_key: str,
    api_secret: str,
    markets: Mapping[str, Iterable[str]],
    sink: Callable[[StreamEvent], None],
    paper_ws_url: str | None = None,
) -> BybitStreams:
    """The streams' client of `environment` for `markets` and the account, every event given to `sink` (not
    connected yet: its `start` connects).

    Raises:
        ValueError: the environment has no stream URL Pilot connects to.
    """
    from pilot.exchange.bybit.stream import BybitStreams

    return BybitStreams(
        environment,
        api_key=api_key,
        api_secret=api_secret,
        markets=markets,
        sink=sink,
        paper_ws_url=paper_ws_url,
    )


def open_dcp_connection(
    base_url: str,
    *,
    api_key: str,
    api_secret: str,
    products: Iterable[str],
    sink: Callable[[str, dict[str, Any]], None],
) -> BybitDcp:
    """The private connection that keeps Bybit's Disconnect Cancel All held off while Pilot runs (not
    connected yet: its `start` connects; blocking)."""
    from pilot.exchange.bybit.stream import DcpConnection

    return DcpConnection(base_url, api_key=api_key, api_secret=api_secret, products=products, sink=sink)


def paper_streams_url(rest_url: str) -> str:
    """The WebSocket URL the paper exchange at `rest_url` names for its streams. Blocking.

    Raises:
        NoStreams (pilot.exchange.stream_events): it names none, or one Pilot does not connect to.
    """
    from pilot.exchange.bybit.stream import discover_paper_streams

    return discover_paper_streams(rest_url)
