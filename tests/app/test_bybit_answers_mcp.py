"""Bybit's other answers, as the agent and the journal see them: through a real MCP client, the real paper
exchange on loopback, and (for answers the paper exchange does not give) a loopback stub in front of it that
answers in Bybit's wire format (tests/interposer.py). Each test names the doc page or fixture it checks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.app.answers.receipts import receipt_card
from pilot.app.facts.pending import GIVE_UP_AFTER
from pilot.cli.render import fee_words
from pilot.paper import PaperExchange
from pilot.paper.endpoints import ROUTES
from pilot.server import build_server
from tests.interposer import Answer, Interposer, Rule, ret_code

from .conftest import BTC_SHORT, CREATE, call, next_of, open_test_runtime, write_policy

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bybit"
TRADING_STOP = "/v5/position/trading-stop"
SPOT_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0002", "category": "spot"}
LINEAR_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0003"}
ETH_BUY = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.005"}


def recorded(name: str, index: int = 0) -> Answer:
    """The answer of one exchange of a fixture in tests/fixtures/bybit/ (its `source` names where from)."""
    exchange = json.loads((FIXTURES / name).read_text())["exchanges"][index]
    return Answer(exchange["answer"], exchange["status"])


@pytest.fixture
def front(paper: PaperExchange) -> Iterator[Interposer]:
    with Interposer(paper) as stub:
        yield stub


# ---- 1. a create answered 170234 (error.mdx Spot Trade "System Error"): an unknown outcome ---------------


async def test_a_spot_create_answered_system_error_is_looked_up_never_resent_and_pending_until_settled(
    tmp_path, paper, front, clock
):
    write_policy(tmp_path)
    async with (
        open_test_runtime(tmp_path, front, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        plan = await call(client, "plan_order", SPOT_BUY)
        front.add(Rule("POST", CREATE, ret_code(170234, "System Error"), times=1))  # not carried out
        answer = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        while_unknown = await call(client, "plan_order", SPOT_BUY)
        clock.advance(GIVE_UP_AFTER.total_seconds())  # no lookup found it: it never reached the book
        settled = await call(client, "plan_order", SPOT_BUY)
        resolved = await runtime.store.journal.entries(kind=entry_kinds.ORDER_RESOLVED)
    assert answer["status"] == "outcome_unknown" and answer["found_by_reconnaissance"] is False
    assert answer["next_safe_action"]["tool"] == "get_open_orders"
    assert len(front.seen(CREATE)) == 1 and paper.request_count(CREATE) == 0  # sent once, never resent
    assert Decimal(while_unknown["snapshot"]["pending_qty"]["buy"]) == Decimal("0.0002")  # counted as filled
    assert [entry.data["status"] for entry in resolved] == ["never_executed"]
    assert Decimal(settled["snapshot"]["pending_qty"]["buy"]) == 0


async def test_a_spot_create_carried_out_but_answered_system_error_is_found_by_its_client_order_id(
    tmp_path, paper, front, clock
):
    write_policy(tmp_path)
    async with (
        open_test_runtime(tmp_path, front, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        plan = await call(client, "plan_order", SPOT_BUY)
        front.add(Rule("POST", CREATE, ret_code(170234, "System Error"), forward=True, times=1))
        answer = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert answer["status"] == "filled" and answer["found_by_reconnaissance"] is True
    assert paper.request_count(CREATE) == 1 and [o.order_link_id for o in paper.orders()] == [
        answer["order_link_id"]
    ]


# ---- 2. a trading stop answered 34040 (error.mdx): already so, nothing refused -------------------------


async def test_a_trading_stop_answered_not_modified_is_unchanged_and_journaled_so(
    tmp_path, paper, front, clock
):
    write_policy(tmp_path)
    async with (
        open_test_runtime(tmp_path, front, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        plan = await call(client, "plan_order", LINEAR_BUY)
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "filled"
        stop = {"symbol": "BTCUSDT", "stop_loss": "79000"}
        first = await call(client, "set_trading_stop", stop)
        front.add(Rule("POST", TRADING_STOP, recorded("trading_stop_answers.json", 1), times=1))
        again = await call(client, "set_trading_stop", stop)
        actions = await runtime.store.journal.entries(kind=entry_kinds.ACTION)
    assert (first["status"], again["status"]) == ("done", "unchanged")
    assert again.get("ret_code") is None and again.get("reject_family") is None
    outcomes = [e.data for e in actions if e.data["phase"] == "outcome"]
    assert [(o["status"], o["data"]["result"]) for o in outcomes] == [
        ("done", None),
        ("unchanged", "unchanged"),
    ]
    assert len(front.seen(TRADING_STOP)) == 2 and paper.request_count(TRADING_STOP) == 1


# ---- 4. an IP ban (rate-limit.mdx: HTTP 403, ten minutes) says when, in reads and refusals alike ---------


async def test_an_ip_ban_carries_its_end_in_every_answer_it_affects(runtime, paper):
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        plan = await call(client, "plan_order", LINEAR_BUY)
        assert plan["status"] == "ok", plan
        banned_at = datetime.now(UTC)
        for path in ROUTES:
            paper.add_fault(path, "http_4xx", every=True, status=403)
        answers = {
            "get_positions": await call(client, "get_positions"),
            "get_open_orders": await call(client, "get_open_orders"),
            "get_ticker": await call(client, "get_ticker", {"symbol": "BTCUSDT"}),
            "get_fills": await call(client, "get_fills"),
            "get_order_history": await call(client, "get_order_history"),
            "get_closed_pnl": await call(client, "get_closed_pnl"),
        }
        refusals = {
            "plan_order": await call(client, "plan_order", LINEAR_BUY),
            "place_order": await call(client, "place_order", {"plan_id": plan["plan_id"]}),
            "close_position": await call(client, "close_position", {"symbol": "BTCUSDT"}),
            "set_trading_stop": await call(
                client, "set_trading_stop", {"symbol": "BTCUSDT", "stop_loss": "1"}
            ),
        }
    ban_ends = banned_at + timedelta(minutes=9)  # ten minutes from the first refused request
    for tool, answer in answers.items():
        assert answer["status"] == "unavailable", tool
        assert datetime.fromisoformat(answer["next_safe_action"]["retry_after"]) > ban_ends, tool
    for tool, answer in refusals.items():
        assert answer["status"] in ("refused", "rejected"), (tool, answer)
        nexts = [answer["next_safe_action"], *(next_of(answer, v) for v in answer.get("violations") or [])]
        times = [datetime.fromisoformat(n["retry_after"]) for n in nexts if n and n.get("retry_after")]
        assert times and max(times) > ban_ends, (tool, answer)


# ---- 5. USDC perpetuals are linear too (position.mdx settleCoin): exposure and get_positions ------------


def usdc_position(front: Interposer) -> None:
    """The account also holds BTCPERP long 0.02, unrealised -10 USDC (positions_usdt_and_usdc.json)."""
    front.add(
        Rule(
            "GET",
            "/v5/position/list",
            recorded("positions_usdt_and_usdc.json", 1),
            when=lambda params: params.get("settleCoin") == "USDC",
        )
    )


async def test_a_usdc_perpetual_shows_in_get_positions_and_counts_in_the_open_positions(
    tmp_path, front, clock
):
    write_policy(tmp_path, maxOpenPositions=1)
    usdc_position(front)
    async with (
        open_test_runtime(tmp_path, front, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        positions = await call(client, "get_positions")
        refused = await call(client, "plan_order", BTC_SHORT)  # a second market while BTCPERP is open
    assert [(p["symbol"], p["size"], p["settle_coin"]) for p in positions["data"]] == [
        ("BTCPERP", "0.02", "USDC")
    ]
    assert refused["status"] == "refused"
    assert [v["rule"] for v in refused["violations"]] == ["maxOpenPositions"]


async def test_a_usdc_perpetuals_loss_counts_in_the_days_pnl(tmp_path, front, clock):
    write_policy(tmp_path, dailyLossLimitUsd=5)
    usdc_position(front)
    async with (
        open_test_runtime(tmp_path, front, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        refused = await call(client, "plan_order", BTC_SHORT)
    day = next(v for v in refused["violations"] if v["rule"] == "dailyLossLimitUsd")
    assert Decimal(day["attempted"]) == Decimal("10.00")


# ---- 6. Funding rows (enum.mdx execType) are not fills ---------------------------------------------------


async def test_funding_rows_are_listed_apart_from_fills(tmp_path, front, clock):
    write_policy(tmp_path)
    front.add(Rule("GET", "/v5/execution/list", recorded("executions_funding.json")))
    async with (
        open_test_runtime(tmp_path, front, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        page = (await call(client, "get_fills"))["data"]
    assert [(row["qty"], row["fee"], row["fee_coin"]) for row in page["rows"]] == [("0.093", "0.015", "USDT")]
    assert [(row["kind"], row["amount"], row["coin"]) for row in page["not_fills"]] == [
        ("funding", "0.7506234", "USDT")
    ]


# ---- 7. every fee with its coin: a spot buy pays in the coin bought (enum.mdx spot fee currency) ---------


async def test_a_spot_buys_fee_is_shown_in_the_coin_bought_everywhere(runtime, paper):
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        spot = await call(client, "plan_order", SPOT_BUY)
        bought = await call(client, "place_order", {"plan_id": spot["plan_id"]})
        linear = await call(client, "plan_order", ETH_BUY)  # another coin: BTC's cap holds the spot buy
        longed = await call(client, "place_order", {"plan_id": linear["plan_id"]})
        history = await call(client, "get_order_history", {"category": "spot"})
        fills = await call(client, "get_fills", {"category": "spot"})
    card = receipt_card(await runtime.store.journal.entries(plan_id=spot["plan_id"]))
    assert bought["status"] == "filled" and Decimal(bought["fill"]["fee"]) > 0
    assert (bought["fill"]["fee_coin"], longed["fill"]["fee_coin"]) == ("BTC", "USDT")
    assert [row["fee_coin"] for row in history["data"]["rows"]] == ["BTC"]
    assert [row["fee_coin"] for row in fills["data"]["rows"]] == ["BTC"]
    assert card.exchange is not None and card.exchange.fill is not None
    assert (card.exchange.fill.fee, card.exchange.fill.fee_coin) == (bought["fill"]["fee"], "BTC")
    assert fee_words(card.exchange.fill.model_dump()).split()[-1] == "BTC"  # the CLI's receipt line
