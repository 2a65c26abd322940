"""Bybit V5 request signing as the exchange checks it: HMAC-SHA256 over the raw payload, and the recv window."""

from __future__ import annotations

import hashlib
import hmac

from pilot.paper.scenario import ApiKeySpec
from pilot.paper.validation import SimReject

FUTURE_TOLERANCE_MS = 1000


class MissingAuthHeaders(Exception):
    """A signed endpoint was called without the X-BAPI-* headers: Bybit answers HTTP 401."""


def sign(secret: str, timestamp: str, api_key: str, recv_window: str, payload: str) -> str:
    """The lowercase hex HMAC-SHA256 signature Bybit expects (the same as pybit computes)."""
    message = f"{timestamp}{api_key}{recv_window}{payload}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(headers: dict[str, str], payload: str, keys: dict[str, ApiKeySpec], now_ms: int) -> ApiKeySpec:
    """Return the calling key, or refuse: 10003 unknown key, 10004 bad signature, 10002 outside the recv window.

    `payload` is the raw query string (GET) or the raw body (POST), never a re-serialisation.
    """
    api_key = headers.get("x-bapi-api-key")
    signature = headers.get("x-bapi-sign")
    timestamp = headers.get("x-bapi-timestamp")
    if not api_key or not signature or not timestamp:
        raise MissingAuthHeaders()
    recv_window = headers.get("x-bapi-recv-window", "5000")
    spec = keys.get(api_key)
    if spec is None:
        raise SimReject(10003, "API key is invalid.")
    expected = sign(spec.secret, timestamp, api_key, recv_window, payload)
    if not hmac.compare_digest(expected, signature.lower()):
        raise SimReject(10004, "error sign! please check your signature generation algorithm.")
    try:
        stamp, window = int(timestamp), int(recv_window)
    except ValueError:
        raise SimReject(
            10001, "params error: X-BAPI-TIMESTAMP and X-BAPI-RECV-WINDOW must be integers"
        ) from None
    if not now_ms - window <= stamp < now_ms + FUTURE_TOLERANCE_MS:
        raise SimReject(
            10002,
            "invalid request, please check your server timestamp or recv_window param. "
            f"req_timestamp[{stamp}],server_timestamp[{now_ms}],recv_window[{window}]",
        )
    return spec
