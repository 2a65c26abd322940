"""Setting up the phone channels: store the Telegram bot token (checked with Telegram first) or an ntfy access
token, and send a test on each open channel. The human's commands (`pilot phone ...`) call these."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pilot.app.human.desk import HumanError
from pilot.app.human.phone import telegram_api
from pilot.app.runtime.runtime import Runtime
from pilot.core.errors import ErrorCode
from pilot.keys.channel_secrets import ChannelSecret, delete_secret, load_secret, store_secret
from pilot.push import NTFY_SERVER, Ntfy, PushError, TelegramBot


class PhoneUnreachable(HumanError):
    code = ErrorCode.PHONE_UNREACHABLE

    def __init__(self, error: PushError, fix: str) -> None:
        super().__init__(str(error), fix)


class EmptySecret(HumanError):
    code = ErrorCode.EMPTY_SECRET

    def __init__(self) -> None:
        super().__init__(
            "nothing was given", "paste the token at the prompt (or one line on stdin with --stdin)"
        )


async def store_telegram_token(home: Path, token: str) -> str:
    """Check the bot token with Telegram (getMe), then store it sealed; the bot's @username."""
    token = token.strip()
    if not token:
        raise EmptySecret
    bot = TelegramBot(token, api=telegram_api())
    try:
        username = await bot.whoami()
    except PushError as error:
        fix = "check the token @BotFather gave (and this machine's access to Telegram)"
        raise PhoneUnreachable(error, fix) from None
    finally:
        await bot.close()
    store_secret(home, "telegram", token)
    return username


def store_ntfy_token(home: Path, token: str) -> None:
    """Store an ntfy access token (tk_...) for a protected topic."""
    token = token.strip()
    if not token:
        raise EmptySecret
    store_secret(home, "ntfy", token)


def forget(home: Path, name: ChannelSecret) -> bool:
    return delete_secret(home, name)


@dataclass(frozen=True, slots=True)
class TestResult:
    channel: str
    target: str
    ok: bool
    detail: str


async def test_channels(runtime: Runtime) -> list[TestResult]:
    """Send a test on each channel policy.json opens: a message to each Telegram approver, a notification to
    the ntfy topic. Nothing is journaled or decided."""
    confirm = runtime.policy().policy.confirm
    home = runtime.home.path
    results: list[TestResult] = []
    if confirm.telegram is not None:
        token = load_secret(home, "telegram")
        if token is None:
            results.append(
                TestResult("telegram", "-", False, "no bot token stored: `pilot phone telegram-token`")
            )
        else:
            bot = TelegramBot(token, api=telegram_api())
            try:
                for approver in confirm.telegram.approvers:
                    results.append(await _telegram_test(bot, approver))
            finally:
                await bot.close()
    if confirm.ntfy is not None:
        ntfy = Ntfy(confirm.ntfy.server or NTFY_SERVER, confirm.ntfy.topic, token=load_secret(home, "ntfy"))
        try:
            await ntfy.publish("Pilot: test", "Pilot will send approvals here.", link=confirm.console_url)
            results.append(TestResult("ntfy", confirm.ntfy.topic, True, "sent"))
        except PushError as error:
            results.append(TestResult("ntfy", confirm.ntfy.topic, False, str(error)))
        finally:
            await ntfy.close()
    return results


async def _telegram_test(bot: TelegramBot, approver: int) -> TestResult:
    text = "Pilot: test. Approval requests for this home will come to this chat."
    try:
        await bot.send_message(approver, text, [])
    except PushError as error:
        hint = " (send /start to the bot from this account first)" if error.status == 403 else ""
        return TestResult("telegram", str(approver), False, f"{error}{hint}")
    return TestResult("telegram", str(approver), True, "sent")
