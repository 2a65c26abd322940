"""An agent's budget inside the account's (policy.json `agents.NAME`): every field optional, each one a
limit of the account's narrowed for that agent alone, or a count of the agent's own (its orders today, its
turnover). An agent's role (read, reduce, trade) is its credential's (`pilot agent add --role`), not the
file's: policy.json says how much, the credential says what kind."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from pilot.core.policy.about import About
from pilot.core.policy.parts import BILLION, SYMBOL_PATTERN, Frozen, quoted

AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


class AgentMarket(Frozen):
    """An agent's caps in one market, tighter than its own top-level ones there."""

    max_notional_usd: Annotated[Decimal | None, About("50")] = Field(
        default=None, alias="maxNotionalUsd", gt=0, le=BILLION
    )
    max_order_notional_usd: Annotated[Decimal | None, About("25")] = Field(
        default=None, alias="maxOrderNotionalUsd", gt=0, le=BILLION
    )


class AgentBudget(Frozen):
    """One agent's budget: the account's limits bind it too, and the tighter of the two binds."""

    allowed_markets: Annotated[tuple[str, ...] | None, About('["ETHUSDT"] (within allowedMarkets)')] = Field(
        default=None, alias="allowedMarkets"
    )
    max_notional_usd: Annotated[Decimal | None, About("50")] = Field(
        default=None, alias="maxNotionalUsd", gt=0, le=BILLION
    )
    max_order_notional_usd: Annotated[Decimal | None, About("25")] = Field(
        default=None, alias="maxOrderNotionalUsd", gt=0, le=BILLION
    )
    daily_order_cap: Annotated[int | None, About("10 (the agent's own orders today, UTC)")] = Field(
        default=None, alias="dailyOrderCap", ge=0, le=100_000
    )
    max_loss_per_trade_usd: Annotated[Decimal | None, About("5")] = Field(
        default=None, alias="maxLossPerTradeUsd", gt=0, le=BILLION
    )
    daily_loss_limit_usd: Annotated[Decimal | None, About("20 (the account's loss today)")] = Field(
        default=None, alias="dailyLossLimitUsd", gt=0, le=BILLION
    )
    max_turnover_usd_per_day: Annotated[Decimal | None, About("500 (the agent's own sends today)")] = Field(
        default=None, alias="maxTurnoverUsdPerDay", gt=0, le=Decimal(10) ** 12
    )
    markets: Annotated[dict[str, AgentMarket], About('{"BTCUSDT": {"maxNotionalUsd": 30}}')] = Field(
        default_factory=dict
    )

    @field_validator("allowed_markets")
    @classmethod
    def _symbols(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for symbol in value or ():
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(f"{quoted(symbol)} is not a Bybit symbol (upper-case letters and digits)")
        return value

    @model_validator(mode="after")
    def _market_keys(self) -> AgentBudget:
        for symbol in self.markets:
            if not SYMBOL_PATTERN.match(symbol):
                raise ValueError(f"markets key {quoted(symbol)} is not a Bybit symbol")
        return self


def check_agent_names(agents: dict[str, AgentBudget]) -> dict[str, AgentBudget]:
    """Refuse a key that cannot name an agent (what `pilot agent add` accepts)."""
    for name in agents:
        if not AGENT_NAME.match(name):
            raise ValueError(
                f"agents key {quoted(name)} is not an agent's name: letters, digits, '.', '_' and '-', "
                "up to 40, as `pilot agent add NAME` takes it"
            )
    return agents
