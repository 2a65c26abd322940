"""A case's world, set up for one run: the paper exchange on the case's scenario, another client's resting
orders, a home with the case's policy, Pilot's runtime and server over it, and an MCP client whose human
answers forms as the case says. Then the end state, read from the exchange and the journal.

Each run gets its own paper exchange (it stands still: speed 0, no ticker) and its own home, so a run never
sees what an earlier one left. Pilot runs in this process (`build_server` over `open_runtime` attached to the
exchange, REST only), reached through a real MCP session in memory.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from pilot.app.human.desk import DEFAULT_POLICY
from pilot.app.human.kill_switch import set_kill_switch_by_human
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import open_runtime
from pilot.core.policy import Policy, parse_policy
from pilot.evals.case_book import Case, World
from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.scenario import scenario_document
from pilot.server import build_server

CREATE = "/v5/order/create"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the account holds at one moment, as the end-state checks read it."""

    positions: dict[str, Decimal]  # linear symbol -> signed size
    marks: dict[str, Decimal]
    stops: dict[str, Decimal]  # the position's whole stop-loss, 0 for none
    targets: dict[str, Decimal]  # the position's whole take-profit, 0 for none
    leverage: dict[str, Decimal]
    open_links: dict[str, tuple[Decimal, Decimal]]  # client order id of each order resting -> price, qty
    open_counts: dict[str, int]  # symbol -> orders resting on it
    creates: int  # create requests the exchange received (another client's seeds are not requests)
    kill_switch: bool
    forms: int  # confirmation forms the human at the client was shown so far


class HumanAtClient:
    """The human at the MCP client: approves or declines every form, or is not there (no form capability)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.forms = 0

    @property
    def shows_forms(self) -> bool:
        return self.answer != "absent"

    async def decide(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.forms += 1
        if self.answer == "approve":
            return ElicitResult(action="accept", content={"approve": True})
        return ElicitResult(action="decline")


@dataclass
class Stage:
    """One run's world, running: the exchange, Pilot, the MCP client and the human at it."""

    case: Case
    paper: PaperExchange
    runtime: Runtime
    client: Client
    human: HumanAtClient
    policy: Policy
    start: Snapshot = field(init=False)

    async def snapshot(self) -> Snapshot:
        paper, symbols = self.paper, linear_symbols(self.paper)
        positions = {symbol: paper.position(symbol) for symbol in symbols}
        resting = paper.open_orders()
        return Snapshot(
            positions={symbol: p.size for symbol, p in positions.items()},
            marks={symbol: paper.quote(symbol).mark for symbol in symbols},
            stops={symbol: p.stop_loss for symbol, p in positions.items()},
            targets={symbol: p.take_profit for symbol, p in positions.items()},
            leverage={symbol: p.leverage for symbol, p in positions.items()},
            open_links={o.order_link_id: (o.price, o.qty) for o in resting if o.order_link_id},
            open_counts=dict(Counter(o.symbol for o in resting)),
            creates=paper.request_count(CREATE),
            kill_switch=await self.runtime.kill_switch_on(),
            forms=self.human.forms,
        )


@contextlib.asynccontextmanager
async def open_stage(case: Case, workdir: Path | None = None) -> AsyncIterator[Stage]:
    """Set up `case`'s world in a new home under `workdir` (a temporary folder when None); tear it down."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"pilot-eval-{case.spec.id}-", dir=workdir) as folder:
        home = Path(folder)
        world = case.spec.world
        (home / "policy.json").write_text(policy_text(world), encoding="utf-8")
        scenario = home / "scenario.json"
        scenario.write_text(json.dumps(scenario_of(world), indent=1), encoding="utf-8")
        with start_paper_exchange(scenario, ticker_ms=0) as paper:
            leave_resting_orders(paper, world)
            async with open_runtime(home, paper_url=paper.url, scenario=scenario, streams=False) as runtime:
                if world.kill_switch:
                    await set_kill_switch_by_human(runtime, True, "set by the eval's world")
                human = HumanAtClient(world.human)
                callback = human.decide if human.shows_forms else None
                async with Client(build_server(runtime), elicitation_callback=callback) as client:
                    stage = Stage(case, paper, runtime, client, human, runtime.policy().policy)
                    stage.start = await stage.snapshot()
                    yield stage


def policy_text(world: World) -> str:
    """`pilot init`'s policy with the world's keys in place of its own."""
    policy: dict[str, Any] = json.loads(DEFAULT_POLICY) | dict(world.policy)
    text = json.dumps(policy, indent=2)
    parse_policy(text)  # a case whose policy Pilot would refuse is a broken case, not a fail-closed world
    return text


def scenario_of(world: World) -> dict[str, Any]:
    """The packaged scenario with the world's prices, positions and balances, standing still (speed 0)."""
    scenario = scenario_document(world.base)
    scenario["prices"] = scenario["prices"] | world.prices
    scenario["positions"] = [holding.model_dump(exclude_none=True) for holding in world.positions]
    scenario["balances"] = scenario["balances"] | world.balances
    scenario["speed"] = "0"
    scenario["rateLimits"] = False  # a model's pace is not what a case measures
    return scenario


def leave_resting_orders(paper: PaperExchange, world: World) -> None:
    for order in world.resting:
        paper.leave_resting_order(
            order.category, order.symbol, order.side, order.qty, order.price, order.link, order.reduce_only
        )


def linear_symbols(paper: PaperExchange) -> tuple[str, ...]:
    return tuple(i.symbol for i in paper.scenario.instruments if i.category == "linear")
