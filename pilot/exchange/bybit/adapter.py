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

Errors are the outcomes of pilot.exchange.errors, decided in one place: every retCode through the table
of pilot.exchange.bybit.ret_codes (per operation: create, cancel, amend, leverage, read), every HTTP status
through `bybit_codes.http_verdict`. HTTP 403 is Bybit's IP ban: ExchangeUnavailable with `retry_at` ten
minutes ahead, on reads and writes (the gateway refused the request; nothing was executed).

Acknowledged is not visible. Bybit's create answer is an acknowledgement of an asynchronous request
(create-order.mdx: "This request is asynchronous"), and order history "may delay" (order-list.mdx). So
`find_order` returning None right after a successful `create_order` does not mean the order failed: the
read worked and has not seen it yet. A caller holding an acknowledgement (or an OutcomeUnknown) must treat
an order that is not found as pending, and count it as exposure, until a read finds it. A read that
failed raises instead: None and an exception are never the same answer.

Lists are read page by page (`nextPageCursor`). Real Bybit returns a non-empty cursor even on the last or
only page (see tests/fixtures/bybit/), so paging stops on an empty page, on a cursor already seen, or
after MAX_PAGES (then the read fails as ExchangeUnavailable rather than return a silently truncated list),
and rows seen twice are dropped (orders by orderId, positions by symbol and positionIdx, fills by execId).

Hedge mode is refused: a symbol with positionIdx 1/2 rows raises UnsupportedPositionMode from
get_position/get_positions, naming the symbol and the human's fix (switch it to one-way mode), and what the
legs hold together (for a spot order on the coin, which has no position mode).

Linear is USDT and USDC contracts alike (enum.mdx category): a list read without a symbol needs a settle
coin (position.mdx, open-order.mdx), so positions and open orders are read for each of SETTLE_COINS and
joined, each row once.

"Not modified" is success: an unchanged leverage (110043) and an unchanged trading stop (34040); the
trading stop says which (`set_trading_stop` returns False when nothing changed).

Maintenance margin: instruments-info has no maintenance margin rate; get_instrument reads the lowest-risk
tier of /v5/market/risk-limit (`isLowestRisk`, else the smallest `riskLimitValue`) and falls back to
DEFAULT_MAINTENANCE_MARGIN_RATE (0.01, above Bybit's first tier for the majors, so liquidation estimates err
on the early side) only when that answer carries none. Spot instruments have no liquidation and get 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import requests
from pybit.exceptions import FailedRequestError, InvalidRequestError
from pybit.unified_trading import HTTP
from urllib3.exceptions import MaxRetryError, NewConnectionError

from pilot.core.facts import InstrumentRules, Position, Touch
from pilot.exchange.bybit import payloads as wire_
from pilot.exchange.bybit import ret_codes as codes
from pilot.exchange.bybit.loopback_http import LoopbackClient
from pilot.exchange.bybit.payloads import ms_to_datetime
from pilot.exchange.bybit.recording import Recorder
from pilot.exchange.bybit.ret_codes import Verdict
from pilot.exchange.bybit.urls import ENVIRONMENTS, LOOPBACK_HOSTS, check_base_url
from pilot.exchange.errors import (
    DuplicateOrderLinkId,
    ExchangeError,
    ExchangeRejected,
    ExchangeUnavailable,
    OutcomeUnknown,
    UnsupportedPositionMode,
)
from pilot.exchange.listings import UNLISTED, Listings
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderAck,
    OrderBook,
    OrderRequest,
    Page,
    PriceBand,
    Ticker,
)
from pilot.exchange.symbols import Quarantine, is_quarantined_name

DEFAULT_MAINTENANCE_MARGIN_RATE = Decimal("0.01")
INSTRUMENT_TTL_SECONDS = 300.0
MAX_PAGES = 20
UNTRUSTED_LIMIT = 500
SETTLE_COIN = "USDT"
SETTLE_COINS = ("USDT", "USDC")  # linear: USDT and USDC perpetuals and futures (position.mdx: settleCoin)
PAGE_LIMITS = {  # the largest page each list endpoint serves (its docs page)
    "get_open_orders": 50,
    "get_order_history": 50,
    "get_executions": 100,
    "get_positions": 200,
    "get_closed_pnl": 100,
}

T = TypeVar("T")
Clock = Callable[[], datetime]


def family_of(ret_code: int) -> str:
    """The family a Bybit retCode belongs to (pilot.exchange.bybit.ret_codes), "other" when unlisted."""
    return codes.rule_for(ret_code).family


def system_clock() -> datetime:
    return datetime.now(UTC)


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


def translate(
    error: Exception,
    action: str,
    *,
    operation: str,
    now: datetime | None = None,
    order_link_id: str = "",
) -> ExchangeError:
    """Map a pybit/requests exception to an outcome, in our own words (no request text).

    `operation` is "create", "cancel", "amend", "leverage" or "read" (see pilot.exchange.bybit.ret_codes).
    """
    write = operation != "read"
    if isinstance(error, InvalidRequestError):
        code = int(error.status_code)
        return _from_ret_code(code, str(error.message), error.resp_headers, action, operation, order_link_id)
    if isinstance(error, FailedRequestError):
        return _from_http(error, action, operation, now or system_clock())
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


def _from_http(error: FailedRequestError, action: str, operation: str, now: datetime) -> ExchangeError:
    status = int(error.status_code)
    unreadable = error.message.startswith("Conflict")  # pybit's synthetic 409 for a body that is not JSON
    retries = error.message.startswith("Bad Request. Retries")  # pybit's synthetic 400 after a retry code
    what = "a body that is not JSON" if unreadable else f"HTTP {status}"
    if operation != "read" and (unreadable or retries):
        return OutcomeUnknown(
            f"{action}: the exchange answered {what}; the request may have been executed. "
            "Look it up; do not resend."
        )
    verdict = Verdict.UNAVAILABLE if unreadable else codes.http_verdict(status, operation)
    if verdict is Verdict.UNKNOWN:
        return OutcomeUnknown(
            f"{action}: the exchange answered {what}; the request may have been executed. "
            "Look it up; do not resend."
        )
    if status == 403:  # rate-limit.mdx: the IP is banned for at least ten minutes; nothing was executed
        return ExchangeUnavailable(
            f"{action}: the exchange refused this IP (HTTP 403: IP rate limit breached or region "
            "refused); nothing was executed. Bybit lifts the ban after ten minutes.",
            retry_at=now + timedelta(seconds=codes.IP_BAN_SECONDS),
            http_status=status,
        )
    return ExchangeUnavailable(
        f"{action}: the exchange answered {what}; nothing usable came back.",
        retry_at=_retry_at(error.resp_headers),
        http_status=status,
    )


def _from_ret_code(
    code: int, text: str, headers: Any, action: str, operation: str, order_link_id: str = ""
) -> ExchangeError:
    untrusted = text[:UNTRUSTED_LIMIT]
    rule = codes.rule_for(code)
    verdict = rule.verdict(operation)
    if verdict is Verdict.DUPLICATE:
        return DuplicateOrderLinkId(
            f"{action}: the exchange says an order with client order id {order_link_id} already exists "
            f"(retCode {code}): an earlier send got through. Look it up; do not resend.",
            order_link_id=order_link_id,
            ret_code=code,
            untrusted_text=untrusted,
        )
    if verdict is Verdict.UNKNOWN:
        return OutcomeUnknown(
            f"{action}: the exchange answered retCode {code} ({rule.family}: still processing or timed "
            "out inside the exchange); the outcome is not known. Look it up; do not resend.",
            untrusted_text=untrusted,
            ret_code=code,
        )
    if verdict is Verdict.UNAVAILABLE:
        return ExchangeUnavailable(
            f"{action}: the exchange did not process it (retCode {code}, {rule.family}); try again later.",
            untrusted_text=untrusted,
            retry_at=_retry_at(headers),
            ret_code=code,
        )
    return ExchangeRejected(
        f"{action}: the exchange refused it (retCode {code}, {rule.family}).",
        ret_code=code,
        family=rule.family,
        untrusted_text=untrusted,
        retry_at=_retry_at(headers) if rule.family in ("rate_limit", "busy") else None,
    )


# Requests in flight at once. A plan reads up to eight things concurrently (ticker, balance, position, price
# band, open orders and instrument rules in both categories); fewer workers queue them into a second round
# trip. Ten is also the connection pool requests keeps per host, so no connection is opened and thrown away.
CONCURRENT_REQUESTS = 10


class BybitExchange:
    """The Exchange port over Bybit V5 REST (pilot.app.road.ports.Exchange). Build it with `connect`.

    Each instance owns one pybit session and a thread pool of CONCURRENT_REQUESTS workers: pybit is synchronous, so every call runs
    in a worker thread and the event loop never blocks.
    """

    def __init__(
        self,
        session: HTTP,
        environment: str,
        base_url: str,
        *,
        clock: Clock = system_clock,
        recorder: Recorder | None = None,
    ) -> None:
        self._session = session
        self.environment = environment
        self.base_url = base_url
        self._clock = clock
        self._recorder = recorder
        self._executor = ThreadPoolExecutor(max_workers=CONCURRENT_REQUESTS, thread_name_prefix="bybit")
        self.listings = Listings(INSTRUMENT_TTL_SECONDS)
        self._quarantine = Quarantine()  # symbols the exchange names that no agent could write

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
        record_dir: Path | None = None,
        clock: Clock | None = None,
    ) -> BybitExchange:
        """Build an adapter for bybit-demo, bybit-testnet or paper (no request is sent yet).

        Args:
            record_dir: when given, every request and its answer are written there, redacted (no key,
                signature or secret), one JSON file each, in the format pilot.exchange.bybit.replay serves.
            clock: the time used for retry times (an IP ban's end); the system clock by default.

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
        recorder = None
        if record_dir is not None:
            recorder = Recorder(Path(record_dir), secrets=(api_key, api_secret), environment=environment)
            recorder.attach(session.client)
        elif environment == "paper":  # urllib3 alone: a third of requests' CPU per request (loopback_http)
            session.client = LoopbackClient(url, session.client.headers, CONCURRENT_REQUESTS)
        return cls(session, environment, url, clock=clock or system_clock, recorder=recorder)

    def __repr__(self) -> str:
        return f"BybitExchange(environment={self.environment!r}, base_url={self.base_url!r})"

    async def close(self) -> None:
        self._session.client.close()
        self._executor.shutdown(wait=False)

    # ---- the one road to pybit --------------------------------------------------------------------

    async def _call(
        self, method: str, action: str, *, operation: str = "read", link_id: str = "", **params: Any
    ) -> dict[str, Any]:
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
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(
            self._executor, partial(self._call_sync, method, action, operation, link_id, params)
        )
        if method == "get_positions" and "settleCoin" in params:
            self._quarantine.note_coin(answer, str(params["settleCoin"]))
        return _only(answer, str(symbol)) if listed else answer

    async def _learn_symbols(self, category: str) -> None:
        """Read what holds quarantined symbols (positions, open orders) so their names mean them again: a
        name given by an earlier process, asked for before any read here listed it."""
        with contextlib.suppress(ExchangeError):
            await self.get_positions(category)
        with contextlib.suppress(ExchangeError):
            await self.get_open_orders(category)

    def _call_sync(
        self, method: str, action: str, operation: str, link_id: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        failure: ExchangeError | None = None
        try:
            answer = getattr(self._session, method)(**params)
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

    async def _read(self, action: str, parse: Callable[[dict[str, Any]], T], method: str, **params: Any) -> T:
        answer = await self._call(method, action, **params)
        return self._parse(answer, parse, action, operation="read")

    def _parse(
        self, answer: dict[str, Any], parse: Callable[[dict[str, Any]], T], action: str, *, operation: str
    ) -> T:
        failure: ExchangeError | None = None
        try:
            return parse(answer)
        except (KeyError, TypeError, ValueError, IndexError, InvalidOperation, AttributeError):
            failure = translate(ValueError(), action, operation=operation)
        raise failure

    async def _pages(
        self,
        action: str,
        method: str,
        key: Callable[[dict[str, Any]], Hashable],
        *,
        until: Callable[[dict[str, Any]], bool] | None = None,
        **params: Any,
    ) -> list[dict[str, Any]]:
        """Every row of a paged list, each once.

        Stops on an empty page, on a cursor already followed (real Bybit answers a non-empty cursor even on
        the last page, and has been seen pointing back at its own page), or when `until` matches a row.
        More than MAX_PAGES pages is a failed read, never a silently short list.
        """
        rows: list[dict[str, Any]] = []
        seen_rows: set[Hashable] = set()
        seen_cursors: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            answer = await self._call(method, action, **params, cursor=cursor)
            page, cursor = self._parse(answer, partial(wire_.page_of, key), action, operation="read")
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

    # ---- market data -------------------------------------------------------------------------------

    async def get_instrument(self, category: str, symbol: str) -> InstrumentRules:
        """The market's rules (cached INSTRUMENT_TTL_SECONDS, as is the answer that there is no such market).

        Raises:
            ExchangeRejected: family "not_found" (or "params", as the exchange answered it) when the exchange
                lists no such instrument.
        """
        action = f"read the {category} instrument {symbol}"
        cached = self.listings.get(category, symbol)
        if isinstance(cached, InstrumentRules):
            return cached
        if cached is UNLISTED:
            raise self._unlisted(action)
        info = self._call("get_instruments_info", action, category=category, symbol=symbol)
        try:
            if category == "spot":
                answer, mmr = await info, Decimal(0)
            else:  # both reads at once: one round trip on a cold cache
                answer, mmr = await asyncio.gather(info, self._maintenance_margin_rate(category, symbol))
        except ExchangeRejected as refused:
            if refused.unlisted:
                self.listings.keep(category, symbol, UNLISTED)
            raise
        rows = self._parse(
            answer,
            lambda a: [row for row in a["result"]["list"] if row["symbol"] == symbol],
            action,
            operation="read",
        )
        if not rows:
            self.listings.keep(category, symbol, UNLISTED)
            raise self._unlisted(action)
        rules = self._parse(
            rows[0], lambda row: wire_.instrument_rules(category, row, mmr), action, operation="read"
        )
        self.listings.keep(category, symbol, rules)
        return rules

    def listed(self, category: str, symbol: str) -> bool | None:
        """Whether the exchange lists the market, as last read and still cached; None when not known."""
        return self.listings.listed(category, symbol)

    @contextlib.contextmanager
    def _rules_checked(self, category: str, symbol: str) -> Iterator[None]:
        """An order refused for its parameters: the market's rules are read again before the next judgement."""
        try:
            yield
        except ExchangeRejected as refused:
            if refused.family == "params":
                self.listings.refused_for_parameters(category, symbol)
            raise

    @staticmethod
    def _unlisted(action: str) -> ExchangeRejected:
        return ExchangeRejected(
            f"{action}: the exchange lists no such instrument.", ret_code=10001, family="not_found"
        )

    async def _maintenance_margin_rate(self, category: str, symbol: str) -> Decimal:
        action = f"read the risk limit of {symbol}"
        tiers = await self._pages(action, "get_risk_limit", wire_.tier_key, category=category, symbol=symbol)
        try:
            tier = wire_.lowest_risk_tier(symbol, tiers)
            return wire_.dec(tier.get("maintenanceMargin")) if tier else DEFAULT_MAINTENANCE_MARGIN_RATE
        except (AttributeError, ValueError, InvalidOperation):
            return DEFAULT_MAINTENANCE_MARGIN_RATE

    async def get_ticker(self, category: str, symbol: str) -> Ticker:
        def parse(answer: dict[str, Any]) -> Ticker:
            return wire_.ticker(category, answer["result"]["list"][0], wire_.ms_to_datetime(answer["time"]))

        ticker = await self._read(
            f"read the {symbol} ticker", parse, "get_tickers", category=category, symbol=symbol
        )
        self.listings.market_answered(category, symbol)
        return ticker

    async def get_touch(self, category: str, symbol: str) -> Touch:
        """Bid, ask and mark; spot has no mark price, so its mark is the mid."""
        ticker = await self.get_ticker(category, symbol)
        mark = ticker.mark if ticker.mark is not None else (ticker.bid + ticker.ask) / 2
        return Touch(bid=ticker.bid, ask=ticker.ask, mark=mark, observed_at=ticker.observed_at)

    async def get_orderbook(self, category: str, symbol: str, depth: int = 25) -> OrderBook:
        def parse(answer: dict[str, Any]) -> OrderBook:
            return wire_.orderbook(category, answer["result"], wire_.ms_to_datetime(answer["time"]))

        book = await self._read(
            f"read the {symbol} order book",
            parse,
            "get_orderbook",
            category=category,
            symbol=symbol,
            limit=depth,
        )
        self.listings.market_answered(category, symbol)
        return book

    async def get_price_band(self, category: str, symbol: str) -> PriceBand:
        """The order price band right now (/v5/market/price-limit): the highest buy and the lowest sell.

        Per category (account/set-price-limit.mdx, default settings): spot rejects an order priced outside
        the band; linear and inverse move its price to the band's edge ("clamp"). Option has no band
        endpoint and is refused with ValueError.
        """
        if category not in ("spot", "linear", "inverse"):
            raise ValueError(f"Bybit publishes no price band for category {category!r}")

        def parse(answer: dict[str, Any]) -> PriceBand:
            return wire_.price_band(category, answer["result"], wire_.ms_to_datetime(answer["time"]))

        band = await self._read(
            f"read the {symbol} price band", parse, "get_price_limit", category=category, symbol=symbol
        )
        self.listings.market_answered(category, symbol)
        return band

    # ---- account -----------------------------------------------------------------------------------

    async def get_position(self, category: str, symbol: str) -> Position:
        """The signed one-way position (flat when there is none; spot never has one).

        Raises:
            UnsupportedPositionMode: the symbol is held in hedge mode (rows with positionIdx 1 or 2).
        """
        if category == "spot":
            return Position.flat(symbol)
        action = f"read the {symbol} position"
        rows = await self._position_rows(action, category, symbol=symbol)
        mine = [row for row in rows if row.get("symbol") == symbol]
        return self._parse(
            {}, lambda _: wire_.position(symbol, mine[0] if mine else None), action, operation="read"
        )

    async def get_positions(self, category: str, symbol: str | None = None) -> list[ExchangePosition]:
        """Every open position (or the one of `symbol`), one-way only; linear for every settle coin.

        Raises:
            UnsupportedPositionMode: a symbol is held in hedge mode.
        """
        action = "read positions"
        scopes = _list_scopes(category, symbol)
        lists = await asyncio.gather(*(self._position_rows(action, category, **scope) for scope in scopes))
        # A list read by settle coin says the coin of its rows (the rows themselves do not).
        coins = [scope.get("settleCoin", "") if category == "linear" else "" for scope in scopes]
        positions = []
        for coin, row in _each_once(wire_.position_key, zip(coins, lists, strict=True)):
            parsed = self._parse(row, partial(wire_.exchange_position, category), action, operation="read")
            positions.append(replace(parsed, settle_coin=coin))
        return positions

    async def _position_rows(self, action: str, category: str, **where: Any) -> list[dict[str, Any]]:
        limit = PAGE_LIMITS["get_positions"]
        # One symbol has at most two rows (one per leg in hedge mode): its first page is the whole list, and
        # the cursor real Bybit still sends would cost every plan a second round trip for an empty page.
        whole_on_one_page = (lambda row: True) if "symbol" in where else None
        rows = await self._pages(
            action,
            "get_positions",
            wire_.position_key,
            until=whole_on_one_page,
            category=category,
            limit=limit,
            **where,
        )
        for row in rows:
            if self._parse(row, wire_.position_idx, action, operation="read") != 0:
                raise self._hedged(action, category, str(row.get("symbol", "")), rows)
        return rows

    def _hedged(
        self, action: str, category: str, symbol: str, rows: list[dict[str, Any]]
    ) -> UnsupportedPositionMode:
        legs = [row for row in rows if row.get("symbol") == symbol]
        gross = sum(
            (abs(self._parse(r, wire_.signed_size, action, operation="read")) for r in legs), Decimal(0)
        )
        return UnsupportedPositionMode(
            f"{action}: {symbol} is held in hedge mode (two position legs); Pilot reads one-way "
            f"positions only and will not guess the net. A human must switch the account to "
            f"one-way mode for {symbol}.",
            symbol=symbol,
            category=category,
            gross_size=gross,
        )

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
        self,
        action: str,
        method: str,
        category: str,
        symbol: str | None,
        *,
        until: Callable[[dict[str, Any]], bool] | None = None,
        **extra: Any,
    ) -> list[ExchangeOrder]:
        lists = await asyncio.gather(
            *(
                self._pages(
                    action,
                    method,
                    wire_.order_key,
                    until=until,
                    category=category,
                    limit=PAGE_LIMITS[method],
                    **where,
                    **extra,
                )
                for where in _list_scopes(category, symbol)
            )
        )
        rows = [row for _, row in _each_once(wire_.order_key, ((None, rows) for rows in lists))]
        return [
            self._parse(r, partial(wire_.exchange_order, category), action, operation="read") for r in rows
        ]

    async def find_order(self, category: str, symbol: str, order_link_id: str) -> ExchangeOrder | None:
        """Look an order up by its client id in open orders and history.

        None means both reads worked and neither holds the order yet. Right after an acknowledged create
        that is expected (Bybit processes creates asynchronously): the caller must treat such an order as
        pending, counted as exposure, until a read finds it. A failed read raises instead.

        Both lists are read at once (one round trip). An order that closes between the two reads can be
        missed by both, so a miss is confirmed by reading them again in order: open orders, then history.
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
            f"look up order {order_link_id}",
            method,
            category,
            symbol,
            until=lambda row: row.get("orderLinkId") == order_link_id,
            orderLinkId=order_link_id,
        )
        return next((o for o in found if o.order_link_id == order_link_id), None)

    async def get_executions(self, category: str, symbol: str, order_id: str) -> list[Execution]:
        action = f"read the fills of order {order_id}"
        rows = await self._pages(
            action,
            "get_executions",
            wire_.execution_key,
            category=category,
            symbol=symbol,
            orderId=order_id,
            limit=PAGE_LIMITS["get_executions"],
        )
        return [self._parse(r, wire_.execution, action, operation="read") for r in rows]

    # ---- paged reads for the agent's history tools (one page each; the caller follows the cursor) -------

    async def _page(
        self,
        action: str,
        method: str,
        key: Callable[[dict[str, Any]], Hashable],
        parse: Callable[[dict[str, Any]], T],
        cursor: str | None,
        **params: Any,
    ) -> Page[T]:
        wanted = {name: value for name, value in params.items() if value is not None}
        answer = await self._call(method, action, cursor=cursor or None, **wanted)
        rows, following = self._parse(answer, partial(wire_.page_of, key), action, operation="read")
        parsed = tuple(self._parse(row, parse, action, operation="read") for _, row in rows)
        return Page(parsed, following if rows else None)

    async def get_order_history_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[ExchangeOrder]:
        where = {"symbol": symbol} if symbol else ({"settleCoin": SETTLE_COIN} if category != "spot" else {})
        return await self._page(
            "read order history",
            "get_order_history",
            wire_.order_key,
            partial(wire_.exchange_order, category),
            cursor,
            category=category,
            limit=limit,
            **where,
        )

    async def get_executions_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[Execution]:
        return await self._page(
            "read fills",
            "get_executions",
            wire_.execution_key,
            wire_.execution,
            cursor,
            category=category,
            symbol=symbol,
            limit=limit,
        )

    async def get_closed_pnl_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int, since: datetime | None = None
    ) -> Page[ClosedPnl]:
        return await self._page(
            "read closed PnL",
            "get_closed_pnl",
            wire_.closed_pnl_key,
            wire_.closed_pnl,
            cursor,
            category=category,
            symbol=symbol,
            limit=limit,
            startTime=int(since.timestamp() * 1000) if since is not None else None,
        )

    async def get_closed_pnl_since(self, category: str, since: datetime) -> list[ClosedPnl]:
        """Every closed-PnL row updated since `since` (at most 7 days back), all pages."""
        action = "read the day's closed PnL"
        rows = await self._pages(
            action,
            "get_closed_pnl",
            wire_.closed_pnl_key,
            category=category,
            startTime=int(since.timestamp() * 1000),
            limit=PAGE_LIMITS["get_closed_pnl"],
        )
        return [self._parse(r, wire_.closed_pnl, action, operation="read") for r in rows]

    async def create_order(self, request: OrderRequest) -> OrderAck:
        """Send one create request, exactly once.

        An acknowledgement (OrderAck) means accepted, not yet visible: see find_order.

        Raises:
            ExchangeRejected: a definite no (nothing executed).
            OutcomeUnknown: it may have been executed (look it up by client order id; never resend);
                DuplicateOrderLinkId when the exchange says the client order id is already taken.
            ExchangeUnavailable: not processed (connection refused, HTTP 4xx such as the 403 IP ban).
        """
        action = f"create order {request.order_link_id}"
        with self._rules_checked(request.category, request.symbol):
            answer = await self._call(
                "place_order",
                action,
                operation="create",
                link_id=request.order_link_id,
                **wire_.order_params(request),
            )

        def parse(a: dict[str, Any]) -> OrderAck:
            return OrderAck(order_id=a["result"]["orderId"], order_link_id=a["result"]["orderLinkId"])

        return self._parse(answer, parse, action, operation="create")

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
            operation="cancel",
            category=category,
            symbol=symbol,
            orderId=order_id,
            orderLinkId=order_link_id,
        )
        return self._parse(answer, lambda a: str(a["result"]["orderId"]), action, operation="cancel")

    async def amend_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None = None,
        order_link_id: str | None = None,
        qty: Decimal | None = None,
        price: Decimal | None = None,
    ) -> str:
        """Amend one open order's quantity and/or price (/v5/order/amend); return the exchange's order id."""
        if not order_id and not order_link_id:
            raise ValueError("amend_order needs order_id or order_link_id")
        action = f"amend order {order_id or order_link_id}"
        params: dict[str, Any] = {"category": category, "symbol": symbol}
        if order_id:
            params["orderId"] = order_id
        if order_link_id:
            params["orderLinkId"] = order_link_id
        if qty is not None:
            params["qty"] = wire_.wire(qty)
        if price is not None:
            params["price"] = wire_.wire(price)
        with self._rules_checked(category, symbol):
            answer = await self._call("amend_order", action, operation="amend", **params)
        return self._parse(answer, lambda a: str(a["result"]["orderId"]), action, operation="amend")

    async def cancel_all_orders(
        self, category: str, symbol: str | None = None, order_filter: str | None = "Order"
    ) -> list[str]:
        """Cancel the open orders of a category (or of one symbol): /v5/order/cancel-all. The order ids.

        `order_filter` is Bybit's orderFilter: "Order" (the default here) cancels the ordinary orders only.
        Without it (None) Bybit cancels every kind on linear, the position's TP/SL and trailing stop and the
        conditional orders too (cancel-all.mdx); "StopOrder" cancels only those.
        """
        action = f"cancel all {category} orders" + (f" on {symbol}" if symbol else "")
        where = {"symbol": symbol} if symbol else ({"settleCoin": SETTLE_COIN} if category != "spot" else {})
        if order_filter is not None:
            where["orderFilter"] = order_filter
        answer = await self._call("cancel_all_orders", action, operation="cancel", category=category, **where)
        return self._parse(
            answer,
            lambda a: [str(row["orderId"]) for row in a["result"].get("list") or []],
            action,
            operation="cancel",
        )

    async def set_trading_stop(
        self, category: str, symbol: str, *, stop_loss: Decimal | None, take_profit: Decimal | None
    ) -> bool:
        """Set (or with 0, remove) the position's stop-loss and take-profit: /v5/position/trading-stop,
        tpslMode Full (the whole position, closed at market when triggered).

        Returns False when the exchange answers that nothing was modified (34040): the stop-loss and
        take-profit already are the asked values. That is no refusal.
        """
        action = f"set the {symbol} trading stop"
        params: dict[str, Any] = {
            "category": category,
            "symbol": symbol,
            "tpslMode": "Full",
            "positionIdx": 0,
        }
        if stop_loss is not None:
            params["stopLoss"] = wire_.wire(stop_loss)
        if take_profit is not None:
            params["takeProfit"] = wire_.wire(take_profit)
        try:
            await self._call("set_trading_stop", action, operation="stop", **params)
        except ExchangeRejected as refusal:
            if codes.verdict(refusal.ret_code, "stop") is not Verdict.UNCHANGED:
                raise
            return False
        return True

    async def set_leverage(self, category: str, symbol: str, leverage: Decimal) -> None:
        """Set one-way leverage; an unchanged leverage (retCode 110043) is success."""
        value = wire_.wire(leverage)
        try:
            await self._call(
                "set_leverage",
                f"set {symbol} leverage to {value}",
                operation="leverage",
                category=category,
                symbol=symbol,
                buyLeverage=value,
                sellLeverage=value,
            )
        except ExchangeRejected as refusal:
            if codes.verdict(refusal.ret_code, "leverage") is not Verdict.UNCHANGED:
                raise


# Signed list reads that take a symbol: a quarantined one is not sent (its text, quoted in the URL, would not
# match the signature over it); the category is listed and its rows kept.
SIGNED_LISTS = frozenset(
    {"get_positions", "get_open_orders", "get_order_history", "get_executions", "get_closed_pnl"}
)


def _only(answer: dict[str, Any], symbol: str) -> dict[str, Any]:
    """A list answer with only `symbol`'s rows."""
    result = answer.get("result")
    if isinstance(result, dict) and isinstance(result.get("list"), list):
        rows = [row for row in result["list"] if isinstance(row, dict) and row.get("symbol") == symbol]
        return {**answer, "result": {**result, "list": rows}}
    return answer


def _list_scopes(category: str, symbol: str | None) -> list[dict[str, str]]:
    """What narrows a list read: the symbol; else, on linear, each settle coin (one of them is required)."""
    if symbol:
        return [{"symbol": symbol}]
    if category == "spot":
        return [{}]
    coins = SETTLE_COINS if category == "linear" else (SETTLE_COIN,)
    return [{"settleCoin": coin} for coin in coins]


def _each_once(
    key: Callable[[dict[str, Any]], Hashable], lists: Iterable[tuple[T, list[dict[str, Any]]]]
) -> list[tuple[T, dict[str, Any]]]:
    """The rows of several list reads, each with its list's tag, a row seen in an earlier list dropped."""
    seen: set[Hashable] = set()
    joined = []
    for tag, rows in lists:
        for row in rows:
            if key(row) not in seen:
                seen.add(key(row))
                joined.append((tag, row))
    return joined


__all__ = ["ENVIRONMENTS", "LOOPBACK_HOSTS", "BybitExchange", "check_base_url", "translate"]
