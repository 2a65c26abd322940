"""The model APIs' HTTP side: the only importer of httpx2 in Pilot's package, where its errors become
ProviderErrors (pilot.evals.conversation).

A request that got no answer, a 429 or a 5xx is tried again, at most `retries` more times, after the
answer's Retry-After (capped) or a doubling pause; asking a model again is harmless, unlike an order. The
key travels in a header only; no error message carries a header, the key, or an answer's body.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2

from pilot.evals.conversation import ProviderError

Sleep = Callable[[float], Awaitable[None]]
MAX_PAUSE_SECONDS = 30.0
FIRST_PAUSE_SECONDS = 1.0


class ModelEndpoint:
    """POSTs JSON to one API under `base_url` with fixed headers; answers are JSON objects."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        timeout_seconds: float = 120.0,
        retries: int = 2,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._secrets = tuple(value for value in headers.values() if len(value) >= 8)
        self._http = httpx2.AsyncClient(headers=dict(headers), timeout=timeout_seconds)
        self._retries = retries
        self._sleep = sleep

    @property
    def shown(self) -> str:
        """The base URL as a report may show it: no user, password, query or fragment."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    async def post(self, path: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON object the API answers `payload` with. Raises ProviderError."""
        pause = FIRST_PAUSE_SECONDS
        for attempt in range(self._retries + 1):
            try:
                return await self._post_once(path, payload)
            except _Again as again:
                if attempt == self._retries:
                    raise again.error from None
                await self._sleep(min(again.wait if again.wait is not None else pause, MAX_PAUSE_SECONDS))
                pause *= 2
        raise AssertionError("unreachable")

    async def _post_once(self, path: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        try:
            response = await self._http.post(url, json=payload)
        except httpx2.TimeoutException:
            raise _Again(ProviderError("network", f"no answer from {self.shown} in time")) from None
        except httpx2.TransportError as error:
            reason = type(error).__name__
            raise _Again(ProviderError("network", f"no answer from {self.shown} ({reason})")) from None
        status = response.status_code
        if status in (401, 403):
            raise ProviderError("auth", f"{self.shown} refused the key (HTTP {status})", status=status)
        if status == 429:
            raise _Again(
                ProviderError("rate_limited", f"{self.shown}: too many requests (HTTP 429)", status=status),
                _retry_after(response),
            )
        if status >= 500:
            raise _Again(
                ProviderError("server", f"{self.shown}: server error (HTTP {status})", status=status),
                _retry_after(response),
            )
        if status >= 400:
            raise ProviderError(
                "bad_answer",
                f"{self.shown} refused the request (HTTP {status}{self._code(response)})",
                status=status,
            )
        return self._json(response)

    def _json(self, response: httpx2.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):
            raise ProviderError("bad_answer", f"{self.shown} answered something that is not a JSON object")
        return data

    def _code(self, response: httpx2.Response) -> str:
        """The API's own error code or type (e.g. "invalid_request_error"), if it is a short plain word."""
        try:
            error = response.json().get("error") or {}
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            return ""
        code = (error.get("code") or error.get("type")) if isinstance(error, dict) else None
        if not isinstance(code, str) or not code.replace("_", "").isalnum() or len(code) > 60:
            return ""
        return "" if any(secret in code for secret in self._secrets) else f", {code}"

    async def aclose(self) -> None:
        await self._http.aclose()


class _Again(Exception):
    """A failure worth one more try, after `wait` seconds when the API said how long."""

    def __init__(self, error: ProviderError, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait


def _retry_after(response: httpx2.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None
