"""Bybit's WebSocket order entry (`/v5/trade`, websocket/trade/guideline.mdx) on the paper exchange: the same
creates, amends, cancels and batches as REST, asked over a WebSocket (ccxt.pro's createOrderWs and friends,
pybit's WebSocketTrading).

* ``{"op": "auth", "args": [key, expires, signature]}``: retCode 0, 20001 (authenticated already), 10004 (a
  wrong signature or an unknown key), 10001 (anything else wrong with it, an expired request included);
* ``{"op": "ping"}``: ``{"retCode": 0, "op": "pong", "data": ["<ms>"]}``;
* ``{"reqId", "header": {"X-BAPI-TIMESTAMP", "X-BAPI-RECV-WINDOW"}, "op": "order.create" | "order.amend" |
  "order.cancel" | "order.create-batch" | "order.amend-batch" | "order.cancel-batch", "args": [ {...} ]}``: the REST route's answer in `data` (a batch's
  codes in `retExtInfo`), retCode and retMsg as REST's; 10404 for another op or a category it does not take,
  20006 for a reqId used before on the connection, 10002 for a timestamp outside the recv window, 10003 when
  not authenticated, 10005 without the key's permission.

The paper exchange's per-key rate limits are REST's; order entry does not count against them.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pilot.paper import account_data, handlers
from pilot.paper.engine import Engine
from pilot.paper.handlers import Answer, Context
from pilot.paper.scenario import ApiKeySpec
from pilot.paper.validation import SimReject

TRADE_PATH = "/v5/trade"
OPS: dict[str, Callable[[Context, dict[str, Any]], dict[str, Any] | Answer]] = {
    "order.create": handlers.create_order,
    "order.amend": handlers.amend_order,
    "order.cancel": handlers.cancel_order,
    "order.create-batch": account_data.create_batch,
    "order.amend-batch": account_data.amend_batch,
    "order.cancel-batch": account_data.cancel_batch,
}
CATEGORIES = ("linear", "spot", "option", "inverse")
DEFAULT_RECV_WINDOW = 5000


@dataclass
class EntrySession:
    """One order-entry connection: its key once authenticated, the reqIds it used."""

    key: ApiKeySpec | None = None
    used: set[str] = field(default_factory=set)


class OrderEntry:
    """Answers order-entry requests; `run` takes the engine's lock and `changed` is told of every write."""

    def __init__(
        self,
        engine: Engine,
        keys: dict[str, ApiKeySpec],
        run: Callable[[Callable[[], Any]], Any],
        clock_ms: Callable[[], int],
        server_clock_ms: Callable[[], int],
    ) -> None:
        self.engine = engine
        self.keys = keys
        self.run = run  # runs a callable with the engine's lock held, then publishes and saves what changed
        self.clock_ms = clock_ms
        self.server_clock_ms = server_clock_ms

    def answer(self, session: EntrySession, request: dict[str, Any]) -> dict[str, Any]:
        op = str(request.get("op") or "")
        if op == "ping":
            return {
                "retCode": 0,
                "retMsg": "OK",
                "op": "pong",
                "data": [str(self.clock_ms())],
                "connId": "paper",
            }
        if op == "auth":
            return self._auth(session, request) | {"op": "auth", "connId": "paper"}
        reply = {"reqId": request["reqId"]} if "reqId" in request else {}
        code, message, data, ext = self._order(session, op, request)
        header = {"Traceid": f"paper-{self.clock_ms()}", "Timenow": str(self.clock_ms())}
        return (
            reply
            | {"retCode": code, "retMsg": message, "op": op, "data": data, "retExtInfo": ext}
            | {
                "header": header,
                "connId": "paper",
            }
        )

    def _auth(self, session: EntrySession, request: dict[str, Any]) -> dict[str, Any]:
        reply = {"reqId": request["reqId"]} if "reqId" in request else {}
        if session.key is not None:
            return reply | {"retCode": 20001, "retMsg": "Repeat auth"}
        try:
            key, expires, signature = request["args"]
            spec, expires = self.keys.get(str(key)), int(expires)
        except (KeyError, TypeError, ValueError):
            return reply | {"retCode": 10001, "retMsg": "Params Error"}
        if spec is None:
            return reply | {"retCode": 10004, "retMsg": "Invalid apikey"}
        if expires < self.server_clock_ms():
            return reply | {"retCode": 10001, "retMsg": "Params Error: the request has expired"}
        expected = hmac.new(spec.secret.encode(), f"GET/realtime{expires}".encode(), hashlib.sha256)
        if not hmac.compare_digest(expected.hexdigest(), str(signature)):
            return reply | {"retCode": 10004, "retMsg": "Invalid sign"}
        session.key = spec
        return reply | {"retCode": 0, "retMsg": "OK"}

    def _order(
        self, session: EntrySession, op: str, request: dict[str, Any]
    ) -> tuple[int, str, dict[str, Any], dict[str, Any]]:
        route = OPS.get(op)
        args = request.get("args")
        params = args[0] if isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict) else None
        if route is None or params is None or params.get("category") not in CATEGORIES:
            return 10404, "op type is not found or category is not supported", {}, {}
        req_id = str(request.get("reqId") or "")
        if req_id and req_id in session.used:
            return 20006, "reqId is duplicated", {}, {}
        if session.key is None:
            return 10003, "Request not authorized", {}, {}
        if not self._in_window(request.get("header")):
            return 10002, "invalid request, please check your server timestamp or recv_window param", {}, {}
        if req_id:
            session.used.add(req_id)
        key = session.key
        needed = ("Spot", "SpotTrade") if params.get("category") == "spot" else ("ContractTrade", "Order")
        if key.read_only or needed[1] not in key.permissions.get(needed[0], ()):
            return 10005, "Permission denied, please check your API key permissions.", {}, {}
        try:
            result = self.run(
                lambda: route(Context(self.engine, key, list(self.keys.values()), self.clock_ms()), params)
            )
        except SimReject as reject:
            return reject.code, reject.message, {}, {}
        if isinstance(result, Answer):
            return 0, "OK", result.result, result.ext_info
        return 0, "OK", result, {}

    def _in_window(self, header: Any) -> bool:
        """create-order's rule on the request's own header: server - window <= timestamp < server + 1000."""
        try:
            stamp = int(header["X-BAPI-TIMESTAMP"])
            window = int(header.get("X-BAPI-RECV-WINDOW") or DEFAULT_RECV_WINDOW)
        except (KeyError, TypeError, ValueError, AttributeError):
            return False
        now = self.server_clock_ms()
        return now - window <= stamp < now + 1000
