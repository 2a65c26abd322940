"""Recorded exchanges with Bybit: pybit's session recorded in the one format of pilot.exchange.recordings
(which the replay server reads), with the answer headers in HEADERS_KEPT.

Redaction: request headers are never written (they carry X-BAPI-API-KEY and X-BAPI-SIGN), only the
answer headers in HEADERS_KEPT are; the key and the secret are replaced by "REDACTED" wherever they appear
(query-api answers the key itself), as is any "apiKey" field.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pilot.exchange.recordings import REDACTED, SOURCE_FILE, Exchange, load, redact
from pilot.exchange.recordings import Recorder as _Recorder

HEADERS_KEPT = ("x-bapi-limit", "x-bapi-limit-status", "x-bapi-limit-reset-timestamp", "retry-after")

__all__ = [
    "HEADERS_KEPT",
    "REDACTED",
    "SOURCE_FILE",
    "Exchange",
    "Recorder",
    "exchange_from",
    "load",
    "redact",
]


def exchange_from(response: Any, secrets: tuple[str, ...]) -> Exchange:
    """An Exchange from a `requests` response (its `.request` is the prepared request that was sent)."""
    request = response.request
    parts = urlsplit(request.url)
    body = None
    if request.body:
        raw = request.body.decode() if isinstance(request.body, bytes) else str(request.body)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"raw": raw}
    try:
        answer: Any = response.json()
    except ValueError:
        answer = response.text
    headers = {name: value for name, value in response.headers.items() if name.lower() in HEADERS_KEPT}
    return Exchange(
        method=request.method,
        path=parts.path,
        query=redact(dict(parse_qsl(parts.query, keep_blank_values=True)), secrets),
        body=redact(body, secrets),
        status=response.status_code,
        headers=headers,
        answer=redact(answer, secrets),
    )


class Recorder(_Recorder):
    """Writes every answered request of a `requests.Session` to `directory`, redacted."""

    def attach(self, session: Any) -> None:
        """Record every response `session` receives from now on."""
        session.hooks["response"].append(self._on_response)

    def _on_response(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        # A recording must never change an outcome: whatever goes wrong here is dropped, and the
        # response goes back to pybit untouched.
        with contextlib.suppress(Exception):
            self.record(exchange_from(response, self._secrets))
        return response
