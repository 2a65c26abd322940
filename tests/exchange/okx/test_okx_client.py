"""The OKX adapter's road: where it may connect, how it signs, and the three outcomes of a write, on the OKX
front (tests/okx_front: OKX's wire over the paper exchange) and on a port nobody listens on."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot.core.venues import StopScope
from pilot.exchange.errors import ExchangeRejected, ExchangeUnavailable, OutcomeUnknown
from pilot.exchange.models import OrderRequest
from pilot.exchange.okx import error_codes
from pilot.exchange.okx import payloads as wire_
from pilot.exchange.okx.adapter import OkxExchange
from pilot.exchange.okx.client import Keys, Transport
from pilot.exchange.okx.markets import Contract, pilot_client_id, wire_client_id
from pilot.paper import PaperExchange
from tests.okx_front import OkxFront, Rule
from tests.venue import connect_okx

pytestmark = pytest.mark.anyio
LINK = "pilot-" + "ab" * 15


@pytest.fixture
def front(paper: PaperExchange) -> Iterator[OkxFront]:
    with OkxFront(paper) as stub:
        yield stub


def _order(**changes: object) -> OrderRequest:
    fields: dict[str, object] = {
        "category": "linear",
        "symbol": "BTC-USDT",
        "side": "Sell",
        "qty": Decimal("0.00031"),
        "price": Decimal("79000"),
        "time_in_force": "IOC",
        "order_link_id": LINK,
    }
    return OrderRequest(**{**fields, **changes})  # type: ignore[arg-type]


# ---- where it may connect ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environment", "url"),
    [
        ("okx-live", None),  # no such environment: OKX's real account is `okx`
        ("okx", None),  # a live key names its host: never defaulted
        ("okx", "https://my.okx.com"),  # the EEA platform's website, not an API host
        ("okx", "https://www.okx.com.example.net"),
        ("okx", "http://www.okx.com"),
        ("okx", "https://www.okx.com/api"),
        ("okx", "http://127.0.0.1:8080"),  # never loopback: only the suite's seam routes a live host there
        ("okx-demo", "https://eea.okx.com"),
        ("okx-demo", "http://10.0.0.5:8080"),
        ("okx-demo", "http://127.0.0.1:8080/api"),
        ("okx-testnet", None),
    ],
)
def test_only_okx_demo_or_a_loopback_stand_in_is_accepted(environment: str, url: str | None) -> None:
    with pytest.raises(ValueError):
        OkxExchange.connect(environment, api_key="k", api_secret="s", passphrase="p", base_url=url)


@pytest.mark.parametrize("host", ["www.okx.com", "us.okx.com", "eea.okx.com"])
def test_okx_s_real_account_is_the_named_host_without_the_demo_header(host: str) -> None:
    adapter = OkxExchange.connect(
        "okx", api_key="k", api_secret="s", passphrase="p", base_url=f"https://{host}"
    )
    assert adapter.base_url == f"https://{host}" and adapter.environment == "okx"


@pytest.mark.parametrize(
    ("row", "left"),
    [
        ({"triggerTime": "1587971460", "tag": "", "ts": "1587971400"}, 60.0),  # OKX's docs example
        ({"triggerTime": "1587971460000", "tag": "", "ts": "1587971400500"}, 59.5),  # milliseconds
        ({"triggerTime": "0", "tag": "", "ts": "1587971400000"}, -1587971400.0),  # turned off
    ],
)
def test_cancel_all_after_s_answer_says_the_seconds_left(row: dict[str, str], left: float) -> None:
    assert wire_.countdown_left(row) == left


def test_a_key_without_its_passphrase_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError):
        OkxExchange.connect("okx-demo", api_key="k", api_secret="s", passphrase=None)


def test_okx_demo_is_okx_s_own_address_and_nothing_shows_the_secrets() -> None:
    adapter = OkxExchange.connect("okx-demo", api_key="K" * 30, api_secret="S" * 30, passphrase="P" * 12)
    assert adapter.base_url == "https://www.okx.com"
    shown = repr(adapter) + repr(Keys("K" * 30, "S" * 30, "P" * 12))
    assert "KKKK" not in shown and "SSSS" not in shown and "PPPP" not in shown


# ---- signing as OKX checks it -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "code"), [("api_key", 50111), ("api_secret", 50113), ("passphrase", 50105)]
)
async def test_a_wrong_key_secret_or_passphrase_is_refused_as_okx_refuses_it(front, field, code) -> None:
    keys = {
        "api_key": front.api_key,
        "api_secret": front.api_secret,
        "passphrase": front.passphrase,
        field: "wrong1",
    }
    adapter = OkxExchange.connect("okx-demo", base_url=front.url, **keys)
    with pytest.raises(ExchangeRejected) as refused:
        await adapter.get_balance()
    await adapter.close()
    assert (refused.value.ret_code, refused.value.family) == (code, "auth")
    for secret in (front.api_secret, front.passphrase, "wrong1"):
        assert secret not in str(refused.value) and secret not in refused.value.untrusted_text


async def test_every_request_carries_the_demo_header_and_a_signature_okx_accepts(front) -> None:
    adapter = connect_okx(front)
    await adapter.get_balance()
    await adapter.get_touch("linear", "BTC-USDT")
    await adapter.close()
    seen = front.seen()
    assert seen and all(s.headers.get("x-simulated-trading") == "1" for s in seen)
    signed = [s for s in seen if s.path == "/api/v5/account/balance"]
    assert signed[0].headers["ok-access-passphrase"] == front.passphrase


async def test_without_the_demo_header_okx_answers_that_the_key_is_not_for_that_environment(front) -> None:
    transport = Transport(front.url, Keys(front.api_key, front.api_secret, front.passphrase), demo=False)
    with pytest.raises(ExchangeRejected) as refused:
        await transport.read("/api/v5/account/balance", {}, "read the balance")
    transport.close()
    assert (refused.value.ret_code, refused.value.family) == (50101, "auth")


# ---- the three outcomes of a write ----------------------------------------------------------------------------


async def test_a_create_whose_answer_is_lost_after_okx_carried_it_out_is_unknown_and_found_by_its_client_id(
    front, paper
) -> None:
    front.add(Rule("POST", "/api/v5/trade/order", forward=True, drop=True, times=1))
    adapter = connect_okx(front, timeout_seconds=2)
    with pytest.raises(OutcomeUnknown):
        await adapter.create_order(_order())
    found = await adapter.find_order("linear", "BTC-USDT", LINK)
    await adapter.close()
    creates = [s for s in front.seen("/api/v5/trade/order") if s.method == "POST"]
    assert len(creates) == 1 and paper.request_count("/v5/order/create") == 1  # sent once, never resent
    assert found is not None and found.order_link_id == LINK and found.cum_exec_qty == Decimal("0.00031")


async def test_a_create_lost_before_okx_carried_it_out_is_unknown_too_and_never_found(front, paper) -> None:
    front.add(Rule("POST", "/api/v5/trade/order", drop=True, times=1))
    adapter = connect_okx(front, timeout_seconds=2)
    with pytest.raises(OutcomeUnknown):
        await adapter.create_order(_order())
    found = await adapter.find_order("linear", "BTC-USDT", LINK)
    await adapter.close()
    assert found is None and paper.request_count("/v5/order/create") == 0


async def test_open_orders_read_in_a_burst_meet_no_limit_but_okx_s_through_the_front(front) -> None:
    """One market's open orders are three OKX reads (orders-pending, then orders-algo-pending for each kind),
    each one /v5/order/realtime call on the paper key behind the front: 30 of them at once (90 calls) stay
    under OKX's limits, and the paper's Bybit limit of 50 a second on that key is not the front's to impose."""
    adapter = connect_okx(front)
    try:
        read = await asyncio.gather(*(adapter.get_open_orders("spot", "BTC-USDT") for _ in range(30)))
    finally:
        await adapter.close()
    assert read == [[]] * 30


async def test_a_create_answered_with_a_server_error_page_is_unknown_a_read_unavailable(front) -> None:
    front.add(Rule("POST", "/api/v5/trade/order", answer={"html": "502"}, status=502, times=1))
    front.add(Rule("GET", "/api/v5/account/balance", answer={"html": "502"}, status=502, times=1))
    adapter = connect_okx(front)
    with pytest.raises(OutcomeUnknown):
        await adapter.create_order(_order())
    with pytest.raises(ExchangeUnavailable):
        await adapter.get_balance()
    await adapter.close()


async def test_nothing_listening_means_nothing_was_sent(front) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    adapter = connect_okx(f"http://127.0.0.1:{port}")
    adapter._contracts["BTC-USDT-SWAP"] = Contract(Decimal("0.001"))  # no instrument read before the send
    with pytest.raises(ExchangeUnavailable):
        await adapter.create_order(_order())
    await adapter.close()


async def test_an_order_stop_asks_okx_for_a_partial_stop_and_a_size_off_the_lot_is_refused_by_okx(
    front, paper
) -> None:
    adapter = connect_okx(front)
    await adapter.create_order(
        _order(side="Buy", price=Decimal("81000"), stop_loss=Decimal("79000"), stop_scope=StopScope.ORDER)
    )
    with pytest.raises(ExchangeRejected) as off_lot:  # 0.000315 BTC is 0.315 contract: not whole lots of 0.01
        await adapter.create_order(_order(qty=Decimal("0.000315"), order_link_id="pilot-" + "cd" * 15))
    await adapter.close()
    legs = [o for o in paper.orders("BTCUSDT") if o.stop_order_type == "PartialStopLoss"]
    assert [(leg.trigger_price, leg.qty) for leg in legs] == [(Decimal("79000"), Decimal("0.00031"))]
    assert (off_lot.value.ret_code, off_lot.value.family) == (51121, "params")


async def test_the_position_s_whole_stop_is_placed_amended_and_removed_in_one_write_each(
    front, paper
) -> None:
    adapter = connect_okx(front)
    await adapter.create_order(_order())  # short 0.00031
    assert await adapter.set_trading_stop("linear", "BTC-USDT", stop_loss=Decimal("84000"), take_profit=None)
    assert await adapter.set_trading_stop(
        "linear", "BTC-USDT", stop_loss=Decimal("83000"), take_profit=Decimal("70000")
    )
    unchanged = await adapter.set_trading_stop(
        "linear", "BTC-USDT", stop_loss=Decimal("83000"), take_profit=None
    )
    held = paper.position("BTCUSDT")
    assert (held.stop_loss, held.take_profit) == (Decimal("83000"), Decimal("70000"))
    assert await adapter.set_trading_stop("linear", "BTC-USDT", stop_loss=Decimal(0), take_profit=Decimal(0))
    await adapter.close()
    writes = [s.path for s in front.seen() if s.method == "POST"]
    assert unchanged is False
    assert writes[1:] == [
        "/api/v5/trade/order-algo",
        "/api/v5/trade/amend-algos",
        "/api/v5/trade/cancel-algos",
    ]
    assert (paper.position("BTCUSDT").stop_loss, paper.position("BTCUSDT").take_profit) == (0, 0)


async def test_cancel_all_cancels_in_batches_and_keeps_the_stops_unless_asked(front, paper) -> None:
    adapter = connect_okx(front)
    await adapter.create_order(_order())
    await adapter.set_trading_stop("linear", "BTC-USDT", stop_loss=Decimal("84000"), take_profit=None)
    for n in range(3):
        link = f"pilot-{n:030x}"
        await adapter.create_order(
            _order(side="Buy", price=Decimal("70000"), time_in_force="GTC", order_link_id=link)
        )
    kept = await adapter.cancel_all_orders("linear", "BTC-USDT")
    assert len(kept) == 3 and paper.position("BTCUSDT").stop_loss == Decimal("84000")
    wiped = await adapter.cancel_all_orders("linear", "BTC-USDT", include_stops=True)
    await adapter.close()
    assert wiped and all(order_id.startswith("algo:") for order_id in wiped)
    assert paper.position("BTCUSDT").stop_loss == 0 and paper.open_orders("BTCUSDT") == []


# ---- codes, contracts and client order ids ------------------------------------------------------------------


def test_the_codes_that_leave_a_write_open_are_unknown_for_writes_and_unavailable_for_reads() -> None:
    for code in (50004, 50013, 50026, 51054, 51149):
        assert all(error_codes.verdict(code, op) is error_codes.Verdict.UNKNOWN for op in error_codes.WRITES)
        assert error_codes.verdict(code, "read") is error_codes.Verdict.UNAVAILABLE
    assert error_codes.verdict(51016, "create") is error_codes.Verdict.DUPLICATE
    assert error_codes.verdict(99999, "create") is error_codes.Verdict.REJECTED  # unlisted: a definite no
    assert error_codes.family(99999) == "other"


CONTRACT_VALUES = st.sampled_from(["0.0001", "0.001", "0.01", "0.1", "1", "10", "100", "1000"]).map(Decimal)
LOTS = st.sampled_from(["0.001", "0.01", "0.1", "1"]).map(Decimal)


@given(CONTRACT_VALUES, LOTS, st.integers(min_value=1, max_value=10**9))
def test_a_size_on_the_lot_is_the_same_number_of_contracts_both_ways_exactly(value, lot, lots) -> None:
    unit = Contract(value)
    contracts = lot * lots
    coins = unit.coins(contracts)
    assert unit.to_contracts(coins) == contracts
    assert coins == contracts * value  # no rounding: exact in Decimal


@given(st.text(alphabet="0123456789abcdef", min_size=30, max_size=30))
def test_pilot_s_client_order_ids_travel_in_okx_s_alphabet_and_come_back_the_same(digits: str) -> None:
    link = "pilot-" + digits
    wire = wire_client_id(link)
    assert wire.isalnum() and len(wire) == 26 and wire.startswith("pilot")
    assert pilot_client_id(wire) == link


@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=32))
def test_another_client_s_id_passes_as_it_is(cl_ord_id: str) -> None:
    assert pilot_client_id(cl_ord_id) == cl_ord_id and wire_client_id(cl_ord_id) == cl_ord_id
