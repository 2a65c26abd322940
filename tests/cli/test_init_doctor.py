"""`pilot init` creates a safe home once; `pilot doctor` checks one and names each fix."""

from __future__ import annotations

import json
import re
import sqlite3
import stat
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.human.desk import DEFAULT_POLICY
from pilot.app.runtime.runtime import Home
from pilot.core.policy import Policy, parse_policy
from pilot.core.policy.fields import REFERENCE_HEADER, REFERENCE_PAGE
from pilot.paper import start_paper_exchange

from .conftest import edit_policy, pilot, pilot_json

pytestmark = pytest.mark.anyio

REPOSITORY_POLICY = Path(__file__).resolve().parents[2] / "policy.json"


async def test_init_creates_policy_and_journal_and_is_idempotent(tmp_path: Path) -> None:
    home = tmp_path / "fresh"

    first = await pilot("init", "--home", str(home))
    policy_text = Home(home).policy_path.read_text()
    second = await pilot("init", "--home", str(home))

    assert first.exit_code == 0 and second.exit_code == 0
    assert Home(home).database_path.exists()
    assert Home(home).policy_path.read_text() == policy_text
    assert "kept the existing policy.json" in second.output


async def test_init_never_overwrites_an_edited_policy(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text('{"allowedMarkets": ["ETHUSDT"]}')

    result = await pilot("init", "--home", str(tmp_path))

    assert result.exit_code == 0
    assert json.loads((tmp_path / "policy.json").read_text()) == {"allowedMarkets": ["ETHUSDT"]}


def test_the_default_policy_is_the_repository_policy() -> None:
    assert parse_policy(DEFAULT_POLICY).version == parse_policy(REPOSITORY_POLICY.read_text()).version


async def test_doctor_passes_a_fresh_home_on_the_paper_exchange(home: Path) -> None:
    report = await pilot_json("doctor", "--home", str(home))

    assert report["ok"] and report["home"] == str(home)
    assert {check["name"]: check["ok"] for check in report["checks"]} == {
        "policy": True,
        "journal": True,
        "key": True,
        "exchange": True,
    }


async def test_doctor_reads_the_homes_own_paper_account_not_a_fresh_one(home: Path) -> None:
    """Found by a new user: after fills, doctor still reported a fresh account's $1000 of equity."""
    with start_paper_exchange(state_path=Home(home).paper_state_path) as paper:
        paper.leave_order(
            "linear", {"symbol": "ETHUSDT", "side": "Buy", "orderType": "Market", "qty": "0.01"}
        )
        assert paper.position("ETHUSDT").size == Decimal("0.01")
    report = await pilot_json("doctor", "--home", str(home))

    [exchange] = [check for check in report["checks"] if check["name"] == "exchange"]
    found = re.search(r"equity \$([0-9.]+)", exchange["detail"])
    assert exchange["ok"] and found is not None, exchange
    assert Decimal(found.group(1)) < 1000  # the fee of the fill left it below the fresh account's


async def test_doctor_flags_an_invalid_policy_with_its_fix(home: Path) -> None:
    edit_policy(home, maxLeverage=-2, dailyOrderCapp=5)

    result = await pilot("doctor", "--home", str(home), "--format", "json")

    assert result.exit_code == 1
    failed = [check for check in json.loads(result.stdout)["checks"] if not check["ok"]]
    assert {check["name"] for check in failed} == {"policy"}
    assert {check["detail"].split(":")[0] for check in failed} == {"maxLeverage", "dailyOrderCapp"}
    assert all(check["fix"] for check in failed)
    assert any("dailyOrderCap" in check["fix"] for check in failed)


async def test_doctor_outside_a_home_refuses_with_the_fix_and_creates_nothing(tmp_path: Path) -> None:
    result = await pilot("doctor", "--home", str(tmp_path), "--format", "json")

    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "not_a_home" and "pilot init" in error["fix"]
    assert list(tmp_path.iterdir()) == []


async def test_doctor_flags_a_missing_key(home: Path) -> None:
    result = await pilot("doctor", "--home", str(home), "--exchange", "bybit-demo", "--format", "json")

    assert result.exit_code == 1
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert checks["policy"]["ok"] and checks["journal"]["ok"]
    assert not checks["key"]["ok"] and "pilot keys add --exchange bybit-demo" in checks["key"]["fix"]
    assert not checks["exchange"]["ok"]


async def test_init_creates_the_journal_key_privately_outside_the_home(
    tmp_path: Path, user_home: Path
) -> None:
    home = tmp_path / "fresh"

    await pilot("init", "--home", str(home))

    key = user_home / ".config" / "pilot" / "journal.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert not key.is_relative_to(home)


async def test_doctor_reports_a_damaged_database_as_a_failed_check_with_its_fix(home: Path) -> None:
    database = Home(home).database_path
    for leftover in (database.with_name("pilot.db-wal"), database.with_name("pilot.db-shm")):
        leftover.unlink(missing_ok=True)
    database.write_bytes(b"\x00garbage" * 1000)

    result = await pilot("doctor", "--home", str(home), "--format", "json")

    assert result.exit_code == 1 and "Traceback" not in result.output
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert not checks["journal"]["ok"] and checks["journal"]["fix"]
    assert checks["policy"]["ok"]


async def test_doctor_reports_a_missing_journal_key_with_its_fix_and_creates_none(
    home: Path, user_home: Path
) -> None:
    await pilot("kill-switch", "on", "--home", str(home))
    key = user_home / ".config" / "pilot" / "journal.key"
    key.unlink()

    result = await pilot("doctor", "--home", str(home), "--format", "json")

    journal = {check["name"]: check for check in json.loads(result.stdout)["checks"]}["journal"]
    assert result.exit_code == 1
    assert not journal["ok"] and "PILOT_JOURNAL_KEY_FILE" in journal["fix"]
    assert not key.exists()


async def test_doctor_reports_restored_guards_now_and_on_every_later_run(home: Path) -> None:
    await pilot("kill-switch", "on", "--home", str(home))
    with sqlite3.connect(Home(home).database_path) as raw:
        raw.execute("DROP TRIGGER journal_no_delete")
        raw.execute("DROP TRIGGER plans_forward_only")
    raw.close()

    first = await pilot("doctor", "--home", str(home), "--format", "json")
    second = await pilot("doctor", "--home", str(home), "--format", "json")
    verify = await pilot_json("journal", "--home", str(home), "verify")

    for result in (first, second):
        journal = {check["name"]: check for check in json.loads(result.stdout)["checks"]}["journal"]
        assert result.exit_code == 1 and not journal["ok"] and journal["fix"]
        assert "journal_no_delete" in journal["detail"] and "plans_forward_only" in journal["detail"]
    assert verify["ok"] and verify["count"] == 2  # the repair itself is a sealed entry


REFERENCE = Path(__file__).resolve().parents[2] / REFERENCE_PAGE


def _documented_policy_table() -> dict[str, tuple[str, str]]:
    """The policy.json reference: field -> (left out, `pilot init` writes), as written there."""
    text = REFERENCE.read_text(encoding="utf-8")
    table = text[text.index(REFERENCE_HEADER) :].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        field = cells[0].split("`")[1]
        rows[field] = (cells[1].strip("`"), cells[2].strip("`"))
    return rows


def _at(document: dict[str, Any], field: str) -> Any:
    for part in field.split("."):
        document = document[part]
    return document


def _same(value: Any, written: str) -> bool:
    expected = json.loads(written)
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return Decimal(str(value)) == Decimal(str(expected))
    return value == expected


def test_the_reference_states_exactly_what_pilot_init_writes_and_what_a_left_out_field_means() -> None:
    rows = _documented_policy_table()
    written = json.loads(DEFAULT_POLICY)
    left_out = Policy().to_canonical()

    markets_left_out, markets_written = rows.pop("markets.SYMBOL.*")
    assert markets_left_out == "none" and left_out["markets"] == {}
    symbol, overrides = markets_written.split(": ", 1)
    assert written["markets"] == {symbol: json.loads(overrides)}
    assert set(rows) == {
        *(key for key in written if key not in ("confirm", "markets")),
        *(f"confirm.{key}" for key in written["confirm"]),
    }
    for field, (default, init) in rows.items():
        assert _same(_at(written, field), init), (field, init)
        assert _same(_at(left_out, field), default), (field, default)


async def test_an_okx_demo_home_names_okx_s_markets_and_doctor_and_serve_ask_for_its_key(
    tmp_path: Path,
) -> None:
    """`pilot init --exchange okx-demo` writes the default policy with OKX's spelling of its markets;
    doctor and serve on okx-demo, with no key stored yet, say how to add one (nothing is sent anywhere)."""
    home = tmp_path / "okx"
    made = await pilot("init", "--home", str(home), "--exchange", "okx-demo")
    policy = parse_policy(Home(home).policy_path.read_text()).policy
    checked = await pilot("doctor", "--home", str(home), "--exchange", "okx-demo", "--format", "json")
    doctor = json.loads(checked.stdout)
    served = await pilot("serve", "--home", str(home), "--exchange", "okx-demo")

    assert made.exit_code == 0
    assert policy.allowed_markets == ("BTC-USDT", "ETH-USDT", "SOL-USDT") and "BTC-USDT" in policy.markets
    paper_policy = parse_policy(DEFAULT_POLICY).policy  # the same limits, only the markets spelt otherwise
    assert policy.max_notional_usd == paper_policy.max_notional_usd
    checks = {check["name"]: check for check in doctor["checks"]}
    assert checked.exit_code == 1 and not doctor["ok"] and checks["policy"]["ok"] and not checks["key"]["ok"]
    assert "okx-demo" in checks["key"]["fix"]
    assert served.exit_code != 0
    # The commands init names next are for this home's venue: paper's doctor could not read BTC-USDT.
    named = re.findall(r"`(pilot (?:keys add|doctor|serve) [^`]*)`", " ".join(made.stdout.split()))
    assert len(named) == 3 and all("--exchange okx-demo" in command for command in named), named
