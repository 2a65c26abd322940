"""The console's Live page with 10,000 journal entries: first load (target < 300 ms) and how soon a newly
journaled entry is on screen (target < 1 s), measured in the OS's Chromium. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_console.py [ENTRIES]
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import async_playwright

from pilot.app.answers import entry_kinds
from pilot.app.human.desk import init_home
from pilot.console.app import build_app
from pilot.console.login import issue_secret
from pilot.console.serving import serving
from pilot.store import open_store

ORDER = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031", "order_type": "market", "category": "linear"}


async def fill(home: Path, count: int) -> float:
    """Journal `count` plans (sealed and chained, as the server writes them); returns the seconds it took."""
    store = await open_store(home / "journal" / "pilot.db")
    start = time.perf_counter()
    try:
        for n in range(count):
            refused = n % 3 == 0
            await store.journal.append(
                entry_kinds.PLAN,
                {
                    "status": "refused" if refused else "ok",
                    "request": ORDER,
                    "violations": [{"rule": "maxNotionalUsd"}] if refused else [],
                    "snapshot": {"position_size": "0", "mark": "80220", "equity_usd": "1000"},
                },
                now=datetime.now(UTC),
                plan_id=None if refused else f"pln_bench{n:06d}",
            )
    finally:
        await store.close()
    return time.perf_counter() - start


async def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        await init_home(home)
        print(f"journaling {count} entries ...", flush=True)
        seconds = await fill(home, count)
        print(f"  {count} entries in {seconds:.1f} s")
        secret = issue_secret(home)
        async with serving(build_app(home)) as url, async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
                args=["--no-sandbox"],
            )
            page = await browser.new_page()
            await page.goto(url + "/login")
            await page.fill("#secret", secret)
            await page.click("button[type=submit]")
            await page.wait_for_url(url + "/overview")
            await page.goto(url + "/")

            loads, servers = [], []
            for _ in range(10):
                await page.goto(url + "/")
                timing = json.loads(
                    await page.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
                )
                loads.append(timing["domContentLoadedEventEnd"] - timing["startTime"])
                servers.append(timing["responseEnd"] - timing["requestStart"])
            rows = await page.locator("#entries li").count()
            print(f"Live page first load, {count} entries, {rows} rows shown (paged):")
            print(
                f"  page ready (DOMContentLoaded) median {statistics.median(loads):.0f} ms, max {max(loads):.0f} ms"
            )
            print(f"  server response median {statistics.median(servers):.0f} ms, max {max(servers):.0f} ms")

            for query in ("rule=maxNotionalUsd", "market=ETHUSDT"):  # a third match; none match (reads all)
                start = time.perf_counter()
                await page.goto(f"{url}/?{query}", wait_until="domcontentloaded")
                shown = await page.locator("#entries li").count()
                print(f"  filtered ?{query}: {(time.perf_counter() - start) * 1000:.0f} ms, {shown} rows")

            await page.goto(url + "/")
            await page.wait_for_selector("#live-state[data-connected=yes]")
            store = await open_store(home / "journal" / "pilot.db")
            delays = []
            try:
                for n in range(10):
                    entry = await store.journal.append(
                        entry_kinds.KILL_SWITCH,
                        {"on": n % 2 == 0, "by": "human", "reason": f"bench {n}"},
                        now=datetime.now(UTC),
                        actor="human",
                    )
                    start = time.perf_counter()
                    await page.wait_for_selector(f"#row-{entry.seq}", timeout=5000)
                    delays.append((time.perf_counter() - start) * 1000)
            finally:
                await store.close()
            print("new entry on screen after it was journaled:")
            print(f"  median {statistics.median(delays):.0f} ms, max {max(delays):.0f} ms (10 entries)")
            await browser.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
