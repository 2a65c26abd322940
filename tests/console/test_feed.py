"""The Live page's pages: newest first, no entry twice or missed across pages, filters applied across pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.desk import init_home, open_desk
from pilot.console import feed

pytestmark = pytest.mark.anyio
MARKETS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_pages_cover_every_entry_once_newest_first_with_and_without_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await init_home(tmp_path)
    start = datetime(2026, 11, 30, 12, tzinfo=UTC)
    async with open_desk(tmp_path) as desk:
        monkeypatch.setattr(
            feed, "SCAN", 200
        )  # a sparse filter's page stops early; the next goes on from there
        for n in range(260):  # several entries share a time, as fast writes do
            await desk.store.journal.append(
                entry_kinds.PLAN,
                {
                    "status": "refused" if n % 4 == 0 else "ok",
                    "request": {"symbol": MARKETS[n % 3], "side": "buy", "qty": "1"},
                    "violations": [{"rule": "maxNotionalUsd"}] if n % 4 == 0 else [],
                },
                now=start + timedelta(milliseconds=n // 3),
            )
        for filters, expected in [
            (feed.Filters(), list(range(260, 0, -1))),
            (feed.Filters(market="ETHUSDT"), [s for s in range(260, 0, -1) if (s - 1) % 3 == 1]),
            (
                feed.Filters(rule="maxNotionalUsd", market="BTCUSDT"),
                [s for s in range(260, 0, -1) if (s - 1) % 12 == 0],
            ),
            (feed.Filters(kind="order"), []),
        ]:
            seen: list[int] = []
            pages = 0
            before = None
            while True:
                rows, before = await feed.page(desk, filters, before)
                assert len(rows) <= feed.PAGE
                seen.extend(row.seq for row in rows)
                pages += 1
                if before is None:
                    break
            assert seen == expected, filters
            assert pages <= max(1, -(-260 // 200), -(-len(expected) // feed.PAGE)) + 1, (filters, pages)

        assert [row.seq for row in await feed.since(desk, 255)] == [256, 257, 258, 259, 260]
