"""The Bybit V5 adapter: the only module that imports pybit, and where every pybit or network error is translated.

Safety, in order of importance:

* Writes are sent exactly once. pybit would resend retCodes 10002/10006 (even for POST /v5/order/create),
  non-JSON answers and timeouts; every session here has `max_retries=1`, `force_retry=False`, empty
  `ignore_codes`, and `retry_codes` emptied *after* construction (pybit replaces an empty set given to the
  constructor with its defaults).
* Only allowlisted base URLs: https://api-demo.bybit.com (bybit-demo), https://api-testnet.bybit.com
  (bybit-testnet) and, for "paper", a loopback http URL with a port. Mainnet is refused.
* pybit's exception text contains the signed request (api key included); it never leaves this module.
  Messages are built from our own words; the exchange's retMsg travels only in `untrusted_text`.
  pybit's logger is silenced.

Errors are the three outcomes of pilot.exchange.errors: ExchangeRejected (a retCode: a definite no),
ExchangeUnavailable (not processed: connection refused, HTTP 4xx, a rate-limited read, any failed read) and
OutcomeUnknown (a write that may have happened: timeout, 5xx, 110079/170035 "processing", a dropped
connection, an unreadable answer).

Maintenance margin: instruments-info has no maintenance margin rate; get_instrument reads the first tier of
/v5/market/risk-limit and falls back to DEFAULT_MAINTENANCE_MARGIN_RATE (0.01, above Bybit's first tier for
the majors, so liquidation estimates err on the early side) only when that answer carries none. Spot
instruments have no liquidation and get 0.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
from pybit.exceptions import FailedRequestError, InvalidRequestError
from pybit.unified_trading import HTTP
from urllib3.exceptions import MaxRetryError, NewConnectionError

from pilot.core.facts import InstrumentRules, Position, Touch
from pilot.exchange import bybit_wire as wire_
from pilot.exchange.bybit_wire import ms_to_datetime
from pilot.exchange.errors import ExchangeError, ExchangeRejected, ExchangeUnavailable, OutcomeUnknown
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderAck,
    OrderBook,
    OrderRequest,
    Ticker,
)

ENVIRONMENTS = {"bybit-demo": "https://api-demo.bybit.com", "bybit-testnet": "https://api-testnet.bybit.com"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_MAINTENANCE_MARGIN_RATE = Decimal("0.01")
INSTRUMENT_TTL_SECONDS = 300.0
MAX_PAGES = 20
UNTRUSTED_LIMIT = 500
PROCESSING_CODES = frozenset({110079, 170035})
SERVER_TROUBLE_CODES = frozenset({10000, 10016})  # server timeout / server error: the write may have happened
SETTLE_COIN = "USDT"

FAMILIES: dict[str, frozenset[int]] = {
    "auth": frozenset({10002, 10003, 10004, 10007, 10010}),
    "rate_limit": frozenset({10006, 10018}),
    "permission": frozenset({10005, 10027}),
    "duplicate": frozenset({10014, 110072, 170141}),
    "balance": frozenset({110004, 110006, 110007, 110012, 110044, 110045, 170131}),
    "position": frozenset({110013, 110017, 110021, 110036, 110058, 110090}),
    "not_found": frozenset({110001, 110008, 110010, 170139, 170142, 170190, 170213}),
    "params": frozenset(
        {
            10001,
            10029,
            110003,
            110064,
            110094,
            110120,
            110121,
            170121,
            170124,
            170130,
            170132,
            170133,
            170134,
            170136,
            170137,
            170140,
            170193,
            170194,
            170313,
            170371,
            170372,
        }
    ),
}
LEVERAGE_NOT_MODIFIED = 110043

T = TypeVar("T")


def family_of(ret_code: int) -> str:
    """The family a Bybit retCode belongs to (see FAMILIES), "other" when unknown."""
    for family, codes in FAMILIES.items():
        if ret_code in codes:
            return family
    return "other"


def check_base_url(environment: str, base_url: str | None) -> str:
    """Return the base URL to use, or raise ValueError: only demo, testnet and loopback paper are allowed."""
    if environment not in (*ENVIRONMENTS, "paper"):
        raise ValueError(f"Unknown environment {environment!r}: use bybit-demo, bybit-testnet or paper.")
    if environment == "paper":
        if not base_url:
            raise ValueError(
                "The paper environment needs the paper exchange's base URL (http://127.0.0.1:PORT)."
            )
        parts = urlsplit(base_url)
        if (
            parts.scheme != "http"
            or parts.hostname not in LOOPBACK_HOSTS
            or parts.port is None
            or parts.path not in ("", "/")
            or parts.query
            or parts.username
            or parts.password
        ):
            raise ValueError(_refusal(base_url))
        return base_url.rstrip("/")
    allowed = ENVIRONMENTS[environment]
    if base_url is not None and base_url.rstrip("/") != allowed:
        raise ValueError(_refusal(base_url))
    return allowed


def _refusal(base_url: str) -> str:
    return (
        f"Refusing base URL {base_url!r}: mainnet is not supported in this version. Allowed: "
        "https://api-demo.bybit.com (bybit-demo), https://api-testnet.bybit.com (bybit-testnet), "
        "or http://127.0.0.1:PORT / localhost / [::1] for the paper exchange (paper)."
    )


def _silence_pybit_logging() -> None:
    """pybit adds a stream handler per session when the root logger has none; its records may carry requests."""
    logger = logging.getLogger("pybit._http_manager")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    logger.setLevel(logging.CRITICAL + 1)


def _retry_at(headers: Any) -> datetime | None:
    try:
        stamp = headers.get("X-Bapi-Limit-Reset-Timestamp") if headers is not None else None
        return ms_to_datetime(stamp) if stamp else None
    except (TypeError, ValueError):
        return None


def _connect_failed(error: requests.exceptions.RequestException) -> bool:
    """True when the request never left: no connection could be opened."""
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return True
    reason = error.args[0] if error.args else None
    if isinstance(reason, MaxRetryError):
        reason = reason.reason
    return isinstance(reason, NewConnectionError)


def translate(error: Exception, action: str, *, write: bool) -> ExchangeError:
    """Map a pybit/requests exception to one of the three outcomes, in our own words (no request text)."""
    if isinstance(error, InvalidRequestError):
        return _from_ret_code(int(error.status_code), str(error.message), error.resp_headers, action, write)
    if isinstance(error, FailedRequestError):
        status = int(error.status_code)
        unreadable = error.message.startswith("Conflict")  # pybit's synthetic 409 for a body that is not JSON
        if write and (status >= 500 or unreadable or error.message.startswith("Bad Request. Retries")):
            what = "a body that is not JSON" if unreadable else f"HTTP {status}"
            return OutcomeUnknown(
                f"{action}: the exchange answered {what}; the request may have been executed. "
                "Look it up; do not resend."
            )
        what = "a body that is not JSON" if unreadable else f"HTTP {status}"
        return ExchangeUnavailable(
            f"{action}: the exchange answered {what}; nothing usable came back.",
            retry_at=_retry_at(error.resp_headers),
        )
    if isinstance(error, requests.exceptions.RequestException):
        if _connect_failed(error):
            return ExchangeUnavailable(f"{action}: could not connect to the exchange; nothing was sent.")
        if write:
            kind = "timed out" if isinstance(error, requests.exceptions.Timeout) else "lost the connection"
            return OutcomeUnknown(
                f"{action}: the request was sent and the exchange {kind} before answering. "
                "Look it up; do not resend."
            )
        return ExchangeUnavailable(
            f"{action}: the exchange did not answer in time or dropped the connection."
        )
    if write:
        return OutcomeUnknown(f"{action}: the answer could not be read; the request may have been executed.")
    return ExchangeUnavailable(f"{action}: the answer could not be read.")


def _from_ret_code(code: int, text: str, headers: Any, action: str, write: bool) -> ExchangeError:
    untrusted = text[:UNTRUSTED_LIMIT]
    if code in PROCESSING_CODES or code in SERVER_TROUBLE_CODES:
        if write:
            return OutcomeUnknown(
                f"{action}: the exchange answered retCode {code} (still processing or server "
                "trouble); the outcome is not known. Look it up; do not resend.",
                untrusted_text=untrusted,
            )
        return ExchangeUnavailable(
            f"{action}: the exchange is busy (retCode {code}).", untrusted_text=untrusted
        )
    family = family_of(code)
    if family == "rate_limit" and not write:
        return ExchangeUnavailable(
            f"{action}: rate limited by the exchange (retCode {code}).",
            untrusted_text=untrusted,
            retry_at=_retry_at(headers),
        )
    return ExchangeRejected(
        f"{action}: the exchange refused it (retCode {code}, {family}).",
        ret_code=code,
        family=family,
        untrusted_text=untrusted,
        retry_at=_retry_at(headers) if family == "rate_limit" else None,
    )


class BybitExchange:
    """The Exchange port over Bybit V5 REST (pilot.app.ports.Exchange). Build it with `connect`.

    Each instance owns one pybit session and a small thread pool: pybit is synchronous, so every call runs
    in a worker thread and the event loop never blocks.
    """

    def __init__(self, session: HTTP, environment: str, base_url: str) -> None:
        self._session = session
        self.environment = environment
        self.base_url = base_url
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bybit")
        self._instruments: dict[tuple[str, str], tuple[float, InstrumentRules]] = {}

    @classmethod
    def connect(
        cls,
        environment: str,
        *,
        api_key: str,
        api_secret: str,
        base_url: str | None = None,
        timeout_seconds: float = 10,
        recv_window_ms: int = 5000,
    ) -> BybitExchange:
        """Build an adapter for bybit-demo, bybit-testnet or paper (no request is sent yet).

        Raises:
            ValueError: an unknown environment, a base URL off the allowlist (mainnet included), or no key.
        """
        url = check_base_url(environment, base_url)
        if not api_key or not api_secret:
            raise ValueError("An api key and its secret are required.")
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
        session.endpoint = url
        session.retry_codes = set()  # after construction: pybit swaps an empty set for its defaults
        session.ignore_codes = set()
        session.max_retries = 1
        session.force_retry = False
        if environment == "paper":
            session.client.trust_env = False  # loopback must not go through an HTTP(S)_PROXY
        return cls(session, environment, url)

    def __repr__(self) -> str:
        return f"BybitExchange(environment={self.environment!r}, base_url={self.base_url!r})"

    async def close(self) -> None:
        self._session.client.close()
        self._executor.shutdown(wait=False)

    # ---- the one road to pybit --------------------------------------------------------------------

    async def _call(self, method: str, action: str, *, write: bool = False, **params: Any) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, partial(self._call_sync, method, action, write, params)
        )

    def _call_sync(self, method: str, action: str, write: bool, params: dict[str, Any]) -> dict[str, Any]:
        failure: ExchangeError | None = None
        try:
            answer = getattr(self._session, method)(**params)
        except (
            InvalidRequestError,
            FailedRequestError,
            requests.exceptions.RequestException,
            ValueError,
        ) as error:
            failure = translate(error, action, write=write)
        if failure is not None:
            raise failure  # raised outside the except block: pybit's exception (with the request) is not chained
        return answer

    async def _read(self, action: str, parse: Callable[[dict[str, Any]], T], method: str, **params: Any) -> T:
        answer = await self._call(method, action, **params)
        return self._parse(answer, parse, action, write=False)

    @staticmethod
    def _parse(
        answer: dict[str, Any], parse: Callable[[dict[str, Any]], T], action: str, *, write: bool
    ) -> T:
        failure: ExchangeError | None = None
        try:
            return parse(answer)
        except (KeyError, TypeError, ValueError, IndexError, InvalidOperation):
            failure = translate(ValueError(), action, write=write)
        raise failure

    async def _pages(self, action: str, method: str, **params: Any) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_PAGES):
            answer = await self._call(method, action, **params, cursor=cursor)
            result = self._parse(answer, lambda a: a["result"], action, write=False)
            rows.extend(result.get("list") or [])
            cursor = result.get("nextPageCursor") or None
            if not cursor:
                break
        return rows

    # ---- market data -------------------------------------------------------------------------------

    async def get_instrument(self, category: str, symbol: str) -> InstrumentRules:
        cached = self._instruments.get((category, symbol))
        if cached is not None and time.monotonic() - cached[0] < INSTRUMENT_TTL_SECONDS:
            return cached[1]
        action = f"read the {category} instrument {symbol}"
        info = self._call("get_instruments_info", action, category=category, symbol=symbol)
        if category == "spot":
            answer, mmr = await info, Decimal(0)
        else:  # both reads at once: one round trip on a cold cache
            answer, mmr = await asyncio.gather(info, self._maintenance_margin_rate(category, symbol))
        rows = self._parse(answer, lambda a: a["result"]["list"], action, write=False)
        if not rows:
            raise ExchangeRejected(
                f"{action}: the exchange lists no such instrument.", ret_code=10001, family="not_found"
            )
        rules = self._parse(
            rows[0], lambda row: wire_.instrument_rules(category, row, mmr), action, write=False
        )
        self._instruments[(category, symbol)] = (time.monotonic(), rules)
        return rules

    async def _maintenance_margin_rate(self, category: str, symbol: str) -> Decimal:
        action = f"read the risk limit of {symbol}"
        answer = await self._call("get_risk_limit", action, category=category, symbol=symbol)
        tiers = (answer.get("result") or {}).get("list") or []
        try:
            return wire_.dec(tiers[0].get("maintenanceMargin"))
        except (IndexError, AttributeError, ValueError, InvalidOperation):
            return DEFAULT_MAINTENANCE_MARGIN_RATE

    async def get_ticker(self, category: str, symbol: str) -> Ticker:
        def parse(answer: dict[str, Any]) -> Ticker:
            return wire_.ticker(category, answer["result"]["list"][0], wire_.ms_to_datetime(answer["time"]))

        return await self._read(
            f"read the {symbol} ticker", parse, "get_tickers", category=category, symbol=symbol
        )

    async def get_touch(self, category: str, symbol: str) -> Touch:
        """Bid, ask and mark; spot has no mark price, so its mark is the mid."""
        ticker = await self.get_ticker(category, symbol)
        mark = ticker.mark if ticker.mark is not None else (ticker.bid + ticker.ask) / 2
        return Touch(bid=ticker.bid, ask=ticker.ask, mark=mark, observed_at=ticker.observed_at)

    async def get_orderbook(self, category: str, symbol: str, depth: int = 25) -> OrderBook:
        def parse(answer: dict[str, Any]) -> OrderBook:
            return wire_.orderbook(category, answer["result"], wire_.ms_to_datetime(answer["time"]))

        return await self._read(
            f"read the {symbol} order book",
            parse,
            "get_orderbook",
            category=category,
            symbol=symbol,
            limit=depth,
        )

    # ---- account -----------------------------------------------------------------------------------

    async def get_position(self, category: str, symbol: str) -> Position:
        """The signed one-way position (flat when there is none; spot never has one)."""
        if category == "spot":
            return Position.flat(symbol)

        def parse(answer: dict[str, Any]) -> Position:
            rows = [r for r in answer["result"]["list"] if r.get("symbol") == symbol]
            return wire_.position(symbol, rows[0] if rows else None)

        return await self._read(
            f"read the {symbol} position", parse, "get_positions", category=category, symbol=symbol
        )

    async def get_positions(self, category: str, symbol: str | None = None) -> list[ExchangePosition]:
        action = "read positions"
        where = {"symbol": symbol} if symbol else {"settleCoin": SETTLE_COIN}
        rows = await self._pages(action, "get_positions", category=category, **where)
        return [self._parse(r, partial(wire_.exchange_position, category), action, write=False) for r in rows]

    async def get_balance(self) -> AccountBalance:
        return await self._read(
            "read the wallet balance",
            lambda a: wire_.account_balance(a["result"]),
            "get_wallet_balance",
            accountType="UNIFIED",
        )

    async def get_api_key_info(self) -> ApiKeyInfo:
        return await self._read(
            "read the api key's permissions",
            lambda a: wire_.api_key_info(a["result"]),
            "get_api_key_information",
        )

    # ---- orders ------------------------------------------------------------------------------------

    async def get_open_orders(self, category: str, symbol: str | None = None) -> list[ExchangeOrder]:
        return await self._orders("read open orders", "get_open_orders", category, symbol)

    async def get_order_history(
        self, category: str, symbol: str | None = None, order_link_id: str | None = None
    ) -> list[ExchangeOrder]:
        return await self._orders(
            "read order history", "get_order_history", category, symbol, orderLinkId=order_link_id
        )

    async def _orders(
        self, action: str, method: str, category: str, symbol: str | None, **extra: Any
    ) -> list[ExchangeOrder]:
        where = {"symbol": symbol} if symbol else ({"settleCoin": SETTLE_COIN} if category != "spot" else {})
        rows = await self._pages(action, method, category=category, limit=50, **where, **extra)
        return [self._parse(r, partial(wire_.exchange_order, category), action, write=False) for r in rows]

    async def find_order(self, category: str, symbol: str, order_link_id: str) -> ExchangeOrder | None:
        """Look an order up by its client id in open orders and history.

        Both are read at once (one round trip). An order that closes between the two reads can be missed by
        both, so a miss is confirmed by reading them again in order: open orders first, then history.
        """
        methods = ("get_open_orders", "get_order_history")
        found = await asyncio.gather(
            *(self._find_in(method, category, symbol, order_link_id) for method in methods)
        )
        for order in found:
            if order is not None:
                return order
        for method in methods:
            order = await self._find_in(method, category, symbol, order_link_id)
            if order is not None:
                return order
        return None

    async def _find_in(
        self, method: str, category: str, symbol: str, order_link_id: str
    ) -> ExchangeOrder | None:
        found = await self._orders(
            f"look up order {order_link_id}", method, category, symbol, orderLinkId=order_link_id
        )
        return next((o for o in found if o.order_link_id == order_link_id), None)

    async def get_executions(self, category: str, symbol: str, order_id: str) -> list[Execution]:
        action = f"read the fills of order {order_id}"
        rows = await self._pages(action, "get_executions", category=category, symbol=symbol, orderId=order_id)
        return [self._parse(r, wire_.execution, action, write=False) for r in rows]

    async def create_order(self, request: OrderRequest) -> OrderAck:
        """Send one create request, exactly once. Unknown outcomes raise OutcomeUnknown: look the order up."""
        action = f"create order {request.order_link_id}"
        answer = await self._call("place_order", action, write=True, **wire_.order_params(request))

        def parse(a: dict[str, Any]) -> OrderAck:
            return OrderAck(order_id=a["result"]["orderId"], order_link_id=a["result"]["orderLinkId"])

        return self._parse(answer, parse, action, write=True)

    async def cancel_order(
        self, category: str, symbol: str, *, order_id: str | None = None, order_link_id: str | None = None
    ) -> str:
        """Cancel one order by exchange id or client id; return the exchange's order id."""
        if not order_id and not order_link_id:
            raise ValueError("cancel_order needs order_id or order_link_id")
        action = f"cancel order {order_id or order_link_id}"
        answer = await self._call(
            "cancel_order",
            action,
            write=True,
            category=category,
            symbol=symbol,
            orderId=order_id,
            orderLinkId=order_link_id,
        )
        return self._parse(answer, lambda a: str(a["result"]["orderId"]), action, write=True)

    async def set_leverage(self, category: str, symbol: str, leverage: Decimal) -> None:
        """Set one-way leverage; an unchanged leverage (retCode 110043) is success."""
        value = wire_.wire(leverage)
        try:
            await self._call(
                "set_leverage",
                f"set {symbol} leverage to {value}",
                write=True,
                category=category,
                symbol=symbol,
                buyLeverage=value,
                sellLeverage=value,
            )
        except ExchangeRejected as refusal:
            if refusal.ret_code != LEVERAGE_NOT_MODIFIED:
                raise
