"""Where the OKX adapter may connect: OKX demo trading, or a stand-in for it on loopback. Live is refused.

OKX's demo trading is its live API (https://www.okx.com) with the header `x-simulated-trading: 1` on every
request, and keys created in the demo account (a live key is refused there, and a demo key on live: code
50101). So the environment, not the address, says which it is: okx-demo always sends the header.

A loopback http URL with a port (127.0.0.1, localhost, [::1]) is accepted for okx-demo too: nothing on this
machine is OKX, so it can only be a stub in OKX's wire format (the tests' OKX front), which gets the demo
header like OKX does. Every other address is refused, the live environment included: Pilot trades live only
through a human's opt-in, which comes with the live issue (its name is kept here for it: LIVE).
"""

from __future__ import annotations

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
