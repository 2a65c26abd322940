"""The tests' OKX demo: OKX's v5 REST in its wire format on 127.0.0.1, over the paper exchange.

OKX's own demo trading is out of reach of the tests (no network beyond loopback), so this stands in for it:
it speaks OKX's wire format (paths, envelope, string numbers, sizes in contracts, algo orders for the
position's TP/SL, codes) and carries every request out on the paper exchange behind it, whose matching,
positions, balances and stops are the ones the Bybit suite runs on. So the OKX adapter is driven through
the same plans, fills and stops as the Bybit one, and the assertions the Bybit suite makes on the paper
exchange (what it filled, the position it holds) hold for both.

It checks what OKX checks before anything is carried out, and answers as OKX does:

* demo trading: `x-simulated-trading: 1` on every request (without it: 50101, the key is a demo key);
* a signed request: OK-ACCESS-KEY (50111), OK-ACCESS-PASSPHRASE (50105), OK-ACCESS-TIMESTAMP within 30 s
  (50102), OK-ACCESS-SIGN = base64(HMAC-SHA256(secret, timestamp + METHOD + path?query + body)) (50113);
* a create: its clOrdId (1-32 letters and digits), tdMode, a size in whole lots of the contract (51121),
  posSide in long/short mode (51000).

The markets are the paper exchange's, as OKX would list them (pilot.exchange.okx.markets): BTCUSDT linear
is BTC-USDT-SWAP with contracts of its Bybit step × 100 coins (lot 0.01 contract: BTC 0.001, ETH 0.1), spot
BTCUSDT is BTC-USDT. Tests change what it answers with rules (`Rule`: an answer of their own, instead of the
front's or after it; or the connection closed after the request was carried out, `drop`), set the account's
position mode (`position_mode`) and the key's permissions (`perm`, `ip`, `uid` against `main_uid`). With
`live` True it stands in for OKX's real account instead: a request with the demo header is then refused as
OKX refuses a demo request on a live key (50101). Its cancel-all-after (`countdown`: the timeOut last set,
None before any) answers as OKX's docs do. Its WebSocket side (streams.py, at
`ws_url`) pushes OKX's channels translated from the paper exchange's own streams.

    with OkxFront(paper) as front:
        adapter = connect_okx(front)                    # tests/venue.py
        front.seen("/api/v5/trade/order")               # what the adapter asked, in order
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pilot.paper import PaperExchange

from .endpoints import ACCOUNT, PUBLIC, Handler, error
from .paper_wire import PaperFault, PaperWire
from .streams import OkxStreamFront
from .trading import TRADING

API_KEY = "okxDemoKey0a1b2c3d4e5f6a7b8c9d0e1f2a3b"
API_SECRET = "OKXDEMOSECRET0123456789ABCDEF0123456789AB"
PASSPHRASE = "Pilot-Demo-Pass1!"
SKEW_SECONDS = 30  # OKX refuses a timestamp further than this from its clock (50102)


@dataclass(slots=True)
class Rule:
    """Requests of `method` to `path` that `when` accepts get `answer` (an OKX body) at most `times` times:
    instead of the front's (`forward` False: nothing is carried out) or after it (`forward` True). With
    `drop`, the request is carried out and the connection closed without an answer (a lost answer)."""

    method: str
    path: str
    answer: dict[str, Any] | None = None
    when: Callable[[Any], bool] = lambda params: True
    forward: bool = False
    drop: bool = False
    status: int = 200
    times: int | None = None
    used: int = 0

    def takes(self, method: str, path: str, params: Any) -> bool:
        spent = self.times is not None and self.used >= self.times
        return not spent and (method, path) == (self.method, self.path) and self.when(params)


@dataclass(frozen=True, slots=True)
class Seen:
    method: str
    path: str
    params: Any
    headers: dict[str, str] = field(default_factory=dict)


class OkxFront:
    """Serves OKX's v5 REST on 127.0.0.1 (an ephemeral port) over `paper` until stopped."""

    def __init__(self, paper: PaperExchange, rules: Iterable[Rule] = ()) -> None:
        self.paper = paper
        self.wire = PaperWire(paper)
        self.rules = list(rules)
        self.api_key, self.api_secret, self.passphrase = API_KEY, API_SECRET, PASSPHRASE
        self.position_mode = "net_mode"
        self.perm = "read_only,trade"
        self.ip = "203.0.113.7"
        self.uid, self.main_uid = "44705892343619585", "44705892343619584"  # a sub-account's key
        self.live = False
        self.countdown: int | None = None
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.streams = OkxStreamFront(self)  # its WebSocket side (streams.py), at `ws_url`

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def ws_url(self) -> str:
        return self.streams.url

    def add(self, rule: Rule) -> None:
        with self._lock:
            self.rules.append(rule)

    def seen(self, path: str | None = None) -> list[Seen]:
        """Every request received (or those to `path`), oldest first."""
        with self._lock:
            return [s for s in self._seen if path is None or s.path == path]

    def choose(self, seen: Seen) -> Rule | None:
        with self._lock:
            self._seen.append(seen)
            rule = next((r for r in self.rules if r.takes(seen.method, seen.path, seen.params)), None)
            if rule is not None:
                rule.used += 1
            return rule

    def answer(
        self, method: str, target: str, params: Any, headers: dict[str, str], raw: str
    ) -> dict[str, Any]:
        """What OKX answers: the checks it makes first (the demo header, the signature over `target`, the
        path and a GET's query), then the endpoint."""
        path = target.split("?", 1)[0]
        if (headers.get("x-simulated-trading") == "1") == self.live:
            return error(50101, "APIKey does not match current environment.")
        handler = PUBLIC.get((method, path))
        if handler is None:
            handler = ACCOUNT.get((method, path)) or TRADING.get((method, path))
            if handler is None:
                return {"code": 404, "msg": "Not Found"}
            refused = self._authenticate(method, target, headers, raw)
            if refused is not None:
                return refused
        return _carried_out(handler, self, params)

    def _authenticate(
        self, method: str, target: str, headers: dict[str, str], raw: str
    ) -> dict[str, Any] | None:
        for header, code in (
            ("ok-access-key", 50103),
            ("ok-access-passphrase", 50104),
            ("ok-access-sign", 50106),
            ("ok-access-timestamp", 50107),
        ):
            if not headers.get(header):
                return error(code, f"Request header {header.upper()} can not be empty.")
        if headers["ok-access-key"] != self.api_key:
            return error(50111, "Invalid OK-ACCESS-KEY.")
        if headers["ok-access-passphrase"] != self.passphrase:
            return error(50105, "Request header OK-ACCESS-PASSPHRASE incorrect.")
        stamp = headers["ok-access-timestamp"]
        try:
            skew = abs(
                (datetime.now(UTC) - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds()
            )
        except ValueError:
            return error(50112, "Invalid OK-ACCESS-TIMESTAMP.")
        if skew > SKEW_SECONDS:
            return error(50102, "Timestamp request expired.")
        digest = hmac.new(self.api_secret.encode(), (stamp + method + target + raw).encode(), hashlib.sha256)
        if not hmac.compare_digest(base64.b64encode(digest.digest()).decode(), headers["ok-access-sign"]):
            return error(50113, "Invalid Sign.")
        return None

    def __enter__(self) -> OkxFront:
        self._thread.start()
        self.streams.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error_: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.streams.stop()
        self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.server_close()


def _carried_out(handler: Handler, front: OkxFront, params: Any) -> dict[str, Any]:
    try:
        return handler(front, params)
    except (
        KeyError,
        ValueError,
        TypeError,
        AttributeError,
    ) as broken:  # a request OKX would refuse as malformed
        return error(51000, f"Parameter error ({type(broken).__name__})")


def _handler(front: OkxFront) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve("GET", "")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._serve("POST", self.rfile.read(length).decode() if length else "")

        def _serve(self, method: str, raw: str) -> None:
            parts = urlsplit(self.path)
            params: Any = (
                dict(parse_qsl(parts.query, keep_blank_values=True))
                if method == "GET"
                else json.loads(raw or "{}")
            )
            headers = {k.lower(): v for k, v in self.headers.items()}
            rule = front.choose(Seen(method, parts.path, params, headers))
            body: dict[str, Any] = {}
            if rule is None or rule.forward:
                target = self.path if method == "GET" else parts.path  # a GET is signed with its query
                try:
                    body = front.answer(method, target, params, headers, raw)
                except PaperFault as fault:  # the paper exchange's fault, served as OKX would serve it
                    self._send_raw(fault.raw, fault.status)
                    return
                except OSError:  # it closed the connection (having carried the request out, or not)
                    self.close_connection = True
                    return
            if rule is not None and rule.drop:
                self.close_connection = True  # carried out (forward), and no answer ever comes
                return
            status = 200
            if rule is not None and rule.answer is not None:
                body, status = rule.answer, rule.status
            self._send(body, status)

        def _send_raw(self, data: bytes, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send(self, body: dict[str, Any], status: int) -> None:
            data = json.dumps(body).encode()
            code = body.get("code")
            if status == 200 and str(code) in (
                "50101",
                "50102",
                "50103",
                "50104",
                "50105",
                "50106",
                "50107",
                "50111",
                "50112",
                "50113",
            ):
                status = 401
            elif status == 200 and code == 404:
                status = 404
            elif status == 200 and code == "50011":  # OKX's rate limit comes with HTTP 429
                status = 429
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextlib.contextmanager
def standing_in_for_okx(scenario: dict[str, Any]) -> Iterator[OkxFront]:
    """The front over a paper exchange of `scenario`, standing in for OKX demo trading and for every host of
    OKX's real account at once (pilot.exchange.okx.urls' seams) while held."""
    from pilot.exchange.okx.urls import standing_in_for_okx_demo, standing_in_for_okx_live
    from pilot.paper import start_paper_exchange

    with (
        start_paper_exchange(scenario) as paper,
        OkxFront(paper) as stub,
        standing_in_for_okx_demo(stub.url),
        standing_in_for_okx_live(stub.url),
    ):
        yield stub
