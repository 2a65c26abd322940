"""Fixtures for the human's CLI: a home made by `pilot init`, filled by the real use cases on the paper exchange."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from pilot.app.human.desk import init_home
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import open_runtime
from pilot.cli import main
from pilot.core.facts import OrderType, Side
from tests.scenarios import ARTICLE, ARTICLE_POLICY


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def home(tmp_path: Path) -> Path:
    """A home made by `pilot init`, with the article's policy ($25 caps) that these tests' figures assume."""
    await init_home(tmp_path)
    (tmp_path / "policy.json").write_text(json.dumps(ARTICLE_POLICY, indent=2))
    return tmp_path


async def pilot(*args: str, input: str | None = None, env: dict[str, str | None] | None = None) -> Result:
    """Run the `pilot` command in a worker thread (each command runs its own event loop)."""
    runner = CliRunner()
    return await anyio.to_thread.run_sync(lambda: runner.invoke(main, list(args), input=input, env=env))


async def pilot_json(*args: str) -> Any:
    """Run a command with --format json and return the one JSON document it printed on stdout."""
    result = await pilot(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def edit_policy(home: Path, **changes: Any) -> None:
    """Change top-level keys of HOME/policy.json, as the human would in an editor."""
    path = home / "policy.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}, indent=2))


@pytest.fixture
async def runtime(home: Path) -> AsyncIterator[Runtime]:
    async with open_runtime(home, scenario=ARTICLE) as opened:
        yield opened


def btc(side: str = "sell", qty: str = "0.0002") -> PlanRequest:
    return PlanRequest("BTCUSDT", Side(side), OrderType.MARKET, Decimal(qty), None, None, False, "linear")


async def planned_ok(runtime: Runtime, request: PlanRequest | None = None) -> str:
    answer = await plan_order(runtime, request or btc())
    assert answer.status == "ok" and answer.plan_id, answer
    return answer.plan_id
