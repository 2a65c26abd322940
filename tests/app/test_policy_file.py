"""policy.json as the human edits it: invalid means reducing only, fixes apply without a restart, and the
daily order cap is counted from the journal and resets at 00:00 UTC. A hostile file (huge numbers, deep
nesting, repeated keys, a device, a FIFO, a directory, too large, not UTF-8) is just another invalid one, and
any change to the file is seen, whatever its size and mtime say."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from pilot.app.human.desk import init_home
from pilot.app.runtime.policy_file import load_policy_file, read_policy_file
from pilot.cli import main
from pilot.core.policy import LoadedPolicy, PolicyInvalid, PolicyIssue
from tests.scenarios import TEST_POLICY, policy_with

from .conftest import BTC_SHORT, CREATE, call, plan_and_place, write_policy

pytestmark = pytest.mark.anyio
GROWING = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"}


async def test_an_invalid_policy_refuses_growing_orders_but_closing_works_and_a_fix_needs_no_restart(
    server, paper, runtime
):
    async with Client(server, raise_exceptions=True) as client:
        await plan_and_place(client)
        write_policy(runtime.home.path, maxLeverage="lots")

        refused = await call(client, "plan_order", GROWING)
        assert refused["status"] == "refused"
        assert refused["violations"][0]["rule"] == "policy"
        assert refused["next_safe_action"]["tool"] is None
        assert "maxLeverage" in refused["next_safe_action"]["human"]
        assert refused["snapshot"]["policy_version"] == "invalid"

        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
        assert closed["status"] == "filled" and closed["sent"]["reduce_only"] is True
        assert paper.position("BTCUSDT").size == 0

        write_policy(runtime.home.path)
        fixed = await call(client, "plan_order", GROWING)
    assert fixed["status"] == "ok"
    assert paper.request_count(CREATE) == 2


async def test_a_plan_made_under_a_valid_policy_is_refused_at_send_once_the_file_breaks(
    server, paper, runtime
):
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", GROWING)
        (runtime.home.path / "policy.json").write_text("{not json")
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert refused["status"] == "refused" and refused["violations"][0]["rule"] == "policy"
    assert paper.request_count(CREATE) == 0


async def test_the_daily_order_cap_is_counted_from_the_journal_and_resets_at_midnight_utc(
    server, paper, runtime, clock
):
    clock.moment = datetime(2026, 11, 30, 23, 58, tzinfo=UTC)
    write_policy(runtime.home.path, dailyOrderCap=2)
    async with Client(server, raise_exceptions=True) as client:
        for _ in range(2):
            assert (await plan_and_place(client, GROWING))["status"] == "filled"
        capped = await call(client, "plan_order", GROWING)
        assert capped["status"] == "refused"
        assert [v["rule"] for v in capped["violations"]] == ["dailyOrderCap"]
        assert capped["next_safe_action"]["retry_after"] == "2026-12-01T00:00:00+00:00"
        assert capped["snapshot"]["orders_today"] == 2

        reducing = await call(client, "plan_order", {**GROWING, "side": "buy", "reduce_only": True})
        assert reducing["status"] == "ok"

        clock.advance(120)
        next_day = await call(client, "plan_order", GROWING)
    assert next_day["status"] == "ok" and next_day["snapshot"]["orders_today"] == 0
    assert paper.request_count(CREATE) == 2


async def test_the_daily_order_cap_counts_sends_that_failed_too(server, paper, runtime):
    write_policy(runtime.home.path, dailyOrderCap=1)
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        paper.add_fault(CREATE, "http_5xx")
        assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))[
            "status"
        ] == "outcome_unknown"
        capped = await call(client, "plan_order", BTC_SHORT)
    # The unknown send also counts as pending exposure, so the position cap is reached as well; the day's
    # cap is the blocker no size can fix, so it decides the next action (wait for 00:00 UTC).
    assert [v["rule"] for v in capped["violations"]] == ["dailyOrderCap", "maxNotionalUsd"]
    assert capped["next_safe_action"]["retry_after"] is not None


# policy.json as hostile input: each way a file can be made to hurt the reader fails closed, with a fix.


def five_thousand_digits(path: Path) -> None:
    path.write_text('{"maxNotionalUsd": ' + "9" * 5000 + "}")


def nested_100_000_deep(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def nested_deep_within_the_size_limit(path: Path) -> None:
    path.write_text('{"markets": ' + "[" * 30_000 + "]" * 30_000 + "}")


def exponent_of_a_billion(path: Path) -> None:
    path.write_text(json.dumps(TEST_POLICY)[:-1] + ', "confirm": {"aboveNotionalUsd": 1e999999999}}')


def duplicate_key(path: Path) -> None:
    path.write_text('{"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": 25, "maxNotionalUsd": 100000}')


def link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def link_to_dev_urandom(path: Path) -> None:
    path.symlink_to("/dev/urandom")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def directory(path: Path) -> None:
    path.mkdir()


def over_64_kib(path: Path) -> None:
    path.write_text(json.dumps(policy_with(allowedMarkets=["BTCUSDT"] + [f"X{i}USDT" for i in range(9000)])))


def not_utf_8(path: Path) -> None:
    path.write_bytes(b'{"allowedMarkets": ["BTC\xff"]}')


HOSTILE: dict[str, Callable[[Path], None]] = {
    make.__name__: make
    for make in (
        five_thousand_digits,
        nested_100_000_deep,
        nested_deep_within_the_size_limit,
        exponent_of_a_billion,
        duplicate_key,
        link_to_dev_zero,
        link_to_dev_urandom,
        fifo,
        directory,
        over_64_kib,
        not_utf_8,
    )
}
EVERY_HOSTILE_FILE = pytest.mark.parametrize("make", HOSTILE.values(), ids=HOSTILE.keys())


def make_hostile(home: Path, make: Callable[[Path], None]) -> Path:
    path = home / "policy.json"
    path.unlink()
    make(path)
    return path


def read_without_hanging(path: Path) -> tuple[PolicyIssue, ...]:
    """The issues load_policy_file raises for `path`, read in a worker thread so a blocking read fails the test.

    Any exception but PolicyInvalid (a problem not foreseen) fails it too.
    """

    def issues() -> tuple[PolicyIssue, ...]:
        with pytest.raises(PolicyInvalid) as invalid:
            load_policy_file(path)
        return tuple(invalid.value.issues)

    with ThreadPoolExecutor(max_workers=1) as pool:
        reading = pool.submit(issues)
        try:
            return reading.result(timeout=10)
        except TimeoutError:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # a writer's open and close frees the reader
            pytest.fail("reading policy.json blocked")


@EVERY_HOSTILE_FILE
def test_a_hostile_file_reads_as_one_issue_with_a_fix(tmp_path: Path, make: Callable[[Path], None]):
    (tmp_path / "policy.json").write_text("{}")
    path = make_hostile(tmp_path, make)
    issues = read_without_hanging(path)
    assert len(issues) == 1 and issues[0].path and issues[0].problem and issues[0].fix
    assert read_policy_file(path) == issues


def test_a_repeated_key_is_named_by_its_path_not_silently_the_last(tmp_path: Path):
    path = tmp_path / "policy.json"
    path.write_text('{"markets": {"BTCUSDT": {"maxLeverage": 2, "maxLeverage": 50}}, "maxNotionalUsd": 25}')
    outcome = read_policy_file(path)
    assert not isinstance(outcome, LoadedPolicy)
    assert [issue.path for issue in outcome] == ["markets.BTCUSDT.maxLeverage"]


def test_a_symlink_to_a_regular_file_is_followed(tmp_path: Path):
    (tmp_path / "kept-elsewhere.json").write_text(json.dumps(policy_with(maxNotionalUsd=40)))
    (tmp_path / "policy.json").symlink_to(tmp_path / "kept-elsewhere.json")
    outcome = read_policy_file(tmp_path / "policy.json")
    assert isinstance(outcome, LoadedPolicy) and outcome.policy.max_notional_usd == 40


def test_a_same_size_file_restored_with_its_old_mtime_is_seen(tmp_path: Path):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy_with(maxNotionalUsd=25)))
    before = os.stat(path)
    first = read_policy_file(path)
    path.write_text(json.dumps(policy_with(maxNotionalUsd=10)))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    second = read_policy_file(path)
    assert isinstance(first, LoadedPolicy) and isinstance(second, LoadedPolicy)
    assert (first.policy.max_notional_usd, second.policy.max_notional_usd) == (25, 10)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("arbitrary") / "policy.json"


@given(st.binary(max_size=2048) | st.text(max_size=512).map(str.encode))
def test_arbitrary_bytes_read_as_a_policy_or_its_issues_never_another_exception(scratch: Path, data: bytes):
    scratch.write_bytes(data)
    try:
        loaded = load_policy_file(scratch)
    except PolicyInvalid as invalid:
        assert invalid.issues and all(issue.path.isprintable() and issue.fix for issue in invalid.issues)
    else:
        assert loaded.version.startswith("sha256:")


@EVERY_HOSTILE_FILE
async def test_a_hostile_file_refuses_growing_orders_with_rule_policy_while_reducing_ones_work(
    server, paper, runtime, make
):
    async with Client(server, raise_exceptions=True) as client:
        await plan_and_place(client)  # a short of 0.00031 BTC under the valid policy
        make_hostile(runtime.home.path, make)

        growing = await call(client, "plan_order", GROWING)
        shown = await call(client, "get_policy")
        reduced = await plan_and_place(client, {**GROWING, "side": "buy", "reduce_only": True})
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})

    assert growing["status"] == "refused" and growing["violations"][0]["rule"] == "policy"
    assert growing["next_safe_action"]["tool"] is None and growing["next_safe_action"]["human"]
    assert shown["data"]["valid"] is False and len(shown["data"]["issues"]) == 1
    assert reduced["status"] == "filled" and reduced["sent"]["reduce_only"] is True
    assert closed["status"] == "filled" and paper.position("BTCUSDT").size == 0
    assert paper.request_count(CREATE) == 3


async def test_a_24_dollar_plan_is_refused_at_send_once_a_same_size_file_says_10(server, paper, runtime):
    path = runtime.home.policy_path
    before = os.stat(path)
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        assert plan["status"] == "ok" and Decimal(plan["notional_usd"]) > 20
        write_policy(runtime.home.path, maxNotionalUsd=10)  # "25" and "10": the same number of bytes
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert os.stat(path).st_size == before.st_size
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "refused" and "maxNotionalUsd" in [v["rule"] for v in placed["violations"]]
    assert paper.request_count(CREATE) == 0


async def test_a_repeated_cap_refuses_growing_orders_and_names_the_key(server, paper, runtime):
    runtime.home.policy_path.write_text(json.dumps(TEST_POLICY)[:-1] + ', "maxNotionalUsd": 100000}')
    async with Client(server, raise_exceptions=True) as client:
        refused = await call(client, "plan_order", {**GROWING, "qty": "0.01"})
    assert refused["violations"][0]["rule"] == "policy"
    assert refused["next_safe_action"]["human"].startswith("fix policy.json: maxNotionalUsd:")
    assert paper.request_count(CREATE) == 0


@EVERY_HOSTILE_FILE
async def test_policy_check_prints_each_problem_and_exits_1_without_a_traceback(tmp_path: Path, make):
    (tmp_path / "policy.json").write_text("{}")
    path = make_hostile(tmp_path, make)
    issues = read_without_hanging(path)

    result = await human("policy", "check", str(path))

    if make is directory:  # click itself refuses a directory argument, as a usage error
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
        return
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.output.count("fix:") == len(issues)


@EVERY_HOSTILE_FILE
async def test_doctor_reports_each_problem_and_exits_1_without_a_traceback(tmp_path: Path, make):
    await init_home(tmp_path)
    path = make_hostile(tmp_path, make)
    issues = read_without_hanging(path)

    result = await human("doctor", "--home", str(tmp_path), "--format", "json")

    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    checks = json.loads(result.stdout)["checks"]
    failed = [check for check in checks if not check["ok"]]
    assert [check["name"] for check in failed] == ["policy"] * len(issues)
    assert [check["detail"].split(":")[0] for check in failed] == [issue.path for issue in issues]


async def human(*args: str) -> Result:
    """The human's `pilot ...` command, in a worker thread (each command runs its own event loop)."""
    return await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, list(args)))
