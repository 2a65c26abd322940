"""A stream the exchange stops feeding, then feeds again, coalesced: what it did not send again is not fresh.

Issue 25: just after a stalled stream resumed, close_position was cancelled because its worst price came
from the stale quote. The exchange pushed nothing for seconds and then sent the state it had reached, topic
by topic; the first fresh message (a ticker) vouched for the whole connection, so the book from before the
stall was judged on until its own update arrived. A fresh message vouches for what arrived before it only
when nothing was left out: after a silence longer than STALL_MS on the exchange's own clock, each market's
book, mark and price band is taken again only from a message of its own sent after the silence.
"""

from __future__ import annotations

from decimal import Decimal

from pilot.app.facts.stream_cache import StreamFacts
from pilot.exchange.stream_events import BandUpdate, BookUpdate, Connected, Subscribed, TickerUpdate

T = 1_800_000_000_000
BOUND = 300
BTC, ETH = "BTCUSDT", "ETHUSDT"


def quiet_then_resumed() -> StreamFacts:
    facts = StreamFacts({"linear": (BTC, ETH)})
    for event in (Connected("linear"), Subscribed("linear")):
        facts.apply(event, T)
    for symbol in (BTC, ETH):
        facts.apply(BookUpdate("linear", symbol, Decimal(100), Decimal(101), T), T)
        facts.apply(TickerUpdate("linear", symbol, Decimal(100), T), T)
        facts.apply(BandUpdate("linear", symbol, Decimal(110), Decimal(90), T), T)
    # five seconds of nothing; the price has moved to 120 meanwhile; BTC's ticker comes back first
    facts.apply(TickerUpdate("linear", BTC, Decimal(120), T + 5000), T + 5000)
    return facts


def test_a_fresh_ticker_after_a_silence_does_not_vouch_for_a_book_it_did_not_bring() -> None:
    facts = quiet_then_resumed()
    assert facts.touch("linear", BTC, T + 5000, BOUND) is None  # the book from before: read over REST
    assert facts.touch("linear", ETH, T + 5000, BOUND) is None
    assert facts.band("linear", BTC, T + 5000, BOUND) is None


def test_each_market_is_trusted_again_once_its_own_update_after_the_silence_arrived() -> None:
    facts = quiet_then_resumed()
    facts.apply(BookUpdate("linear", BTC, Decimal(120), Decimal(121), T + 5001), T + 5001)
    touch = facts.touch("linear", BTC, T + 5001, BOUND)
    assert touch is not None and (touch.bid, touch.mark) == (Decimal(120), Decimal(120))
    assert facts.touch("linear", ETH, T + 5001, BOUND) is None  # ETH's book did not come yet


def test_pushes_that_keep_coming_are_trusted_as_before() -> None:
    facts = StreamFacts({"linear": (BTC,)})
    for event in (Connected("linear"), Subscribed("linear")):
        facts.apply(event, T)
    facts.apply(BookUpdate("linear", BTC, Decimal(100), Decimal(101), T), T)
    for step in range(1, 30):  # a ticker every 100 ms, the book quiet
        facts.apply(TickerUpdate("linear", BTC, Decimal(100), T + 100 * step), T + 100 * step)
    touch = facts.touch("linear", BTC, T + 2900, BOUND)
    assert touch is not None and touch.bid == Decimal(100)
