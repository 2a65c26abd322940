"""The human's desk: what `pilot init`, `journal`, `kill-switch`, `confirm` and `token` do, with no exchange.

These use cases never reach an exchange. They run on a Runtime whose exchange refuses every use, so the
same rules as the server's (the kill switch entry, the policy read fresh) apply without starting one.
Each problem a human can cause is a `HumanError` with a stable code, the problem and its fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from pilot.app.answers import entry_kinds, receipts
from pilot.app.human.kill_switch import REASON_LIMIT, set_kill_switch_by_human, stop_on_rollback
from pilot.app.road.clock import Clock, SystemClock, store_clock
from pilot.app.road.ports import Exchange
from pilot.app.runtime.policy_file import read_policy_file
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime
from pilot.core.channels import CHANNELS, Via
from pilot.core.errors import ErrorCode, ExplainedError
from pilot.core.policy import LoadedPolicy, PolicyIssue, parse_policy
from pilot.core.policy.fields import init_policy_text
from pilot.exchange.adapters import spelling

# Re-exported (`as`): the desk's answers hand out ConfirmationRecord and JournalEntry, and the console, which
# does not import the store, names them from here.
from pilot.store import ConfirmationRecord as ConfirmationRecord
from pilot.store import DuplicateRecord, Journal, StoreLocation, open_store
from pilot.store import JournalEntry as JournalEntry

# What `pilot init` writes (the repository's policy.json): each field's value is declared with the field
# (pilot.core.policy.model says why these values).
DEFAULT_POLICY = init_policy_text()


class HumanError(ExplainedError):
    """Something a human asked for cannot be done: a stable `code`, the `problem` and its `fix`."""

    code = ErrorCode.HUMAN_ERROR

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}", problem, fix)


class NoJournal(HumanError):
    """The home has no journal database yet; `pilot init` creates one."""

    code = ErrorCode.NO_JOURNAL

    def __init__(self, home: Path) -> None:
        super().__init__(
            f"no journal at {Home(home).database_path}",
            f"create it with `pilot init --home {home}` (it keeps an existing policy.json)",
        )


class _NoExchange:
    """Stands in for the exchange in the human's commands: none of them may reach one."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the human's commands do not use the exchange (asked for {name})")


@contextlib.asynccontextmanager
async def open_desk(home: Path, *, clock: Clock | None = None, react: bool = True) -> AsyncIterator[Runtime]:
    """Open an existing home's store as a Runtime without an exchange. A journal found rolled back turns the
    kill switch on first (pilot.app.human.kill_switch.stop_on_rollback), unless `react` is False (`pilot
    journal verify`, which reports what it finds and changes nothing).

    Raises:
        NoJournal: the home has no database; reading must not create one as a side effect.
    """
    paths = Home(home)
    if not paths.has_store():
        raise NoJournal(home)
    store = await open_store(
        paths.store(), home=home, clock=store_clock(clock) if clock is not None else None
    )
    try:
        # cast: _NoExchange stands in for every port method by raising (see its docstring)
        no_exchange = cast(Exchange, _NoExchange())
        runtime = assemble_runtime(home, store, no_exchange, clock or SystemClock(), environment="none")
        if react:
            await stop_on_rollback(runtime)
        yield runtime
    finally:
        await store.close()


@dataclass(frozen=True, slots=True)
class InitReport:
    """What `init_home` found and did."""

    home: Path
    policy_created: bool
    journal_created: bool
    policy: LoadedPolicy | tuple[PolicyIssue, ...]  # the policy.json now in the home, or why it is invalid
    store: str = "journal/pilot.db"  # where the journal is (a PostgreSQL URL is shown without a password)


async def init_home(
    home: Path, store: StoreLocation | None = None, exchange: str = "paper", *, policy_text: str | None = None
) -> InitReport:
    """Create policy.json (safe defaults) and the journal database; never overwrite an existing policy.

    The policy is `policy_text` when given (a live home's), else names its markets as the venue of `exchange`
    spells them (okx-demo: BTC-USDT). With `store`
    (a PostgreSQL database), the home's store is that database from now on (store.json): its schema is made
    if it has none, and a journal already there is this home's too (another host's).
    """
    home.mkdir(parents=True, exist_ok=True)
    paths = Home(home)
    policy_created = journal_created = False
    if not paths.policy_path.exists():
        with paths.policy_path.open("x", encoding="utf-8") as file:  # "x": lose a race rather than overwrite
            if policy_text is None:
                policy_text = (
                    DEFAULT_POLICY if exchange == "paper" else init_policy_text(spelled=spelling(exchange))
                )
            file.write(policy_text)
        policy_created = True
    location = store or paths.store()
    existed = location.url is None and paths.database_path.exists()
    opened = await open_store(location, home=home)
    try:
        empty = (await opened.journal.mark()).seq == 0
    finally:
        await opened.close()
    journal_created = empty if location.url is not None else not existed
    if store is not None:
        paths.record_store(store)
    return InitReport(
        home=home,
        policy_created=policy_created,
        journal_created=journal_created,
        store=str(location),
        policy=read_policy_file(paths.policy_path),
    )


@dataclass(frozen=True, slots=True)
class KillSwitchState:
    """The kill switch as the journal says: on or off, and the entry that put it there (who, why, since when).

    Switching it to the state it is already in changes nothing, so `at` is when it entered this state,
    however often it was asked again since.
    """

    on: bool
    by: str | None = None
    reason: str | None = None
    at: datetime | None = None
    seq: int | None = None


async def kill_switch_state(runtime: Runtime) -> KillSwitchState:
    newest_first = await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH, newest_first=True)
    if not newest_first:
        return KillSwitchState(on=False)
    on = bool(newest_first[0].data.get("on"))
    since = newest_first[0]
    for entry in newest_first[1:]:  # back to the entry that switched it into this state
        if bool(entry.data.get("on")) != on:
            break
        since = entry
    data = since.data
    return KillSwitchState(on=on, by=data.get("by"), reason=data.get("reason"), at=since.at, seq=since.seq)


class ReasonTooLong(HumanError):
    code = ErrorCode.REASON_TOO_LONG

    def __init__(self, length: int) -> None:
        super().__init__(
            f"the reason is {length} characters long, above the limit of {REASON_LIMIT}",
            f"say it in at most {REASON_LIMIT} characters",
        )


@dataclass(frozen=True, slots=True)
class KillSwitchChange:
    """The switch after a human's `on` or `off`, and whether that changed it (and wrote a journal entry)."""

    state: KillSwitchState
    changed: bool


async def set_kill_switch(
    runtime: Runtime, on: bool, reason: str = "", *, via: str | None = None
) -> KillSwitchChange:
    """Turn the kill switch on or off as the human (`via` "console" says where). Already so: nothing is
    journaled, and it keeps its time.

    Raises:
        ReasonTooLong: the reason is over REASON_LIMIT characters (it is never cut).
    """
    if len(reason) > REASON_LIMIT:
        raise ReasonTooLong(len(reason))
    before = await kill_switch_state(runtime)
    if before.on == on:
        return KillSwitchChange(before, changed=False)
    await set_kill_switch_by_human(runtime, on, reason, via)
    return KillSwitchChange(await kill_switch_state(runtime), changed=True)


_CHANNEL_OFF: dict[Via, ErrorCode] = {
    "cli": ErrorCode.CLI_CHANNEL_OFF,
    "console": ErrorCode.CONSOLE_CHANNEL_OFF,
    "telegram": ErrorCode.TELEGRAM_CHANNEL_OFF,
}


class ChannelOff(HumanError):
    """policy.json does not enable this confirmation channel (or is invalid, which closes it)."""

    code = ErrorCode.CLI_CHANNEL_OFF

    def __init__(self, policy_valid: bool = True, via: Via = "cli") -> None:
        name, switch = CHANNELS[via]
        self.code = _CHANNEL_OFF[via]
        if policy_valid:
            super().__init__(
                f"the {name} confirmation channel is off",
                f"set confirm.{switch} to true in policy.json to decide here",
            )
        else:
            super().__init__(
                f"policy.json is invalid, which closes the {name} confirmation channel",
                "fix it (`pilot policy check` lists each problem)",
            )


def require_channel(runtime: Runtime, via: Via) -> None:
    """Raise ChannelOff unless policy.json (read now, and valid) opens the channel `via` (confirm.cliChannel,
    confirm.consoleChannel, confirm.telegram)."""
    view = runtime.policy()
    if not view.policy.confirm.opens(via):
        raise ChannelOff(view.valid, via)


async def pending_confirmations(runtime: Runtime) -> list[ConfirmationRecord]:
    """Parked actions a human may still decide, oldest first. Reading them needs no channel: deciding does."""
    return await runtime.store.confirmations.list(status="pending", now=runtime.now())


async def find_confirmation(runtime: Runtime, confirmation_id: str) -> ConfirmationRecord:
    """The confirmation named by its id or any unique prefix of it (UnknownId, AmbiguousId otherwise)."""
    records = await runtime.store.confirmations.list(now=runtime.now())
    full = unique_match(confirmation_id, [record.confirmation_id for record in records], "confirmation")
    record = await runtime.store.confirmations.get(full, now=runtime.now())
    if record is None:  # pragma: no cover - it was listed a moment ago, and confirmations are never deleted
        raise UnknownId("confirmation", confirmation_id)
    return record


class UnknownId(HumanError):
    code = ErrorCode.UNKNOWN_ID

    def __init__(self, what: str, given: str) -> None:
        fix = {
            "plan": "list plans with `pilot journal --kind plan`",
            "confirmation": "list them with `pilot confirm list`",
        }.get(what, "check the id")
        super().__init__(f"no {what} {given!r} (nor one whose id starts with it)", fix)


class AmbiguousId(HumanError):
    code = ErrorCode.AMBIGUOUS_ID

    def __init__(self, what: str, given: str, matches: list[str]) -> None:
        shown = ", ".join(matches[:3]) + (", ..." if len(matches) > 3 else "")
        super().__init__(
            f"{len(matches)} {what}s start with {given!r} ({shown})", "give more of the id, or all of it"
        )


def unique_match(given: str, ids: list[str], what: str) -> str:
    """The id equal to `given`, else the one id that starts with it. Raises UnknownId or AmbiguousId."""
    if given in ids:
        return given
    matches = sorted({one for one in ids if given and one.startswith(given)})
    if not matches:
        raise UnknownId(what, given)
    if len(matches) > 1:
        raise AmbiguousId(what, given, matches)
    return matches[0]


async def resolve_plan_id(runtime: Runtime, given: str) -> str:
    """The plan id equal to `given`, or the one plan id in the journal that starts with it."""
    journal = runtime.store.journal
    if await journal.entries(plan_id=given, kind=entry_kinds.PLAN, limit=1):
        return given
    plans = await journal.entries(kind=entry_kinds.PLAN)
    return unique_match(given, [entry.plan_id for entry in plans if entry.plan_id], "plan")


@dataclass(frozen=True, slots=True)
class Decision:
    """The result of `decide`: the record as decided (None if it was not decidable) and the journal seq."""

    record: ConfirmationRecord | None
    seq: int | None = None


async def decide(
    runtime: Runtime, confirmation_id: str, *, approve: bool, via: Via = "cli", approver: str | None = None
) -> Decision:
    """Approve or reject a pending confirmation (by its full id) as the human on the channel `via` (the CLI,
    the console, Telegram), and journal it with that channel and, where the channel names one, the approver.

    The running server carries out an approved action itself, re-checked when it runs.
    """
    require_channel(runtime, via)
    record = await runtime.store.confirmations.decide(
        confirmation_id, approve=approve, actor=f"human:{via}", now=runtime.now()
    )
    if record is None:
        return Decision(record=None)
    decided: dict[str, Any] = {
        "event": "decided",
        "approved": approve,
        "confirmation_id": confirmation_id,
        "tool": record.tool,
    }
    if via != "cli":
        decided["via"] = via
    if approver is not None:
        decided["approver"] = approver
    entry = await runtime.store.journal.append(
        entry_kinds.CONFIRMATION,
        decided,
        now=runtime.now(),
        actor="human",
        plan_id=record.action.get("plan_id") or None,
    )
    return Decision(record=record, seq=entry.seq)


async def receipt_cards(
    runtime: Runtime, *, card: str | None = None, last: int = 1
) -> list[receipts.ReceiptCard]:
    """The receipt card named by `card` (a plan id or a unique prefix of one, or "seq-N" for a refused
    plan), else the last `last`: the cards whose latest entry is newest (an order approved, filled or
    resolved after later plans is among the last), oldest first by that entry.

    Raises:
        UnknownId, AmbiguousId: `card` names no plan, or more than one.
    """
    journal = runtime.store.journal
    home = await home_card(journal)
    if card is not None:
        plan = await _plan_entry(runtime, card)
        entries = await journal.entries(plan_id=plan.plan_id) if plan.plan_id else [plan]
        return [receipts.receipt_card(entries, home)]
    read = max(last * 8, 64)  # the newest entries looked through; more when they hold fewer cards
    while True:
        recent = await journal.entries(limit=read, newest_first=True)
        cards = await _cards_in(journal, recent, last, home)
        if len(cards) == last or len(recent) < read:
            return sorted(cards, key=lambda one: one.seal.seq)
        read *= 4


async def home_card(journal: Journal) -> receipts.CardHome:
    """Whether the home is live or practice, as its journal's first entry says (pilot.app.human.going_live)."""
    first = await journal.entries(limit=1)
    return receipts.home_of(first[0] if first else None)


async def _cards_in(
    journal: Journal, recent: list[JournalEntry], last: int, home: receipts.CardHome
) -> list[receipts.ReceiptCard]:
    """Up to `last` cards of the plans `recent` (newest first) names, in the order it names them."""
    cards: list[receipts.ReceiptCard] = []
    seen: set[str] = set()
    for entry in recent:
        key = entry.plan_id or (receipts.card_id(entry) if entry.kind == entry_kinds.PLAN else None)
        if key is None or key in seen:
            continue
        seen.add(key)
        entries = await journal.entries(plan_id=entry.plan_id) if entry.plan_id else [entry]
        if any(one.kind == entry_kinds.PLAN for one in entries):  # a plan id's entries without the plan: none
            cards.append(receipts.receipt_card(entries, home))
            if len(cards) == last:
                break
    return cards


async def _plan_entry(runtime: Runtime, card: str) -> JournalEntry:
    journal = runtime.store.journal
    seq_text = card.removeprefix("seq-")
    if card.startswith("seq-") and seq_text.isdigit():
        entry = await journal.get(int(seq_text))
        if entry is None or entry.kind != entry_kinds.PLAN:
            raise UnknownId("plan", card)
        return entry
    plan_id = await resolve_plan_id(runtime, card)
    found = await journal.entries(plan_id=plan_id, kind=entry_kinds.PLAN, limit=1)
    return found[0]


# --- bearer tokens for `pilot serve --transport http` ------------------------------------------------------

TOKEN_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


class TokenExists(HumanError):
    code = ErrorCode.TOKEN_EXISTS

    def __init__(self, name: str) -> None:
        super().__init__(
            f"a token named {name!r} exists: revoke it first",
            f"run `pilot token revoke {name}`, then issue it again (or choose another name)",
        )


class NoSuchToken(HumanError):
    code = ErrorCode.NO_SUCH_TOKEN

    def __init__(self, name: str) -> None:
        super().__init__(f"no token named {name!r}", "list the names with `pilot token list`")


class BadTokenName(HumanError):
    code = ErrorCode.BAD_TOKEN_NAME

    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name[:80]!r} is not a token name",
            "use 1 to 64 letters, digits, '_', '.' or '-', e.g. inspector",
        )


async def issue_token(runtime: Runtime, name: str) -> str:
    """A new bearer token for `name`, shown this once (only its hash is stored). TokenExists if taken."""
    if not TOKEN_NAME.fullmatch(name):
        raise BadTokenName(name)
    try:
        return await runtime.store.tokens.issue(name, now=runtime.now())
    except DuplicateRecord:
        raise TokenExists(name) from None


async def list_tokens(runtime: Runtime) -> list[tuple[str, datetime]]:
    """(name, issued at) of every token, by name; never the tokens."""
    return await runtime.store.tokens.list()


async def revoke_token(runtime: Runtime, name: str) -> None:
    """Revoke `name`'s token at once (the next request with it is refused). NoSuchToken if there is none."""
    if not await runtime.store.tokens.revoke(name):
        raise NoSuchToken(name)


# --- editing policy.json from the console ------------------------------------------------------------------


class PolicyChangedMeanwhile(HumanError):
    code = ErrorCode.POLICY_CHANGED_MEANWHILE

    def __init__(self) -> None:
        super().__init__(
            "policy.json changed since this draft was started; nothing was written",
            "start again from the file as it is now, and review the difference again",
        )


@dataclass(frozen=True, slots=True)
class PolicyWrite:
    """policy.json as a human rewrote it: the versions before and after, and the journal entry."""

    from_version: str | None
    to_version: str
    seq: int


def policy_text(runtime: Runtime) -> str:
    """policy.json's text as it is now ("" if it cannot be read as UTF-8 text)."""
    try:
        return runtime.home.policy_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def write_policy(runtime: Runtime, draft: str, *, base_digest: str, via: str) -> PolicyWrite:
    """Replace policy.json with `draft` as the human (`via` says where), if the file is still the one the
    draft was made from (`base_digest` of its text) and the draft is a valid policy; journal the change.

    Raises:
        PolicyInvalid: the draft is not a valid policy (each problem with its fix); nothing is written.
        PolicyChangedMeanwhile: the file is no longer the one the draft started from; nothing is written.
    """
    loaded = parse_policy(draft)
    if text_digest(policy_text(runtime)) != base_digest:
        raise PolicyChangedMeanwhile()
    before = runtime.policy()
    path = runtime.home.policy_path.resolve()  # a policy.json linked in from elsewhere stays a link
    partial = path.with_name(path.name + ".draft")
    partial.write_text(draft, encoding="utf-8")
    os.replace(partial, path)
    entry = await runtime.store.journal.append(
        entry_kinds.POLICY_CHANGED,
        {
            "by": "human",
            "via": via,
            "from_version": before.version if before.valid else None,
            "to_version": loaded.version,
        },
        now=runtime.now(),
        actor="human",
    )
    return PolicyWrite(
        from_version=before.version if before.valid else None, to_version=loaded.version, seq=entry.seq
    )
