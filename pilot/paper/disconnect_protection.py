"""Bybit's Disconnect Cancel All (DCP), as the paper exchange plays it (order_dcp.mdx, account_dcp-info.mdx,
websocket_private_dcp.mdx).

`POST /v5/order/disconnected-cancel-all` sets a product's window (3-300 s; OPTIONS by default);
`GET /v5/account/query-dcp-info` lists the products set, each ON with its window. A private connection
that subscribes `dcp.future`, `dcp.spot` or `dcp.option` watches its product; when the last connection
watching a product ends and none comes back within the window (on the exchange's clock), every order of
that product is cancelled with cancelType CancelByDCP. A product nobody watched never fires: Bybit needs
the subscription to trigger DCP.
"""

from __future__ import annotations

import threading
from typing import Any

PRODUCTS = ("OPTIONS", "DERIVATIVES", "SPOT")
TOPIC_PRODUCTS = {"dcp.future": "DERIVATIVES", "dcp.spot": "SPOT", "dcp.option": "OPTIONS"}
CATEGORIES = {"DERIVATIVES": ("linear", "inverse"), "SPOT": ("spot",), "OPTIONS": ("option",)}
WINDOW_SECONDS = (3, 300)


class DcpSettings:
    """The account's DCP windows and who watches them. Thread-safe: REST and streams run apart."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self.windows: dict[str, int] = {}
        self._watchers: dict[str, int] = {}
        self._lost_at_ms: dict[str, int] = {}  # the product's last watcher ended then, none since
        self.fired: list[tuple[str, int]] = []  # (product, exchange ms) each time DCP cancelled

    def set(self, product: str, window_seconds: int) -> None:
        with self._lock:
            self.windows[product] = window_seconds

    def info(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"product": product, "dcpStatus": "ON", "timeWindow": str(window)}
                for product, window in sorted(self.windows.items())
            ]

    def watch(self, topic: str) -> None:
        """A private connection subscribed `topic` (one of TOPIC_PRODUCTS)."""
        product = TOPIC_PRODUCTS[topic]
        with self._lock:
            self._watchers[product] = self._watchers.get(product, 0) + 1
            self._lost_at_ms.pop(product, None)

    def unwatch(self, topic: str, now_ms: int) -> None:
        """A connection that subscribed `topic` ended at `now_ms`."""
        product = TOPIC_PRODUCTS[topic]
        with self._lock:
            left = max(self._watchers.get(product, 0) - 1, 0)
            self._watchers[product] = left
            if left == 0:
                self._lost_at_ms[product] = now_ms
            self._lock.notify_all()

    def wait_unwatched(self, timeout_s: float) -> bool:
        """Wait until no connection watches any product (a test's way to know the exchange saw them end)."""
        with self._lock:
            return self._lock.wait_for(lambda: not any(self._watchers.values()), timeout_s)

    def due(self, now_ms: int) -> list[str]:
        """The products whose window ran out with nobody watching: each fires once per loss."""
        with self._lock:
            fired = [
                product
                for product, lost in self._lost_at_ms.items()
                if product in self.windows and now_ms >= lost + self.windows[product] * 1000
            ]
            for product in fired:
                del self._lost_at_ms[product]
                self.fired.append((product, now_ms))
            return fired
