"""The stored exchange key, read again on a timer of its own while a server runs.

Bybit lets the account's owner tick a box on a key at any time (Withdrawal, Account Transfer), and nothing
tells Pilot. So a server asks again (Bybit's /v5/user/query-api) every LIVE_CHECK_INTERVAL on a live home,
every PERMISSION_CHECK_INTERVAL on demo and testnet, in its upkeep (pilot.app.service.upkeep: every second in
`pilot serve`), whether or not the agent sends anything; the interval runs on the store's clock
(pilot.store.monotonic), never by comparing wall clocks. The start's own check counts as the first.

The verdict is recorded with the key (pilot.store.keystore), where the gate reads it before every write that
could add risk: a key found wider stops growing orders at once, in every process serving the home, while
closes, shrinking orders, cancels and a lower leverage still go. A read that fails leaves the key unusable for growing orders until one passes
(the gate reads again itself when the timer's last read failed or fell behind). The journal holds one
`key.check` entry per change of verdict (accepted, refused with what the key may also do, or unchecked with
the code of why), not one per read; with no such entry yet, the verdict is the accepted key every server
of the home started with (a start refuses any other).

On a live OKX home the watch also holds the venue's countdown (pilot.app.service.countdown): `tick` renews
it, and a growing write is refused while it is not known to be running.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pilot.app.answers import entry_kinds
from pilot.app.human.exchange_keys import (
    LIVE_CHECK_INTERVAL,
    PERMISSION_CHECK_INTERVAL,
    KeyInfoReader,
    KeySummary,
    key_standing,
    read_key_info_from_exchange,
    read_permissions_now,
    refuse_if_rejected,
)
from pilot.app.road.clock import Clock
from pilot.keys.environments import Environment
from pilot.keys.errors import KeysError
from pilot.store import Instant, Journal, StoreClock, age

if TYPE_CHECKING:
    from pilot.app.service.countdown import Countdown

# A read that failed (Bybit unreachable) is tried again this much later by the timer, not every second;
# growing sends meanwhile read again themselves, and are refused while no read passes.
RETRY_AFTER = timedelta(seconds=30)
ACCEPTED: dict[str, Any] = {"verdict": "accepted"}  # what every server of the home started with


@dataclass
class KeyWatch:
    """One server's watch on the home's stored key: the gate's key check (`__call__`) and upkeep's `tick`."""

    home: Path
    environment: str
    journal: Journal
    ticks: StoreClock  # the store's clock: when to read again
    wall: Clock  # what a check and a journal entry are dated
    read_key_info: KeyInfoReader = read_key_info_from_exchange
    checked: Instant | None = None  # the last read that passed (the start's, at first)
    tried: Instant | None = None  # the last read, passed or not
    countdown: Countdown | None = None  # a live OKX home's cancel-all-after (pilot.app.service.countdown)

    def __post_init__(self) -> None:
        self.checked = self.tried = self.ticks.read()

    @property
    def interval(self) -> timedelta:
        """How often the key is read again: every 5 minutes for real money, hourly for practice."""
        return LIVE_CHECK_INTERVAL if Environment(self.environment).live else PERMISSION_CHECK_INTERVAL

    async def __call__(self, now: datetime) -> None:
        """The gate's check before a write: the key's standing verdict, read again first when the timer fell
        behind or its last read failed.

        Raises:
            KeysError: KeyPermissionsRejected when the key may do more than trade; PermissionCheckFailed when
                a read was due and the exchange did not answer; CountdownLapsed when the venue's countdown
                is not known to be running.
        """
        if self.countdown is not None:
            self.countdown.require()
        if self._due(self.checked, self.interval):
            refuse_if_rejected(await self._read_again())
        else:
            refuse_if_rejected(await key_standing(self.home, self.environment))

    async def tick(self) -> None:
        """Upkeep's round: read the key again once the interval is over (a failed read again after
        RETRY_AFTER), after renewing the venue's countdown when one is held. What it finds is recorded and,
        when it changed, journaled; nothing is raised."""
        if self.countdown is not None:
            await self.countdown.tick()
        if not self._due(self.checked, self.interval) or not self._due(self.tried, RETRY_AFTER):
            return
        try:
            await self._read_again()
        except KeysError:
            return  # journaled as unchecked; the gate refuses growing sends until a read passes

    def _due(self, then: Instant | None, interval: timedelta) -> bool:
        since = age(self.ticks.read(), then)
        return since is None or since >= interval

    async def _read_again(self) -> KeySummary:
        here = self.ticks.read()
        self.tried = here
        try:
            summary = await read_permissions_now(
                self.home, self.environment, now=self.wall.now(), read_key_info=self.read_key_info
            )
        except KeysError as error:
            await self._note({"verdict": "unchecked", "code": str(error.code)}, None)
            raise
        self.checked = here
        if summary.accepted:
            await self._note(ACCEPTED, summary)
        else:
            await self._note({"verdict": "refused", "disallowed": list(summary.check.disallowed)}, summary)
        return summary

    async def _note(self, verdict: dict[str, Any], summary: KeySummary | None) -> None:
        """Journal `verdict` when it is not what the home's last `key.check` entry says (none: accepted)."""
        last = await self.journal.latest(entry_kinds.KEY_CHECK)
        before = (
            {k: v for k, v in last.data.items() if k in ("verdict", "disallowed", "code")}
            if last
            else ACCEPTED
        )
        if before == verdict:
            return
        key = {"key_id": summary.key_id} if summary is not None else {}
        data = {**verdict, "environment": self.environment, **key}
        await self.journal.append(entry_kinds.KEY_CHECK, data, now=self.wall.now(), actor="pilot")
