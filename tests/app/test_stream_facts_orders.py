"""The stream's order cache stays bounded for the life of a server, and judgements on it stay right.

A model exchange takes orders on two markets (some rest, some fill or are cancelled at once), part-fills,
fills and cancels resting ones, and pushes every change on the private order stream, which may drop (what
is pushed meanwhile is lost) and open again; the account is then read over REST at one moment and applied
at a later one, as the hub does, and confirmed by a pong. The cache keeps only a few final orders here.
After every step: the final orders kept are within the bound, every index agrees with the orders kept, and
while the private channel is in sync each market's open orders are exactly the exchange's and no order kept
is older than the exchange's; and an order just pushed (one a send is waiting for) is found by its link id. No sockets, no
sleeps: events are applied directly, the clock is the model's.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pilot.app.facts.stream_cache import FINAL_STATUSES, OPEN_STATUSES, Resync, StreamFacts, Sync
from pilot.exchange.models import AccountBalance, ExchangeOrder
from pilot.exchange.stream_events import PRIVATE, Alive, Connected, OrderUpdate, Refused, Subscribed

MARKETS = (("linear", "BTCUSDT"), ("spot", "ETHUSDT"))
MARKETS_BY_CATEGORY = {"linear": ("BTCUSDT",), "spot": ("ETHUSDT",)}
KEPT = 6  # final orders the cache may keep (the server keeps MAX_FINAL_ORDERS)
KEPT_MS = 4_000
START = 1_800_000_000_000
BOUND = 300


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def new_order(number: int, category: str, symbol: str, status: str, filled: str, ms: int) -> ExchangeOrder:
    return ExchangeOrder(
        order_id=f"order-{number}",
        order_link_id=f"pilot-{number}",
        symbol=symbol,
        category=category,
        side="Buy",
        order_type="Limit",
        price=Decimal(100),
        qty=Decimal(3),
        cum_exec_qty=Decimal(filled),
        avg_price=Decimal(100) if Decimal(filled) else None,
        cum_exec_fee=Decimal(0),
        status=status,
        time_in_force="GTC",
        reduce_only=False,
        reject_reason="",
        created_at=at(ms),
        updated_at=at(ms),
    )


class OrderStream(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.numbers = itertools.count(1)
        self.exchange: dict[str, ExchangeOrder] = {}  # every order, as the exchange holds it now
        self.up = False
        self.pings = itertools.count(1)
        self.read: tuple[int, Resync] | None = None
        self.facts = StreamFacts(dict(MARKETS_BY_CATEGORY), max_final_orders=KEPT, final_order_ms=KEPT_MS)
        self.connection_opens()

    # ---- the exchange -------------------------------------------------------------------------------

    def push(self, order: ExchangeOrder) -> None:
        """The exchange changes an order and pushes it; a send waiting for it finds it by its link id."""
        self.exchange[order.order_id] = order
        if self.up:
            self.facts.apply(OrderUpdate((order,), self.now), self.now)
            assert self.facts.order_by_link(order.category, order.order_link_id) == order

    @rule(market=st.sampled_from(MARKETS), outcome=st.sampled_from(["New", "Filled", "Cancelled"]))
    def an_order_is_sent(self, market: tuple[str, str], outcome: str) -> None:
        filled = "3" if outcome == "Filled" else "0"
        self.push(new_order(next(self.numbers), *market, outcome, filled, self.now))

    @precondition(lambda self: any(o.status in OPEN_STATUSES for o in self.exchange.values()))
    @rule(pick=st.integers(0, 10**6), change=st.sampled_from(["part", "fill", "cancel"]))
    def a_resting_order_changes(self, pick: int, change: str) -> None:
        resting = sorted(i for i, o in self.exchange.items() if o.status in OPEN_STATUSES)
        order = self.exchange[resting[pick % len(resting)]]
        if change == "part" and order.cum_exec_qty < 2:
            changed = replace(order, status="PartiallyFilled", cum_exec_qty=order.cum_exec_qty + 1)
        elif change == "fill":
            changed = replace(order, status="Filled", cum_exec_qty=order.qty)
        else:
            status = "PartiallyFilledCanceled" if order.cum_exec_qty else "Cancelled"
            changed = replace(order, status=status)
        self.push(replace(changed, updated_at=at(self.now)))

    @rule(ms=st.integers(1, 1_500))
    def time_passes(self, ms: int) -> None:
        self.now += ms

    # ---- the connection and its resynchronisation --------------------------------------------------

    @rule()
    def connection_drops(self) -> None:
        if self.up:
            self.facts.apply(Refused(PRIVATE, "the connection ended"), self.now)
        self.up = False

    @precondition(lambda self: not self.up)
    @rule()
    def connection_opens(self) -> None:
        self.up = True
        self.facts.apply(Connected(PRIVATE), self.now)
        self.facts.apply(Subscribed(PRIVATE), self.now)

    @precondition(lambda self: self.facts.resync_wanted() and self.read is None)
    @rule()
    def rest_read_begins(self) -> None:
        open_now = tuple(o for o in self.exchange.values() if o.status in OPEN_STATUSES)
        read = Resync(positions={}, balance=AccountBalance(Decimal(1000), ()), open_orders=open_now)
        self.read = (self.facts.begin_resync(), read)

    @precondition(lambda self: self.read is not None)
    @rule()
    def rest_read_ends_and_a_pong_confirms_it(self) -> None:
        assert self.read is not None
        (generation, read), self.read = self.read, None
        ping = next(self.pings)
        if self.facts.finish_resync(generation, read, ping) and self.up:
            self.facts.apply(Alive(PRIVATE, self.now, str(ping)), self.now)

    # ---- what must hold -----------------------------------------------------------------------------

    @invariant()
    def final_orders_kept_are_bounded(self) -> None:
        assert len(self.facts.final) <= KEPT

    @invariant()
    def every_index_agrees_with_the_orders_kept(self) -> None:
        facts = self.facts
        open_ids = {i for market in facts.open_by_market.values() for i in market}
        assert open_ids | set(facts.final) == set(facts.orders) and not open_ids & set(facts.final)
        for (category, symbol), market in facts.open_by_market.items():
            assert market and all(o.status in OPEN_STATUSES for o in market.values())
            assert all((o.category, o.symbol) == (category, symbol) for o in market.values())
        for (category, link), order_id in facts.by_link.items():
            assert (facts.orders[order_id].category, facts.orders[order_id].order_link_id) == (category, link)

    @invariant()
    def in_sync_the_cache_says_what_the_exchange_holds(self) -> None:
        if self.facts.channel(PRIVATE).sync is not Sync.IN_SYNC:
            return
        for category, symbol in MARKETS:
            cached = self.facts.open_orders(category, symbol, self.now, 10**12)
            assert cached is not None
            held = {
                o.order_id: o
                for o in self.exchange.values()
                if (o.category, o.symbol) == (category, symbol) and o.status in OPEN_STATUSES
            }
            assert {o.order_id: o for o in cached} == held
        for order in self.facts.orders.values():
            assert order == self.exchange[order.order_id]


OrderStream.TestCase.settings = settings(max_examples=200, stateful_step_count=150, deadline=None)
TestOrderStream = OrderStream.TestCase


def test_a_long_life_of_orders_keeps_the_open_ones_and_only_the_newest_final_ones() -> None:
    """A day of trading at one order a second: the cache holds what is open and MAX_FINAL_ORDERS at most."""
    facts = StreamFacts(dict(MARKETS_BY_CATEGORY))
    facts.apply(Connected(PRIVATE), START)
    resting = []
    for number in range(86_400):
        ms = START + number * 1000
        status = "New" if number % 1000 == 0 else "Filled"
        order = new_order(number, "linear", "BTCUSDT", status, "0" if status == "New" else "3", ms)
        resting += [order] if status == "New" else []
        facts.apply(OrderUpdate((order,), ms), ms)
    horizon = ms - facts.final_order_ms  # the last ten minutes' final orders, and no older one
    assert sorted(facts.final.values())[0] >= horizon
    assert len(facts.final) == sum(1 for n in range(0, 86_400) if n % 1000 and START + n * 1000 >= horizon)
    assert len(facts.orders) == len(facts.final) + len(resting)
    assert {o.order_id for o in facts.open_by_market[("linear", "BTCUSDT")].values()} == {
        o.order_id for o in resting
    }
    last = facts.order_by_link("linear", "pilot-86399")
    assert last is not None and last.status in FINAL_STATUSES
    assert facts.order_by_link("linear", "pilot-1") is None  # long final: asked for, it is read over REST
    for number in range(86_400, 91_400):  # then a burst: 5,000 fills in one second
        order = new_order(number, "spot", "ETHUSDT", "Filled", "3", ms)
        facts.apply(OrderUpdate((order,), ms), ms)
    assert len(facts.final) == facts.max_final_orders
    assert facts.order_by_link("spot", "pilot-91399") is not None
