"""A live OKX home, through the CLI and real MCP sessions, against the OKX front (tests/okx_front) standing in
for OKX's real account: the paper exchange behind OKX's wire, reached through `standing_in_for_okx_live`
(pilot.exchange.okx.urls). The home names www.okx.com; only the connection goes to 127.0.0.1, without the
demo header (the front in live mode refuses a request that carries it, as OKX refuses a demo request on a
live key: 50101).

The same promises as a live Bybit home (tests/live/test_live_server.py): made only with --live, its key
read, trade and IP-bound or nothing is stored, the host named among OKX's, OKX's own dead-man's switch
(cancel-all-after) set to the dead-man's window at start and renewed on the upkeep's timer, growing orders
stopped when a renewal fails while a close still goes, and every answer and receipt saying LIVE and OKX.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.facts.streaming_reader import StreamingReader
from pilot.app.human.desk import open_desk
from pilot.app.human.going_live import live_environment, phrase, turn_live_on
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.plan import plan_order
from pilot.app.service.boot import StartupError, open_runtime
from pilot.app.service.upkeep import upkeep
from pilot.exchange.okx.markets import spelled
from pilot.exchange.okx.urls import standing_in_for_okx_live
from pilot.paper import start_paper_exchange
from pilot.server import build_server
from tests.app.conftest import call, until_in_sync
from tests.clocks import FakeClock
from tests.okx_front import OkxFront, Rule
from tests.scenarios import article_scenario

from .conftest import LIVE_POLICY, error_code, pilot

pytestmark = pytest.mark.anyio
CONFIG, COUNTDOWN, ORDER = (
    "/api/v5/account/config",
    "/api/v5/trade/cancel-all-after",
    "/api/v5/trade/order",
)
# The live policy (loss limits, caps, a human above $1000, the dead-man's switch at 60 s) in OKX's spelling.
OKX_POLICY = {
    **LIVE_POLICY,
    "allowedMarkets": [spelled(symbol) for symbol in LIVE_POLICY["allowedMarkets"]],
}
# OKX's answer when its service is briefly unavailable (docs-v5, "Error Code": 50001).
UNAVAILABLE = {"code": "50001", "msg": "Service temporarily unavailable. Please try again later.", "data": []}
BUY = {"symbol": "BTC-USDT", "side": "buy", "qty": "0.0003", "stop_loss": "79000"}
# What the live policy's daily loss limit reads over REST on every judgement, streams or not
# (pilot.app.facts.day_reads: the day's spot fills, read on from the newest held, and the positions).
DAY_READS = {"/api/v5/trade/fills", "/api/v5/account/positions"}


@pytest.fixture
def okx() -> Iterator[OkxFront]:
    """The front in live mode, standing in for every OKX API host while the test runs."""
    with (
        start_paper_exchange(article_scenario()) as paper,
        OkxFront(paper) as front,
        standing_in_for_okx_live(front.url),
    ):
        front.live = True
        yield front


def add_key(home: Path, front: OkxFront, host: str | None = "www.okx.com") -> Any:
    where = ["--host", host] if host is not None else []
    return pilot(
        "keys",
        "add",
        "--exchange",
        "okx",
        *where,
        "--stdin",
        "--home",
        str(home),
        "--format",
        "json",
        input=f"{front.api_key}\n{front.api_secret}\n{front.passphrase}\n",
    )


def stored_keys(home: Path) -> list[dict[str, Any]]:
    shown = pilot("keys", "show", "--home", str(home), "--format", "json")
    return list(json.loads(shown.stdout)["keys"]) if shown.exit_code == 0 else []


@pytest.fixture
def okx_home(tmp_path: Path, master_key_file: Path, okx: OkxFront) -> Path:
    """A live OKX home with the live policy and a narrow key stored (live trading still off)."""
    home = tmp_path / "live-okx"
    made = pilot("init", "--live", "--exchange", "okx", "--home", str(home))
    assert made.exit_code == 0, made.output
    (home / "policy.json").write_text(json.dumps(OKX_POLICY))
    added = add_key(home, okx)
    assert added.exit_code == 0, added.output
    return home


async def turn_on(home: Path) -> None:
    async with open_desk(home) as desk:
        await turn_live_on(desk, phrase(desk), at_terminal=True)


def test_init_live_okx_makes_a_live_home_of_okx_from_its_first_entry(tmp_path: Path):
    home = tmp_path / "live-okx"
    assert pilot("init", "--live", "--exchange", "okx", "--home", str(home)).exit_code == 0
    policy = json.loads((home / "policy.json").read_text())
    assert policy["allowedMarkets"][0] == "BTC-USDT" and policy["deadManSwitch"]["afterSeconds"] == 120

    async def trades() -> str | None:
        async with open_desk(home) as desk:
            return await live_environment(desk.store.journal)

    assert asyncio.run(trades()) == "okx"
    assert pilot("init", "--exchange", "okx", "--home", str(tmp_path / "x")).exit_code == 2  # needs --live
    again = pilot("init", "--live", "--home", str(home), "--format", "json")  # a bybit live home: refused
    assert again.exit_code != 0 and error_code(again) == "live_home_only_okx"


@pytest.mark.parametrize(
    ("perm", "ip"),
    [
        ("read_only,trade,withdraw", "203.0.113.7"),  # may withdraw
        ("read_only", "203.0.113.7"),  # cannot trade
        ("read_only,trade", ""),  # bound to no IP address
    ],
)
def test_a_key_that_cannot_only_trade_from_one_address_is_refused_and_nothing_is_stored(
    tmp_path: Path, master_key_file: Path, okx: OkxFront, perm: str, ip: str
):
    home = tmp_path / "live-okx"
    assert pilot("init", "--live", "--exchange", "okx", "--home", str(home)).exit_code == 0
    okx.perm, okx.ip = perm, ip
    refused = add_key(home, okx)
    assert refused.exit_code == 2 and error_code(refused) == "key_permissions_rejected", refused.output
    assert len(okx.seen(CONFIG)) == 1 and stored_keys(home) == []
    assert all("x-simulated-trading" not in seen.headers for seen in okx.seen(CONFIG))


def test_the_host_is_named_among_okx_s_and_never_guessed(
    tmp_path: Path, master_key_file: Path, okx: OkxFront
):
    home = tmp_path / "live-okx"
    assert pilot("init", "--live", "--exchange", "okx", "--home", str(home)).exit_code == 0
    for host in (None, "my.okx.com", "okx.com.example.net", "http://127.0.0.1:9"):
        refused = add_key(home, okx, host)
        assert error_code(refused) == "invalid_key_input", (host, refused.output)
    assert okx.seen(CONFIG) == [] and stored_keys(home) == []  # OKX was never asked
    added = add_key(home, okx, "eea.okx.com")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["key"]["address"] == "https://eea.okx.com"


def test_an_okx_key_is_refused_in_a_practice_home_and_a_bybit_live_home(
    tmp_path: Path, master_key_file: Path, okx: OkxFront
):
    practice, bybit = tmp_path / "practice", tmp_path / "live-bybit"
    assert pilot("init", "--home", str(practice)).exit_code == 0
    assert pilot("init", "--live", "--home", str(bybit)).exit_code == 0
    assert error_code(add_key(practice, okx)) == "practice_home"
    assert error_code(add_key(bybit, okx)) == "live_home_only_bybit"
    assert okx.seen(CONFIG) == []


async def test_a_live_okx_home_refuses_okx_demo_and_bybit_naming_the_venue_it_trades(okx_home: Path):
    await turn_on(okx_home)
    for other in ("okx-demo", "bybit", "paper"):
        with pytest.raises(StartupError) as refused:
            async with open_runtime(okx_home, exchange=other):
                pass
        assert refused.value.code == "live_home_only_okx", other


async def test_a_start_sets_cancel_all_after_to_the_window_and_every_answer_says_live_okx(
    okx_home: Path, okx: OkxFront
):
    await turn_on(okx_home)
    clock = FakeClock(datetime.now(UTC))
    async with (
        open_runtime(okx_home, exchange="okx", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        assert okx.countdown == 60  # the dead-man's window, inside OKX's 10-120 s
        assert [seen.params for seen in okx.seen(COUNTDOWN)] == [{"timeOut": "60"}]
        set_at_start = [e.data for e in await runtime.store.journal.entries(kind="dcp")]
        assert set_at_start[-1]["event"] == "set" and set_at_start[-1]["window_seconds"] == 60
        tools = (await client.list_tools()).tools
        assert all((tool.description or "").endswith("[LIVE okx]") for tool in tools)
        plan = await call(client, "plan_order", BUY)
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled", placed
    assert {plan["environment"], placed["environment"]} == {"okx LIVE"}
    card = await asyncio.to_thread(
        pilot, "journal", "--card", plan["plan_id"], "--home", str(okx_home), "--format", "json"
    )
    (receipt,) = json.loads(card.stdout)["cards"]
    assert receipt["home"] == {"kind": "live", "environment": "okx", "venue": "OKX"}
    assert all("x-simulated-trading" not in seen.headers for seen in okx.seen())


async def test_with_streams_a_live_okx_home_judges_on_them_and_a_place_sends_only_its_create(
    okx_home: Path, okx: OkxFront
):
    """`--streams` on a live OKX home: the streams of its key's host (the stand-in names its own while it
    stands in for OKX); with them in sync a plan judges on them, and over REST reads only what the daily
    loss limit reads (the day's fills and positions), a place that and its create."""
    await turn_on(okx_home)
    clock = FakeClock(datetime.now(UTC))
    async with open_runtime(okx_home, exchange="okx", streams=True, clock=clock) as runtime:
        reader = runtime.exchange
        assert isinstance(reader, StreamingReader)
        await until_in_sync(reader)
        judged = await plan_order(runtime, PlanRequest.parse(BUY))
        assert judged.snapshot is not None and judged.snapshot.fact_sources is not None
        assert set(judged.snapshot.fact_sources.values()) == {"stream"}
        async with Client(build_server(runtime)) as client:
            before = len(okx.seen())
            plan = await call(client, "plan_order", BUY)
            assert plan["status"] == "ok", plan
            assert {seen.path for seen in okx.seen()[before:]} <= DAY_READS
            placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled", placed
    assert [seen.path for seen in okx.seen()[before:] if seen.path not in DAY_READS] == [ORDER]
    assert all("x-simulated-trading" not in seen.headers for seen in okx.seen())


async def test_a_start_where_cancel_all_after_is_refused_does_not_start(okx_home: Path, okx: OkxFront):
    await turn_on(okx_home)
    okx.add(Rule("POST", COUNTDOWN, UNAVAILABLE))
    with pytest.raises(StartupError) as refused:
        async with open_runtime(okx_home, exchange="okx"):
            pass
    assert refused.value.code == "cancel_after_not_set" and refused.value.fix
    assert okx.seen(ORDER) == []


async def test_the_countdown_is_renewed_on_the_upkeep_s_timer_well_before_it_runs_out(
    okx_home: Path, okx: OkxFront
):
    await turn_on(okx_home)
    clock = FakeClock(datetime.now(UTC))
    async with open_runtime(okx_home, exchange="okx", clock=clock) as runtime:
        assert len(okx.seen(COUNTDOWN)) == 1
        clock.advance(19)
        await upkeep(runtime)
        assert len(okx.seen(COUNTDOWN)) == 1  # not a third of the 60 s yet
        clock.advance(1)
        await upkeep(runtime)
        assert len(okx.seen(COUNTDOWN)) == 2
        for _ in range(5):
            clock.advance(20)
            await upkeep(runtime)
    assert len(okx.seen(COUNTDOWN)) == 7 and okx.countdown == 60


async def test_a_renewal_that_fails_stops_growing_orders_while_a_close_goes(okx_home: Path, okx: OkxFront):
    await turn_on(okx_home)
    clock = FakeClock(datetime.now(UTC))
    async with (
        open_runtime(okx_home, exchange="okx", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        first = await call(client, "plan_order", {**BUY, "qty": "0.0002"})
        opened = await call(client, "place_order", {"plan_id": first["plan_id"]})
        assert opened["status"] == "filled", opened
        okx.add(Rule("POST", COUNTDOWN, UNAVAILABLE))
        clock.advance(20)
        await upkeep(runtime)  # the renewal fails: growing orders stop at once
        plan = await call(client, "plan_order", {**BUY, "qty": "0.0001"})
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        closed = await call(client, "close_position", {"symbol": "BTC-USDT"})
        events = [e.data["event"] for e in await runtime.store.journal.entries(kind="dcp")]
        okx.rules.clear()
        clock.advance(5)
        await upkeep(runtime)  # the next renewal passes: growing orders may go again
        renewed = [e.data["event"] for e in await runtime.store.journal.entries(kind="dcp")]
    assert plan["status"] == "ok" and refused["status"] == "refused", refused
    assert [v["rule"] for v in refused["violations"]] == ["venueBackstop"], refused
    waiting = refused["next_safe_action"]  # Pilot's own timer clears it: wait, no human needed
    assert waiting["tool"] is None and waiting["retry_after"] is not None
    assert closed["status"] == "filled", closed
    sent = [seen.params for seen in okx.seen(ORDER) if seen.method == "POST"]
    assert [body.get("reduceOnly", False) for body in sent] == [False, True]  # the opening order, the close
    assert events[-1] == "renewal_failed" and renewed[-1] == "renewed"


async def test_a_countdown_left_unrenewed_for_two_thirds_of_its_window_stops_growing_orders(
    okx_home: Path, okx: OkxFront
):
    """Upkeep stalled (no failure seen, no renewal sent): OKX may cancel soon, so nothing grows until the
    next renewal passes."""
    await turn_on(okx_home)
    clock = FakeClock(datetime.now(UTC))
    async with (
        open_runtime(okx_home, exchange="okx", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        clock.advance(40)  # two thirds of the 60 s window with no upkeep round
        stalled = await call(client, "plan_order", BUY)
        refused = await call(client, "place_order", {"plan_id": stalled["plan_id"]})
        await upkeep(runtime)  # renewed
        again = await call(client, "plan_order", BUY)
        placed = await call(client, "place_order", {"plan_id": again["plan_id"]})
    assert refused["status"] == "refused", refused
    assert [v["rule"] for v in refused["violations"]] == ["venueBackstop"]
    assert placed["status"] == "filled", placed
    assert len(okx.seen(COUNTDOWN)) == 2


def test_doctor_says_whether_the_okx_key_is_a_sub_account_s(okx_home: Path, okx: OkxFront):
    def account() -> dict[str, Any]:
        checked = pilot("doctor", "--exchange", "okx", "--home", str(okx_home), "--format", "json")
        return next(c for c in json.loads(checked.stdout)["checks"] if c["name"] == "account")

    sub = account()
    okx.uid = okx.main_uid  # the main account's own key
    main = account()
    assert sub["ok"] and not sub.get("fix")
    assert main["ok"] and main["fix"]  # works, with the advice to use a sub-account


async def test_anyone_turns_a_live_okx_home_off_in_one_command(okx_home: Path):
    await turn_on(okx_home)
    stopped = await asyncio.to_thread(pilot, "live", "off", "--home", str(okx_home), "--format", "json")
    assert stopped.exit_code == 0, stopped.output
    with pytest.raises(StartupError) as off:
        async with open_runtime(okx_home, exchange="okx"):
            pass
    assert off.value.code == "live_off"


async def test_an_okx_key_widened_while_serving_stops_growing_orders_on_the_timer_and_journals_each_change(
    okx_home: Path, okx: OkxFront
):
    """The key watch reads an OKX live key again every 5 minutes (account/config), with the same verdicts as
    Bybit's: Withdraw ticked stops growing orders at once while a close goes; unticked, they go again."""
    await turn_on(okx_home)
    clock = FakeClock(datetime.now(UTC))

    async def five_minutes(runtime: Any) -> None:  # upkeep every 20 s: the countdown renewed all along
        for _ in range(15):
            clock.advance(20)
            await upkeep(runtime)

    async with (
        open_runtime(okx_home, exchange="okx", clock=clock) as runtime,
        Client(build_server(runtime)) as client,
    ):
        first = await call(client, "plan_order", {**BUY, "qty": "0.0002"})
        opened = await call(client, "place_order", {"plan_id": first["plan_id"]})
        reads = len(okx.seen(CONFIG))
        okx.perm = "read_only,withdraw,trade"
        await five_minutes(runtime)  # no order sent: the timer alone reads the key
        widened_reads = len(okx.seen(CONFIG))
        plan = await call(client, "plan_order", {**BUY, "qty": "0.0001"})
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        closed = await call(client, "close_position", {"symbol": "BTC-USDT"})
        okx.perm = "read_only,trade"  # Withdraw unticked again
        await five_minutes(runtime)
        again = await call(
            client, "place_order", {"plan_id": (await call(client, "plan_order", BUY))["plan_id"]}
        )
        checks = [e.data for e in await runtime.store.journal.entries(kind="key.check")]
    assert opened["status"] == "filled" and widened_reads == reads + 1, (opened, reads, widened_reads)
    assert plan["status"] == "ok" and refused["status"] == "refused", refused
    assert [v["rule"] for v in refused["violations"]] == ["apiKeyPermissions"], refused
    assert closed["status"] == "filled" and again["status"] == "filled", (closed, again)
    assert [c["verdict"] for c in checks] == ["refused", "accepted"], checks
    assert checks[0]["disallowed"] == ["OKX.withdraw"], checks
    sent = [seen.params for seen in okx.seen(ORDER) if seen.method == "POST"]
    assert [body.get("reduceOnly", False) for body in sent] == [False, True, False]  # opened, closed, again
