"""From raw request to Bybit reply: route, verify the signature, rate-limit, check permissions, run, envelope."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from pilot.paper.auth import MissingAuthHeaders, verify
from pilot.paper.endpoints import ROUTES
from pilot.paper.engine import Engine
from pilot.paper.handlers import Answer, Context, Route
from pilot.paper.ratelimit import LimitStatus, RateLimiter, public_status
from pilot.paper.scenario import ApiKeySpec, Scenario
from pilot.paper.validation import SimReject

JSON = "application/json; charset=utf-8"
PROCESSING_LINEAR = (110079, "order is processing and cannot be operated, please try again later")
PROCESSING_SPOT = (170035, "Submitted to the system for processing!")


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = JSON


def envelope(code: int, message: str, result: Any, now_ms: int) -> bytes:
    """Bybit's envelope; a result given as an Answer brings its own retExtInfo."""
    ext_info: dict[str, Any] = {}
    if isinstance(result, Answer):
        result, ext_info = result.result, result.ext_info
    return json.dumps(
        {"retCode": code, "retMsg": message, "result": result, "retExtInfo": ext_info, "time": now_ms},
        separators=(",", ":"),
    ).encode()


class Dispatcher:
    """Turns one parsed HTTP request into a Reply. The engine runs under `lock` (shared with the Python API)."""

    def __init__(
        self,
        engine: Engine,
        scenario: Scenario,
        lock: threading.Lock,
        clock_ms: Callable[[], int],
        on_change: Callable[[], None] | None = None,
        streams_url: Callable[[], str] = lambda: "",
        server_clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.engine = engine
        self.on_change = on_change  # called under the lock after every write that was carried out
        self.streams_url = streams_url  # answered at GET /pilot/streams
        self.keys = {spec.key: spec for spec in scenario.api_keys}
        self.key_list = scenario.api_keys
        self.limiter = RateLimiter(scenario.rate_limits)
        self.lock = lock
        self.clock_ms = clock_ms  # the exchange's time: what answers, stamps and history windows use
        # the callers' frame, for the checks of their own clock (recv window, rate limits): pilot/paper/clocks.py
        self.server_clock_ms = server_clock_ms or clock_ms

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        body: bytes,
        headers: dict[str, str],
        *,
        processing: bool = False,
    ) -> Reply:
        now, stamp = self.clock_ms(), self.server_clock_ms()
        route = ROUTES.get(path)
        if route is None:
            return Reply(404, envelope(10017, "route not found", {}, now))
        if method != route.method:
            return Reply(400, envelope(10001, f"{path} expects {route.method}", {}, now))
        payload = query if method == "GET" else body.decode("utf-8", "replace")
        status = public_status(stamp)
        try:
            key = self._authenticate(route, headers, payload, stamp)
            params = self._params(method, query, body)
            if key is not None:
                status = self.limiter.hit(key.key, path, str(params.get("category") or ""), stamp)
                if not status.allowed:
                    raise SimReject(10006, "Too many visits!")
                self._check_permission(route, key, params)
            if processing:
                return self._processing(route, key, params, now, status)
            with self.lock:
                context = Context(self.engine, key, self.key_list, now, self.streams_url())
                result = route.handler(context, params)
                self._changed(route)
        except MissingAuthHeaders:
            return Reply(401, b"")
        except SimReject as reject:
            return self._reply(reject.code, reject.message, {}, now, status)
        return self._reply(0, "OK", result, now, status)

    def _authenticate(
        self, route: Route, headers: dict[str, str], payload: str, now: int
    ) -> ApiKeySpec | None:
        if not route.signed:
            return None
        return verify(headers, payload, self.keys, now)

    @staticmethod
    def _params(method: str, query: str, body: bytes) -> dict[str, Any]:
        if method == "GET":
            return dict(parse_qsl(query, keep_blank_values=True))
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            raise SimReject(10001, "params error: the body is not valid JSON") from None
        if not isinstance(params, dict):
            raise SimReject(10001, "params error: the body must be a JSON object")
        return params

    @staticmethod
    def _check_permission(route: Route, key: ApiKeySpec, params: dict[str, Any]) -> None:
        if not route.write:
            return
        needed = ("Spot", "SpotTrade") if params.get("category") == "spot" else route.permission
        if key.read_only or (needed and needed[1] not in key.permissions.get(needed[0], ())):
            raise SimReject(10005, "Permission denied, please check your API key permissions.")

    def _processing(
        self, route: Route, key: ApiKeySpec | None, params: dict[str, Any], now: int, status: LimitStatus
    ) -> Reply:
        """An in-flight answer. Linear 110079: nothing was done. Spot 170035: the request was taken and done."""
        if params.get("category") != "spot":
            return self._reply(*PROCESSING_LINEAR, {}, now, status)
        with self.lock:
            route.handler(Context(self.engine, key, self.key_list, now), params)
            self._changed(route)
        return self._reply(*PROCESSING_SPOT, {}, now, status)

    def _changed(self, route: Route) -> None:
        if route.write and self.on_change is not None:
            self.on_change()

    @staticmethod
    def _reply(code: int, message: str, result: Any, now: int, status: LimitStatus) -> Reply:
        headers = status.headers() | {"Timenow": str(now), "Ret_code": str(code), "Traceid": f"paper-{now}"}
        return Reply(200, envelope(code, message, result, now), headers)

    def rate_limited(self, now: int, reset_ms: int) -> Reply:
        """An injected 10006 with a reset time in the future, as pybit needs to not crash."""
        status = LimitStatus(False, 10, 0, reset_ms)
        return self._reply(10006, "Too many visits!", {}, now, status)
