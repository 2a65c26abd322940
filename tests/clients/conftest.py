"""The standard Bybit clients, as a trader's own script would build them, pointed at the paper exchange.

pybit's HTTP session and WebSocket, ccxt's `bybit` and ccxt.pro's `bybit`, each with its default options and
only its URLs changed to the paper exchange on 127.0.0.1 (no request ever leaves loopback: proxies from the
environment are ignored). The paper exchange runs the packaged default scenario (Bybit's real filters,
static prices) at speed 0: its market moves only when a test moves it, so every figure here is exact.

ccxt sets the calling thread's decimal context to ROUND_HALF_UP with the Underflow trap on; each ccxt client
is used inside a local decimal context so nothing after it inherits that.
"""

from __future__ import annotations

import decimal
import queue
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import ccxt
import ccxt.pro
import pytest
from pybit.unified_trading import HTTP, WebSocket, WebSocketTrading

from pilot.paper import PaperExchange, start_paper_exchange

WAIT_SECONDS = 10.0
REST_KINDS = ("spot", "futures", "v2", "public", "private")


@pytest.fixture(autouse=True)
def decimal_context_put_back() -> Iterator[None]:
    """ccxt sets the decimal context it finds each time it rounds (rounding half up, Underflow trapped); from a
    task that is the worker's own context object, which Pilot's core then rounded with in the tests after
    (a loss of 106.545 shown as 106.55). Put it back as it was, in place."""
    context = decimal.getcontext()
    saved = context.copy()
    yield
    for name in ("prec", "rounding", "Emin", "Emax", "capitals", "clamp"):
        setattr(context, name, getattr(saved, name))
    for signal, on in saved.traps.items():
        context.traps[signal] = on
    context.clear_flags()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paper() -> Iterator[PaperExchange]:
    with start_paper_exchange(speed=0) as exchange:
        yield exchange


@pytest.fixture
def session(paper: PaperExchange) -> HTTP:
    """pybit's HTTP session on the paper exchange (its retries off: an answer is an answer)."""
    http = HTTP(api_key=paper.api_key, api_secret=paper.api_secret, max_retries=1, timeout=5)
    http.endpoint = paper.url
    http.client.trust_env = False
    http.retry_codes = set()
    return http


class LoopbackWebSocket(WebSocket):  # type: ignore[misc]  # pybit ships no types
    """pybit's V5 WebSocket, connected to the paper exchange: pybit builds its URL from a wss:// template of
    Bybit's hosts in `_connect`, so the URL it is handed is replaced with the paper exchange's path.

    pybit 5.17's `subscribe` records the request and the topic's callback only after `ws.send` returns; on
    loopback the answer (or the topic's first push) can come back first, pybit's handler then raises a
    KeyError, which closes the socket for good, and the next `subscribe` waits forever for a connection (a
    full run hung so). A lock makes a message wait until the subscription it answers is recorded (pybit's
    race, not the paper exchange's: on Bybit the network's latency hides it)."""

    def __init__(self, base: str, channel_type: str, **kwargs: Any) -> None:
        self._paper_url = base + (
            "/v5/private" if channel_type == "private" else f"/v5/public/{channel_type}"
        )
        self._subscribing = threading.Lock()
        super().__init__(channel_type, testnet=False, **kwargs)

    def _connect(self, url: str) -> None:
        super()._connect(self._paper_url)

    def subscribe(self, *args: Any, **kwargs: Any) -> None:
        with self._subscribing:
            super().subscribe(*args, **kwargs)

    def _handle_incoming_message(self, message: dict[str, Any]) -> None:
        with self._subscribing:
            super()._handle_incoming_message(message)


class LoopbackTrading(WebSocketTrading):  # type: ignore[misc]  # pybit ships no types
    """pybit's WebSocket order entry (/v5/trade), connected to the paper exchange as LoopbackWebSocket is.

    pybit 5.17 registers a request's callback only after `ws.send` returns; on loopback the answer can come
    back first and pybit drops it ("unregistered reqId"). A lock makes the answer wait until the request is
    registered (pybit's race, not the paper exchange's: on Bybit the network's latency hides it)."""

    def __init__(self, base: str, **kwargs: Any) -> None:
        self._paper_url = base + "/v5/trade"
        self._sending = threading.Lock()
        super().__init__(testnet=False, **kwargs)

    def _connect(self, url: str) -> None:
        super()._connect(self._paper_url)

    def _send_order_operation(self, *args: Any, **kwargs: Any) -> None:
        with self._sending:
            super()._send_order_operation(*args, **kwargs)

    def _handle_incoming_message(self, message: dict[str, Any]) -> None:
        with self._sending:
            super()._handle_incoming_message(message)


class Inbox:
    """Messages a pybit callback receives on its thread, waited for with a deadline (never a sleep)."""

    def __init__(self) -> None:
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []

    def __call__(self, message: dict[str, Any]) -> None:
        self.messages.put(message)

    def wait_for(self, match: Any = lambda m: True, timeout: float = WAIT_SECONDS) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for index, message in enumerate(self.seen):
                if match(message):
                    return self.seen.pop(index)
            self.seen.append(self.messages.get(timeout=max(deadline - time.monotonic(), 0.001)))


@pytest.fixture
def pybit_socket(paper: PaperExchange) -> Iterator[Any]:
    """A factory of pybit WebSockets on the paper exchange, closed after."""
    opened: list[WebSocket] = []

    def open_socket(channel_type: str) -> WebSocket:
        """ "linear", "spot", "private", or "trade" (order entry)."""
        keys = {"api_key": paper.api_key, "api_secret": paper.api_secret}
        if channel_type == "trade":
            socket = LoopbackTrading(paper.ws_url, **keys)
        else:
            socket = LoopbackWebSocket(
                paper.ws_url, channel_type, **(keys if channel_type == "private" else {})
            )
        opened.append(socket)
        return socket

    yield open_socket
    for socket in opened:
        socket.exit()


def _rest_urls(exchange: Any, paper: PaperExchange) -> None:
    exchange.urls["api"] = dict.fromkeys(REST_KINDS, paper.url)


def _stream_urls(paper: PaperExchange) -> dict[str, Any]:
    ws = paper.ws_url
    public = {category: f"{ws}/v5/public/{category}" for category in ("spot", "inverse", "option", "linear")}
    private = f"{ws}/v5/private"
    return {
        "public": public,
        "private": {
            "spot": {"unified": private, "nonUnified": private},
            "contract": private,
            "usdc": private,
            "trade": f"{ws}/v5/trade",
        },
    }


# ccxt's options as a script leaves them, but its own pacing: ccxt spaces requests out for Bybit's limits
# (a second for load_markets alone), which a paper exchange on loopback does not need (its limits stand).
UNPACED = {"enableRateLimit": False, "timeout": 5000}


@pytest.fixture
def exchange(paper: PaperExchange) -> Iterator[ccxt.bybit]:
    """ccxt's bybit with its default options (markets and currencies loaded as ccxt loads them)."""
    client = ccxt.bybit({"apiKey": paper.api_key, "secret": paper.api_secret} | UNPACED)
    _rest_urls(client, paper)
    client.session.trust_env = False
    with decimal.localcontext():
        yield client
    client.session.close()


@pytest.fixture
async def pro(paper: PaperExchange) -> AsyncIterator[ccxt.pro.bybit]:
    """ccxt.pro's bybit with its default options, its REST and WebSocket URLs on the paper exchange."""
    client = ccxt.pro.bybit({"apiKey": paper.api_key, "secret": paper.api_secret} | UNPACED)
    _rest_urls(client, paper)
    client.urls["api"]["ws"] = _stream_urls(paper)
    with decimal.localcontext():
        try:
            yield client
        finally:
            await client.close()
