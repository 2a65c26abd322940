"""The one road to pybit: a REST session that never resends, a thread per request, quarantined symbols, pages.

* Writes are sent exactly once. pybit would resend retCodes 10002/10006 (even for POST /v5/order/create),
  non-JSON answers and timeouts; every session here has `max_retries=1`, `force_retry=False`, empty
  `ignore_codes`, and `retry_codes` emptied *after* construction (pybit replaces an empty set given to the
  constructor with its defaults). pybit's logger is silenced: its records may carry requests.
* pybit is synchronous, so every call runs in one of CONCURRENT_REQUESTS worker threads and the event loop
  never blocks. Every failure is translated in the worker (pilot.exchange.bybit.translate_errors), so pybit's
  exception, with the signed request in its text, never leaves it.
* Symbols the exchange names that no agent could write are quarantined (pilot.exchange.symbols): a request
  that names one sends the exchange's own text.

Lists are read page by page (`nextPageCursor`). Real Bybit returns a non-empty cursor even on the last or
only page (see tests/fixtures/bybit/), so paging stops on an empty page, on a cursor already seen, or
after MAX_PAGES (then the read fails as ExchangeUnavailable rather than return a silently truncated list),
and rows seen twice are dropped (orders by orderId, positions by symbol and positionIdx, fills by execId).

Linear is USDT and USDC contracts alike (enum.mdx category): a list read without a symbol needs a settle
coin (position.mdx, open-order.mdx), so positions and open orders are read for each of SETTLE_COINS and
joined, each row once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from decimal import InvalidOperation
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import requests
from pybit.exceptions import FailedRequestError, InvalidRequestError
from pybit.unified_trading import HTTP

from pilot.exchange.bybit import payloads as wire_
from pilot.exchange.bybit.loopback_http import LoopbackClient
from pilot.exchange.bybit.rate_limits import RateLimiter
from pilot.exchange.bybit.recording import Recorder
from pilot.exchange.bybit.translate_errors import system_clock, translate
from pilot.exchange.bybit.urls import route
from pilot.exchange.errors import ExchangeError, ExchangeUnavailable
from pilot.exchange.models import Page
from pilot.exchange.symbols import Quarantine, is_quarantined_name

MAX_PAGES = 20
SETTLE_COIN = "USDT"
SETTLE_COINS = ("USDT", "USDC")  # linear: USDT and USDC perpetuals and futures (position.mdx: settleCoin)
PAGE_LIMITS = {  # the largest page each list endpoint serves (its docs page)
    "get_open_orders": 50,
    "get_order_history": 50,
    "get_executions": 100,
    "get_positions": 200,
    "get_closed_pnl": 100,
}
# Requests in flight at once. A plan reads up to eight things concurrently (ticker, balance, position, price
# band, open orders and instrument rules in both categories); fewer workers queue them into a second round
# trip. Ten is also the connection pool requests keeps per host, so no connection is opened and thrown away.
CONCURRENT_REQUESTS = 10
# Signed list reads that take a symbol: a quarantined one is not sent (its text, quoted in the URL, would not
# match the signature over it); the category is listed and its rows kept.
SIGNED_LISTS = frozenset(
    {"get_positions", "get_open_orders", "get_order_history", "get_executions", "get_closed_pnl"}
)

T = TypeVar("T")
Clock = Callable[[], datetime]
Row = dict[str, Any]


def _silence_pybit_logging() -> None:
    """pybit adds a stream handler per session when the root logger has none; its records may carry requests."""
    logger = logging.getLogger("pybit._http_manager")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    logger.setLevel(logging.CRITICAL + 1)


def open_session(
    environment: str,
    url: str,
    *,
    api_key: str,
    api_secret: str,
    timeout_seconds: float,
    recv_window_ms: int,
    record_dir: Path | None,
) -> tuple[HTTP, Recorder | None]:
    """A pybit session on `url` that never resends, and the recorder on it when `record_dir` is given."""
    session = HTTP(
        api_key=api_key,
        api_secret=api_secret,
        testnet=environment == "bybit-testnet",
        demo=environment == "bybit-demo",
        timeout=timeout_seconds,
        recv_window=recv_window_ms,
        max_retries=1,
        force_retry=False,
        log_requests=False,
    )
    _silence_pybit_logging()
    routed = route(url)  # a mainnet host goes to its own address, unless the test suite stands a stub in
    loopback = environment == "paper" or routed.stand_in
    session.endpoint = routed.rest_url
    session.retry_codes = set()  # after construction: pybit swaps an empty set for its defaults
    session.ignore_codes = set()
    session.max_retries = 1
    session.force_retry = False
    if loopback:
        session.client.trust_env = False  # loopback must not go through an HTTP(S)_PROXY
    recorder = None
    if record_dir is not None:
        recorder = Recorder(Path(record_dir), secrets=(api_key, api_secret), environment=environment)
        recorder.attach(session.client)
    elif loopback:  # urllib3 alone: a third of requests' CPU per request (loopback_http)
        session.client = LoopbackClient(routed.rest_url, session.client.headers, CONCURRENT_REQUESTS)
    return session, recorder


class Transport:
    """One pybit session and its worker threads: every request the adapter sends goes through `call`."""

    def __init__(
        self,
        session: HTTP,
        *,
        clock: Clock = system_clock,
        recorder: Recorder | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self._session = session
        self._limiter = limiter  # Bybit's per-IP and per-UID limits, kept before a request leaves
        self._clock = clock
        self._recorder = recorder
        self._executor = ThreadPoolExecutor(max_workers=CONCURRENT_REQUESTS, thread_name_prefix="bybit")
        self._quarantine = Quarantine()  # symbols the exchange names that no agent could write

    def close(self) -> None:
        self._session.client.close()
        self._executor.shutdown(wait=False)

    async def call(
        self, method: str, action: str, *, operation: str = "read", link_id: str = "", **params: Any
    ) -> Row:
        """Send one request through pybit's `method` and return its answer; raise its failure translated."""
        symbol = params.get("symbol")
        if isinstance(symbol, str) and not self._quarantine.knows(symbol):
            await self._learn_symbols(str(params.get("category") or "linear"))
        listed = isinstance(symbol, str) and is_quarantined_name(symbol) and method in SIGNED_LISTS
        if listed:  # its text may not survive a signed query string: list the category, keep its rows
            params.pop("symbol")
            if params.get("category") == "linear":
                params["settleCoin"] = self._quarantine.coin(str(symbol))
        elif isinstance(symbol, str):
            params["symbol"] = self._quarantine.wire(symbol)  # a quarantined name: the exchange's own text
        await self._wait_turn(method, action)
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(
            self._executor, partial(self._call_sync, method, action, operation, link_id, params)
        )
        if method == "get_positions" and "settleCoin" in params:
            self._quarantine.note_coin(answer, str(params["settleCoin"]))
        return _only(answer, str(symbol)) if listed else answer

    async def _wait_turn(self, method: str, action: str) -> None:
        """Wait for a free place under Bybit's limits (rate_limits); none soon enough: not sent at all."""
        if self._limiter is None:
            return
        wait = self._limiter.reserve(method)
        if wait is None:
            raise ExchangeUnavailable(
                f"{action}: not sent, Pilot keeps under Bybit's request limits; try again in a second"
            )
        if wait > 0:
            await asyncio.sleep(wait)

    async def _learn_symbols(self, category: str) -> None:
        """Read what holds quarantined symbols (positions, open orders) so their names mean them again: a
        name given by an earlier process, asked for before any read here listed it."""
        lists = (
            ("read positions", "get_positions", wire_.position_key),
            ("read open orders", "get_open_orders", wire_.order_key),
        )
        for action, method, key in lists:
            reads = (
                self.pages(
                    action, method, key, until=None, category=category, limit=PAGE_LIMITS[method], **where
                )
                for where in list_scopes(category, None)
            )
            with contextlib.suppress(ExchangeError):
                await asyncio.gather(*reads)

    def _call_sync(self, method: str, action: str, operation: str, link_id: str, params: Row) -> Row:
        failure: ExchangeError | None = None
        try:
            answer: Row = getattr(self._session, method)(**params)
        except (
            InvalidRequestError,
            FailedRequestError,
            requests.exceptions.RequestException,
            ValueError,
        ) as error:
            failure = translate(error, action, operation=operation, now=self._clock(), order_link_id=link_id)
        if failure is not None:
            raise failure  # raised outside the except block: pybit's exception (with the request) is not chained
        self._quarantine.clean(answer)
        return answer

    async def read(self, action: str, parse: Callable[[Row], T], method: str, **params: Any) -> T:
        """One read, parsed."""
        answer = await self.call(method, action, **params)
        return self.parse(answer, parse, action, operation="read")

    def parse(self, answer: Row, parse: Callable[[Row], T], action: str, *, operation: str) -> T:
        """`parse(answer)`, an answer it cannot read failing as the operation's unreadable answer."""
        failure: ExchangeError | None = None
        try:
            return parse(answer)
        except (KeyError, TypeError, ValueError, IndexError, InvalidOperation, AttributeError):
            failure = translate(ValueError(), action, operation=operation)
        raise failure

    async def pages(
        self,
        action: str,
        method: str,
        key: Callable[[Row], Hashable],
        *,
        until: Callable[[Row], bool] | None = None,
        **params: Any,
    ) -> list[Row]:
        """Every row of a paged list, each once.

        Stops on an empty page, on a cursor already followed (real Bybit answers a non-empty cursor even on
        the last page, and has been seen pointing back at its own page), or when `until` matches a row.
        More than MAX_PAGES pages is a failed read, never a silently short list.
        """
        rows: list[Row] = []
        seen_rows: set[Hashable] = set()
        seen_cursors: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            answer = await self.call(method, action, **params, cursor=cursor)
            page, cursor = self.parse(answer, partial(wire_.page_of, key), action, operation="read")
            for identity, row in page:
                if identity not in seen_rows:
                    seen_rows.add(identity)
                    rows.append(row)
            found = until is not None and any(until(row) for _, row in page)
            if not page or not cursor or cursor in seen_cursors or found:
                return rows
            seen_cursors.add(cursor)
        raise ExchangeUnavailable(
            f"{action}: the exchange kept paging past {MAX_PAGES} pages; the list is incomplete."
        )

    async def page(
        self,
        action: str,
        method: str,
        key: Callable[[Row], Hashable],
        parse: Callable[[Row], T],
        cursor: str | None,
        **params: Any,
    ) -> Page[T]:
        """One page of a list (the caller follows the cursor), its rows parsed."""
        wanted = {name: value for name, value in params.items() if value is not None}
        answer = await self.call(method, action, cursor=cursor or None, **wanted)
        rows, following = self.parse(answer, partial(wire_.page_of, key), action, operation="read")
        parsed = tuple(self.parse(row, parse, action, operation="read") for _, row in rows)
        return Page(parsed, following if rows else None)


def _only(answer: Row, symbol: str) -> Row:
    """A list answer with only `symbol`'s rows."""
    result = answer.get("result")
    if isinstance(result, dict) and isinstance(result.get("list"), list):
        rows = [row for row in result["list"] if isinstance(row, dict) and row.get("symbol") == symbol]
        return {**answer, "result": {**result, "list": rows}}
    return answer


def list_scopes(category: str, symbol: str | None) -> list[dict[str, str]]:
    """What narrows a list read: the symbol; else, on linear, each settle coin (one of them is required)."""
    if symbol:
        return [{"symbol": symbol}]
    if category == "spot":
        return [{}]
    coins = SETTLE_COINS if category == "linear" else (SETTLE_COIN,)
    return [{"settleCoin": coin} for coin in coins]


def each_once(key: Callable[[Row], Hashable], lists: Iterable[tuple[T, list[Row]]]) -> list[tuple[T, Row]]:
    """The rows of several list reads, each with its list's tag, a row seen in an earlier list dropped."""
    seen: set[Hashable] = set()
    joined = []
    for tag, rows in lists:
        for row in rows:
            if key(row) not in seen:
                seen.add(key(row))
                joined.append((tag, row))
    return joined
