"""The OKX front's road to the paper exchange behind it: Bybit V5 requests, signed as Bybit signs them, and
the paper exchange's markets as OKX would list them (instrument ids, contract values)."""

from __future__ import annotations

import http.client
import json
import time
import zlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode, urlsplit

from pilot.paper import PaperExchange
from pilot.paper.auth import sign

LOT = Decimal("0.01")  # every perpetual here trades in hundredths of a contract, as OKX's BTC-USDT-SWAP does
RECV_WINDOW = "5000"
TIMEOUT_SECONDS = 5  # a paper answer slower than this (a fault's drip) is dropped, as a lost answer


@dataclass(frozen=True, slots=True)
class Market:
    """One paper market as OKX names it: its instrument id, its contract value (1 for spot) and Bybit's name."""

    inst_id: str
    inst_type: str  # SWAP | SPOT
    category: str  # Bybit's: linear | spot
    symbol: str  # Bybit's
    base: str
    quote: str
    ct_val: Decimal
    row: dict[str, Any]  # the paper exchange's instruments-info row

    def contracts(self, coins: Decimal) -> Decimal:
        return coins / self.ct_val

    def coins(self, contracts: Decimal) -> Decimal:
        return contracts * self.ct_val

    @property
    def whole_algo_id(self) -> str:
        """The algoId the front gives the position's whole TP/SL (closeFraction 1): stable per market."""
        return str(900_000_000 + zlib.crc32(self.inst_id.encode()) % 99_999_999)


class PaperFault(Exception):
    """The paper exchange answered no Bybit JSON (a fault it was told to make: a 5xx, a 4xx, an HTML page):
    the front answers the same way, so the OKX adapter meets the fault as OKX would serve it."""

    def __init__(self, status: int, raw: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.raw = status, raw


class PaperWire:
    """Signed Bybit V5 calls to the paper exchange (the front's only road to it)."""

    def __init__(self, paper: PaperExchange) -> None:
        # The limits a request to the front meets are OKX's (per OKX endpoint, 2-second windows; a test
        # makes them with a Rule's 50011), not Bybit's per-key ones on the one paper key the front carries
        # every request out with: orders-pending and both orders-algo-pending reads are each one
        # /v5/order/realtime call, so Bybit's 50 a second there was met by reads OKX counts apart, and its
        # 10006 came back as a params error (51000).
        paper.set_rate_limits(False)
        self.paper = paper
        parts = urlsplit(paper.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port
        self.markets = self._markets()

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        query = urlencode({k: v for k, v in params.items() if v is not None})
        return self._call("GET", path + (f"?{query}" if query else ""), query)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        raw = json.dumps(body)
        return self._call("POST", path, raw, raw)

    def _call(self, method: str, target: str, payload: str, raw: str = "") -> dict[str, Any]:
        stamp = str(int(time.time() * 1000))
        headers = {
            "X-BAPI-API-KEY": self.paper.api_key,
            "X-BAPI-TIMESTAMP": stamp,
            "X-BAPI-RECV-WINDOW": RECV_WINDOW,
            "X-BAPI-SIGN": sign(self.paper.api_secret, stamp, self.paper.api_key, RECV_WINDOW, payload),
            "Content-Type": "application/json",
        }
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_SECONDS)
        try:
            connection.request(method, target, body=raw.encode() if raw else None, headers=headers)
            reply = connection.getresponse()
            data = reply.read()
        finally:
            connection.close()
        try:
            answer: dict[str, Any] = json.loads(data)
        except ValueError:
            raise PaperFault(reply.status, data) from None
        if reply.status != 200:
            raise PaperFault(reply.status, data)
        return answer

    def _markets(self) -> dict[str, Market]:
        found = {}
        for category, inst_type in (("linear", "SWAP"), ("spot", "SPOT")):
            rows = self.get("/v5/market/instruments-info", category=category)["result"]["list"]
            for row in rows:
                base, quote = row["baseCoin"], row["quoteCoin"]
                step = Decimal(row["lotSizeFilter"].get("qtyStep") or row["lotSizeFilter"]["basePrecision"])
                inst = f"{base}-{quote}-SWAP" if category == "linear" else f"{base}-{quote}"
                ct_val = step / LOT if category == "linear" else Decimal(1)
                found[inst] = Market(inst, inst_type, category, row["symbol"], base, quote, ct_val, row)
        return found

    def market(self, inst_id: str) -> Market | None:
        return self.markets.get(inst_id)

    def by_symbol(self, category: str, symbol: str) -> Market | None:
        return next((m for m in self.markets.values() if (m.category, m.symbol) == (category, symbol)), None)
