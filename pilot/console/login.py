"""Who may open the console: one login secret per home (stored hashed), sessions, CSRF tokens, a rate limit.

The secret is issued by `pilot console token` and shown once; only its SHA-256 is kept, in
`journal/console-login.json` (mode 0600). It is not an agent's bearer token: those live in the store's
`tokens` table and are never consulted here, so no agent token opens the console. Issuing a new secret
ends every session opened with the old one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pilot.app.runtime.runtime import Home

PREFIX = "pilotconsole_"
SESSION_SECONDS = 12 * 3600


def secret_path(home: Path) -> Path:
    return Home(home).database_path.parent / "console-login.json"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def issue_secret(home: Path) -> str:
    """A new console login secret for `home`, returned this once; its hash replaces any earlier one."""
    secret = PREFIX + secrets.token_urlsafe(32)
    path = secret_path(home)
    record = {"sha256": _digest(secret), "issued_at": datetime.now(UTC).isoformat(timespec="seconds")}
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(record, file)
    os.replace(partial, path)
    return secret


def current_digest(home: Path) -> str | None:
    """The hash of the secret in force, or None if none was issued (or the file cannot be read)."""
    try:
        record = json.loads(secret_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    digest = record.get("sha256") if isinstance(record, dict) else None
    return digest if isinstance(digest, str) and len(digest) == 64 else None


def secret_matches(home: Path, given: str) -> bool:
    digest = current_digest(home)
    return digest is not None and hmac.compare_digest(digest, _digest(given))


@dataclass
class Session:
    csrf: str
    digest: str  # the secret it was opened with: a new secret ends it
    opened: float


@dataclass
class Sessions:
    """Open console sessions, in memory (a restart of the console logs everyone out)."""

    home: Path
    clock: Callable[[], float] = time.monotonic
    _open: dict[str, Session] = field(default_factory=dict)

    def open(self) -> tuple[str, Session]:
        digest = current_digest(self.home)
        assert digest is not None  # only called after secret_matches
        session_id = secrets.token_urlsafe(32)
        session = Session(csrf=secrets.token_urlsafe(32), digest=digest, opened=self.clock())
        self._open[session_id] = session
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._open.get(session_id)
        if session is None:
            return None
        digest = current_digest(self.home)
        stale = self.clock() - session.opened > SESSION_SECONDS
        if stale or digest is None or not hmac.compare_digest(digest, session.digest):
            self._open.pop(session_id, None)
            return None
        return session

    def close(self, session_id: str | None) -> None:
        if session_id:
            self._open.pop(session_id, None)


def csrf_matches(session: Session, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(session.csrf.encode(), (given or "").encode())


@dataclass
class LoginLimiter:
    """At most `attempts` failed logins in any `window` seconds; past that every login waits."""

    attempts: int = 5
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _failures: deque[float] = field(default_factory=deque)

    def retry_after(self) -> int:
        """Seconds until a login may be tried again; 0 if now."""
        now = self.clock()
        while self._failures and now - self._failures[0] >= self.window:
            self._failures.popleft()
        if len(self._failures) < self.attempts:
            return 0
        return max(1, int(self.window - (now - self._failures[0])) + 1)

    def failed(self) -> None:
        self._failures.append(self.clock())
