"""One JSON POST to a push service, with httpx2's errors translated into PushError (and the URL, which holds
Telegram's bot token, never repeated)."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from pilot.push.errors import PushError

TIMEOUT_SECONDS = 10.0
Client = httpx2.AsyncClient  # what telegram.py and ntfy.py hold, without importing httpx2 themselves


def new_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=False)


async def post_json(
    client: httpx2.AsyncClient,
    service: str,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
) -> tuple[int, Any]:
    """POST `body` as JSON; (status, the decoded JSON answer). PushError when nothing usable came back."""
    try:
        response = await client.post(
            url, json=body, headers=headers or {}, timeout=timeout if timeout is not None else TIMEOUT_SECONDS
        )
    except httpx2.TimeoutException:
        raise PushError(service, "no answer in time") from None
    except httpx2.HTTPError as error:
        raise PushError(service, f"cannot reach it ({type(error).__name__})") from None
    try:
        return response.status_code, json.loads(response.content or b"null")
    except ValueError:
        raise PushError(
            service, f"answered HTTP {response.status_code} without JSON", status=response.status_code
        ) from None
