"""What Bybit's V5 WebSocket streams say, as Pilot sees it: one frozen event per message, no client types.

`pilot.exchange.bybit.stream` turns pybit's messages into these; `pilot.app.facts.stream_cache` keeps the facts
they carry. `exchange_ms` is the exchange's own time for the message (its ``ts``, ``creationTime`` or a
pong's timestamp); the receiver stamps its own clock on arrival.

Channels: "linear" and "spot" (public), "private".
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from pilot.core.facts import Position
from pilot.exchange.models import AccountBalance, ExchangeOrder, Execution

PRIVATE = "private"


class NoStreams(Exception):
    """A paper exchange does not say where its streams are, or names a place Pilot does not connect to."""


@dataclass(frozen=True, slots=True)
class Connected:
    """A connection (first or again) is open and its subscriptions were sent: nothing on it is trusted yet."""

    channel: str


@dataclass(frozen=True, slots=True)
class Subscribed:
    """Every subscription of the channel's connection was acknowledged: from here on it misses nothing."""

    channel: str


@dataclass(frozen=True, slots=True)
class Refused:
    """Auth or a subscription was refused, or the connection ended: the channel is not to be trusted."""

    channel: str
    reason: str


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A message that could not be read: what it said is lost, so what its topic feeds is read again.

    `topic` is one Pilot subscribed to (the message's own text is the exchange's, untrusted), or "other"."""

    channel: str
    topic: str


@dataclass(frozen=True, slots=True)
class Alive:
    """A heartbeat (a pong on the private channel): everything sent before it has arrived."""

    channel: str
    exchange_ms: int
    req_id: str = ""  # a pong's: the ping's req_id


@dataclass(frozen=True, slots=True)
class TickerUpdate:
    channel: str
    symbol: str
    mark: Decimal | None
    exchange_ms: int


@dataclass(frozen=True, slots=True)
class BookUpdate:
    """The top of a book kept in sequence (a snapshot, then deltas whose `u` follow on one by one)."""

    channel: str
    symbol: str
    bid: Decimal | None
    ask: Decimal | None
    exchange_ms: int


@dataclass(frozen=True, slots=True)
class BookGap:
    """A delta did not follow the last one (lost or out of order): the book is unknown until a new snapshot."""

    channel: str
    symbol: str
    exchange_ms: int


@dataclass(frozen=True, slots=True)
class BandUpdate:
    channel: str
    symbol: str
    buy_limit: Decimal
    sell_limit: Decimal
    exchange_ms: int


@dataclass(frozen=True, slots=True)
class OrderUpdate:
    orders: tuple[ExchangeOrder, ...]
    exchange_ms: int
    channel: str = PRIVATE


@dataclass(frozen=True, slots=True)
class ExecutionUpdate:
    executions: tuple[Execution, ...]
    exchange_ms: int
    channel: str = PRIVATE


@dataclass(frozen=True, slots=True)
class PositionUpdate:
    """Linear one-way positions; `hedged` names symbols pushed with hedge-mode legs (never trusted here)."""

    positions: tuple[Position, ...]
    hedged: tuple[str, ...]
    exchange_ms: int
    channel: str = PRIVATE


@dataclass(frozen=True, slots=True)
class WalletUpdate:
    balance: AccountBalance
    exchange_ms: int
    channel: str = PRIVATE


StreamEvent = (
    Connected
    | Subscribed
    | Refused
    | Unreadable
    | Alive
    | TickerUpdate
    | BookUpdate
    | BookGap
    | BandUpdate
    | OrderUpdate
    | ExecutionUpdate
    | PositionUpdate
    | WalletUpdate
)
