"""The one table of Bybit retCodes and HTTP statuses, and the page bound of list reads."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pilot.exchange.bybit import ret_codes as codes
from pilot.exchange.bybit.recording import Exchange
from pilot.exchange.bybit.replay import ReplayServer
from pilot.exchange.bybit.ret_codes import Verdict
from pilot.exchange.bybit.transport import MAX_PAGES
from pilot.exchange.errors import ExchangeUnavailable
from tests.venue import connect_adapter

DOC_PAGES = {codes.ERRORS, codes.RATE_LIMIT, codes.LEVERAGE, codes.CREATE, codes.DEMO}


def test_every_row_cites_a_documentation_page_and_codes_are_unique():
    assert len(codes.TABLE) == len(codes.RULES)
    assert all(rule.source in DOC_PAGES and rule.meaning for rule in codes.RULES)


@pytest.mark.parametrize(
    ("code", "operation", "verdict"),
    [
        (170007, "create", Verdict.UNKNOWN),
        (170146, "create", Verdict.UNKNOWN),
        (170147, "cancel", Verdict.UNKNOWN),
        (170212, "cancel", Verdict.UNKNOWN),
        (110079, "amend", Verdict.UNKNOWN),
        (170310, "amend", Verdict.UNKNOWN),
        (110072, "create", Verdict.DUPLICATE),
        (170141, "create", Verdict.DUPLICATE),
        (10014, "create", Verdict.DUPLICATE),
        (170234, "create", Verdict.UNKNOWN),
        (170234, "read", Verdict.UNAVAILABLE),
        (34040, "stop", Verdict.UNCHANGED),
        (34040, "amend", Verdict.REJECTED),
        (10032, "read", Verdict.REJECTED),
        (110043, "leverage", Verdict.UNCHANGED),
        (110043, "create", Verdict.REJECTED),
        (10006, "create", Verdict.REJECTED),
        (10006, "read", Verdict.UNAVAILABLE),
        (170007, "read", Verdict.UNAVAILABLE),
        (110001, "cancel", Verdict.REJECTED),
        (123456, "create", Verdict.REJECTED),  # unlisted: a refusal of family "other"
    ],
)
def test_each_code_means_one_thing_per_operation(code, operation, verdict):
    assert codes.verdict(code, operation) is verdict


def test_http_statuses_refused_at_the_gateway_are_unavailable_and_5xx_writes_unknown():
    for operation in codes.OPERATIONS:
        for status in (400, 401, 403, 404, 429):
            assert codes.http_verdict(status, operation) is Verdict.UNAVAILABLE
    assert codes.http_verdict(503, "create") is Verdict.UNKNOWN
    assert codes.http_verdict(503, "read") is Verdict.UNAVAILABLE
    with pytest.raises(ValueError):
        codes.verdict(10001, "withdraw")


def endless_pages(count: int, **scope: str) -> list[Exchange]:
    """Open orders on `count` pages, each with a new cursor and a new order: a list that never ends.

    `scope` narrows the requests they answer (settleCoin="USDT": the USDT list; the USDC list is empty)."""
    pages = []
    for page in range(count):
        query = {"category": "linear", **scope} | ({"cursor": f"page-{page}"} if page else {})
        row = {
            "orderId": f"order-{page}",
            "orderLinkId": "",
            "symbol": "BTCUSDT",
            "side": "Buy",
            "qty": "0.001",
            "price": "1",
            "orderStatus": "New",
            "createdTime": "1",
            "updatedTime": "1",
        }
        answer = {
            "retCode": 0,
            "retMsg": "OK",
            "time": 1,
            "result": {"category": "linear", "list": [row], "nextPageCursor": f"page-{page + 1}"},
        }
        pages.append(Exchange("GET", "/v5/order/realtime", query=query, answer=answer))
    usdc = {"category": "linear", "settleCoin": "USDC"}
    return [*pages, Exchange("GET", "/v5/order/realtime", query=usdc, answer=EMPTY)]


EMPTY = {
    "retCode": 0,
    "retMsg": "OK",
    "time": 1,
    "result": {"category": "linear", "list": [], "nextPageCursor": ""},
}


@pytest.mark.anyio
async def test_a_list_that_keeps_paging_fails_instead_of_being_cut_short():
    with ReplayServer(endless_pages(MAX_PAGES + 5, settleCoin="USDT")).start() as stub:
        adapter = connect_adapter(stub.url)
        with pytest.raises(ExchangeUnavailable):
            await adapter.get_open_orders("linear")
        usdt = [r for r in stub.requests("/v5/order/realtime") if r.params["settleCoin"] == "USDT"]
        assert len(usdt) == MAX_PAGES
        await adapter.close()


@pytest.mark.anyio
async def test_a_lookup_stops_paging_once_it_has_found_the_order():
    pages = endless_pages(MAX_PAGES + 5)
    pages[1].answer["result"]["list"][0]["orderLinkId"] = "wanted"
    empty = {
        "retCode": 0,
        "retMsg": "OK",
        "time": 1,
        "result": {"category": "linear", "list": [], "nextPageCursor": ""},
    }
    history = Exchange("GET", "/v5/order/history", query={"category": "linear"}, answer=empty)
    with ReplayServer([*pages, history]).start() as stub:
        adapter = connect_adapter(stub.url)
        found = await adapter.find_order("linear", "BTCUSDT", "wanted")
        await adapter.close()
    assert found is not None and (found.order_id, found.qty) == ("order-1", Decimal("0.001"))
    assert len(stub.requests("/v5/order/realtime")) == 2
