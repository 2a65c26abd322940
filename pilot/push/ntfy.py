"""ntfy as Pilot uses it: publish one notification to a topic, with a button that opens a web page.

Wire format (ntfy's docs/publish.md, "Publish as JSON" and "Action buttons"): `POST {server}/` (the root,
not the topic URL) with a JSON object: `topic` (required), `title`, `message`, `priority` (1 to 5), `tags`,
`click` (a URL opened when the notification is tapped) and `actions` (up to three; a `view` action is
`{"action": "view", "label": ..., "url": ..., "clear": true}`); an access token goes in `Authorization:
Bearer tk_...`. The answer is the message as subscribers get it (`{"id": ..., "time": ..., "event":
"message", "topic": ..., ...}`); an error is `{"code": 40301, "http": 403, "error": "forbidden", "link":
...}` (server/errors.go).
"""

from __future__ import annotations

from typing import Any

from pilot.push.errors import PushError
from pilot.push.wire import Client, new_client, post_json

NTFY_SERVER = "https://ntfy.sh"
SERVICE = "ntfy"


class Ntfy:
    """One topic on one ntfy server; an access token when the topic is protected."""

    def __init__(
        self, server: str, topic: str, *, token: str | None = None, client: Client | None = None
    ) -> None:
        self._root = server.rstrip("/") + "/"
        self._topic = topic
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = client or new_client()

    def __repr__(self) -> str:
        return f"Ntfy({self._root}, {self._topic})"

    async def close(self) -> None:
        await self._client.aclose()

    async def publish(
        self, title: str, message: str, *, link: str | None = None, label: str = "Open", live: bool = False
    ) -> str:
        """Publish a notification (priority high; `live`, about real money: urgent, tagged `live`); with
        `link`, tapping it or its button opens that page. The message's id."""
        priority = 5 if live else 4
        body: dict[str, Any] = {
            "topic": self._topic,
            "title": title,
            "message": message,
            "priority": priority,
        }
        body["tags"] = ["rotating_light", "live"] if live else ["warning"]
        if link:
            body["click"] = link
            body["actions"] = [{"action": "view", "label": label, "url": link, "clear": True}]
        status, answer = await post_json(self._client, SERVICE, self._root, body, headers=self._headers)
        message_id = answer.get("id") if isinstance(answer, dict) else None
        if status == 200 and isinstance(message_id, str):
            return message_id
        error = answer.get("error") if isinstance(answer, dict) else None
        raise PushError(
            SERVICE, f"publish refused: HTTP {status} {str(error or '')[:200]}".rstrip(), status=status
        )
