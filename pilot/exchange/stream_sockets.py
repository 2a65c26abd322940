"""How a venue's stream connections live, the same on every venue (pilot.exchange.bybit.stream,
pilot.exchange.okx.stream): each connection is kept by a thread of its own that opens it again whenever it
ends, at once after a healthy one (up STABLE_SECONDS), else after a pause (`next_pause`) of
RECONNECT_FIRST_SECONDS doubling up to RECONNECT_MAX_SECONDS; a handshake not finished in
CONNECT_TIMEOUT_SECONDS is abandoned and tried again; `start()` waits FIRST_OPEN_SECONDS for the first
opens; and a client's `close()` ends all of its connections within CLOSE_SECONDS (`close_all`).

Each venue keeps its own socket (its library, its wire, its login); this module imports neither venue, and
no socket library: what it needs of a connection is `Closing`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

CONNECT_TIMEOUT_SECONDS = 10.0  # a handshake not finished by then is abandoned and tried again
RECONNECT_FIRST_SECONDS = 0.1  # the first pause after a failed attempt; it doubles up to the next
RECONNECT_MAX_SECONDS = 5.0
STABLE_SECONDS = 1.0  # a connection up this long was healthy: when it ends, reconnect at once
FIRST_OPEN_SECONDS = 5.0  # how long start() waits for the first connections (they keep trying after)
CLOSE_SECONDS = 2.0  # the longest closing a client's connections takes


class Closing(Protocol):
    """A connection kept by its own thread."""

    def stop(self) -> None:
        """Stop connecting and end the connection now, without waiting for the thread."""

    def join(self, deadline: float) -> None:
        """Wait until the thread ended or time.monotonic() reached `deadline`."""


def next_pause(previous: float | None, stable: bool) -> float:
    """Seconds to wait before connecting again: none after a healthy connection ended, else the first pause,
    then twice the previous one, up to RECONNECT_MAX_SECONDS."""
    if stable:
        return 0.0
    if not previous:
        return RECONNECT_FIRST_SECONDS
    return min(previous * 2, RECONNECT_MAX_SECONDS)


def keep_connecting(attempt: Callable[[], float | None], closed: threading.Event) -> None:
    """The body of a connection's thread: `attempt` one connection after another (each returns when it
    opened, on time.monotonic(), or None if it did not) until `closed` is set, pausing as `next_pause` says."""
    pause: float | None = None
    while not closed.is_set():
        try:
            opened_at = attempt()
        except Exception:  # the top of the thread: whatever the socket library raises, try again later
            opened_at = None
        stable = opened_at is not None and time.monotonic() - opened_at >= STABLE_SECONDS
        pause = next_pause(pause, stable)
        closed.wait(pause)


def close_all(connections: Iterable[Closing]) -> None:
    """Close every connection for good: all are stopped at once, then their threads are waited for until
    one deadline, so this returns within CLOSE_SECONDS however many there are, and nothing connects after."""
    stopping = list(connections)
    for connection in stopping:
        connection.stop()
    deadline = time.monotonic() + CLOSE_SECONDS
    for connection in stopping:
        connection.join(deadline)
