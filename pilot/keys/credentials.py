"""Exchange credentials in memory: validated on the way in, redacted in every repr and str."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pilot.keys.environments import Environment
from pilot.keys.errors import InvalidKeyInput

_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_HINT_CHARACTERS = 4
_HINT_MINIMUM_LENGTH = 12  # shorter keys show no hint: four characters would be too much of them


@dataclass(frozen=True, slots=True)
class Credentials:
    """An API key and secret (and OKX's passphrase) for one environment. `repr` and `str` never show any
    of them."""

    environment: Environment
    key_id: str
    api_key: str = field(repr=False)
    api_secret: str = field(repr=False)
    base_url: str | None = None  # the paper exchange's loopback URL, or mainnet's host (https://api...)
    read_only: bool = False
    passphrase: str | None = field(default=None, repr=False)  # OKX's third secret; None elsewhere

    def __repr__(self) -> str:
        return (
            f"Credentials(environment={self.environment.value!r}, key_id={self.key_id!r}, "
            f"api_key='…{key_hint(self.api_key)}', api_secret=<hidden>, "
            f"passphrase={'<hidden>' if self.passphrase is not None else None}, base_url={self.base_url!r})"
        )

    __str__ = __repr__


def key_hint(api_key: str) -> str:
    """Return the last four characters of a long enough API key, or nothing for a short one."""
    return api_key[-_HINT_CHARACTERS:] if len(api_key) >= _HINT_MINIMUM_LENGTH else ""


def new_key_id() -> str:
    """Return a short random id for a stored key; it says nothing about the key itself."""
    return f"key-{secrets.token_hex(4)}"


def parse_environment(value: str) -> Environment:
    """Return the Environment named `value`, or raise InvalidKeyInput listing the valid names."""
    try:
        return Environment(value)
    except ValueError:
        names = ", ".join(environment.value for environment in Environment)
        raise InvalidKeyInput(f"Unknown exchange environment {value!r}.", f"use one of: {names}.") from None


def new_credentials(
    environment: Environment,
    api_key: str,
    api_secret: str,
    base_url: str | None,
    passphrase: str | None = None,
) -> Credentials:
    """Validate typed-in values and return Credentials under a fresh key id.

    The passphrase is required exactly where the environment's keys have one (OKX's), refused elsewhere.
    """
    venue = environment.venue_name
    return Credentials(
        environment=environment,
        key_id=new_key_id(),
        api_key=_clean(api_key, "API key", venue),
        api_secret=_clean(api_secret, "API secret", venue),
        base_url=checked_address(environment, base_url),
        passphrase=checked_passphrase(environment, passphrase),
    )


def checked_passphrase(environment: Environment, passphrase: str | None) -> str | None:
    """The passphrase to store: OKX's, as typed (spaces around it dropped); None for a venue without one."""
    if not environment.needs_passphrase:
        if passphrase:
            raise InvalidKeyInput(
                f"{environment.value} keys have no passphrase.", "give only the API key and its secret."
            )
        return None
    if passphrase is None:
        raise InvalidKeyInput(
            f"An {environment.venue_name} key needs the passphrase chosen when it was created.",
            "type the key, its secret and its passphrase (with --stdin: three lines).",
        )
    return _clean(passphrase, "API passphrase", environment.venue_name)


def _clean(value: str, label: str, venue: str) -> str:
    cleaned = value.strip()
    if not cleaned:
        raise InvalidKeyInput(f"The {label} is empty.", f"type the {label} exactly as {venue} shows it.")
    if not cleaned.isascii() or not cleaned.isprintable() or " " in cleaned:
        raise InvalidKeyInput(
            f"The {label} contains spaces or characters an API {label.split()[-1]} never has.",
            f"copy the {label} again from {venue} and paste only that.",
        )
    return cleaned


def given_address(environment: Environment, url: str | None, host: str | None) -> str | None:
    """The address `pilot keys` was given, with --url (the paper exchange's) or --host (a live key's), or
    InvalidKeyInput naming --host where the environment takes none."""
    if host and not environment.needs_host:
        where = "its address with --url" if environment.needs_url else "a fixed address"
        raise InvalidKeyInput(
            f"--host is for a live key (bybit, okx) only; {environment.value} has {where}.",
            "drop --host" + (" and pass --url http://127.0.0.1:PORT." if environment.needs_url else "."),
        )
    return host or url


def checked_address(environment: Environment, base_url: str | None) -> str | None:
    """Return the address to store: None for demo and testnet, a listed host's URL for a live environment
    (bybit, okx), a loopback http URL with a port for paper."""
    if environment.needs_host:
        return _live_address(environment, base_url)
    if not environment.needs_url:
        if base_url:
            raise InvalidKeyInput(
                f"--url is for the paper exchange only; {environment.value} has a fixed address.",
                "drop --url.",
            )
        return None
    if not base_url:
        raise InvalidKeyInput(
            "The paper exchange needs its address.", "pass --url http://127.0.0.1:PORT (the simulator's)."
        )
    if not _is_loopback_address(base_url):
        raise InvalidKeyInput(
            f"The paper exchange address {base_url!r} is not a loopback http address with a port.",
            "pass --url http://127.0.0.1:PORT; the paper exchange only runs on this machine.",
        )
    return base_url.rstrip("/")


def _live_address(environment: Environment, base_url: str | None) -> str:
    from pilot.exchange.adapters import api_host_of, live_hosts, live_url

    hosts = ", ".join(live_hosts(environment.value))
    if not base_url:
        raise InvalidKeyInput(
            f"{environment.value} ({environment.venue_name}, real money) needs its host named.",
            f"pass --host with the one your {environment.venue_name} site gives: {hosts}.",
        )
    try:
        return live_url(environment.value, base_url)
    except ValueError as error:
        meant = api_host_of(environment.value, base_url)
        fix = f"pass --host {meant}" if meant else f"pass --host with one of {hosts}"
        raise InvalidKeyInput(str(error) + ".", fix + ".") from None


def _is_loopback_address(base_url: str) -> bool:
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme == "http"
        and parts.hostname in _LOOPBACK_HOSTS
        and port is not None
        and parts.path in {"", "/"}
        and not (parts.query or parts.username or parts.password)
    )
