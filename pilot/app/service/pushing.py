"""The phone channels as a running server works them: one process per home pushes and listens at a time.

`pilot serve` calls `PhoneService.round` every second and `listen` in a loop beside it. Each round reads
policy.json and the stored secrets afresh (a channel opened or closed applies within a second), and takes
the home's push turn, a lease in the database: several servers on one home push each action once, and only
one reads Telegram (which allows one getUpdates reader per bot). A server that stops lets the turn lapse;
the next takes it over and learns from the journal what was already pushed.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from pilot.app.human.phone import Phone, PushBook, push_round, read_presses, telegram_api
from pilot.app.runtime.runtime import Runtime
from pilot.keys.channel_secrets import SecretUnreadable, load_secret
from pilot.keys.errors import KeysError
from pilot.push import NTFY_SERVER, Ntfy, PushError, TelegramBot

log = logging.getLogger("pilot.phone")
LEASE = "push.phone"
LEASE_TTL = timedelta(seconds=30)
LISTEN_SECONDS = 20  # one getUpdates long poll


class PhoneService:
    """The push channels of one server process, and what it knows of the pushes."""

    def __init__(self, *, api: str | None = None) -> None:
        self.holder = "push-" + secrets.token_hex(8)
        self.book = PushBook()
        self.phone = Phone()
        self._telegram_api = api or telegram_api()
        self._config: tuple[object, ...] | None = None
        self._warned: str | None = None

    async def round(self, runtime: Runtime) -> None:
        """Push what waits for a human and end what was decided, if this process holds the push turn."""
        if not await self._configured(runtime) or not await self._turn(runtime):
            return
        try:
            await push_round(runtime, self.phone, self.book)
        except PushError as error:
            self._warn(f"a push could not be sent, tried again in a second: {error}")

    async def listen(self, runtime: Runtime, wait_seconds: int = LISTEN_SECONDS) -> bool:
        """One long poll of Telegram for presses, if this process holds the push turn; False when there is
        no Telegram channel to listen on (the caller waits a round before asking again)."""
        bot = self.phone.telegram
        if bot is None or not await self._turn(runtime):
            return False
        try:
            await read_presses(runtime, bot, self.book, wait_seconds)
        except PushError as error:
            self._warn(f"Telegram could not be read: {error}")
            return False
        return True

    async def close(self, runtime: Runtime | None = None) -> None:
        await self._drop()
        if runtime is not None:
            await runtime.store.leases.release(LEASE, self.holder)

    async def _turn(self, runtime: Runtime) -> bool:
        return await runtime.store.leases.try_acquire(LEASE, self.holder, now=runtime.now(), ttl=LEASE_TTL)

    async def _configured(self, runtime: Runtime) -> bool:
        """Build the channels policy.json opens and the stored secrets allow; whether any is open."""
        confirm = runtime.policy().policy.confirm
        try:
            telegram_token = load_secret(runtime.home.path, "telegram") if confirm.telegram else None
            ntfy_token = load_secret(runtime.home.path, "ntfy") if confirm.ntfy else None
        except (KeysError, SecretUnreadable) as error:
            self._warn(f"a phone channel's secret cannot be read: {error}")
            telegram_token = ntfy_token = None
        if confirm.telegram is not None and telegram_token is None:
            self._warn("confirm.telegram is set but no bot token is stored: run `pilot phone telegram-token`")
        ntfy = confirm.ntfy
        config = (telegram_token, ntfy.server if ntfy else None, ntfy.topic if ntfy else None, ntfy_token)
        if config != self._config:
            await self._drop()
            self._config = config
            self.phone = Phone(
                telegram=TelegramBot(telegram_token, api=self._telegram_api) if telegram_token else None,
                ntfy=Ntfy(ntfy.server or NTFY_SERVER, ntfy.topic, token=ntfy_token) if ntfy else None,
            )
        return self.phone.telegram is not None or self.phone.ntfy is not None

    async def _drop(self) -> None:
        for client in (self.phone.telegram, self.phone.ntfy):
            if client is not None:
                await client.close()
        self.phone = Phone()

    def _warn(self, line: str) -> None:
        if line != self._warned:  # once per distinct problem, not every second
            log.warning("%s", line)
            self._warned = line
