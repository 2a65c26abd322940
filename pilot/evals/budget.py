"""The run's budget: tokens, and dollars where the model's prices are given. A model call is admitted only
when what it may cost still fits, so the run stops before it spends past the budget, not after.

What a call may cost is estimated before it is made: its request's text at three characters a token (most
tokenizers give fewer tokens than that for JSON and English) plus the most it may write. What it did cost is
what the provider reports afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal

from pilot.evals.conversation import ModelRequest, Usage

CHARS_PER_TOKEN = 3
MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Prices:
    """US dollars per million input and output tokens."""

    input_per_million: Decimal
    output_per_million: Decimal

    def cost(self, usage: Usage) -> Decimal:
        return (
            usage.input_tokens * self.input_per_million + usage.output_tokens * self.output_per_million
        ) / MILLION


class BudgetSpent(Exception):
    """The next model call might cost more than the budget has left."""


@dataclass
class Budget:
    """At most `max_tokens` tokens and, with `prices`, at most `max_usd` dollars over the whole run."""

    max_tokens: int | None = None
    max_usd: Decimal | None = None
    prices: Prices | None = None
    used: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        if self.max_usd is not None and self.prices is None:
            raise ValueError("a dollar budget needs the model's prices per million input and output tokens")

    @property
    def cost_usd(self) -> Decimal | None:
        return self.prices.cost(self.used) if self.prices is not None else None

    def admit(self, request: ModelRequest) -> None:
        """Raise BudgetSpent if `request` might take the run past its budget."""
        worst = self.used + Usage(estimate_tokens(request), request.max_output_tokens)
        if self.max_tokens is not None and worst.total > self.max_tokens:
            raise BudgetSpent(f"the next call might pass the budget of {self.max_tokens} tokens")
        if self.max_usd is not None and self.prices is not None and self.prices.cost(worst) > self.max_usd:
            raise BudgetSpent(f"the next call might pass the budget of ${self.max_usd}")

    def charge(self, usage: Usage) -> None:
        self.used = self.used + usage


def estimate_tokens(request: ModelRequest) -> int:
    """An over-estimate of the request's input tokens, from the length of its text."""
    tools = json.dumps([[t.name, t.description, t.schema] for t in request.tools])
    parts = [request.system, tools, *(repr(message) for message in request.messages)]
    return sum(len(part) for part in parts) // CHARS_PER_TOKEN + 1
