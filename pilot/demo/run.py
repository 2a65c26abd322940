"""Running the demo: start the demo's paper exchange, and `pilot serve` attached to it in a temporary home as an
MCP host would; play the story, read the receipts.

The first step that does not behave as shown ends the run, with the reason; a server that stops answering
fails the step it was in. Each step has its own time limit, so a stuck server cannot hang the demo. The
server reads every fact over REST (`--no-streams`): the market moves only when the story moves it, and each
answer then follows the exchange's state at once, with no stream delivery in between to wait for.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters

from pilot.app.answers import entry_kinds
from pilot.app.answers.receipts import ReceiptCard
from pilot.app.human.desk import init_home, open_desk, receipt_cards
from pilot.demo.agent import Agent, Call, Human, StepFailed
from pilot.demo.paper_market import open_market
from pilot.demo.story import EXPECTED_CARDS, RECEIPTS, STORY, Story, demo_policy
from pilot.store import ChainReport

STEP_TIMEOUT_SECONDS = 30


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the transcript: its calls and narration in order, what it proves, and any failure."""

    number: int
    title: str
    proves: str
    entries: tuple[Call | str, ...] = ()
    cards: tuple[ReceiptCard, ...] = ()
    chain: ChainReport | None = None
    failure: str | None = None


@dataclass(frozen=True, slots=True)
class DemoRun:
    """The whole run: the policy it used, its steps, when it started and how long it took."""

    policy: dict[str, Any]
    steps: tuple[Step, ...]
    started_at: datetime
    seconds: float
    home: Path

    @property
    def ok(self) -> bool:
        return len(self.steps) == len(STORY) + 1 and all(step.failure is None for step in self.steps)

    @property
    def failed(self) -> Step | None:
        return next((step for step in self.steps if step.failure is not None), None)


async def run_demo(home: Path, policy: dict[str, Any] | None = None) -> DemoRun:
    """Play the story against `pilot serve --home <home>` (an empty folder) and check every answer.

    `policy` replaces the demo policy (tests use it to see a step fail); the story expects `demo_policy()`.
    """
    started_at, started = datetime.now(UTC), time.monotonic()
    policy = policy or demo_policy()
    home.mkdir(parents=True, exist_ok=True)
    (home / "policy.json").write_text(json.dumps(policy, indent=2) + "\n", encoding="utf-8")
    await init_home(home)  # keeps the demo policy, creates the journal
    steps = await _play_story(home)
    if all(step.failure is None for step in steps):
        steps.append(await _receipts(home))
    return DemoRun(policy, tuple(steps), started_at, time.monotonic() - started, home)


async def _play_story(home: Path) -> list[Step]:
    """Start the market and `pilot serve` on it as an MCP host would; play each step until one differs."""
    human, steps = Human(), list[Step]()
    try:
        with open_market() as market, anyio.fail_after(STEP_TIMEOUT_SECONDS * (len(STORY) + 1)):
            serve = ["serve", "--home", str(home), "--quiet", "--paper-url", market.url, "--no-streams"]
            server = StdioServerParameters(
                command=sys.executable, args=["-m", "pilot", *serve], cwd=str(home)
            )
            async with Client(server, elicitation_callback=human.answer) as client:
                await _play_steps(Story(Agent(client, human), market), steps)
    except* (MCPError, OSError, TimeoutError) as lost:
        if all(step.failure is None for step in steps):  # else the failed step already says why
            cause = _innermost(lost)
            failure = (
                f"pilot serve stopped answering ({type(cause).__name__}: {cause}); its errors are on stderr"
            )
            steps.append(_unplayed(len(steps) + 1, failure))
    return steps


async def _play_steps(story: Story, steps: list[Step]) -> None:
    for number, (title, proves, play) in enumerate(STORY, start=1):
        failure = None
        try:
            with anyio.fail_after(STEP_TIMEOUT_SECONDS):
                await play(story)
        except StepFailed as failed:
            failure = str(failed)
        except TimeoutError:
            failure = f"no answer within {STEP_TIMEOUT_SECONDS} s"
        steps.append(Step(number, title, proves, story.agent.take(), failure=failure))
        if failure is not None:
            return


def _innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _read_after_planned(card: ReceiptCard) -> bool:
    """Whether the card says its plan was judged on market data from after the plan (the demo moves the
    paper market's clock half an hour ahead of Pilot's: a fact is stamped no later than Pilot read it)."""
    read = card.facts.market_data_at if card.facts is not None else None
    return read is not None and datetime.fromisoformat(read) > datetime.fromisoformat(card.planned_at)


def _unplayed(number: int, failure: str) -> Step:
    title, proves, _play = STORY[min(number, len(STORY)) - 1]
    return Step(number, title, proves, failure=failure)


async def _receipts(home: Path) -> Step:
    """What `pilot journal --card --last N` and `pilot journal verify` show for the run, read after the server stopped."""
    async with open_desk(home) as runtime:
        plans = await runtime.store.journal.entries(kind=entry_kinds.PLAN)
        cards = await receipt_cards(runtime, last=max(len(plans), 1))
        chain = await runtime.store.journal.verify()
    statuses = tuple(card.status for card in cards)
    failure = None
    if statuses != EXPECTED_CARDS:
        failure = f"expected receipt cards {', '.join(EXPECTED_CARDS)}, got {', '.join(statuses)}"
    elif any(card.sent is not None for card in cards if card.status == "refused"):
        failure = "a refused plan's receipt shows an order sent"
    elif late := [card.card for card in cards if _read_after_planned(card)]:
        failure = f"receipts {', '.join(late)} show market data stamped after their plan"
    elif not chain.ok:
        failure = f"the journal does not verify: {chain.reason} at seq {chain.first_broken_seq}"
    title, proves = RECEIPTS
    return Step(len(STORY) + 1, title, proves, cards=tuple(cards), chain=chain, failure=failure)
