"""Going live: a home that trades real money (Bybit's mainnet, or OKX's real account), and the human's
opt-in that lets it.

A home is practice or live from its first journal entry: `pilot init --live` writes a `home` entry saying
live, and naming the one real-money environment it trades (`bybit` or `okx`), into an empty journal; a home
whose first entry is anything else is practice for good, and a live home trades the environment its first
entry names and nothing else. Live trading is off until a human turns it on at a
terminal by typing the phrase the prompt shows (`pilot live on`, the CLI checks the terminal); that is
journaled as the human's act. Turning it off is open to anyone: `pilot live off`, and any kill switch entry
(the agent's, the console's, the dead-man's) ends the opt-in too (pilot.app.runtime.ledger.JournalState
.live_on), so a human types the phrase again before growing orders go out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pilot.app.answers import entry_kinds
from pilot.app.answers.receipts import LIVE_HOME, PRACTICE_HOME
from pilot.app.human.desk import HumanError, home_card
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.app.runtime.runtime import LIVE_ENVIRONMENT, Runtime, is_live
from pilot.core.errors import ErrorCode
from pilot.core.policy.live_limits import missing_for_live
from pilot.keys.errors import keys_command
from pilot.store import Journal

LIVE, PRACTICE = LIVE_HOME, PRACTICE_HOME


class LiveRefused(HumanError):
    """Live trading cannot be turned on (or a live home cannot start) as asked: the code says why."""

    def __init__(self, code: ErrorCode, problem: str, fix: str) -> None:
        super().__init__(problem, fix)
        self.code = code


@dataclass(frozen=True, slots=True)
class LiveState:
    """A home's kind and, for a live one, whether a human's opt-in stands, with the entry that decided it."""

    kind: str  # LIVE or PRACTICE
    on: bool
    by: str | None = None
    at: datetime | None = None
    reason: str | None = None


async def home_kind(journal: Journal) -> str:
    """LIVE when the journal's first entry is a live `home` entry, else PRACTICE."""
    return (await home_card(journal)).kind


async def live_environment(journal: Journal) -> str | None:
    """The real-money environment a live home trades (its first entry's), None for a practice home."""
    card = await home_card(journal)
    return (card.environment or LIVE_ENVIRONMENT) if card.kind == LIVE else None


def live_policy(environment: str) -> str:
    """The conservative policy.json `pilot init --live` writes for a live home of `environment`, its markets
    as that venue spells them."""
    from pilot.core.policy.live_limits import live_policy_text
    from pilot.exchange.adapters import spelling

    return live_policy_text(spelling(environment))


def example_host(environment: str) -> str:
    """The first host a live environment's key may name (the global site's), for a next step's example."""
    from pilot.exchange.adapters import live_hosts

    return live_hosts(environment)[0]


def only_its_venue(environment: str) -> ErrorCode:
    """The code a live home of `environment` refuses any other with: it names the one it trades."""
    return ErrorCode.LIVE_HOME_ONLY_OKX if environment == "okx" else ErrorCode.LIVE_HOME_ONLY_BYBIT


async def live_state(runtime: Runtime) -> LiveState:
    """The home's kind and its opt-in as the journal says now."""
    kind = await home_kind(runtime.store.journal)
    if kind != LIVE:
        return LiveState(PRACTICE, on=False)
    journal = await runtime.journal_state()
    entry = journal.live
    if journal.live_on and entry is not None:
        return LiveState(LIVE, on=True, by=entry.data.get("by"), at=entry.at)
    switch = journal.kill_switch
    ended = switch if switch is not None and (entry is None or switch.seq > entry.seq) else entry
    if ended is None:
        return LiveState(LIVE, on=False)
    return LiveState(LIVE, False, ended.data.get("by"), ended.at, ended.data.get("reason"))


async def make_live(runtime: Runtime, environment: str = LIVE_ENVIRONMENT) -> None:
    """Make a home with an empty journal a live home of `environment` (bybit or okx; its first entry). A
    journal with entries is refused: its home is practice for good, or live for the environment it names."""
    if not is_live(environment):
        raise ValueError(f"{environment} is not a real-money environment")
    journal = runtime.store.journal
    if (await journal.mark()).seq != 0:
        trades = await live_environment(journal)
        if trades == environment:
            return
        if trades is not None:
            raise LiveRefused(
                only_its_venue(trades),
                f"{runtime.home.path} is a live home of {trades}; a live home trades one venue for good",
                f"make a live home for {environment} in a new folder: `{live_home_command(environment)}`",
            )
        raise practice_home(runtime, environment)
    await journal.append(
        entry_kinds.HOME,
        {"kind": LIVE, "environment": environment},
        now=runtime.now(),
        actor="human",
    )


def journal_gone(home: Path, environment: str) -> LiveRefused | None:
    """The refusal of a live home made in a folder whose earlier home's journal was anchored (pilot.store.anchor)
    and is gone: its new journal would open as a rolled-back one, its first entry the kill switch Pilot turns
    on for that, a practice home for good. None where no journal was anchored here."""
    from pilot.keys.seal import journal_key_path
    from pilot.store.anchor import AnchorFile, anchor_path

    anchored = AnchorFile(anchor_path(journal_key_path(), home), home).read()
    if anchored is None:
        return None
    return LiveRefused(
        ErrorCode.JOURNAL_GONE,
        f"a home in {home} kept a journal up to entry {anchored.seq}, and that journal is gone; a new one here "
        "would open as a journal rolled back",
        f"make the live home in a new folder: `{live_home_command(environment)}`",
    )


async def refuse_unless_new_or_live(runtime: Runtime, environment: str, *, policy_existed: bool) -> None:
    """Before `pilot init --live` writes anything: a home is made live only in a new folder, or is already a
    live home of `environment` (nothing to do). A journal with entries is refused as make_live refuses it; an
    empty one beside a policy.json that was there before is a practice home made by `pilot init` (its
    policy kept, it would trade real money on practice limits), and is refused too."""
    if (await runtime.store.journal.mark()).seq != 0:
        await make_live(runtime, environment)  # this venue's live home: returns; anything else: refused
    elif policy_existed:
        raise practice_home(runtime, environment)


def phrase(runtime: Runtime) -> str:
    """What the human types to turn live trading on: it names real money and this home."""
    return f"trade real money from {runtime.home.path.resolve().name}"


async def turn_live_on(runtime: Runtime, typed: str, *, at_terminal: bool) -> LiveState:
    """Turn live trading on, as the human who typed `typed` at a terminal; journaled as theirs.

    Raises:
        LiveRefused: not at a terminal, a practice home, the kill switch on, limits missing, or a phrase
            other than `phrase(runtime)`.
    """
    if not at_terminal:
        raise LiveRefused(
            ErrorCode.NOT_A_TERMINAL,
            "live trading is turned on by a human typing at a terminal; standard input is not one",
            "run `pilot live on` yourself in a terminal window (no pipe, script or agent can)",
        )
    await ready_for_live(runtime)
    if " ".join(typed.split()) != phrase(runtime):
        raise LiveRefused(
            ErrorCode.LIVE_PHRASE_MISMATCH,
            "what was typed is not the phrase the prompt asked for; live trading stays off",
            f"run `pilot live on` again and type exactly: {phrase(runtime)}",
        )
    await runtime.store.journal.append(
        entry_kinds.LIVE, {"on": True, "by": "human", "via": "terminal"}, now=runtime.now(), actor="human"
    )
    return await live_state(runtime)


async def ready_for_live(runtime: Runtime) -> None:
    if await home_kind(runtime.store.journal) != LIVE:
        raise practice_home(runtime)
    if await runtime.kill_switch_on():
        raise LiveRefused(
            ErrorCode.KILL_SWITCH_ON,
            "the kill switch is on",
            "look at why (`pilot kill-switch status`), turn it off with `pilot kill-switch off`, then "
            "`pilot live on`",
        )
    require_live_limits(runtime)


def require_live_limits(runtime: Runtime) -> None:
    """Raise LiveRefused naming every limit a live home needs that policy.json (valid) does not set."""
    view = runtime.policy()
    if not view.valid:
        raise LiveRefused(
            ErrorCode.LIVE_LIMITS_MISSING,
            "policy.json is invalid",
            "fix it (`pilot policy check` names each problem)",
        )
    missing = missing_for_live(view.policy)
    if missing:
        raise LiveRefused(
            ErrorCode.LIVE_LIMITS_MISSING,
            f"a live home needs limits policy.json does not set: {'; '.join(missing)}",
            "set them in policy.json (`pilot init --live` in a new folder writes a conservative policy to "
            "copy from; docs/going-live.md)",
        )


async def turn_live_off(runtime: Runtime, by: str, reason: str = "") -> LiveState:
    """Turn live trading off (anyone may): journaled with who and why; the kill switch goes on with it,
    so growing orders stop in every process of the home at once. A practice home has no live trading to
    turn off: refused (LiveRefused practice_home), nothing changed."""
    from pilot.app.human.kill_switch import set_kill_switch_by_human

    await require_live_home(runtime)
    if by == "human" and not await runtime.kill_switch_on():
        await set_kill_switch_by_human(runtime, True, reason or "live trading turned off")
    await runtime.store.journal.append(
        entry_kinds.LIVE,
        {"on": False, "by": by, "reason": reason[:REASON_LIMIT]},
        now=runtime.now(),
        actor=by,
    )
    return await live_state(runtime)


async def require_live_home(runtime: Runtime, environment: str | None = None) -> None:
    """Refuse a practice home, or (`environment` named) a live home of another venue: a real-money key
    stored there could never be used (it never starts on `environment`), and checking it would ask the
    venue for nothing. With no `environment`, a live home of either venue passes (`pilot live off`)."""
    trades = await live_environment(runtime.store.journal)
    if trades is None:
        raise practice_home(runtime, environment)
    refusal = venue_refusal(runtime.home.path, trades, environment) if environment is not None else None
    if refusal is not None:
        raise refusal


async def require_its_venue(runtime: Runtime, environment: str) -> None:
    """Refuse a key for `environment` where it is never used, before anyone types it: a real-money one in a
    practice home, any other than the home's own in a live home (a practice one in a practice home passes)."""
    refusal = venue_refusal(runtime.home.path, await live_environment(runtime.store.journal), environment)
    if refusal is not None:
        raise refusal


def venue_refusal(home: Path, trades: str | None, environment: str) -> LiveRefused | None:
    """Why a home that trades `trades` (None: a practice home) never uses `environment`, or None."""
    if trades is None:
        return practice_home(home, environment) if is_live(environment) else None
    if trades == environment:
        return None
    elsewhere = (
        f"make a live home for {environment} in a new folder (`{live_home_command(environment)}`)"
        if is_live(environment)
        else f"keep {environment} in a practice home (`{practice_home_command(environment)}`)"
    )
    return LiveRefused(
        only_its_venue(trades),
        f"{home} is a live home of {trades}: a key for {environment} is never used there",
        f"store a key for {trades} here (`{keys_command('add', trades)}`), or {elsewhere}",
    )


def live_home_command(environment: str | None = None) -> str:
    """`pilot init --live` for a live home of `environment` (bybit unless okx is named) in a new folder."""
    venue = (
        f" --exchange {environment}" if environment is not None and environment != LIVE_ENVIRONMENT else ""
    )
    return f"pilot init --live{venue} --home NEW_FOLDER"


def practice_home_command(environment: str) -> str:
    """`pilot init` for a practice home of `environment`, its policy spelled for that venue."""
    venue = "" if environment == "paper" else f" --exchange {environment}"
    return f"pilot init{venue} --home NEW_FOLDER"


def practice_home(where: Runtime | Path, environment: str | None = None) -> LiveRefused:
    """The refusal of a practice home asked for real money (`environment`, when it names one)."""
    home = where.home.path if isinstance(where, Runtime) else where
    live = environment if environment is not None and is_live(environment) else None
    return LiveRefused(
        ErrorCode.PRACTICE_HOME,
        f"{home} is a practice home (its journal did not begin live); a home is practice or live for good",
        f"make a live home in a new folder: `{live_home_command(live)}`",
    )
