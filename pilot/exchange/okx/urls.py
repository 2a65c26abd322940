"""Where the OKX adapter may connect: OKX demo trading, or a stand-in for it on loopback. Live is refused.

OKX's demo trading is its live API (https://www.okx.com) with the header `x-simulated-trading: 1` on every
request, and keys created in the demo account (a live key is refused there, and a demo key on live: code
50101). So the environment, not the address, says which it is: okx-demo always sends the header.

A loopback http URL with a port (127.0.0.1, localhost, [::1]) is accepted for okx-demo too: nothing on this
machine is OKX, so it can only be a stub in OKX's wire format (the tests' OKX front), which gets the demo
header like OKX does. Every other address is refused, the live environment included: Pilot trades live only
through a human's opt-in, which comes with the live issue (its name is kept here for it: LIVE).

The test seam (`standing_in_for_okx_demo`), as Bybit's mainnet has one (pilot.exchange.bybit.urls): a home's
okx-demo key names no address, so a server assembled as `pilot serve` assembles it reaches OKX's own. While
Python code in the same process holds the context manager, that address is routed to a loopback stub (which
names its WebSocket side itself: pilot.exchange.okx.stream.discover_stand_in). No flag, environment variable,
file in the home or MCP tool reaches it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

DEMO = "okx-demo"
LIVE = "okx-live"  # refused until Pilot trades live: the same API without the demo header
ENVIRONMENTS = {DEMO: "https://www.okx.com"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback_base(url: str) -> bool:
    """Whether `url` is http://<a loopback host>:PORT and nothing more."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme == "http"
        and parts.hostname in LOOPBACK_HOSTS
        and port is not None
        and parts.path in ("", "/")
        and not (parts.query or parts.fragment or parts.username or parts.password)
    )


def check_base_url(environment: str, base_url: str | None) -> str:
    """The base URL to use, or ValueError: OKX demo's own address, or a loopback stand-in for it."""
    if environment == LIVE:
        raise ValueError(
            "Refusing okx-live: Pilot does not trade live in this version. Use okx-demo (OKX demo trading)."
        )
    if environment not in ENVIRONMENTS:
        raise ValueError(f"Unknown OKX environment {environment!r}: use okx-demo.")
    if base_url is None or base_url.rstrip("/") == ENVIRONMENTS[environment]:
        return ENVIRONMENTS[environment]
    if is_loopback_base(base_url):
        return base_url.rstrip("/")
    raise ValueError(
        f"Refusing base URL {base_url!r} for {environment}: OKX demo trading is "
        f"{ENVIRONMENTS[environment]} (or, for tests, http://127.0.0.1:PORT)."
    )


_stand_in: str | None = None
_stand_in_lock = threading.Lock()


def route(base_url: str) -> str:
    """Where requests for `base_url` go: OKX demo's own address to the stand-in while one is held."""
    with _stand_in_lock:
        stand_in = _stand_in
    return stand_in if stand_in is not None and base_url == ENVIRONMENTS[DEMO] else base_url


@contextlib.contextmanager
def standing_in_for_okx_demo(rest_url: str) -> Iterator[str]:
    """Route OKX demo's address to the loopback stub at `rest_url` (http://127.0.0.1:PORT) while held.

    For the test suite only: reached from Python code in the same process, never from the command line, an
    environment variable, a home's files or an agent. Off loopback it raises ValueError.
    """
    global _stand_in
    if not is_loopback_base(rest_url):
        raise ValueError("a stand-in for OKX demo must be a loopback stub (http://127.0.0.1:PORT)")
    with _stand_in_lock:
        if _stand_in is not None:
            raise ValueError("a stand-in for OKX demo is already in place")
        _stand_in = held = rest_url.rstrip("/")
    try:
        yield held
    finally:
        with _stand_in_lock:
            _stand_in = None
