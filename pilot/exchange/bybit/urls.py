"""Where the Bybit adapter may connect: demo, testnet, or the paper exchange on loopback. Mainnet is refused."""

from __future__ import annotations

from urllib.parse import urlsplit

ENVIRONMENTS = {"bybit-demo": "https://api-demo.bybit.com", "bybit-testnet": "https://api-testnet.bybit.com"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


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


def check_base_url(environment: str, base_url: str | None) -> str:
    """Return the base URL to use, or raise ValueError: only demo, testnet and loopback paper are allowed."""
    if environment not in (*ENVIRONMENTS, "paper"):
        raise ValueError(f"Unknown environment {environment!r}: use bybit-demo, bybit-testnet or paper.")
    if environment == "paper":
        if not base_url:
            raise ValueError(
                "The paper environment needs the paper exchange's base URL (http://127.0.0.1:PORT)."
            )
        if not is_loopback_base(base_url, "http"):
            raise ValueError(_refusal(base_url))
        return base_url.rstrip("/")
    allowed = ENVIRONMENTS[environment]
    if base_url is not None and base_url.rstrip("/") != allowed:
        raise ValueError(_refusal(base_url))
    return allowed


def _refusal(base_url: str) -> str:
    return (
        f"Refusing base URL {base_url!r}: mainnet is not supported in this version. Allowed: "
        "https://api-demo.bybit.com (bybit-demo), https://api-testnet.bybit.com (bybit-testnet), "
        "or http://127.0.0.1:PORT / localhost / [::1] for the paper exchange (paper)."
    )
