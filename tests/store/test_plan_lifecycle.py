"""The plan lifecycle as a state machine: create -> claim -> record outcome -> claim again -> expire, while
the wall clock steps either way (a plan lives its time to live of real time, on the store's clock)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from pilot.store import InvalidTransition, new_plan_id, open_store
from tests.clocks import FakeClock

from .support import T0


@dataclass
class ModelPlan:
    expires_at: datetime  # by the wall clock it was made on: what the plan says, not what decides
    ends: float  # seconds of real time since the start at which its life ends
    status: str = "open"
    outcome: dict[str, Any] | None = None
    wins: int = 0


def expected_claim(plan: ModelPlan, elapsed: float) -> str:
    if plan.status != "open":
        return "already_used"
    return "claimed" if elapsed < plan.ends else "expired"


class PlanLifecycle(RuleBasedStateMachine):
    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.TemporaryDirectory()
        self.db_path = Path(self.folder.name) / "journal" / "pilot.db"
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock(T0)
        self.store = self.run(open_store(self.db_path, clock=self.clock))
        self.elapsed = 0.0  # real time since the start
        self.model: dict[str, ModelPlan] = {}

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    @rule(target=plans, ttl_seconds=st.integers(1, 120))
    def create(self, ttl_seconds: int) -> str:
        plan_id = new_plan_id()
        self.run(self.store.plans.create(plan_id=plan_id, payload={}, now=self.now, ttl_seconds=ttl_seconds))
        self.model[plan_id] = ModelPlan(self.now + timedelta(seconds=ttl_seconds), self.elapsed + ttl_seconds)
        return plan_id

    @rule(plan_id=plans)
    def claim(self, plan_id: str) -> None:
        plan = self.model[plan_id]
        expected = expected_claim(plan, self.elapsed)
        result = self.run(self.store.plans.claim(plan_id, now=self.now))
        assert result.status == expected
        event(f"claim: {expected}, outcome recorded: {plan.outcome is not None}")
        assert result.plan.outcome == plan.outcome
        if expected == "claimed":
            plan.status, plan.wins = "claimed", plan.wins + 1

    @rule(plan_id=plans, result=st.sampled_from(["filled", "rejected", "unknown"]))
    def record_outcome(self, plan_id: str, result: str) -> None:
        plan = self.model[plan_id]
        outcome = {"result": result}
        if plan.status == "open":
            with pytest.raises(InvalidTransition):
                self.run(self.store.plans.record_outcome(plan_id, outcome, now=self.now))
            return
        self.run(self.store.plans.record_outcome(plan_id, outcome, now=self.now))
        plan.status, plan.outcome = "done", outcome

    @rule()
    def claim_an_unknown_plan(self) -> None:
        assert self.run(self.store.plans.claim(new_plan_id(), now=self.now)).status == "not_found"

    @rule(seconds=st.integers(0, 90))
    def advance_clock(self, seconds: int) -> None:
        self.clock.advance(seconds)
        self.elapsed += seconds

    @rule(seconds=st.sampled_from([-3600, -61, -5, 5, 61, 3600]))
    def step_the_wall_clock(self, seconds: int) -> None:
        self.clock.step(seconds)

    @rule()
    def restart(self) -> None:
        self.run(self.store.close())
        self.store = self.run(open_store(self.db_path, clock=self.clock))

    @invariant()
    def stored_plans_match_the_model(self) -> None:
        for plan_id, plan in self.model.items():
            stored = self.run(self.store.plans.get(plan_id))
            assert (stored.status, stored.outcome, stored.expires_at) == (
                plan.status,
                plan.outcome,
                plan.expires_at,
            )
            assert plan.wins <= 1

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        self.folder.cleanup()


# Each example opens a fresh database file (with fsyncs), so the profile's example count would be slow;
# 100 runs of 20 steps reach every claim status, with and without a recorded outcome.
PlanLifecycle.TestCase.settings = settings(max_examples=100, stateful_step_count=20, deadline=None)
test_plan_lifecycle = PlanLifecycle.TestCase
