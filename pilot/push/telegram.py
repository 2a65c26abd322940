"""The Telegram Bot API as Pilot uses it: send a message with Approve / Reject buttons, edit it, answer a
button press, and read presses by long polling.

Wire format (https://core.telegram.org/bots/api): `POST {api}/bot{token}/{method}` with a JSON body; every
answer is `{"ok": true, "result": ...}` or `{"ok": false, "error_code": N, "description": "...",
"parameters": {"retry_after": N}}`. A press arrives as an Update whose `callback_query` carries `id`,
`from` (the user who pressed: Telegram sets it, no one else can), `message` (the message the button is on,
with its `chat` and `message_id`) and `data` (the button's callback data, at most 64 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pilot.push.errors import PushError
from pilot.push.wire import Client, new_client, post_json

TELEGRAM_API = "https://api.telegram.org"
SERVICE = "Telegram"


@dataclass(frozen=True, slots=True)
class Press:
    """A button pressed in a chat with the bot, as Telegram reports it."""

    update_id: int
    query_id: str
    user_id: int  # callback_query.from.id: who pressed
    chat_id: int | None  # the chat of the message the button is on (None: Telegram no longer has it)
    message_id: int | None
    data: str


class TelegramBot:
    """One bot, by its token (from @BotFather). The token is kept here and in no message or error."""

    def __init__(self, token: str, *, api: str = TELEGRAM_API, client: Client | None = None) -> None:
        self._url = f"{api.rstrip('/')}/bot{token}/"
        self._client = client or new_client()

    def __repr__(self) -> str:
        return "TelegramBot(<token>)"

    async def close(self) -> None:
        await self._client.aclose()

    async def whoami(self) -> str:
        """The bot's @username (getMe): proves the token works."""
        me = await self._call("getMe", {})
        return str(me.get("username") or me.get("first_name") or "?")

    async def send_message(self, chat_id: int, text: str, buttons: list[tuple[str, str]]) -> int:
        """Send `text` (plain, no markup parsed) with one row of inline buttons (label, callback data); the
        message's id."""
        body: dict[str, Any] = {"chat_id": chat_id, "text": text}
        if buttons:
            row = [{"text": label, "callback_data": data} for label, data in buttons]
            body["reply_markup"] = {"inline_keyboard": [row]}
        sent = await self._call("sendMessage", body)
        return int(sent["message_id"])

    async def edit_message(self, chat_id: int, message_id: int, text: str) -> None:
        """Replace a message's text; its buttons go (editMessageText without reply_markup)."""
        await self._call("editMessageText", {"chat_id": chat_id, "message_id": message_id, "text": text})

    async def answer_press(self, query_id: str, text: str) -> None:
        """Tell the presser what came of it (answerCallbackQuery: a short notice on their screen)."""
        await self._call("answerCallbackQuery", {"callback_query_id": query_id, "text": text[:200]})

    async def presses(self, offset: int | None, wait_seconds: int) -> tuple[list[Press], int | None]:
        """Button presses after `offset`, waiting up to `wait_seconds` for one (getUpdates long polling), and
        the offset that confirms them. Updates that are not presses are confirmed and dropped."""
        body: dict[str, Any] = {"timeout": wait_seconds, "allowed_updates": ["callback_query"]}
        if offset is not None:
            body["offset"] = offset
        updates = await self._call("getUpdates", body, timeout=wait_seconds + 10)
        found, last = [], None
        for update in updates if isinstance(updates, list) else []:
            if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
                continue
            last = update["update_id"]
            press = _press(update)
            if press is not None:
                found.append(press)
        return found, (last + 1 if last is not None else offset)

    async def _call(self, method: str, body: dict[str, Any], *, timeout: float | None = None) -> Any:
        status, answer = await post_json(self._client, SERVICE, self._url + method, body, timeout=timeout)
        if not isinstance(answer, dict):
            raise PushError(
                SERVICE, f"{method} answered HTTP {status} with no Bot API envelope", status=status
            )
        if answer.get("ok") is True:
            return answer.get("result")
        parameters = answer.get("parameters")
        retry = parameters.get("retry_after") if isinstance(parameters, dict) else None
        description = str(answer.get("description") or "no description")[:200]
        raise PushError(
            SERVICE,
            f"{method} refused: {answer.get('error_code', status)} {description}",
            status=status,
            retry_after=retry if isinstance(retry, int) else None,
        )


def _press(update: dict[str, Any]) -> Press | None:
    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    sender, message = query.get("from"), query.get("message")
    if (
        not isinstance(sender, dict)
        or not isinstance(sender.get("id"), int)
        or not isinstance(query.get("id"), str)
    ):
        return None
    chat = message.get("chat") if isinstance(message, dict) else None
    chat_id = chat.get("id") if isinstance(chat, dict) and isinstance(chat.get("id"), int) else None
    message_id = message.get("message_id") if isinstance(message, dict) else None
    return Press(
        update_id=int(update["update_id"]),
        query_id=query["id"],
        user_id=sender["id"],
        chat_id=chat_id,
        message_id=message_id if isinstance(message_id, int) else None,
        data=str(query.get("data") or ""),
    )
