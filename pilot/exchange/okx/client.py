"""The one road to OKX: signed v5 requests over urllib3, each sent once, every failure one of the port's outcomes.

Why a client of Pilot's own rather than python-okx (the SDK OKX links to): python-okx 0.4 is a thin wrapper
whose every call goes through one httpx client it builds itself, with its own logging (`debug=True` prints
requests, signed headers included) and no way to tell "never sent" from "sent, answer lost"; Pilot needs
exactly that distinction on every write, the demo header on every request, and the key, secret and
passphrase kept out of every message. Signing is a few lines (OK-ACCESS-SIGN is base64(HMAC-SHA256(secret,
timestamp + METHOD + path?query + body))), so the client is this module, over urllib3 (already Pilot's for
the Bybit paper adapter), and nothing outside pilot/exchange/okx/ imports it.

* Every request is sent once: urllib3's retries are off (`retries=False`), so a write is never resent, not
  even on a connection dropped after it left.
* OKX demo trading gets `x-simulated-trading: 1` on every request.
* Failures are sorted in one place (`_failure`): nothing sent (the connection was never made) is
  ExchangeUnavailable; a write whose answer was lost (read timeout, dropped connection, HTTP 5xx, an answer
  that is not OKX's JSON) is OutcomeUnknown; an answer with a code is judged by pilot.exchange.okx.error_codes.
  OKX's own words (`msg`, `sMsg`) travel only in `untrusted_text`; messages are Pilot's.
* urllib3 is synchronous: each request runs in a worker thread, so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError, SSLError

from pilot.exchange.errors import (
    DuplicateOrderLinkId,
    ExchangeError,
    ExchangeRejected,
    ExchangeUnavailable,
    OutcomeUnknown,
)
from pilot.exchange.okx import error_codes as codes
from pilot.exchange.okx.error_codes import Verdict
from pilot.exchange.recordings import Exchange, Recorder, redact

Clock = Callable[[], datetime]
Row = dict[str, Any]
# OKX counts each endpoint's requests in windows of 2 seconds (docs-v5 "Rate Limit": "X requests per 2
# seconds"; NautilusTrader's OKX client keeps the same quota) and names no reset time: the next window is when.
RATE_WINDOW = timedelta(seconds=2)
T = TypeVar("T")


def system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Keys:
    """An OKX API key, its secret and its passphrase: never shown (repr hides all three)."""

    api_key: str = field(repr=False)
    api_secret: str = field(repr=False)
    passphrase: str = field(repr=False)

    def sign(self, prehash: str) -> str:
        digest = hmac.new(self.api_secret.encode(), prehash.encode(), hashlib.sha256).digest()
        return base64.b64encode(digest).decode()


def timestamp(moment: datetime) -> str:
    """OKX's OK-ACCESS-TIMESTAMP: UTC, ISO 8601 with milliseconds and a Z (2020-12-08T09:08:57.715Z)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class Reply:
    """What came back for one request: its HTTP status and body (parsed JSON, or None when it was not)."""

    status: int
    body: Any


class Transport:
    """Signed requests to one OKX base URL. Build one per adapter; `close` it when done."""

    def __init__(
        self,
        base_url: str,
        keys: Keys,
        *,
        demo: bool = True,
        timeout_seconds: float = 10,
        clock: Clock = system_clock,
        recorder: Recorder | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._keys = keys
        self._recorder = recorder
        self._demo = demo
        self._clock = clock
        timeout = urllib3.Timeout(connect=min(timeout_seconds, 5), read=timeout_seconds)
        self._pool = urllib3.PoolManager(num_pools=2, maxsize=10, retries=False, timeout=timeout)

    def close(self) -> None:
        self._pool.clear()

    async def read(self, path: str, params: dict[str, Any], action: str, *, signed: bool = True) -> list[Row]:
        """GET `path` with `params` (None values left out); OKX's `data` rows.

        Raises:
            ExchangeRejected: a definite no (the code's family says which); ExchangeUnavailable: not answered.
        """
        query = urlencode({k: v for k, v in params.items() if v is not None})
        target = path + (f"?{query}" if query else "")
        reply = await self._send("GET", target, "", action, operation="read", signed=signed)
        with self._retry_when_limited():
            return self.rows(reply, action, operation="read")

    async def write(
        self, path: str, body: Any, action: str, *, operation: str, link_id: str = "", batch: bool = False
    ) -> list[Row]:
        """POST `body` to `path`, exactly once; OKX's `data` rows (each with its own sCode on order writes).

        `link_id` is the client order id a create carries (for DuplicateOrderLinkId). A `batch` (a list of
        cancels) answers its rows whatever each row's sCode: the caller reads them one by one.

        Raises:
            ExchangeRejected: a definite no; nothing was executed.
            OutcomeUnknown: it may have been executed: look it up, never resend.
            ExchangeUnavailable: not processed (the connection was never made).
        """
        raw = json.dumps(body, separators=(",", ":"))
        reply = await self._send("POST", path, raw, action, operation=operation)
        with self._retry_when_limited():
            return self.rows(reply, action, operation=operation, link_id=link_id, batch=batch)

    @contextlib.contextmanager
    def _retry_when_limited(self) -> Iterator[None]:
        """A rate limit's failure says when asking again helps: the next of OKX's 2-second windows."""
        try:
            yield
        except ExchangeError as error:
            code = getattr(error, "ret_code", None)
            if (
                isinstance(code, int)
                and codes.rule_of(code).family == "rate_limit"
                and error.retry_at is None
            ):
                error.retry_at = self._clock() + RATE_WINDOW
            raise

    async def _send(
        self, method: str, target: str, raw: str, action: str, *, operation: str, signed: bool = True
    ) -> Reply:
        headers = self._headers(method, target, raw, signed=signed)
        try:
            return await asyncio.to_thread(self._request, method, target, raw, headers)
        except HTTPError as error:
            raise _transport_failure(error, action, operation) from None

    def _request(self, method: str, target: str, raw: str, headers: dict[str, str]) -> Reply:
        response = self._pool.request(
            method,
            self.base_url + target,
            body=raw.encode() if raw else None,
            headers=headers,
            redirect=False,
        )
        try:
            body: Any = json.loads(response.data)
        except ValueError:
            body = None
        if self._recorder is not None:
            # A recording never changes an outcome: whatever goes wrong writing it is dropped.
            with contextlib.suppress(Exception):
                self._record(method, target, raw, response.status, body, response.data)
        return Reply(response.status, body)

    def _record(self, method: str, target: str, raw: str, status: int, body: Any, data: bytes) -> None:
        """One request and its answer, in pilot.exchange.recordings' format; request headers (the key, the
        passphrase, the signature) are never written, and the key and its secrets are redacted anywhere."""
        secrets = (self._keys.api_key, self._keys.api_secret, self._keys.passphrase)
        parts = urlsplit(target)
        exchange = Exchange(
            method=method,
            path=parts.path,
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            body=json.loads(raw) if raw else None,
            status=status,
            answer=body if body is not None else data.decode("utf-8", "replace"),
        )
        recorder = self._recorder
        if recorder is not None:
            recorder.record(Exchange.from_json(redact(exchange.to_json(), secrets)))

    def _headers(self, method: str, target: str, raw: str, *, signed: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._demo:
            headers["x-simulated-trading"] = "1"
        if signed:
            stamp = timestamp(self._clock())
            headers |= {
                "OK-ACCESS-KEY": self._keys.api_key,
                "OK-ACCESS-SIGN": self._keys.sign(stamp + method + target + raw),
                "OK-ACCESS-TIMESTAMP": stamp,
                "OK-ACCESS-PASSPHRASE": self._keys.passphrase,
            }
        return headers

    @staticmethod
    def rows(
        reply: Reply, action: str, *, operation: str, link_id: str = "", batch: bool = False
    ) -> list[Row]:
        """The answer's `data` rows when it succeeded; else the failure it is (see the module's docstring).

        A write of one order ("1" with the order's sCode in its row) fails with the row's code; rows of a
        batch that failed one by one are the caller's to read (`failed_rows`).
        """
        body = reply.body
        if not isinstance(body, dict) or "code" not in body:
            raise _no_answer(reply, action, operation)
        code, data = _int(body.get("code")), body.get("data")
        rows = [row for row in data if isinstance(row, dict)] if isinstance(data, list) else []
        if code == 0 and reply.status >= 300:
            raise _no_answer(reply, action, operation)
        if code == 0 or (batch and code in (1, 2) and rows and all("sCode" in row for row in rows)):
            return rows
        row_code = next(
            (_int(row.get("sCode")) for row in rows if _int(row.get("sCode")) not in (0, None)), None
        )
        failing = row_code if row_code is not None and code in (1, 2) else code
        text = next(
            (str(row.get("sMsg") or "") for row in rows if row.get("sMsg")), str(body.get("msg") or "")
        )
        if failing is None:
            raise _no_answer(reply, action, operation)
        raise failure(failing, action, operation, text=text, status=reply.status, link_id=link_id)


def failure(
    code: int, action: str, operation: str, *, text: str = "", status: int = 200, link_id: str = ""
) -> ExchangeError:
    """The port's outcome for an OKX code answered to `operation` (pilot.exchange.okx.error_codes)."""
    rule = codes.rule_of(code)
    verdict = rule.verdict(operation)
    if status >= 500 and verdict is Verdict.REJECTED:  # a server error's code is no definite no
        verdict = Verdict.UNKNOWN if operation != "read" else Verdict.UNAVAILABLE
    if verdict is Verdict.DUPLICATE:
        return DuplicateOrderLinkId(
            f"{action}: the exchange says this client order id is taken (code {code}): an earlier send got "
            "through; look it up, never resend.",
            order_link_id=link_id,
            ret_code=code,
            untrusted_text=text,
        )
    if verdict is Verdict.UNKNOWN:
        return OutcomeUnknown(
            f"{action}: the exchange could not say whether it was carried out (code {code}).",
            untrusted_text=text,
            ret_code=code,
        )
    if verdict is Verdict.UNAVAILABLE:
        return ExchangeUnavailable(
            f"{action}: the exchange did not process it (code {code}); try again later.",
            untrusted_text=text,
            http_status=status,
            ret_code=code,
        )
    return ExchangeRejected(
        f"{action}: the exchange refused it (code {code}, {rule.family}).",
        ret_code=code,
        family=rule.family,
        untrusted_text=text,
    )


def parsed(build: Callable[[], T], action: str, *, operation: str = "read") -> T:
    """What `build` makes of an answer; an answer it cannot read is one that did not arrive: unavailable for
    a read, an unknown outcome for a write (which was sent)."""
    try:
        return build()
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ArithmeticError):
        if operation == "read":
            raise ExchangeUnavailable(f"{action}: the exchange's answer could not be read.") from None
        raise OutcomeUnknown(
            f"{action}: the exchange's answer could not be read; the outcome is not known."
        ) from None


def _no_answer(reply: Reply, action: str, operation: str) -> ExchangeError:
    """An answer that is not OKX's JSON: a lost answer for a write (unless the HTTP status says the request
    was refused before it was processed), an unavailable one for a read."""
    text = f"HTTP {reply.status}"
    if operation != "read" and (reply.status < 400 or reply.status >= 500):
        return OutcomeUnknown(
            f"{action}: the answer was not the exchange's; the outcome is not known.", untrusted_text=text
        )
    if reply.status == 429:  # OKX's rate limit (its body says 50011): nothing was processed
        return failure(50011, action, operation, text=text, status=reply.status)
    return ExchangeUnavailable(
        f"{action}: the exchange gave no usable answer.", untrusted_text=text, http_status=reply.status
    )


def _transport_failure(error: HTTPError, action: str, operation: str) -> ExchangeError:
    """A connection never made sent nothing; one that broke after the request left may have carried it out."""
    if isinstance(error, ConnectTimeoutError | SSLError):  # NewConnectionError is a ConnectTimeoutError
        return ExchangeUnavailable(f"{action}: the exchange could not be reached; nothing was sent.")
    if operation == "read":
        return ExchangeUnavailable(f"{action}: the exchange's answer did not arrive.")
    return OutcomeUnknown(f"{action}: sent, but the answer did not arrive; the outcome is not known.")


def _int(value: Any) -> int | None:
    """OKX's codes are strings ("0", "51008"); some answers (an unknown path's 404) carry a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
