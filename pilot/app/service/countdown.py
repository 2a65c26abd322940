"""The venue's own backstop as a countdown, for a live home: OKX's cancel-all-after, set, verified, renewed.

Bybit's Disconnect Cancel All waits for a connection to drop (pilot.app.service.backstops); OKX's
cancel-all-after is a countdown that cancels every order of the account when it runs out, unless it is set
again first. So a live OKX home sets it at start to the dead-man's window (policy.json's
deadManSwitch.afterSeconds, brought into OKX's 10-120 s), verifies OKX's answer says that many seconds are
left, and renews it on upkeep's timer (every second in `pilot serve`) once a third of the window has passed,
on the store's clock: if Pilot dies or loses the network, OKX cancels every order when the window runs out.
(OKX takes one cancel-all-after a second per account: a renewal every 3-40 s per server stays far below it.)
A server that stops leaves the countdown running, as Bybit's DCP fires once Pilot's connection is gone:
what rests is cancelled a window after the last server of the home stopped renewing.

A start where it cannot be set or verified does not start (StartupError "cancel_after_not_set"). While
serving, a renewal that fails, or none for two thirds of the window (upkeep stalled), stops growing orders
at once (the gate's key check raises CountdownLapsed) while closes, shrinking orders and cancels still go;
the next renewal that passes lifts it. Each change (set, renewed after a failure, failed) is journaled (kind
`dcp`, with the venue's name for it). Like Bybit's DCP setting, the write is the adapter's own setting call,
sent once and read back from its answer; a renewal is the timer's next write, never a resend of one whose
outcome is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeGuard

from pilot.app.answers import entry_kinds
from pilot.app.road.ports import CancelAllAfter
from pilot.app.runtime.runtime import Runtime
from pilot.core.errors import ErrorCode
from pilot.exchange.errors import ExchangeError
from pilot.keys.errors import KeysError
from pilot.store import Instant, age

TOLERANCE_SECONDS = 2.0  # OKX's answer is dated by its clock a moment after it set the countdown
RETRY_AFTER = timedelta(seconds=5)  # after a failed renewal, the timer's next one


class CountdownFailed(Exception):
    """cancel-all-after could not be set or verified; the message says which (never the exchange's text)."""


class CountdownLapsed(KeysError):
    """The venue's countdown is not known to be running: growing orders stop until a renewal passes."""

    code = ErrorCode.CANCEL_AFTER_NOT_SET
    passes_within = RETRY_AFTER  # the timer's next renewal


def wants_countdown(adapter: object) -> TypeGuard[CancelAllAfter]:
    """Whether the live venue's backstop is a countdown (OKX) rather than Bybit's DCP."""
    return isinstance(adapter, CancelAllAfter)


def countdown_seconds(runtime: Runtime, adapter: CancelAllAfter) -> int | None:
    """The dead-man's window brought into the venue's range; None without one."""
    dead_man = runtime.policy().policy.dead_man_switch
    if dead_man is None or dead_man.after_seconds is None:
        return None
    low, high = adapter.countdown_range
    return max(low, min(high, int(dead_man.after_seconds)))


@dataclass
class Countdown:
    """One server's hold on the venue's countdown: upkeep's `tick` renews it, the gate's key check `require`s
    it before every write that could add risk."""

    runtime: Runtime
    adapter: CancelAllAfter
    seconds: int
    armed: Instant | None = None  # the last renewal that passed
    tried: Instant | None = None
    failed: bool = False

    @property
    def renew_every(self) -> timedelta:
        return timedelta(seconds=self.seconds / 3)

    async def set(self) -> None:
        """Set the countdown now and verify the answer.

        Raises:
            CountdownFailed: OKX refused it, did not answer, or says another countdown is left.
        """
        here = self.runtime.store.clock.read()
        self.tried = here
        try:
            left = await self.adapter.set_cancel_after(self.seconds)
        except ExchangeError as error:
            raise CountdownFailed(f"the exchange did not take it ({type(error).__name__})") from None
        if abs(left - self.seconds) > TOLERANCE_SECONDS:
            raise CountdownFailed(f"the exchange says {left:g} s are left, not {self.seconds} s")
        self.armed = here

    async def tick(self) -> None:
        """Upkeep's round: renew once a third of the window has passed (RETRY_AFTER after a failure)."""
        if not self._due(self.armed, self.renew_every) or not self._due(self.tried, RETRY_AFTER):
            return
        try:
            await self.set()
        except CountdownFailed as error:
            if not self.failed:
                self.failed = True
                await _journal(self.runtime, {"event": "renewal_failed", "problem": str(error)})
            return
        if self.failed:
            self.failed = False
            await _journal(self.runtime, {"event": "renewed", "seconds": self.seconds})

    def require(self) -> None:
        """Raise CountdownLapsed unless the countdown is known to be running with time to spare."""
        since = age(self.runtime.store.clock.read(), self.armed)
        stale = since is None or since >= 2 * self.renew_every
        if self.failed or stale:
            raise CountdownLapsed(
                "OKX's cancel-all-after could not be renewed: growing orders stop until it is "
                "(closes and cancels still go).",
                "check the network reaches OKX and the key may trade; Pilot renews it on its own timer.",
            )

    def _due(self, then: Instant | None, interval: timedelta) -> bool:
        since = age(self.runtime.store.clock.read(), then)
        return since is None or since >= interval


async def start_countdown(runtime: Runtime, adapter: CancelAllAfter) -> Countdown:
    """Set and verify the countdown for a live runtime; the caller hands it to the server's key watch
    (pilot.app.service.key_watch), whose `tick` renews it and whose check requires it.

    Raises:
        CountdownFailed: no dead-man's window, or it could not be set or verified (journaled).
    """
    seconds = countdown_seconds(runtime, adapter)
    try:
        if seconds is None:
            raise CountdownFailed("no dead-man's window to set it to")
        countdown = Countdown(runtime, adapter, seconds)
        await countdown.set()
    except CountdownFailed as error:
        await _journal(runtime, {"event": "failed", "problem": str(error)})
        raise
    await _journal(runtime, {"event": "set", "window_seconds": seconds, "verified": True})
    return countdown


async def _journal(runtime: Runtime, data: dict[str, Any]) -> None:
    entry = {"backstop": "cancel-all-after", **data}
    await runtime.store.journal.append(entry_kinds.DCP, entry, now=runtime.now(), actor="pilot")
