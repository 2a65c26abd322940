"""The MCP sessions this process serves: when each began (maxSessionMinutes) and how many are open (the
dead-man's switch fires when the last one ends).

A session is one client's connection: stdio's (from the first call until stdin closes), an HTTP session of
protocol 2025-11-25 (its Mcp-Session-Id), or, for a client of protocol 2026-07-28, which has no sessions,
the calls made with its bearer token with no gap longer than the server's idle timeout. The server layer
names the session of each call (`Sessions.touch`); the session the call came in is a context variable, so
the use cases judging it (pilot.app.facts.gather) read its start without a parameter on every function.
Every moment here is a reading of the store's clock (pilot.store.monotonic): a session's age and idleness are
real time whatever the wall clock does.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta

from pilot.store import Instant, age

# When the session of the call being served began (None: no session, as for an action a human approved in
# the CLI that upkeep carries out).
SESSION_STARTED: ContextVar[Instant | None] = ContextVar("session_started", default=None)


@dataclass(slots=True)
class _Session:
    started: Instant
    seen: Instant
    expires: bool  # ended by being idle (an HTTP session or a token's calls), else only when told
    agent: str | None = None  # the named agent whose calls these are (None: no agent named)


@dataclass(slots=True)
class Sessions:
    """The sessions of this process. `idle`: how long an HTTP session may go without a call before it ends
    (the server's session idle timeout); stdio's and in-memory clients' end only when told."""

    idle: timedelta = timedelta(minutes=5)
    _open: dict[str, _Session] = field(default_factory=dict)
    ended: int = 0  # sessions that have ended so far
    last_beat: Instant | None = None  # when a call was last written to this process's heartbeat row
    # the same, and the sessions ended so far, for each named agent
    agent_beats: dict[str, Instant] = field(default_factory=dict)
    agent_ended: dict[str, int] = field(default_factory=dict)

    def touch(self, key: str, now: Instant, *, expires: bool = False, agent: str | None = None) -> Instant:
        """Note a call of session `key` (of `agent`, when named) at `now`; returns when the session began."""
        session = self._open.get(key)
        if session is None:
            session = self._open[key] = _Session(now, now, expires, agent)
        session.seen = now
        return session.started

    def end(self, key: str) -> bool:
        """The session `key` ended (stdin closed); whether it was open."""
        session = self._open.pop(key, None)
        if session is None:
            return False
        self.ended += 1
        if session.agent is not None:
            self.agent_ended[session.agent] = self.agent_ended.get(session.agent, 0) + 1
        return True

    def open_of(self, agent: str) -> int:
        """The sessions of `agent` open now."""
        return sum(1 for session in self._open.values() if session.agent == agent)

    def agents(self) -> set[str]:
        """The named agents with a session open now or ended."""
        return {s.agent for s in self._open.values() if s.agent is not None} | set(self.agent_ended)

    def expire(self, now: Instant) -> int:
        """End the HTTP sessions idle for longer than `idle`, as the server forgets them; how many ended."""
        gone = [key for key, s in self._open.items() if s.expires and _longer(age(now, s.seen), self.idle)]
        for key in gone:
            self.end(key)
        return len(gone)

    @property
    def open(self) -> int:
        return len(self._open)

    def connected(self) -> list[str]:
        """The sessions open now."""
        return list(self._open)

    def expires(self, key: str) -> bool:
        """Whether session `key` ends by being idle (an HTTP one) rather than when told."""
        session = self._open.get(key)
        return session is not None and session.expires


def _longer(length: timedelta | None, than: timedelta) -> bool:
    return length is not None and length > than


def session_age(now: Instant) -> timedelta | None:
    """How long the session of the call being served has lasted (None: not in a session)."""
    return age(now, SESSION_STARTED.get())
