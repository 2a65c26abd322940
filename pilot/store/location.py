"""Where a home's store is: the embedded SQLite file (the default) or a PostgreSQL database several hosts share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pilot.store.postgres import redacted

SCHEMES = ("postgresql", "postgres")


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
