"""What the exchange lists, kept: "no such market" as long as a market's rules, forgotten when it changes."""

from __future__ import annotations

import contextlib
from decimal import Decimal

import pytest

from pilot.exchange.bybit.market_reads import INSTRUMENT_TTL_SECONDS
from pilot.exchange.errors import ExchangeRejected
from pilot.exchange.listings import LISTINGS_BOUND, UNLISTED, Listings
from pilot.exchange.models import OrderRequest
from pilot.paper import start_paper_exchange
from tests.okx_front import OkxFront
from tests.scenarios import article_scenario
from tests.venue import connect_adapter, connect_okx

INFO = "/v5/market/instruments-info"


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_such_market_lives_exactly_as_long_as_a_listed_one() -> None:
    clock = Ticks()
    listings = Listings(300, clock)
    listings.keep("spot", "PEPEUSDT", UNLISTED)
    listings.keep("linear", "PEPEUSDT", rules := object())  # type: ignore[arg-type]
    clock.now += 299.9
    assert listings.get("spot", "PEPEUSDT") is UNLISTED and listings.get("linear", "PEPEUSDT") is rules
    assert listings.listed("spot", "PEPEUSDT") is False and listings.listed("linear", "PEPEUSDT") is True
    clock.now += 0.1
    assert listings.get("spot", "PEPEUSDT") is None and listings.get("linear", "PEPEUSDT") is None
    assert listings.listed("spot", "PEPEUSDT") is None


def test_a_market_answer_for_an_unlisted_market_forgets_that_it_was_unlisted() -> None:
    listings = Listings(300, Ticks())
    listings.keep("spot", "PEPEUSDT", UNLISTED)
    listings.keep("linear", "PEPEUSDT", rules := object())  # type: ignore[arg-type]
    listings.market_answered("spot", "PEPEUSDT")
    listings.market_answered("linear", "PEPEUSDT")
    assert listings.get("spot", "PEPEUSDT") is None  # listed now: read its rules
    assert listings.get("linear", "PEPEUSDT") is rules  # a listed market's answer changes nothing


def test_an_order_refused_for_its_parameters_makes_the_rules_read_again() -> None:
    listings = Listings(300, Ticks())
    listings.keep("linear", "PEPEUSDT", object())  # type: ignore[arg-type]
    listings.refused_for_parameters("linear", "PEPEUSDT")
    assert listings.get("linear", "PEPEUSDT") is None


def without_spot(symbol: str) -> dict:
    scenario = article_scenario()
    scenario["instruments"] = [
        i for i in scenario["instruments"] if (i["category"], i["symbol"]) != ("spot", symbol)
    ]
    return scenario


@pytest.mark.anyio
async def test_the_adapter_asks_once_about_a_market_the_exchange_does_not_list() -> None:
    with start_paper_exchange(without_spot("ETHUSDT")) as paper:
        adapter = connect_adapter(paper)
        try:
            assert adapter.listed("spot", "ETHUSDT") is None
            for _ in range(3):
                with pytest.raises(ExchangeRejected) as refused:
                    await adapter.get_instrument("spot", "ETHUSDT")
                assert refused.value.family == "not_found"
            assert paper.request_count(INFO) == 1
            assert adapter.listed("spot", "ETHUSDT") is False
            assert adapter.listings.ttl_s == INSTRUMENT_TTL_SECONDS  # the same life as the listed ones'
            await adapter.get_instrument("linear", "ETHUSDT")
            assert adapter.listed("linear", "ETHUSDT") is True
        finally:
            await adapter.close()


@pytest.mark.anyio
async def test_an_order_the_exchange_refuses_for_its_parameters_drops_the_cached_rules() -> None:
    with start_paper_exchange(article_scenario()) as paper:
        adapter = connect_adapter(paper)
        try:
            await adapter.get_instrument("linear", "BTCUSDT")
            off_grid = OrderRequest(
                "linear", "BTCUSDT", "Buy", Decimal("0.000001"), Decimal("80300"), "IOC", "off-grid-1"
            )
            with pytest.raises(ExchangeRejected) as refused:
                await adapter.create_order(off_grid)
            assert refused.value.family == "params"
            assert adapter.listed("linear", "BTCUSDT") is None
            await adapter.get_instrument("linear", "BTCUSDT")
            assert paper.request_count(INFO) == 2
        finally:
            await adapter.close()


def test_the_listings_keep_at_most_their_bound_forgetting_the_oldest_first() -> None:
    listings = Listings(300, Ticks(), bound=3)
    for symbol in ("AUSDT", "BUSDT", "CUSDT", "DUSDT"):
        listings.keep("linear", symbol, UNLISTED)
    assert len(listings) == 3 and listings.get("linear", "AUSDT") is None
    listings.keep("linear", "BUSDT", UNLISTED)  # kept anew: now the newest
    listings.keep("linear", "EUSDT", UNLISTED)
    assert listings.get("linear", "BUSDT") is UNLISTED and listings.get("linear", "CUSDT") is None
    assert Listings(300).bound == LISTINGS_BOUND


@pytest.mark.anyio
@pytest.mark.parametrize("venue", ["bybit", "okx"])
async def test_an_instruments_rules_are_read_again_once_their_life_is_over(venue: str) -> None:
    """Read once within INSTRUMENT_TTL_SECONDS (the adapter's monotonic clock, injected here), read again
    after: on Bybit's wire the instrument and its risk limit (the maintenance margin), on OKX's the
    instrument."""
    with start_paper_exchange(article_scenario()) as paper, contextlib.ExitStack() as stack:
        if venue == "okx":
            front = stack.enter_context(OkxFront(paper))
            adapter, symbol = connect_okx(front), "BTC-USDT"
            path = lambda: len(front.seen("/api/v5/public/instruments"))  # noqa: E731
        else:
            adapter, path, symbol = connect_adapter(paper), lambda: paper.request_count(INFO), "BTCUSDT"
        clock = Ticks()
        assert adapter.listings.ttl_s == INSTRUMENT_TTL_SECONDS  # OKX's adapter keeps them as long
        adapter.listings = Listings(INSTRUMENT_TTL_SECONDS, clock)
        try:
            rules = await adapter.get_instrument("linear", symbol)
            clock.now += INSTRUMENT_TTL_SECONDS - 0.001
            assert await adapter.get_instrument("linear", symbol) == rules and path() == 1
            clock.now += 0.001
            assert await adapter.get_instrument("linear", symbol) == rules and path() == 2
        finally:
            await adapter.close()
