"""A loopback stub of Bybit that answers recorded bodies: fixtures and recordings replayed to the adapter.

    with ReplayServer.from_path(Path("tests/fixtures/bybit/hedge_mode_positions.json")) as stub:
        adapter = BybitExchange.connect("paper", api_key="k", api_secret="s", base_url=stub.url)
        ...
        stub.requests("/v5/position/list")   # what the adapter asked, in order

Matching: a request is answered by the first recorded exchange, not yet used, with the same method and
path whose recorded parameters (GET query or POST body) all equal the request's. `cursor` is matched
exactly, absence included, so page 1 and page 2 of a list never stand in for each other. When every
matching exchange has been used, the last one used answers again (reads are repeatable). A request that
matches nothing gets HTTP 404 with retCode 10017, which no test expects. Signatures are not checked:
this replays answers, it does not judge requests. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pilot.exchange.bybit.recording import Exchange, load


@dataclass(frozen=True, slots=True)
class Received:
    method: str
    path: str
    params: dict[str, Any]


class ReplayServer:
    """Serves recorded exchanges on 127.0.0.1 (an ephemeral port) until stopped."""

    def __init__(self, exchanges: Iterable[Exchange], source: dict[str, Any] | None = None) -> None:
        self.exchanges = list(exchanges)
        self.source = source or {}
        self._used: set[int] = set()
        self._last: dict[tuple[str, str], int] = {}
        self._received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="bybit-replay",
            daemon=True,
        )

    @classmethod
    def from_path(cls, path: Path) -> ReplayServer:
        """Serve a fixture file or a recording directory (see pilot.exchange.bybit.recording)."""
        source, exchanges = load(path)
        return cls(exchanges, source).start()

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def requests(self, path: str | None = None) -> list[Received]:
        """Every request received (or those to `path`), oldest first."""
        with self._lock:
            return [r for r in self._received if path is None or r.path == path]

    def answer(self, method: str, path: str, params: dict[str, Any]) -> Exchange | None:
        """The recorded exchange that answers this request (see the module doc), or None."""
        with self._lock:
            self._received.append(Received(method, path, params))
            matching = [
                index
                for index, exchange in enumerate(self.exchanges)
                if exchange.method == method and exchange.path == path and _matches(exchange, params)
            ]
            fresh = [index for index in matching if index not in self._used]
            if fresh:
                chosen = fresh[0]
            elif matching:
                used = [index for index in matching if index == self._last.get((method, path))]
                chosen = used[0] if used else matching[-1]
            else:
                return None
            self._used.add(chosen)
            self._last[(method, path)] = chosen
            return self.exchanges[chosen]

    def __enter__(self) -> ReplayServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _matches(exchange: Exchange, params: dict[str, Any]) -> bool:
    recorded = exchange.query if exchange.method == "GET" else (exchange.body or {})
    if ("cursor" in recorded) != bool(params.get("cursor")):
        return False
    # Bybit cursors arrive URL-encoded in answers and decoded in requests: compare them decoded.
    return all(
        unquote(str(params.get(key))) == unquote(str(value))
        for key, value in recorded.items()
        if value is not None
    )


def _handler(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            self._reply("GET", parts.path, dict(parse_qsl(parts.query, keep_blank_values=True)))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                params = json.loads(raw or b"{}")
            except ValueError:
                params = {}
            self._reply("POST", urlsplit(self.path).path, params if isinstance(params, dict) else {})

        def _reply(self, method: str, path: str, params: dict[str, Any]) -> None:
            exchange = server.answer(method, path, params)
            if exchange is None:
                body = json.dumps(
                    {
                        "retCode": 10017,
                        "retMsg": f"replay: nothing recorded for {method} {path}",
                        "result": {},
                        "retExtInfo": {},
                        "time": 0,
                    }
                ).encode()
                self._send(404, body, "application/json", {})
                return
            answer = exchange.answer
            if isinstance(answer, str):
                self._send(exchange.status, answer.encode(), "text/html", exchange.headers)
            else:
                self._send(exchange.status, json.dumps(answer).encode(), "application/json", exchange.headers)

        def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
