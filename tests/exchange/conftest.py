"""Fixtures: a fresh paper exchange per test, a raw pybit session on it, and the Bybit adapter on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pybit.unified_trading import HTTP

from pilot.exchange.bybit.adapter import BybitExchange
from pilot.paper import PaperExchange, start_paper_exchange
from tests.scenarios import ARTICLE
from tests.venue import connect_adapter

TIMEOUT_SECONDS = 0.3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paper() -> Iterator[PaperExchange]:
    with start_paper_exchange(ARTICLE) as exchange:  # the figures here assume the article's BTCUSDT step
        yield exchange


def raw_session(paper: PaperExchange, api_key: str | None = None, api_secret: str | None = None) -> HTTP:
    """A real pybit session aimed at the paper exchange, with pybit's resends switched off."""
    session = HTTP(
        api_key=api_key or paper.api_key, api_secret=api_secret or paper.api_secret, max_retries=1, timeout=2
    )
    session.endpoint = paper.url
    session.client.trust_env = False
    session.retry_codes = set()
    return session


@pytest.fixture
def session(paper: PaperExchange) -> HTTP:
    return raw_session(paper)


@pytest.fixture
def exchange(paper: PaperExchange) -> Iterator[BybitExchange]:
    adapter = connect_adapter(paper, timeout_seconds=TIMEOUT_SECONDS)
    yield adapter
    adapter._http.close()
