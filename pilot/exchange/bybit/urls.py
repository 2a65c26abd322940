"""Where the Bybit adapter may connect: demo, testnet, the paper exchange on loopback, and mainnet (the `bybit`
environment, a live home only) on one of the hosts Bybit lists, chosen by name.

Mainnet's hosts (guide.mdx, "REST API Base Endpoint"): api.bybit.com and api.bytick.com, and the regional
sites' hosts. A live home's key names one of them; nothing else is a mainnet address, so a typo, a proxy or
a look-alike host is refused rather than sent a signed request.

The test seam (`standing_in_for_mainnet`): the suite runs a live home against a loopback stub (the paper
exchange, in Bybit's recorded shapes). The home still names a listed Bybit host; only the connection is
routed to 127.0.0.1, and only while Python code in the same process holds the context manager. No flag,
environment variable, file in the home or MCP tool reaches it, so a `pilot` process started from a shell
always connects to the Bybit host its key names, and a stand-in can only ever be a loopback address.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

ENVIRONMENTS = {"bybit-demo": "https://api-demo.bybit.com", "bybit-testnet": "https://api-testnet.bybit.com"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MAINNET = "bybit"
# Each REST host Bybit lists for mainnet, with its WebSocket host (wss://stream.<site>) and who it is for.
MAINNET_HOSTS: dict[str, tuple[str, str]] = {
    "api.bybit.com": ("stream.bybit.com", "global"),
    "api.bytick.com": ("stream.bytick.com", "global, alternative domain"),
    "api.bybit.nl": ("stream.bybit.nl", "Netherlands"),
    "api.bybit.tr": ("stream.bybit.tr", "Turkey"),
    "api.bybit.kz": ("stream.bybit.kz", "Kazakhstan"),
    "api.bybitgeorgia.ge": ("stream.bybitgeorgia.ge", "Georgia"),
    "api.bybit.ae": ("stream.bybit.ae", "United Arab Emirates"),
    "api.bybit.eu": ("stream.bybit.eu", "EEA"),
    "api.bybit.id": ("stream.bybit.id", "Indonesia"),
}


def is_loopback_base(url: str, scheme: str) -> bool:
    """Whether `url` is `scheme`://<a loopback host>:PORT and nothing more: no path, query, fragment or user."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError when it is not a port number
    except ValueError:
        return False
    return (
        parts.scheme == scheme
        and parts.hostname in LOOPBACK_HOSTS
        and port is not None
        and parts.path in ("", "/")
        and not (parts.query or parts.fragment or parts.username or parts.password)
    )


def mainnet_url(host: str) -> str:
    """The base URL of the mainnet host `host` (one of MAINNET_HOSTS), or ValueError naming them."""
    cleaned = host.strip().lower().removeprefix("https://").rstrip("/")
    if cleaned not in MAINNET_HOSTS:
        raise ValueError(
            f"{host!r} is not a Bybit mainnet host: use one of {', '.join(MAINNET_HOSTS)} "
            "(the one your Bybit site gives: api.bybit.com unless you signed up on a regional site)"
        )
    return f"https://{cleaned}"


def mainnet_stream_url(base_url: str) -> str:
    """The private WebSocket base of a mainnet REST base URL (or its loopback stand-in's)."""
    routed = route(base_url)
    if routed.ws_url is not None:
        return routed.ws_url
    host = urlsplit(mainnet_url(urlsplit(base_url).hostname or "")).hostname or ""
    return f"wss://{MAINNET_HOSTS[host][0]}"


def check_base_url(environment: str, base_url: str | None) -> str:
    """Return the base URL to use, or raise ValueError: demo, testnet, loopback paper, or a listed mainnet
    host for `bybit` (named, never defaulted)."""
    if environment not in (*ENVIRONMENTS, "paper", MAINNET):
        raise ValueError(
            f"Unknown environment {environment!r}: use bybit-demo, bybit-testnet, bybit or paper."
        )
    if environment == "paper":
        if not base_url:
            raise ValueError(
                "The paper environment needs the paper exchange's base URL (http://127.0.0.1:PORT)."
            )
        if not is_loopback_base(base_url, "http"):
            raise ValueError(_refusal(base_url))
        return base_url.rstrip("/")
    if environment == MAINNET:
        if not base_url:
            raise ValueError("bybit (mainnet) needs its host named: " + ", ".join(MAINNET_HOSTS))
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme != "https" or parts.path or parts.port or parts.query or parts.username:
            raise ValueError(_refusal(base_url))
        return mainnet_url(parts.hostname or "")
    allowed = ENVIRONMENTS[environment]
    if base_url is not None and base_url.rstrip("/") != allowed:
        raise ValueError(_refusal(base_url))
    return allowed


def _refusal(base_url: str) -> str:
    return (
        f"Refusing base URL {base_url!r}. Allowed: https://api-demo.bybit.com (bybit-demo), "
        "https://api-testnet.bybit.com (bybit-testnet), https://<a Bybit mainnet host> (bybit: "
        f"{', '.join(MAINNET_HOSTS)}), or http://127.0.0.1:PORT / localhost / [::1] for the paper exchange."
    )


@dataclass(frozen=True, slots=True)
class Route:
    """Where requests for a base URL actually go: the URL itself, or a loopback stand-in for mainnet."""

    rest_url: str
    ws_url: str | None = None

    @property
    def stand_in(self) -> bool:
        return self.ws_url is not None


_stand_in: Route | None = None
_stand_in_lock = threading.Lock()


def route(base_url: str) -> Route:
    """Where a request for `base_url` goes. Only a mainnet host can be stood in for, and only by loopback."""
    with _stand_in_lock:
        stand_in = _stand_in
    host = urlsplit(base_url).hostname or ""
    if stand_in is not None and host in MAINNET_HOSTS:
        return stand_in
    return Route(base_url)


@contextlib.contextmanager
def standing_in_for_mainnet(rest_url: str, ws_url: str) -> Iterator[Route]:
    """Route every mainnet host to the loopback stub at `rest_url` (http) and `ws_url` (ws) while held.

    For the test suite only: it is reached from Python code in the same process, never from the command
    line, an environment variable, a home's files or an agent. Off loopback it raises ValueError.
    """
    global _stand_in
    if not (is_loopback_base(rest_url, "http") and is_loopback_base(ws_url, "ws")):
        raise ValueError("a stand-in for mainnet must be a loopback stub (http:// and ws://127.0.0.1:PORT)")
    with _stand_in_lock:
        if _stand_in is not None:
            raise ValueError("a stand-in for mainnet is already in place")
        _stand_in = Route(rest_url.rstrip("/"), ws_url.rstrip("/"))
        held = _stand_in
    try:
        yield held
    finally:
        with _stand_in_lock:
            _stand_in = None
