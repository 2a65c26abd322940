"""The paper exchange can hold orders another client of the same key left, as Bybit would show them to
Pilot: validated like a create, resting on the book, listed with their client order id, and not counted as a
request Pilot made."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pilot.paper import start_paper_exchange
from pilot.paper.validation import SimReject

CREATE = "/v5/order/create"
RESTING = {
    "symbol": "ETHUSDT",
    "side": "Buy",
    "orderType": "Limit",
    "qty": "0.01",
    "price": "2900",
    "timeInForce": "GTC",
    "orderLinkId": "another-client-1",
}


def test_an_order_left_by_another_client_rests_and_is_no_request_of_ours() -> None:
    with start_paper_exchange("default", ticker_ms=0, speed=0) as paper:
        order = paper.leave_order("linear", RESTING)
        (resting,) = paper.open_orders("ETHUSDT")
        assert resting.order_id == order.order_id and resting.order_link_id == "another-client-1"
        assert (resting.qty, resting.price, resting.status) == (Decimal("0.01"), Decimal("2900"), "New")
        assert paper.request_count(CREATE) == 0
        assert paper.position("ETHUSDT").size == 0


def test_an_order_bybit_would_refuse_is_refused_with_its_code() -> None:
    with start_paper_exchange("default", ticker_ms=0, speed=0) as paper:
        with pytest.raises(SimReject) as refused:
            paper.leave_order("linear", RESTING | {"orderLinkId": "spaces are not allowed here"})
        assert refused.value.code == 10001
        assert paper.open_orders() == []
