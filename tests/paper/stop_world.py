"""A paper exchange (the packaged default scenario: Bybit's BTCUSDT filters, tick 0.10, step 0.001) with a
real pybit session on it, and the few calls the stop tests make over HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pybit.exceptions import InvalidRequestError
from pybit.unified_trading import HTTP

import pilot.paper
from pilot.paper import PaperExchange, start_paper_exchange
from tests.exchange.conftest import raw_session

DEFAULT = Path(pilot.paper.__file__).parent / "scenarios" / "default.json"
SYMBOL = "BTCUSDT"
LAST = Decimal("80220.0")  # the default scenario's BTCUSDT bid (the mid floored to the tick: the last price)


@dataclass
class World:
    paper: PaperExchange
    session: HTTP

    def create(self, side: str = "Buy", qty: str = "0.002", **extra: Any) -> str:
        """A linear BTCUSDT order (Market unless a price is given); its orderId."""
        order_type = "Limit" if "price" in extra else "Market"
        answer = self.session.place_order(
            category="linear", symbol=SYMBOL, side=side, orderType=order_type, qty=qty, positionIdx=0, **extra
        )
        return str(answer["result"]["orderId"])

    def trading_stop(self, **params: Any) -> dict[str, Any]:
        return self.session.set_trading_stop(category="linear", symbol=SYMBOL, positionIdx=0, **params)

    def realtime(self, **params: Any) -> list[dict[str, Any]]:
        return self.session.get_open_orders(category="linear", symbol=SYMBOL, **params)["result"]["list"]

    def history(self, **params: Any) -> list[dict[str, Any]]:
        return self.session.get_order_history(category="linear", symbol=SYMBOL, **params)["result"]["list"]

    def order(self, order_id: str) -> dict[str, Any]:
        """One order by id, open or closed (realtime first, then history)."""
        rows = self.realtime(orderId=order_id) or self.history(orderId=order_id)
        assert len(rows) == 1, rows
        return rows[0]

    def legs(self, **params: Any) -> dict[str, list[dict[str, Any]]]:
        """The listed conditional and TP/SL orders by stopOrderType."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in self.realtime(**params):
            if row["stopOrderType"]:
                grouped.setdefault(row["stopOrderType"], []).append(row)
        return grouped

    def position(self) -> dict[str, Any]:
        return self.session.get_positions(category="linear", symbol=SYMBOL)["result"]["list"][0]

    def executions(self, order_id: str) -> list[dict[str, Any]]:
        return self.session.get_executions(category="linear", symbol=SYMBOL, orderId=order_id)["result"][
            "list"
        ]

    def move(self, last: str, mark: str | None = None) -> None:
        """The last price (the bid; the ask one tick above) and the mark (the last unless given)."""
        price = Decimal(last)
        self.paper.set_prices(SYMBOL, bid=price, ask=price + Decimal("0.1"), mark=mark or price)


def default_scenario(**changes: Any) -> dict[str, Any]:
    """The packaged default scenario with some fields replaced (e.g. rateLimits=False)."""
    return json.loads(DEFAULT.read_text()) | changes


@contextmanager
def stop_world(scenario: dict[str, Any] | None = None) -> Iterator[World]:
    with start_paper_exchange(scenario) as paper:
        session = raw_session(paper)
        try:
            yield World(paper, session)
        finally:
            session.client.close()


def ret_code(call: Callable[..., Any], **params: Any) -> int:
    """The retCode of a call Bybit (here: the paper exchange) refuses."""
    with pytest.raises(InvalidRequestError) as caught:
        call(**params)
    return int(caught.value.status_code)


def dec(value: str) -> Decimal:
    return Decimal(value)
