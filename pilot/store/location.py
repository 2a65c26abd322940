"""Where a home's store is: the embedded SQLite file (the default) or a PostgreSQL database several hosts share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit, urlunsplit

from pilot.store.errors import StoreError

SCHEMES = ("postgresql", "postgres")


def redacted(url: str) -> str:
    """The URL as it may be shown: without a password (user, host, port, database and options stay)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """A SQLite file (`path`) or a PostgreSQL URL (`url`, libpq's form: a password in it is never shown)."""

    path: Path | None = None
    url: str | None = None

    @classmethod
    def parse(cls, text: str) -> StoreLocation:
        """A PostgreSQL URL as given to `--store`, PILOT_STORE or the home's store.json.

        Raises:
            ValueError: not a postgresql:// URL with a host or a socket folder (the message says the form).
        """
        parts = urlsplit(text.strip())
        if parts.scheme not in SCHEMES or not (parts.netloc or "host=" in parts.query):
            raise ValueError(
                "a store is a PostgreSQL URL, postgresql://USER@HOST[:PORT]/DATABASE (libpq's form; keep the "
                "password in ~/.pgpass or PGPASSWORD, not in the URL); without one, the home's SQLite file"
            )
        return cls(url=text.strip())

    @property
    def kind(self) -> str:
        return "postgresql" if self.url is not None else "sqlite"

    @property
    def has_password(self) -> bool:
        return self.url is not None and urlsplit(self.url).password is not None

    def __str__(self) -> str:
        return redacted(self.url) if self.url is not None else str(self.path)


def postgres_engine() -> ModuleType:
    """pilot.store.postgres, imported only when a store is on PostgreSQL: its driver is an optional extra.

    Raises:
        StoreError: psycopg is not installed (the message says how to install it).
    """
    try:
        from pilot.store import postgres
    except ImportError as error:
        raise StoreError(
            "this Pilot has no PostgreSQL driver: install it with `pip install 'pilot[postgres]'` (psycopg 3)"
        ) from error
    return postgres
