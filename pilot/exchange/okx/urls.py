"""Where the OKX adapter may connect: OKX demo trading, OKX's real account (a live home's) on a host OKX
lists, chosen by name, or a stand-in for either on loopback.

OKX's demo trading is its live API (https://www.okx.com) with the header `x-simulated-trading: 1` on every
request, and keys created in the demo account (a live key is refused there, and a demo key on live: code
50101). So the environment, not the address, says which it is: okx-demo always sends the header.

A loopback http URL with a port (127.0.0.1, localhost, [::1]) is accepted for okx-demo too: nothing on this
machine is OKX, so it can only be a stub in OKX's wire format (the tests' OKX front), which gets the demo
header like OKX does. Every other address is refused.

OKX's real account (LIVE, `okx`: a live home only, behind a human's opt-in, pilot.app.human.going_live) is
the same API without the demo header, on the REST host of the OKX site the account was opened on
(LIVE_HOSTS). The host is named by the human, never defaulted: a key works only on its own site's host
(elsewhere OKX answers 50119, "API key doesn't exist"), and a typo, a proxy or a look-alike is refused
rather than sent a signed request. A loopback address is never accepted for LIVE.

The test seams (`standing_in_for_okx_demo`, `standing_in_for_okx_live`), as Bybit's mainnet has one
(pilot.exchange.bybit.urls): a home's okx-demo key names no address, and its okx key one of LIVE_HOSTS, so
a server assembled as `pilot serve` assembles it reaches OKX's own. While Python code in the same process
holds the context manager, those addresses are routed to a loopback stub (which names its WebSocket side
itself: pilot.exchange.okx.stream.discover_stand_in). No flag, environment variable, file in the home or
MCP tool reaches them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

DEMO = "okx-demo"
LIVE = "okx"  # OKX's real account: a live home only, on a host named among LIVE_HOSTS
ENVIRONMENTS = {DEMO: "https://www.okx.com"}
# The REST hosts OKX's API docs list for its production trading services (www.okx.com/docs-v5/en,
# "Overview > Production Trading Services"; the regional sites' API domains as OKX's US and EEA platforms
# publish them, and as OKX.Net and the open-source OKX clients use them): the host of the site the account
# was opened on, with who it is for. my.okx.com is the EEA platform's website, not an API host.
LIVE_HOSTS: dict[str, str] = {
    "www.okx.com": "global",
    "us.okx.com": "United States (accounts opened on OKX US)",
    "eea.okx.com": "EEA (accounts opened on my.okx.com, OKX's EEA platform)",
}
# Names a human may give for their OKX site that are not API hosts, with the API host of that site: the EEA
# platform's website (my.okx.com: its API is eea.okx.com, as OKX's EEA API docs give it) and the bare domain.
SITE_API_HOSTS: dict[str, str] = {"my.okx.com": "eea.okx.com", "okx.com": "www.okx.com"}
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


def live_url(host: str) -> str:
    """The base URL of OKX's real-account host `host` (one of LIVE_HOSTS), or ValueError naming them."""
    cleaned = _cleaned(host)
    if cleaned in SITE_API_HOSTS:
        raise ValueError(
            f"{host!r} is an OKX website, not its API host: the API of that site is {SITE_API_HOSTS[cleaned]}"
        )
    if cleaned not in LIVE_HOSTS:
        raise ValueError(
            f"{host!r} is not an OKX API host: use one of {', '.join(LIVE_HOSTS)} (the one of the OKX site "
            "your account is on: www.okx.com unless you signed up on OKX US or OKX's EEA platform)"
        )
    return f"https://{cleaned}"


def api_host_of(host: str) -> str | None:
    """The API host of the OKX site `host` names when it is a website's name (my.okx.com: eea.okx.com), else
    None."""
    return SITE_API_HOSTS.get(_cleaned(host))


def _cleaned(host: str) -> str:
    return host.strip().lower().removeprefix("https://").rstrip("/")


def check_base_url(environment: str, base_url: str | None) -> str:
    """The base URL to use, or ValueError: OKX demo's own address or a loopback stand-in for it, or for LIVE
    a listed host, named (never defaulted, never loopback)."""
    if environment == LIVE:
        if not base_url:
            raise ValueError(f"okx (OKX's real account) needs its host named: {', '.join(LIVE_HOSTS)}")
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme != "https" or parts.path or parts.port or parts.query or parts.username:
            raise ValueError(f"Refusing base URL {base_url!r} for okx: use https://<{'|'.join(LIVE_HOSTS)}>.")
        return live_url(parts.hostname or "")
    if environment not in ENVIRONMENTS:
        raise ValueError(f"Unknown OKX environment {environment!r}: use okx-demo or okx.")
    if base_url is None or base_url.rstrip("/") == ENVIRONMENTS[environment]:
        return ENVIRONMENTS[environment]
    if is_loopback_base(base_url):
        return base_url.rstrip("/")
    raise ValueError(
        f"Refusing base URL {base_url!r} for {environment}: OKX demo trading is "
        f"{ENVIRONMENTS[environment]} (or, for tests, http://127.0.0.1:PORT)."
    )


# The loopback stub standing in for each environment while a test holds one (DEMO, LIVE).
_stand_ins: dict[str, str] = {}
_stand_in_lock = threading.Lock()


def route(base_url: str, environment: str = DEMO) -> str:
    """Where requests for `base_url` go: OKX demo's own address to the demo stand-in while one is held, a
    live host to the live stand-in while one is held."""
    with _stand_in_lock:
        stand_in = _stand_ins.get(LIVE if environment == LIVE else DEMO)
    if environment == LIVE:
        host = urlsplit(base_url).hostname or ""
        return stand_in if stand_in is not None and host in LIVE_HOSTS else base_url
    return stand_in if stand_in is not None and base_url == ENVIRONMENTS[DEMO] else base_url


@contextlib.contextmanager
def standing_in_for_okx_demo(rest_url: str) -> Iterator[str]:
    """Route OKX demo's address to the loopback stub at `rest_url` (http://127.0.0.1:PORT) while held.

    For the test suite only: reached from Python code in the same process, never from the command line, an
    environment variable, a home's files or an agent. Off loopback it raises ValueError.
    """
    with _standing_in(DEMO, rest_url, "OKX demo") as held:
        yield held


@contextlib.contextmanager
def standing_in_for_okx_live(rest_url: str) -> Iterator[str]:
    """Route every OKX real-account host (LIVE_HOSTS) to the loopback stub at `rest_url` while held.

    For the test suite only, like `standing_in_for_okx_demo`. Off loopback it raises ValueError.
    """
    with _standing_in(LIVE, rest_url, "OKX's real account") as held:
        yield held


@contextlib.contextmanager
def _standing_in(environment: str, rest_url: str, what: str) -> Iterator[str]:
    if not is_loopback_base(rest_url):
        raise ValueError(f"a stand-in for {what} must be a loopback stub (http://127.0.0.1:PORT)")
    with _stand_in_lock:
        if environment in _stand_ins:
            raise ValueError(f"a stand-in for {what} is already in place")
        _stand_ins[environment] = held = rest_url.rstrip("/")
    try:
        yield held
    finally:
        with _stand_in_lock:
            _stand_ins.pop(environment, None)
