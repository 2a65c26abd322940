"""What Pilot says of a policy.json field besides its type and bounds, declared on the field itself.

Each field of the policy's models carries one `About` in its annotation (`Annotated[Decimal, About(...)]`):
the example an error about it shows, the reference's row (what it refuses, an example refusal), what `pilot
init` writes, where `get_policy`'s answer shows it, and whether a market may override it. Every list of
fields is derived from these (pilot.core.policy.fields), so adding a field is adding it here with its check.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic.fields import FieldInfo


class Shown(StrEnum):
    """Where `get_policy`'s answer shows a field: a group of its answer (pilot.app.facts.reads.get_policy)."""

    TOP = "top"  # at the top level, beside the counts it bounds
    STATE = "state"  # beside the trading state in force
    CONFIRM = "confirm"
    LOSS_RULES = "loss_rules"
    CONTROLS = "controls"
    MARKET = "market"  # each market's effective value, under `markets`


class _LeftOut:
    """`About.init`'s default: `pilot init` writes what applies when the field is left out."""

    def __repr__(self) -> str:
        return "LEFT_OUT"


LEFT_OUT: Any = _LeftOut()


@dataclass(frozen=True, slots=True)
class About:
    """What Pilot says of one field.

    `example`: a valid value, shown next to any error about the field.
    `refuses`: the reference's "What it refuses" cell; a field without one has no row of its own (a group
    such as `confirm` gets a row per field of its own instead).
    `refusal`: the reference's example refusal cell (a `detail` as answers give it), "" for none.
    `init`: what `pilot init` writes, as a JSON value; LEFT_OUT writes the value a left-out field has.
    `shown`: the group of `get_policy`'s answer that shows it; None: not shown (a secret, or shown through
    its parts). `key`: its key there, when not its snake_case name.
    `per_market`: `markets.SYMBOL` may override it (MarketOverrides and EffectiveLimits then declare it too).
    """

    example: str
    refuses: str = ""
    refusal: str = ""
    init: Any = LEFT_OUT
    shown: Shown | None = None
    key: str = ""
    per_market: bool = False


def about(field: FieldInfo) -> About:
    """The About a field was declared with (every field of the policy's models has one)."""
    found = [item for item in field.metadata if isinstance(item, About)]
    if len(found) != 1:
        raise TypeError(f"policy field {field.alias} declares {len(found)} About, not one")
    return found[0]
