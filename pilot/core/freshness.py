"""Whether a streamed fact may be judged on: pure, no clock (the caller passes the ages it measured).

A fact kept from an exchange stream is as old as the stream's latest sign of life that is known to follow
it (a message or a pong on the same connection, which delivers in order), measured on the older of the
exchange's time for that sign and our clock at its arrival, so neither a delayed message nor a clock that
runs ahead makes it look younger than it is. It may be used only when its stream is in sync (subscribed,
read again after every reconnect, no sequence gap) and it is younger than the policy's maxFactAgeMs;
otherwise the fact is read over REST.
"""

from __future__ import annotations

from enum import StrEnum


class FactSource(StrEnum):
    STREAM = "stream"
    REST = "rest"


def as_of_ms(exchange_ms: int, received_ms: int) -> int:
    """When a streamed message speaks for: the older of the exchange's stamp and our arrival time."""
    return min(exchange_ms, received_ms)


def age_ms(now_ms: int, as_of: int | None) -> int | None:
    """How old a fact vouched for at `as_of` is at `now_ms` (never negative); None when never vouched for."""
    if as_of is None:
        return None
    return max(now_ms - as_of, 0)


def source_for(in_sync: bool, age: int | None, max_age_ms: int) -> FactSource:
    """STREAM only for a fact whose stream is in sync and whose age is known and younger than the bound
    (so a bound of 0 keeps every judgement on REST)."""
    if in_sync and age is not None and 0 <= age < max_age_ms:
        return FactSource.STREAM
    return FactSource.REST
