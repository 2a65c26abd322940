"""A loopback stub in front of the paper exchange: chosen requests get Bybit's own answers, the rest pass on.

The paper exchange answers what it models; some of Bybit's answers it does not give (a create answered
170234, a trading stop answered 34040, a USDC position list). Tests that need one put an `Interposer`
between the adapter and the paper exchange:

    with Interposer(paper, [Rule("POST", "/v5/order/create", ret_code(170234, "System Error"))]) as front:
        adapter = connect_adapter(front.url, front.api_key, front.api_secret)  # tests/venue.py

A request a rule matches gets the rule's answer: instead of the paper exchange's (`forward=False`: the
paper exchange never sees it) or after it (`forward=True`: it was carried out, and its answer replaced, as
when Bybit executes a request and answers an error). Every other request is forwarded as it came,
headers and signature included, so the paper exchange judges it as usual. Nothing leaves 127.0.0.1.

A `Meeting` (`with front.meeting(...)`) makes callers' requests happen at once, timed from outside the callers:
requests to one path wait for each other, then the paper exchange carries them all out before any is
answered (several servers' judgements then read the same account, whenever each started).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pilot.paper import PaperExchange

Params = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer as Bybit gives it: a status, a JSON body (or text) and a few headers."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def ret_code(code: int, message: str, result: Any = None) -> Answer:
    """Bybit's envelope with a retCode (error.mdx): HTTP 200, the code, its text, an empty result."""
    return Answer({"retCode": code, "retMsg": message, "result": result or {}, "retExtInfo": {}, "time": 0})


def ok(result: Any) -> Answer:
    return Answer({"retCode": 0, "retMsg": "OK", "result": result, "retExtInfo": {}, "time": 0})


@dataclass(slots=True)
class Rule:
    """Requests of `method` to `path` whose parameters `when` accepts get `answer` (at most `times` times)."""

    method: str
    path: str
    answer: Answer
    when: Callable[[Params], bool] = lambda params: True
    forward: bool = False
    times: int | None = None
    used: int = 0

    def takes(self, method: str, path: str, params: Params) -> bool:
        spent = self.times is not None and self.used >= self.times
        return not spent and (method, path) == (self.method, self.path) and self.when(params)


@dataclass(frozen=True, slots=True)
class Seen:
    method: str
    path: str
    params: Params
    answered_by_rule: bool


class Meeting:
    """Requests of `method` to `path` meet: each waits until `parties` of them have come, or until
    `patience` has passed since the first came; then all are forwarded at once, and none is answered
    until the paper exchange has answered every one, so it carried them all out before any caller reads
    an answer. Opens once: later requests pass as usual. `met` counts the requests that waited in it."""

    def __init__(self, method: str, path: str, parties: int, patience: timedelta) -> None:
        self.method, self.path, self.parties = method, path, parties
        self.patience = patience.total_seconds()
        self.met = 0
        self._open = False
        self._gives_up = 0.0
        self._unanswered = 0
        self._changed = threading.Condition()

    def takes(self, method: str, path: str) -> bool:
        return (method, path) == (self.method, self.path)

    def wait(self) -> bool:
        """Wait for the meeting to open; False when it already was (the request passes as usual)."""
        with self._changed:
            if self._open:
                return False
            self.met += 1
            self._unanswered += 1
            if self.met == 1:
                self._gives_up = time.monotonic() + self.patience
            self._changed.wait_for(
                lambda: self._open or self.met >= self.parties,
                timeout=max(0.0, self._gives_up - time.monotonic()),
            )
            self._open = True
            self._changed.notify_all()
            return True

    def answered(self) -> None:
        """This request's answer came back: wait until every request that met has its answer."""
        with self._changed:
            self._unanswered -= 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._unanswered == 0)


class Interposer:
    """Serves on 127.0.0.1 (an ephemeral port) in front of `paper` until stopped."""

    def __init__(self, paper: PaperExchange, rules: Iterable[Rule] = ()) -> None:
        self.paper = paper
        self.rules = list(rules)
        self.api_key, self.api_secret = paper.api_key, paper.api_secret
        self._seen: list[Seen] = []
        self._meeting: Meeting | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, rule: Rule) -> None:
        with self._lock:
            self.rules.append(rule)

    @contextmanager
    def meeting(self, method: str, path: str, *, parties: int, patience: timedelta) -> Iterator[Meeting]:
        """While inside, the requests of `method` to `path` meet (Meeting); after it, they pass as usual."""
        meeting = Meeting(method, path, parties, patience)
        with self._lock:
            self._meeting = meeting
        try:
            yield meeting
        finally:
            with self._lock:
                self._meeting = None

    def meeting_for(self, method: str, path: str) -> Meeting | None:
        with self._lock:
            meeting = self._meeting
        return meeting if meeting is not None and meeting.takes(method, path) else None

    def seen(self, path: str | None = None) -> list[Seen]:
        """Every request received (or those to `path`), oldest first."""
        with self._lock:
            return [s for s in self._seen if path is None or s.path == path]

    def choose(self, method: str, path: str, params: Params) -> Rule | None:
        with self._lock:
            rule = next((r for r in self.rules if r.takes(method, path, params)), None)
            if rule is not None:
                rule.used += 1
            self._seen.append(Seen(method, path, params, rule is not None))
            return rule

    def __enter__(self) -> Interposer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.server_close()


def _forward(paper_url: str, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
    parts = urlsplit(paper_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        connection.request(method, target, body=raw or None, headers=headers)
        reply = connection.getresponse()
        body = reply.read()
        kept = {k: v for k, v in reply.getheaders() if k.lower().startswith("x-bapi")}
        return Answer(body.decode(), reply.status, kept)
    finally:
        connection.close()


def _handler(front: Interposer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve("GET", b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._serve("POST", self.rfile.read(length) if length else b"")

        def _serve(self, method: str, raw: bytes) -> None:
            parts = urlsplit(self.path)
            if method == "GET":
                params: Params = dict(parse_qsl(parts.query, keep_blank_values=True))
            else:
                params = json.loads(raw or b"{}")
            rule = front.choose(method, parts.path, params)
            if rule is None or rule.forward:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                meeting = front.meeting_for(method, parts.path)
                met = meeting is not None and meeting.wait()
                try:
                    answer = _forward(front.paper.url, method, self.path, headers, raw)
                finally:
                    if meeting is not None and met:
                        meeting.answered()
            if rule is not None:
                answer = rule.answer
            self._send(answer)

        def _send(self, answer: Answer) -> None:
            body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
            data = body.encode()
            self.send_response(answer.status)
            kind = (
                "text/html"
                if isinstance(answer.body, str) and not body.startswith("{")
                else "application/json"
            )
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
