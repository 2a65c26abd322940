"""`pilot doctor`: check a home before trusting it (policy, journal chain, key, exchange), each with its fix.

Reading only: a missing journal is reported, not created, and no order is ever sent.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pilot.app.answers import entry_kinds
from pilot.app.facts.stream_health import stream_trouble
from pilot.app.human.exchange_keys import load_exchange_credentials, show_keys
from pilot.app.road.ports import Exchange
from pilot.app.runtime.policy_file import read_policy_file
from pilot.app.runtime.runtime import Home, is_live
from pilot.app.service.boot import EXCHANGES
from pilot.core.policy import LoadedPolicy
from pilot.core.violations import plain
from pilot.exchange.adapters import connect_exchange
from pilot.exchange.errors import ExchangeError, UnsupportedPositionMode
from pilot.keys.channel_secrets import SecretUnreadable, load_secret
from pilot.keys.errors import KeysError, NoKeyStored, keys_command
from pilot.store import (
    STORE_REPAIRED,
    ChainReport,
    JournalEntry,
    JournalKeyUnusable,
    OpenReport,
    StoreCorrupt,
    StoreError,
    StoreLocation,
    open_store,
)


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the doctor's report: what was checked, whether it is fine, and the fix if not."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None


async def examine(home: Path, exchange: str, *, now: datetime, symbol: str | None = None) -> list[Check]:
    """Run every check on `home` for `exchange` and return one or more Checks per area."""
    if exchange not in EXCHANGES:
        return [
            Check("exchange", False, f"unknown exchange {exchange!r}", f"use one of {', '.join(EXCHANGES)}")
        ]
    checks = check_policy(Home(home).policy_path)
    try:
        where = Home(home).store()
    except StoreError as error:
        checks.append(
            Check("journal", False, str(error), "name a PostgreSQL URL there, or remove it for SQLite")
        )
    else:
        checks.append(await check_journal(where, home))
        if checks[-1].ok:
            checks += await check_streams(where, home, now)
            venue = await check_venue(where, home, exchange)
            if venue is not None:  # its key and exchange would be another venue's: their fixes would mislead
                return [*checks, venue, *check_phone(home)]
    key = await check_key(home, exchange)
    checks.append(key)
    if key.ok and is_live(exchange):
        checks.append(await check_account(home, exchange))
    if key.ok:
        checks.append(await check_exchange(home, exchange, now=now, symbol=symbol or _first_market(home)))
    else:
        checks.append(Check("exchange", False, "not tried without a usable key", key.fix))
    return checks + check_phone(home)


def check_phone(home: Path) -> list[Check]:
    """The phone channels policy.json opens have what they need stored (`pilot phone test` sends for real)."""
    outcome = read_policy_file(Home(home).policy_path)
    if not isinstance(outcome, LoadedPolicy):
        return []
    confirm = outcome.policy.confirm
    checks = []
    if confirm.telegram is not None:
        try:
            stored = load_secret(home, "telegram") is not None
        except (KeysError, SecretUnreadable) as error:
            return [
                Check("phone", False, f"the Telegram bot token cannot be read: {error}", "store it again")
            ]
        approvers = len(confirm.telegram.approvers)
        checks.append(
            Check(
                "phone",
                True,
                f"Telegram: bot token stored, {approvers} approver(s); `pilot phone test` writes",
            )
            if stored
            else Check("phone", False, "confirm.telegram is set but no bot token is stored", _TELEGRAM_FIX)
        )
    if confirm.ntfy is not None:
        link = f"{confirm.ntfy.server}/{confirm.ntfy.topic}"
        checks.append(Check("phone", True, f"ntfy: {link}, buttons open {confirm.console_url}"))
    return checks


_TELEGRAM_FIX = "run `pilot phone telegram-token` with the token @BotFather gave"


def check_policy(path: Path) -> list[Check]:
    """policy.json is there and valid; otherwise one failed check per issue, each with its fix."""
    outcome = read_policy_file(path)
    if not isinstance(outcome, LoadedPolicy):
        return [
            Check(
                "policy",
                False,
                f"{issue.path}: {issue.problem}",
                f"{issue.fix} (growing orders are refused until then)",
            )
            for issue in outcome
        ]
    markets = ", ".join(outcome.policy.allowed_markets) or "none"
    return [Check("policy", True, f"policy.json valid, version {outcome.version[:19]}…, markets {markets}")]


async def check_journal(where: Path | StoreLocation, home: Path | None = None) -> Check:
    """The journal opens with its key, every entry's hash, seal and link recompute, and no guard was ever restored.

    Opening restores missing guards and journals it (pilot.store.guards); a journal that holds such a
    repair fails this check from then on, since the record of it is evidence a human should look at.
    `where` is the home's SQLite file or its PostgreSQL store (of `home`).
    """
    location = where if isinstance(where, StoreLocation) else StoreLocation(path=where)
    path = location.path if location.path is not None else str(location)
    if location.path is not None and not location.path.exists():
        return Check("journal", False, f"no journal at {path}", "create the home with `pilot init`")
    try:
        store = await open_store(location, home=home)
    except JournalKeyUnusable as error:
        return Check("journal", False, error.problem, error.fix)
    except StoreCorrupt as error:
        return Check("journal", False, str(error), _CORRUPT_FIX)
    except StoreError as error:
        return Check("journal", False, f"{path} cannot be opened: {error}", "check the file and its folder")
    try:
        report = await store.journal.verify()
        repairs = await store.journal.entries(kind=STORE_REPAIRED)
        switch = await store.journal.latest(entry_kinds.KILL_SWITCH)
    except StoreError as error:
        return Check("journal", False, f"{path} cannot be read: {error}", _CORRUPT_FIX)
    finally:
        await store.close()
    return _rollback_verdict(report, switch) or _journal_verdict(report, repairs, store.opened)


async def check_venue(where: Path | StoreLocation, home: Path, exchange: str) -> Check | None:
    """A failed check when the home never trades `exchange` (real money in a practice home, anything but a
    live home's own venue), naming what it does trade; None when it may."""
    from pilot.app.human.going_live import live_environment, venue_refusal

    location = where if isinstance(where, StoreLocation) else StoreLocation(path=where)
    try:
        store = await open_store(location, home=home)
        try:
            trades = await live_environment(store.journal)
        finally:
            await store.close()
    except StoreError:  # the journal's own check has just opened it: this one says nothing new
        return None
    refusal = venue_refusal(home, trades, exchange)
    if refusal is None:
        return None
    if trades is None:
        return Check("home", False, refusal.problem, refusal.fix)
    return Check(
        "home",
        False,
        f"{home} is a live home of {trades}: it never trades {exchange}",
        f"check it for what it trades: `pilot doctor --exchange {trades} --home {home}`; {refusal.fix}",
    )


async def check_streams(where: Path | StoreLocation, home: Path, now: datetime) -> list[Check]:
    """The streams as the last server journaled them: the private stream down (since when, why), and stream
    messages Pilot could not read in the last day. Nothing to say: no line."""
    location = where if isinstance(where, StoreLocation) else StoreLocation(path=where)
    try:
        store = await open_store(location, home=home)
    except StoreError:
        return []  # check_journal said what is wrong with it
    try:
        trouble = await stream_trouble(store.journal, now)
    except StoreError:
        return []
    finally:
        await store.close()
    if trouble is None:
        return []
    fix = (
        "facts are read over REST meanwhile (judgements stay safe, only slower); check the network and "
        "the key's permissions, restart `pilot serve` if it stays down, and report a message Pilot could "
        "not read (Bybit may have changed it)"
    )
    return [Check("streams", False, line, fix) for line in trouble.lines()]


_LOOK = (
    "find out who restored, cut or emptied journal/pilot.db (the exchange's order history shows what it "
    "lost); once you have, `pilot kill-switch off` lets growing orders through again"
)


def _rollback_verdict(report: ChainReport, switch: JournalEntry | None) -> Check | None:
    """A journal that lost the entry it was anchored at, or whose kill switch Pilot turned on for that and no
    human has turned off since (pilot.app.human.kill_switch.stop_on_rollback)."""
    seq = report.first_broken_seq
    if not report.ok and report.reason in ("tail_missing", "anchor_mismatch"):
        lost = f"entry {seq} on is gone" if report.reason == "tail_missing" else f"entry {seq} was replaced"
        detail = (
            f"the journal was rolled back: {lost}, though the anchor outside the home names it; the next "
            "`pilot serve` turns the kill switch on"
        )
        return Check("journal", False, detail, _LOOK)
    if switch is None or not switch.data.get("on") or not isinstance(switch.data.get("rollback"), dict):
        return None
    detail = (
        f"a rollback was found at seq {switch.seq} ({switch.at:%Y-%m-%d %H:%M} UTC): {switch.data.get('reason')}; "
        "the kill switch has been on since"
    )
    return Check("journal", False, detail, _LOOK)


_CORRUPT_FIX = (
    "move the file aside (keep it for inspection) and restore journal/pilot.db from a backup, "
    "or start a new home with `pilot init --home NEW`"
)


def _journal_verdict(report: ChainReport, repairs: list[JournalEntry], opened: OpenReport) -> Check:
    if not report.ok:
        return Check(
            "journal",
            False,
            f"chain broken at seq {report.first_broken_seq} ({report.reason}); {report.count} entries before it are intact",
            "an entry was changed outside Pilot: keep this file for inspection and move it aside before trading again",
        )
    if repairs:
        last = repairs[-1]
        restored = ", ".join(sorted(last.data.get("restored") or {}))
        return Check(
            "journal",
            False,
            f"guards were removed outside Pilot and restored {len(repairs)} time(s), last at seq {last.seq} "
            f"({last.at:%Y-%m-%d %H:%M} UTC): {restored}; chain and seals intact, {report.count} entries",
            "someone wrote journal/pilot.db outside Pilot: keep a copy and run `pilot journal verify --anchor "
            "SEQ:SEAL` with an anchor you kept; if it does not match, trade from a new home (`pilot init`)",
        )
    older = f", {report.unsealed} of them from before sealing" if report.unsealed else ""
    return Check(
        "journal",
        True,
        f"chain and seals intact, {report.count} entries{older}; journal key {opened.key_id} at {opened.key_path}",
    )


async def check_key(home: Path, exchange: str) -> Check:
    """The environment's stored key is present, opens, and may do no more than Pilot allows."""
    if exchange == "paper":
        return Check("key", True, "the embedded paper exchange brings its own key; nothing to set up")
    summaries = [summary for summary in await show_keys(home) if summary.environment == exchange]
    if not summaries:
        return Check(
            "key",
            False,
            f"no key stored for {exchange}",
            f"run `{keys_command('add', exchange)} --home {home}`",
        )
    summary = summaries[0]
    if summary.check.disallowed:
        return Check(
            "key",
            False,
            f"key {summary.key_id} may also {', '.join(summary.check.disallowed)}",
            f"create a narrower key and run `{keys_command('replace', exchange)} --home {home}`",
        )
    access = "read-only" if summary.check.read_only else "read and trade"
    bound = "IP-bound" if summary.check.ip_bound else "not IP-bound"
    return Check(
        "key", True, f"key {summary.key_id} ({access}, {bound}): {', '.join(summary.check.permissions)}"
    )


async def check_account(home: Path, exchange: str) -> Check:
    """Whether the key is a sub-account's (recommended for a live home) or the main account's."""
    from pilot.app.human.exchange_keys import key_is_main_account

    try:
        main = await key_is_main_account(home, exchange)
    except KeysError as error:
        return Check("account", False, error.problem, error.fix)
    if main is None:
        return Check("account", True, "the venue did not say whether the key is the main account's")
    if main:
        return Check(
            "account",
            True,
            "the main account's key (works, but every coin of the account is within its reach)",
            "a sub-account funded with only the risk budget is safer (docs/going-live.md)",
        )
    return Check("account", True, "a sub-account's key: the account holds only what was moved into it")


async def check_exchange(home: Path, exchange: str, *, now: datetime, symbol: str) -> Check:
    """The exchange answers a ticker, a balance and a position read with this home's key; the account has
    funds, and holds no position in hedge mode (Pilot reads one-way positions only)."""
    from pilot.paper import StateError, StateInUse

    try:
        async with _connected(home, exchange, now) as adapter:
            ticker = await adapter.get_ticker("linear", symbol)
            balance = await adapter.get_balance()
            await adapter.get_positions("linear")
    except UnsupportedPositionMode as error:
        return Check(
            "exchange",
            False,
            f"{exchange} holds {error.symbol} in hedge mode; Pilot reads one-way positions only",
            error.human_fix,
        )
    except KeysError as error:
        return Check("exchange", False, f"the {exchange} key cannot be used: {error.problem}", error.fix)
    except StateInUse as error:  # a server started on the home's account at this very instant
        return Check("exchange", False, f"cannot read the paper account now: {error}", "run doctor again")
    except StateError as error:
        return Check(
            "exchange",
            False,
            f"cannot continue the paper account: {error}",
            f"start it afresh with `pilot sim reset --home {home}`",
        )
    except OSError as error:  # the embedded paper exchange could not listen
        return Check("exchange", False, f"cannot start the paper exchange ({error})", "free a loopback port")
    except ExchangeError as error:
        return Check(
            "exchange",
            False,
            f"{exchange} did not answer: {error.message}",
            "check the network and try again",
        )
    quote = f"{symbol} bid {plain(ticker.bid)} / ask {plain(ticker.ask)}"
    if balance.total_equity_usd <= 0:
        fix = "fund the account (on a venue's demo trading: request demo funds on its demo trading page)"
        return Check("exchange", False, f"{exchange} reachable ({quote}) but the account has no equity", fix)
    return Check(
        "exchange", True, f"{exchange} reachable: {quote}, equity ${plain(balance.total_equity_usd)}"
    )


@contextlib.asynccontextmanager
async def _connected(home: Path, exchange: str, now: datetime) -> AsyncIterator[Exchange]:
    with contextlib.ExitStack() as stack:
        if exchange == "paper":
            api_key, api_secret, base_url = await _home_paper_exchange(home, now, stack)
            passphrase = None
        else:
            credentials = await load_exchange_credentials(home, exchange, now=now)
            api_key, api_secret, base_url = credentials.api_key, credentials.api_secret, credentials.base_url
            passphrase = credentials.passphrase  # OKX's third secret
        adapter = connect_exchange(
            exchange, api_key=api_key, api_secret=api_secret, passphrase=passphrase, base_url=base_url
        )
        try:
            yield adapter
        finally:
            await adapter.close()


async def _home_paper_exchange(
    home: Path, now: datetime, stack: contextlib.ExitStack
) -> tuple[str, str, str | None]:
    """The home's own paper account (its positions and balance, not a fresh one): the paper exchange a
    running `pilot serve` or `pilot sim --home` serves it from, read with the key that server uses (the home's
    stored paper key, else the scenario's); or, when none runs, that account started here for the check."""
    from pilot.paper import load_scenario, serving_url, start_paper_exchange

    state = Home(home).paper_state_path
    url = serving_url(state)
    if url is None:
        paper = stack.enter_context(start_paper_exchange(state_path=state))
        return paper.api_key, paper.api_secret, paper.url
    try:
        credentials = await load_exchange_credentials(home, "paper", now=now)
    except NoKeyStored:
        key = load_scenario(None).api_keys[0]
        return key.key, key.secret, url
    return credentials.api_key, credentials.api_secret, url


def _first_market(home: Path) -> str:
    outcome = read_policy_file(Home(home).policy_path)
    markets = outcome.policy.allowed_markets if isinstance(outcome, LoadedPolicy) else ()
    return markets[0] if markets else "BTCUSDT"
