"""Loopback stand-ins for the two push services, in their real wire format, served by uvicorn on 127.0.0.1.

* Telegram Bot API (https://core.telegram.org/bots/api): `POST /bot{token}/{method}` with a JSON body;
  answers `{"ok": true, "result": ...}` or `{"ok": false, "error_code": N, "description": "..."}` with that
  HTTP status (401 "Unauthorized" for a wrong token, 403 "Forbidden: bot can't initiate conversation with a
  user" for a chat that never sent /start, 400 "Bad Request: message to edit not found"). getUpdates keeps
  every update until an `offset` above its `update_id` confirms it. A press is an Update with a
  `callback_query` (`id`, `from`, `message`, `chat_instance`, `data`), made by `press()` as Telegram would
  when that user taps a button.
* ntfy (its docs/publish.md "Publish as JSON", server/errors.go): `POST /` with `{"topic", "title",
  "message", "priority", "tags", "click", "actions"}`; answers the message as subscribers see it (`id`,
  `time`, `expires`, `event: "message"`, ...; each action gets an `id`), or `{"code": 40301, "http": 403,
  "error": "forbidden", "link": ...}` when the topic needs a token and the request has not the right one.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

BOT = {"id": 7000000001, "is_bot": True, "first_name": "Pilot test", "username": "pilot_test_bot"}


class TelegramStub:
    """One bot: its token, the chats that started it, the messages it sent, the updates not yet confirmed."""

    def __init__(self, token: str, started: set[int]) -> None:
        self.token = token
        self.started = set(started)
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.updates: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self._next_update = 500_000
        self._next_message = 40
        self.app = Starlette(routes=[Route("/bot{token}/{method}", self._endpoint, methods=["POST"])])

    def sent_to(self, chat_id: int) -> list[dict[str, Any]]:
        return [m for (chat, _), m in sorted(self.messages.items()) if chat == chat_id]

    def buttons(self, chat_id: int) -> dict[str, str]:
        """The last message to `chat_id`'s buttons: label -> callback data."""
        markup = self.sent_to(chat_id)[-1].get("reply_markup") or {"inline_keyboard": []}
        return {b["text"]: b["callback_data"] for row in markup["inline_keyboard"] for b in row}

    def press(
        self, user_id: int, data: str, *, chat_id: int | None = None, message_id: int | None = None
    ) -> str:
        """`user_id` taps a button with `data` on a message (by default the last one in their own chat)."""
        chat = chat_id if chat_id is not None else user_id
        ids = [m for (c, m) in self.messages if c == chat]
        message = self.messages.get((chat, message_id if message_id is not None else max(ids, default=0)))
        query_id = str(secrets.randbits(62))
        query: dict[str, Any] = {
            "id": query_id,
            "from": {"id": user_id, "is_bot": False, "first_name": "Approver", "language_code": "en"},
            "chat_instance": str(-secrets.randbits(62)),
            "data": data,
        }
        if message is not None:
            query["message"] = message
        self._next_update += 1
        self.updates.append({"update_id": self._next_update, "callback_query": query})
        return query_id

    async def _endpoint(self, request: Request) -> JSONResponse:
        if request.path_params["token"] != self.token:
            return _refused(401, "Unauthorized")
        method = request.path_params["method"]
        self.calls.append(method)
        body = await request.json()
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            return _refused(404, "Not Found")
        return handler(body)  # type: ignore[no-any-return]

    def _getMe(self, body: dict[str, Any]) -> JSONResponse:  # named as the Bot API method
        return _ok(BOT)

    def _sendMessage(self, body: dict[str, Any]) -> JSONResponse:
        chat_id = body["chat_id"]
        if chat_id not in self.started:
            return _refused(403, "Forbidden: bot can't initiate conversation with a user")
        self._next_message += 1
        message: dict[str, Any] = {
            "message_id": self._next_message,
            "from": BOT,
            "chat": {"id": chat_id, "first_name": "Approver", "type": "private"},
            "date": int(time.time()),
            "text": body["text"],
        }
        if body.get("reply_markup"):
            message["reply_markup"] = body["reply_markup"]
        self.messages[(chat_id, self._next_message)] = message
        return _ok(message)

    def _editMessageText(self, body: dict[str, Any]) -> JSONResponse:
        key = (body["chat_id"], body["message_id"])
        if key not in self.messages:
            return _refused(400, "Bad Request: message to edit not found")
        edited = {k: v for k, v in self.messages[key].items() if k != "reply_markup"}
        edited.update(text=body["text"], edit_date=int(time.time()))
        if body.get("reply_markup"):
            edited["reply_markup"] = body["reply_markup"]
        self.messages[key] = edited
        return _ok(edited)

    def _answerCallbackQuery(self, body: dict[str, Any]) -> JSONResponse:
        self.answers.append(body)
        return _ok(True)

    def _getUpdates(self, body: dict[str, Any]) -> JSONResponse:
        offset = body.get("offset")
        if isinstance(offset, int):
            self.updates = [u for u in self.updates if u["update_id"] >= offset]  # confirmed: forgotten
        allowed = body.get("allowed_updates")
        found = [u for u in self.updates if not allowed or any(kind in u for kind in allowed)]
        return _ok(found[:100])


class NtfyStub:
    """One ntfy server: every message published to it, and the access token a topic needs, if any."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.published: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/", self._publish, methods=["POST", "PUT"])])

    async def _publish(self, request: Request) -> JSONResponse:
        if self.token is not None and request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse(
                {
                    "code": 40301,
                    "http": 403,
                    "error": "forbidden",
                    "link": "https://ntfy.sh/docs/publish/#authentication",
                },
                status_code=403,
            )
        body = await request.json()
        if not body.get("topic"):
            return JSONResponse({"code": 40009, "http": 400, "error": "invalid request: topic invalid"}, 400)
        now = int(time.time())
        message = {
            "id": secrets.token_urlsafe(9)[:12],
            "time": now,
            "expires": now + 43200,
            "event": "message",
        }
        message.update(
            {k: body[k] for k in ("topic", "title", "message", "priority", "tags", "click") if k in body}
        )
        if body.get("actions"):
            message["actions"] = [{"id": secrets.token_hex(5), **action} for action in body["actions"]]
        self.published.append({"body": body, "headers": dict(request.headers)})
        return JSONResponse(message)


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"ok": True, "result": result})


def _refused(status: int, description: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error_code": status, "description": description}, status_code=status)
