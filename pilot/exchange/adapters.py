"""Which venue's adapter serves an environment: the one place outside a venue's own package that names it.

The use cases reach a venue through these and the port (pilot.app.road.ports), never through a venue's
package: `connect_exchange` builds the REST adapter, `open_streams` its WebSocket streams, and
`paper_streams_url` asks an attached paper exchange where its streams are. The environments Pilot knows
(ENVIRONMENTS): Bybit V5's bybit-demo, bybit-testnet and bybit (mainnet, a live home only), paper (the Bybit
V5 paper exchange on loopback, pilot.paper), and OKX's okx-demo (OKX demo trading) and okx (OKX's real
account, a live home only), pilot.exchange.okx. LIVE_ENVIRONMENTS are the real-money ones: each on a host the
human names among its venue's (`live_url`). The streams' client is imported
only when streams are opened, and OKX's adapter only for an OKX environment (a Bybit or paper server does
not import it); OKX's streams are opened by its adapter, which holds the key's passphrase and the
contracts its sizes are counted in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pilot.core.errors import ErrorCode
from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.bybit.legacy_rows import LEGACY_REQUEST_KEYS
from pilot.exchange.bybit.urls import MAINNET_HOSTS, mainnet_url, standing_in_for_mainnet
from pilot.exchange.stream_events import StreamEvent

if TYPE_CHECKING:
    from pilot.exchange.bybit.stream import BybitStreams
    from pilot.exchange.bybit.stream import DcpConnection as BybitDcp
    from pilot.exchange.okx.adapter import OkxExchange
    from pilot.exchange.okx.stream import OkxStreams


__all__ = [
    "LEGACY_REQUEST_KEYS",
    "LIVE_ENVIRONMENTS",
    "MAINNET_HOSTS",
    "api_host_of",
    "connect_exchange",
    "key_refusal",
    "live_host_notes",
    "live_hosts",
    "live_url",
    "mainnet_url",
    "open_dcp_connection",
    "open_streams",
    "paper_streams_url",
    "standing_in_for_mainnet",
]

BYBIT_ENVIRONMENTS = ("paper", "bybit-demo", "bybit-testnet", "bybit")
OKX_ENVIRONMENTS = ("okx-demo", "okx")
ENVIRONMENTS = (*BYBIT_ENVIRONMENTS, *OKX_ENVIRONMENTS)
LIVE_ENVIRONMENTS = ("bybit", "okx")  # real money: a live home of that venue only


def live_hosts(environment: str) -> tuple[str, ...]:
    """The hosts a live environment's key may name (Bybit's mainnet hosts, OKX's API hosts)."""
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.urls import LIVE_HOSTS

        return tuple(LIVE_HOSTS)
    return tuple(MAINNET_HOSTS)


def live_url(environment: str, host: str) -> str:
    """The base URL of the live environment's host `host`, or ValueError naming the hosts it may be."""
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.urls import live_url as okx_live_url

        return okx_live_url(host)
    return mainnet_url(host)


def live_host_notes(environment: str) -> dict[str, str]:
    """Each host a live environment's key may name, with whom it is for (the site an account is opened on)."""
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.urls import LIVE_HOSTS

        return dict(LIVE_HOSTS)
    return {host: who for host, (_, who) in MAINNET_HOSTS.items()}


def api_host_of(environment: str, host: str) -> str | None:
    """The API host a live environment's key should name when `host` is its venue's website rather than an
    API host (OKX's EEA site my.okx.com: eea.okx.com), else None."""
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.urls import api_host_of as okx_api_host_of

        return okx_api_host_of(host)
    return None


def key_refusal(environment: str, code: int) -> ErrorCode | None:
    """What the venue's refusal `code` says about the key itself (its host, demo or live, its IP list, its
    passphrase, the key or secret as typed), or None for a code that says nothing the human can fix on it."""
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.error_codes import KEY_REFUSALS

        return KEY_REFUSALS.get(code)
    from pilot.exchange.bybit.ret_codes import KEY_REFUSALS as BYBIT_KEY_REFUSALS

    return BYBIT_KEY_REFUSALS.get(code)


def spelling(environment: str) -> Callable[[str], str]:
    """How the environment's venue spells a market that Pilot's defaults name in capitals and digits
    (BTCUSDT): as it is (Bybit, the paper exchange), or OKX's BASE-QUOTE (BTC-USDT)."""
    if environment not in OKX_ENVIRONMENTS:
        return _as_it_is
    from pilot.exchange.okx import markets as okx_markets

    return okx_markets.spelled


def _as_it_is(symbol: str) -> str:
    return symbol


def streams_served(environment: str) -> bool:
    """Whether Pilot has a streams client for the environment's venue (every one it connects to)."""
    return environment in ENVIRONMENTS


def connect_exchange(
    environment: str,
    *,
    api_key: str,
    api_secret: str,
    passphrase: str | None = None,
    base_url: str | None = None,
    timeout_seconds: float = 10,
    record_dir: Path | None = None,
    clock: Callable[[], datetime] | None = None,
) -> BybitExchange | OkxExchange:
    """The adapter for `environment` (no request is sent yet). `passphrase` is OKX's third secret.

    Raises:
        ValueError: an unknown environment, a base URL off its allowlist (mainnet and live included), or no
            key.
    """
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.adapter import OkxExchange

        return OkxExchange.connect(
            environment,
            api_key=api_key,
            api_secret=api_secret,
            passphrase=passphrase,
            base_url=base_url,
            timeout_seconds=timeout_seconds,
            clock=clock,
            record_dir=record_dir,
        )
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
    exchange: object = None,
) -> BybitStreams | OkxStreams:
    """The streams' client of `environment` for `markets` and the account, every event given to `sink` (not
    connected yet: its `start` connects). OKX's come from its adapter (`exchange`); `paper_ws_url` is then
    the WebSocket of a stand-in for OKX on loopback.

    Raises:
        ValueError: the environment has no stream URL Pilot connects to.
    """
    if not streams_served(environment):
        raise ValueError(f"{environment}: Pilot reads this venue over REST only; it has no streams.")
    if environment in OKX_ENVIRONMENTS:
        from pilot.exchange.okx.adapter import OkxExchange

        if not isinstance(exchange, OkxExchange):
            raise ValueError(f"{environment}: its streams are opened by its own adapter")
        return exchange.open_streams(markets, sink, paper_ws_url)
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
