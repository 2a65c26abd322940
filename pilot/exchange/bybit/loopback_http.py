"""pybit's HTTP client for the paper exchange on loopback: urllib3 alone, without requests' per-request work.

requests takes each request through its cookie jar, hooks, header merging and runtime protocol checks, and
each answer through another cookie pass and an encoding guess: about 330 us of CPU a request on this
project's machine, against about 140 through urllib3 alone. A plan over REST reads six facts and a place
reads them again, creates and reads back, so that was most of the server's CPU per plan + place.

It offers only what pybit asks of its client (`headers`, `prepare_request`, `send(prepared, timeout=)`,
`close`, `trust_env`), and fails as requests' HTTPAdapter does: urllib3's errors become the same requests
exceptions, so pilot.exchange.bybit.translate_errors.translate sorts them as before (no connection opened: nothing was sent;
a timeout or a dropped connection: outcome unknown for a write). Nothing is resent: urllib3 retries are
zero with reads not retried, as requests sets them; redirects are not followed.

Used only for a loopback base URL (the paper exchange, embedded or `pilot sim`) and not while recording
(the recorder hooks requests' responses). Bybit demo and testnet keep requests: proxies from the
environment, its CA bundle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import requests
import urllib3
from urllib3.exceptions import (
    ClosedPoolError,
    ConnectTimeoutError,
    DecodeError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)

NO_RETRY = urllib3.Retry(0, read=False)  # requests' own setting: never resend


class Prepared:
    """A request ready to send (pybit reads only `headers`, when it logs, which Pilot turns off)."""

    __slots__ = ("body", "headers", "method", "url")

    def __init__(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> None:
        self.method, self.url, self.headers, self.body = method, url, headers, body


class Answer:
    """What pybit reads of a response: status, headers, the body as JSON (or text, when it logs)."""

    elapsed = timedelta(0)

    def __init__(self, status: int, headers: Any, data: bytes, url: str) -> None:
        self.status_code, self.headers, self._data, self.url = status, headers, data, url

    @property
    def text(self) -> str:
        return self._data.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self._data)  # json.JSONDecodeError, which pybit turns into "could not decode"


class LoopbackClient:
    """One connection pool to `base_url` (http://127.0.0.1:PORT), `pool_size` connections kept."""

    trust_env = False

    def __init__(self, base_url: str, headers: Mapping[str, str], pool_size: int) -> None:
        address = urllib3.util.parse_url(base_url)
        self._base = base_url.rstrip("/")
        self._pool = urllib3.HTTPConnectionPool(address.host or "127.0.0.1", address.port, maxsize=pool_size)
        self.headers = dict(headers)

    def prepare_request(self, request: requests.Request) -> Prepared:
        """pybit's request: a full URL (a GET's query in it), its headers, a POST's JSON body as a string."""
        headers = {**self.headers, **{str(k): str(v) for k, v in (request.headers or {}).items()}}
        body = None
        if isinstance(request.data, str | bytes) and request.data:
            body = request.data.encode() if isinstance(request.data, str) else request.data
            headers["Content-Length"] = str(len(body))
        return Prepared(str(request.method).upper(), str(request.url), headers, body)

    def send(self, request: Prepared, timeout: float | None = None) -> Answer:
        path = request.url[len(self._base) :] if request.url.startswith(self._base) else request.url
        try:
            response = self._pool.urlopen(
                request.method,
                path,
                body=request.body,
                headers=request.headers,
                redirect=False,
                assert_same_host=False,
                preload_content=False,
                retries=NO_RETRY,
                timeout=urllib3.Timeout(connect=timeout, read=timeout),
            )
        except (ProtocolError, OSError) as error:
            raise requests.exceptions.ConnectionError(error) from None
        except MaxRetryError as error:
            reason = error.reason
            if isinstance(reason, ConnectTimeoutError) and not isinstance(reason, NewConnectionError):
                raise requests.exceptions.ConnectTimeout(error) from None
            if isinstance(reason, ResponseError):
                raise requests.exceptions.RetryError(error) from None
            raise requests.exceptions.ConnectionError(error) from None
        except ClosedPoolError as error:
            raise requests.exceptions.ConnectionError(error) from None
        except ReadTimeoutError as error:
            raise requests.exceptions.ReadTimeout(error) from None
        return Answer(response.status, response.headers, _body(response), request.url)

    def close(self) -> None:
        self._pool.close()


def _body(response: urllib3.BaseHTTPResponse) -> bytes:
    """The whole body, failing as requests' reading of it does."""
    try:
        data = response.read(decode_content=True)
    except ProtocolError as error:
        raise requests.exceptions.ChunkedEncodingError(error) from None
    except DecodeError as error:
        raise requests.exceptions.ContentDecodingError(error) from None
    except ReadTimeoutError as error:
        raise requests.exceptions.ConnectionError(error) from None
    finally:
        response.release_conn()
    return data
