"""Parked actions pushed to the human's phone, and the Telegram buttons the human presses read back.

Each channel is off until policy.json names it and its secret is stored (`pilot phone telegram-token`):

* **Telegram decides.** Each approver in confirm.telegram gets a message with the server's own record of the
  action and Approve / Reject buttons. A press counts only when all of these hold: Telegram reported it
  (Pilot reads presses by long polling getUpdates over HTTPS with the bot token; nothing listens, so nothing
  can be posted to Pilot); the presser is an approver (Telegram sets `from`, the presser cannot); the button
  carries one of the two random tokens Pilot made for that message (only their hashes are journaled: no tool,
  page or log shows them, so a message someone else makes with the bot cannot carry one); and the button is on
  the very message Pilot sent that approver. It is then decided as the human (`desk.decide`, via telegram,
  with the approver's id), exactly as `pilot confirm approve`: the running server carries it out, judged
  again. No answer before the action expires is a no: the messages then say it timed out.
* **ntfy notifies.** The topic gets a notification whose button opens the console's page for the action
  (confirm.consoleUrl); the decision is made there, behind the console's login. ntfy needs the console channel.

No MCP tool sends, reads or answers a push; an agent holding the bot token could still not press a button
as an approver. Every push, refused press, close and decision is journaled with its channel.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.human.approvals import LIVE_MARK, console_link, live_mark, note_push
from pilot.app.human.desk import HumanError, decide
from pilot.app.runtime.runtime import Runtime, environment_label
from pilot.keys.environments import Environment
from pilot.push import TELEGRAM_API, Ntfy, Press, PushError, TelegramBot
from pilot.store import ConfirmationRecord

# Where the Telegram Bot API is: a local Bot API server, or a test's stub on loopback (default Telegram's).
TELEGRAM_API_ENV = "PILOT_TELEGRAM_API"
APPROVE, REJECT = "a", "r"  # callback data: "a.TOKEN" or "r.TOKEN" (at most 64 bytes, Telegram's limit)
RECENT = timedelta(hours=2)  # pushes older than the longest pendingTtlSeconds (1 h) are settled


def telegram_api() -> str:
    return os.environ.get(TELEGRAM_API_ENV) or TELEGRAM_API


@dataclass(frozen=True, slots=True)
class Message:
    """One Telegram message Pilot sent an approver about one parked action (its tokens only as hashes)."""

    confirmation_id: str
    chat_id: int
    message_id: int
    approve: str  # sha256 of the Approve button's token
    reject: str


@dataclass
class Phone:
    """The push channels this process can use now (None: off in policy.json, or no secret stored)."""

    telegram: TelegramBot | None = None
    ntfy: Ntfy | None = None


@dataclass
class PushBook:
    """What is known of the pushes, kept up from the journal, so a server that takes the turn over from one
    that stopped neither pushes again nor loses a message's tokens."""

    after_seq: int = 0
    messages: dict[str, list[Message]] = field(default_factory=dict)  # by confirmation id
    pushed: set[tuple[str, str, str]] = field(default_factory=set)  # (confirmation, channel, target)
    closed: set[str] = field(default_factory=set)  # confirmations whose Telegram messages say the end
    offset: int | None = None  # Telegram's getUpdates offset: presses before it are read

    async def catch_up(self, runtime: Runtime) -> None:
        """Read the confirmation entries journaled since the last look (the last two hours, the first time)."""
        since = runtime.now() - RECENT if self.after_seq == 0 else None
        entries = await runtime.store.journal.entries(
            kind=entry_kinds.CONFIRMATION, after=self.after_seq or None, since=since
        )
        for entry in entries:
            self.after_seq = max(self.after_seq, entry.seq)
            self._read(entry.data)

    def _read(self, data: Any) -> None:
        event, channel, confirmation_id = data.get("event"), data.get("channel"), data.get("confirmation_id")
        if not isinstance(confirmation_id, str):
            return
        if event == "pushed" and channel == "telegram":
            message = Message(
                confirmation_id,
                int(data["chat_id"]),
                int(data["message_id"]),
                data["approve"],
                data["reject"],
            )
            self.messages.setdefault(confirmation_id, []).append(message)
            self.pushed.add((confirmation_id, "telegram", str(message.chat_id)))
        elif event == "pushed" and isinstance(channel, str):
            self.pushed.add((confirmation_id, channel, str(data.get("target", ""))))
        elif event in ("closed", "expired") and channel == "telegram":
            self.closed.add(confirmation_id)

    def message_with(self, digest: str) -> Message | None:
        for messages in self.messages.values():
            for message in messages:
                if digest in (message.approve, message.reject):
                    return message
        return None


async def push_round(runtime: Runtime, phone: Phone, book: PushBook) -> None:
    """Send each action waiting for a human to each open channel once, and end the Telegram messages of those
    decided, withdrawn or expired (an expiry is a no, and the message says so).

    Raises:
        PushError: a channel could not be reached; what was done before it is journaled, the rest is tried
            again next round.
    """
    await book.catch_up(runtime)
    now = runtime.now()
    for record in await runtime.store.confirmations.list(status="pending", now=now):
        if phone.telegram is not None:
            await _to_telegram(runtime, phone.telegram, book, record)
        if phone.ntfy is not None and (record.confirmation_id, "ntfy", "topic") not in book.pushed:
            await _to_ntfy(runtime, phone.ntfy, book, record)
    if phone.telegram is not None:
        for confirmation_id in [c for c in book.messages if c not in book.closed]:
            decided = await runtime.store.confirmations.get(confirmation_id, now=now)
            if decided is not None and decided.status != "pending":
                await _close(runtime, phone.telegram, book, decided)


async def read_presses(runtime: Runtime, bot: TelegramBot, book: PushBook, wait_seconds: int) -> int:
    """Wait up to `wait_seconds` for button presses and judge each; how many were read.

    Raises:
        PushError: Telegram could not be read (nothing was decided).
    """
    presses, book.offset = await bot.presses(book.offset, wait_seconds)
    for press in presses:
        await judge_press(runtime, bot, book, press)
    return len(presses)


async def judge_press(runtime: Runtime, bot: TelegramBot, book: PushBook, press: Press) -> None:
    """Decide the action a genuine press names, as that approver; refuse (and journal) any other press."""
    await book.catch_up(runtime)
    choice, _, token = press.data.partition(".")
    digest = _digest(token)
    message = book.message_with(digest)
    problem = _press_problem(runtime, press, choice, digest, message)
    if problem is not None or message is None:
        await _refused(runtime, press, problem or "not a button Pilot sent", message)
        await bot.answer_press(press.query_id, f"Not accepted: {problem}. Nothing changed.")
        return
    try:
        decided = await decide(
            runtime,
            message.confirmation_id,
            approve=choice == APPROVE,
            via="telegram",
            approver=str(press.user_id),
        )
    except HumanError as closed:  # the channel was closed in policy.json meanwhile
        await bot.answer_press(press.query_id, f"Not accepted: {closed.problem}. Nothing changed.")
        return
    if decided.record is None:
        await bot.answer_press(press.query_id, "Already decided, withdrawn or timed out; nothing changed.")
    elif choice == APPROVE:
        await bot.answer_press(
            press.query_id, "Approved. The server carries it out, checked against the policy."
        )
    else:
        await bot.answer_press(press.query_id, "Rejected. It will not run.")


def _press_problem(
    runtime: Runtime, press: Press, choice: str, digest: str, message: Message | None
) -> str | None:
    telegram = runtime.policy().policy.confirm.telegram
    if telegram is None or press.user_id not in telegram.approvers:
        return "you are not an approver in policy.json"
    if message is None or choice not in (APPROVE, REJECT):
        return "not a button Pilot sent"
    if digest != (message.approve if choice == APPROVE else message.reject):
        return "not a button Pilot sent"
    if (press.chat_id, press.message_id) != (
        message.chat_id,
        message.message_id,
    ) or press.user_id != message.chat_id:
        return "not on the message Pilot sent you"
    return None


async def _refused(runtime: Runtime, press: Press, problem: str, message: Message | None) -> None:
    await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        {
            "event": "press_refused",
            "channel": "telegram",
            "confirmation_id": message.confirmation_id if message is not None else None,
            "user_id": press.user_id,
            "problem": problem,
        },
        now=runtime.now(),
        actor="pilot",
    )


async def _to_telegram(
    runtime: Runtime, bot: TelegramBot, book: PushBook, record: ConfirmationRecord
) -> None:
    telegram = runtime.policy().policy.confirm.telegram
    for approver in telegram.approvers if telegram is not None else ():
        if (record.confirmation_id, "telegram", str(approver)) in book.pushed:
            continue
        approve, reject = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        buttons = [("Approve", f"{APPROVE}.{approve}"), ("Reject", f"{REJECT}.{reject}")]
        message_id = await bot.send_message(approver, _text(runtime, record), buttons)
        details = {
            "chat_id": approver,
            "message_id": message_id,
            "approve": _digest(approve),
            "reject": _digest(reject),
        }
        await note_push(runtime, record.confirmation_id, "telegram", details)
        book.pushed.add((record.confirmation_id, "telegram", str(approver)))


async def _to_ntfy(runtime: Runtime, ntfy: Ntfy, book: PushBook, record: ConfirmationRecord) -> None:
    link = console_link(runtime, record.confirmation_id)
    title = f"{LIVE_MARK} · " if runtime.live else ""
    title += f"Pilot: approve? ({environment_label(runtime.environment)})"
    body = (
        f"{_headline(runtime, record)}\n{record.summary}\n"
        f"Expires {_clock(record.expires_at)} UTC; no answer is a no."
    )
    message_id = await ntfy.publish(title, body, link=link, label="Approve or reject", live=runtime.live)
    await note_push(
        runtime, record.confirmation_id, "ntfy", {"target": "topic", "message_id": message_id, "url": link}
    )
    book.pushed.add((record.confirmation_id, "ntfy", "topic"))


async def _close(runtime: Runtime, bot: TelegramBot, book: PushBook, record: ConfirmationRecord) -> None:
    """Say on each of the action's messages how it ended, and remove their buttons."""
    text = f"{live_mark(runtime)}{_ending(record)}\n\n{record.summary}"
    for message in book.messages.get(record.confirmation_id, []):
        try:
            await bot.edit_message(message.chat_id, message.message_id, text)
        except PushError as error:
            if error.status not in (400, 403):  # a message deleted or a chat left: nothing more to say there
                raise
    expired = record.status == "expired"
    await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        {
            "event": "expired" if expired else "closed",
            "channel": "telegram",
            "confirmation_id": record.confirmation_id,
            "status": record.status,
            **({"denied": True} if expired else {}),
        },
        now=runtime.now(),
        plan_id=record.action.get("plan_id") or None,
        actor="pilot",
    )
    book.closed.add(record.confirmation_id)


def _ending(record: ConfirmationRecord) -> str:
    by = f" by {record.decided_by.removeprefix('human:')}" if record.decided_by else ""
    if record.status in ("approved", "executing", "executed"):
        return f"Approved{by}. The server carries it out, checked against the policy again."
    if record.status == "rejected":
        return f"Rejected{by}. Nothing was sent."
    if record.status == "cancelled":
        return "Withdrawn by the agent. Nothing was sent."
    return f"Timed out at {_clock(record.expires_at)} UTC: no answer is a no. Nothing was sent."


def _text(runtime: Runtime, record: ConfirmationRecord) -> str:
    return (
        f"{live_mark(runtime)}Pilot asks you to approve ({environment_label(runtime.environment)}):\n"
        f"{_headline(runtime, record)}\n{record.summary}\n\n"
        f"Expires {_clock(record.expires_at)} UTC; no answer by then is a no.\n{record.confirmation_id}"
    )


def _headline(runtime: Runtime, record: ConfirmationRecord) -> str:
    """Which money, where, and which agent asked (none named: "the agent")."""
    venue = Environment(runtime.environment).venue_name
    money = f"real money on {venue} mainnet" if runtime.live else f"practice on {venue}, no real money"
    agent = record.action.get("agent")
    return f"Asked by {f'agent {agent}' if agent else 'the agent'}; {money}."


def _clock(at: datetime) -> str:
    return at.strftime("%H:%M:%S")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
