"""docs/okx-demo.md followed as a new user would, with the OKX front standing in for OKX demo trading: the
commands it names, typed as it names them (in this process, so the suite's seam routes OKX demo's address to
the front: pilot.exchange.okx.urls), and what it says each one does, asserted on exit codes, error codes,
the stored key, the checks and the journal.

Step 1 (creating a key on okx.com) is the front's key; step 3's settings are the front's account (one-way,
funded) until a test changes them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from pilot.app.service.boot import open_runtime
from pilot.cli import main
from pilot.exchange.okx.urls import standing_in_for_okx_demo
from pilot.paper import PaperExchange
from pilot.server import build_server
from tests.clocks import FakeClock
from tests.okx_front import OkxFront

from .conftest import call

pytestmark = pytest.mark.anyio
ACCOUNT_CONFIG = "/api/v5/account/config"


@pytest.fixture
def front(paper: PaperExchange) -> Iterator[OkxFront]:
    with OkxFront(paper) as stand_in, standing_in_for_okx_demo(stand_in.url):
        yield stand_in


def pilot(*args: str, input: str | None = None) -> Result:
    """`pilot ARGS` in this process, as the page names it."""
    return CliRunner().invoke(main, list(args), input=input)


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)


def add_key(home: Path, front: OkxFront) -> Result:
    """Step 2's `pilot keys add`, its three secrets as the three lines `--stdin` reads."""
    secrets = f"{front.api_key}\n{front.api_secret}\n{front.passphrase}\n"
    return pilot(
        "keys",
        "add",
        "--exchange",
        "okx-demo",
        "--home",
        str(home),
        "--stdin",
        "--format",
        "json",
        input=secrets,
    )


def doctor(home: Path) -> tuple[int, dict[str, Any]]:
    """Step 4's `pilot doctor`: its exit code and its checks by name."""
    checked = pilot("doctor", "--exchange", "okx-demo", "--home", str(home), "--format", "json")
    return checked.exit_code, {check["name"]: check for check in as_json(checked)["checks"]}


def test_steps_two_to_four_make_a_home_store_a_narrow_key_only_and_check_it(front: OkxFront, tmp_path: Path):
    home = tmp_path / "pilot-okx"
    assert pilot("init", "--exchange", "okx-demo", "--home", str(home)).exit_code == 0
    assert json.loads((home / "policy.json").read_text())["allowedMarkets"] == [
        "BTC-USDT",
        "ETH-USDT",
        "SOL-USDT",
    ]

    front.perm = "read_only,trade,withdraw"  # never Withdraw: refused before anything is stored
    refused = add_key(home, front)
    assert refused.exit_code == 2 and as_json(refused)["error"]["code"] == "key_permissions_rejected"
    front.perm = "read_only,trade"
    added = add_key(home, front)
    assert added.exit_code == 0, added.output
    assert len(front.seen(ACCOUNT_CONFIG)) == 2  # OKX was asked what each key may do before it was stored
    stored = as_json(added)
    assert stored["key"]["permissions"] == ["OKX.read_only", "OKX.trade"] and not stored["key"]["not_allowed"]

    code, checks = doctor(home)
    assert code == 0 and all(check["ok"] for check in checks.values()), checks
    front.position_mode = "long_short_mode"  # step 3: one-way, or every market is refused with this fix
    code, checks = doctor(home)
    assert code == 1 and not checks["exchange"]["ok"] and checks["exchange"]["fix"]


async def test_step_five_an_agent_s_answers_name_okx_demo_and_the_receipt_names_okx(
    front: OkxFront, tmp_path: Path, clock: FakeClock
):
    """`pilot serve --exchange okx-demo` (as boot assembles it) on the home steps 2-4 made: every answer says
    okx-demo, a plan's facts say OKX, and so does the receipt `pilot journal --card` prints."""
    home = tmp_path / "pilot-okx"
    made = await asyncio.to_thread(pilot, "init", "--exchange", "okx-demo", "--home", str(home))
    assert made.exit_code == 0  # each command in a thread of its own: it runs its own event loop
    assert (await asyncio.to_thread(add_key, home, front)).exit_code == 0
    order = {"symbol": "BTC-USDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": "70000"}
    async with (
        open_runtime(home, exchange="okx-demo", clock=clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        planned = await call(client, "plan_order", order)
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
    assert (planned["environment"], placed["environment"]) == ("okx-demo", "okx-demo")
    assert planned["snapshot"]["venue"] == "OKX" and placed["status"] == "open"
    card = await asyncio.to_thread(
        pilot, "journal", "--home", str(home), "--card", planned["plan_id"], "--format", "json"
    )
    assert card.exit_code == 0, card.output
    (receipt,) = as_json(card)["cards"]
    assert receipt["facts"]["venue"] == "OKX"
