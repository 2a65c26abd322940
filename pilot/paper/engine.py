"""The matching engine: validates orders, fills them against the synthetic book, rests and re-matches them."""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pilot.paper.accounts import ZERO, Accounts
from pilot.paper.disconnect_protection import CATEGORIES as DCP_CATEGORIES
from pilot.paper.disconnect_protection import DcpSettings
from pilot.paper.history import History
from pilot.paper.market import Market, floor_to
from pilot.paper.orders import ACTIVE, DEACTIVATED, OPEN, SHORT_LIVED, SimOrder
from pilot.paper.scenario import InstrumentSpec, Scenario
from pilot.paper.spot_stops import (
    SpotStops,
    attach_spot_tpsl,
    spot_filter,
    spot_filter_matches,
    spot_tpsl,
    spot_trigger,
)
from pilot.paper.stop_book import StopBook, attach_tpsl
from pilot.paper.validation import (
    NewOrder,
    SimReject,
    Tpsl,
    apply_price_limit,
    check_notional,
    check_price,
    check_qty,
    last_price,
    order_filter_of,
    parse_new_order,
    parse_tpsl,
    parse_trigger,
    pick,
    price_limits,
    wire_decimal,
)

__all__ = ["ACTIVE", "OPEN", "Engine", "SimClosedPnl", "SimExecution", "SimOrder"]

DAY_MS = 86_400_000
SHORT_RETENTION_MS = DAY_MS
RETENTION_MS = 7 * DAY_MS  # order-list.mdx: other closed orders 7 days; beyond, only orders with fills
MAX_CLOSED_ORDERS = 5_000  # the paper exchange's own bound on what it keeps
MAX_EXECUTIONS = 20_000
PRUNE_EVERY_MS = 60_000
MODE_MISMATCH = "position idx not match position mode"


@dataclass(slots=True)
class SimClosedPnl:
    """One /v5/position/closed-pnl row: what one order closed of a position, and its PnL after fees."""

    order_id: str
    symbol: str
    side: str
    qty: Decimal
    order_price: Decimal
    order_type: str
    closed_size: Decimal
    avg_entry_price: Decimal
    avg_exit_price: Decimal
    closed_pnl: Decimal
    leverage: Decimal
    fill_count: int
    created_ms: int
    updated_ms: int
    exec_type: str = "Trade"  # moving market: "BustTrade" for a liquidation's row (liquidation.py)


@dataclass(frozen=True, slots=True)
class SimExecution:
    exec_id: str
    order: SimOrder
    price: Decimal
    qty: Decimal
    fee: Decimal
    fee_rate: Decimal
    fee_coin: str
    is_maker: bool
    mark: Decimal
    closed_size: Decimal
    time_ms: int
    seq: int
    order_qty: Decimal
    leaves_after: Decimal
    exec_type: str = "Trade"  # moving market: "BustTrade" (liquidation.py), "Funding" (funding.py)
    cash_flow: Decimal = ZERO  # linear: the gross PnL this fill realised (the transaction log's cashFlow)
    exec_pnl: Decimal = ZERO  # linear: what it adds to its order's closed PnL, fees included (execPnl)


class Engine:
    """Orders, fills and the account. Not thread-safe by itself: PaperExchange serialises calls."""

    def __init__(self, scenario: Scenario, clock_ms: Callable[[], int]) -> None:
        self.clock_ms = clock_ms
        self.market = Market(scenario)
        self.instruments = {(i.category, i.symbol): i for i in scenario.instruments}
        self.accounts = Accounts(scenario, self.market, clock_ms())
        self.taker_fee = scenario.taker_fee
        self.maker_fee = scenario.maker_fee
        self.orders: dict[str, SimOrder] = {}  # every order kept, in the order they were made
        self.ranks: dict[str, int] = {}  # each kept order's place in `orders` (lists sort the few by it)
        self._next_rank = itertools.count()
        self.open_orders: dict[str, SimOrder] = {}
        self.lagging: dict[str, SimOrder] = {}  # orders still inside their acknowledgement lag
        self._pruned_ms: int | None = None
        self.links: dict[tuple[str, str], str] = {}
        self.executions: list[SimExecution] = []
        self.closed_pnl: list[SimClosedPnl] = []
        # the ids prune() let go since the state log last looked (state_log.py sets a list; None: nobody asks)
        self.forgotten: list[str] | None = None
        self.hedge_symbols = scenario.hedge_symbols
        self.ack_lag_reads = scenario.ack_lag_reads
        self.tpsl_on_create = scenario.tpsl_on_create
        self.seq = itertools.count(1)
        self.stop_book = StopBook(self)
        self.spot_stops = SpotStops(self)
        self.dcp = DcpSettings()  # Disconnect Cancel All (disconnect_protection.py); not kept across restarts
        self.stop_book.adopt_position_stops()  # a scenario position's stopLoss / takeProfit: Full TP/SL
        self.history = History()  # the market's moves and trades, for klines and recent trades

    def note_prices(self, symbols: list[str] | None = None) -> None:
        """Write down where `symbols` (default: every one) stand now, in the market's history."""
        now, quotes = self.clock_ms(), self.market.quotes()
        for symbol in quotes if symbols is None else symbols:
            self.history.moved(symbol, now, quotes[symbol])

    def new_order_id(self) -> str:
        return str(uuid.uuid4())

    def add_order(self, order: SimOrder) -> None:
        """Keep a new order (every order the exchange makes comes in here)."""
        self.orders[order.order_id] = order
        self.ranks[order.order_id] = next(self._next_rank)

    def adopt_orders(self, orders: list[SimOrder]) -> None:
        """Take restored orders (oldest first) in place of any kept."""
        self.orders, self.ranks = {}, {}
        for order in orders:
            self.add_order(order)
        self.open_orders = {o.order_id: o for o in orders if o.status in ACTIVE}
        self.lagging = {o.order_id: o for o in orders if o.hidden_reads > 0}
        self.stop_book.waiting = {o.order_id: o for o in orders if o.untriggered}
        self.links = {(o.category, o.order_link_id): o.order_id for o in orders if o.order_link_id}

    def restart_seq(self, first: int) -> None:
        """Number fills from `first` on (after a restored state)."""
        self.seq = itertools.count(first)

    def instrument(self, category: str, symbol: str) -> InstrumentSpec:
        spec = self.instruments.get((category, symbol))
        if spec is None:
            raise SimReject(
                pick(category, 10001, 170121),
                "Invalid symbol." if category == "spot" else f"params error: symbol invalid {symbol}",
            )
        return spec

    # ---- create -------------------------------------------------------------------------------

    def create_order(self, category: str, params: dict[str, Any]) -> SimOrder:
        """Validate like Bybit, then match: IOC/FOK take what they can, GTC rests, PostOnly never takes; an
        order with triggerPrice waits, Untriggered, for its trigger (stop_book.py)."""
        new = parse_new_order(category, params)
        instrument = self.instrument(category, new.symbol)
        position_idx = self._position_idx(instrument, params)
        quote = self.market.quote(new.symbol)
        spot = category == "spot"
        last = last_price(quote, instrument)
        trigger = (
            spot_trigger(params, instrument, last) if spot else parse_trigger(category, params, instrument)
        )
        new = self._market_units(instrument, new, trigger.price if trigger else quote.ask)
        check_qty(instrument, new.qty)
        if new.price is not None:
            check_price(instrument, new.price)
            if trigger is None:  # a conditional order meets the band when it triggers
                new = _with_price(new, apply_price_limit(instrument, quote, new.side, new.price))
        buy_limit, sell_limit = price_limits(instrument, quote)
        limit = new.price if new.price is not None else (buy_limit if new.side == "Buy" else sell_limit)
        fill_price = new.price or (
            trigger.price if trigger else (quote.ask if new.side == "Buy" else quote.bid)
        )
        if not new.reduce_only:  # Bybit takes a closing order below the minimum value (dust closes)
            check_notional(instrument, new.qty, fill_price)
        if new.order_link_id and (category, new.order_link_id) in self.links:
            raise SimReject(
                pick(category, 110072, 170141),
                "OrderLinkedID is duplicate" if category != "spot" else "Duplicate clientOrderId.",
            )
        tpsl = None if spot else self._attached_tpsl(instrument, new, params)
        spot_legs = spot_tpsl(params, instrument, new.order_type) if spot else {}
        qty = new.qty
        if trigger is None:
            qty = self._reduce_only_qty(instrument, new) if new.reduce_only else new.qty
            self._check_balance(instrument, new.side == "Buy", new.reduce_only, qty, limit)
        now = self.clock_ms()
        order = SimOrder(
            self.new_order_id(),
            new.order_link_id,
            category,
            new.symbol,
            new.side,
            new.order_type,
            new.price if new.price is not None else ZERO,
            qty,
            new.time_in_force,
            new.reduce_only,
            now,
            now,
            last_price_on_created=last_price(quote, instrument),
            position_idx=position_idx,
            smp_type=new.smp_type,
            hidden_reads=self.ack_lag_reads,
        )
        if tpsl is not None:
            base = new.price or (trigger.price if trigger else last)
            attach_tpsl(order, tpsl, base)
        if spot_legs:
            attach_spot_tpsl(order, spot_legs)
        if trigger is not None and spot:
            self.spot_stops.place(instrument, order, spot_filter(params), trigger)
        elif trigger is not None:
            self.stop_book.place_conditional(instrument, trigger, params, order)
        self.prune(now)
        self.add_order(order)
        if order.hidden_reads > 0:
            self.lagging[order.order_id] = order
        if order.order_link_id:
            self.links[(category, order.order_link_id)] = order.order_id
        if trigger is None:
            self.match_new(instrument, order, limit)
            self.trigger_stops([order.symbol])  # TP/SL its fill placed beyond today's price fire at once
        return order

    def _attached_tpsl(
        self, instrument: InstrumentSpec, new: NewOrder, params: dict[str, Any]
    ) -> Tpsl | None:
        """takeProfit / stopLoss on a linear create (create-order.mdx; spot's are spot_stops.spot_tpsl), not on
        a reduce-only order ("When reduceOnly is true, take profit/stop loss cannot be set"), tpslMode Full by
        default; the prices are checked against the base price when they are attached."""
        if not any(params.get(name) not in (None, "", "0", 0) for name in ("takeProfit", "stopLoss")):
            return None
        if new.reduce_only:
            raise SimReject(10001, "params error: take profit/stop loss cannot be set on a reduce-only order")
        return parse_tpsl(params, instrument)

    def _position_idx(self, instrument: InstrumentSpec, params: dict[str, Any]) -> int:
        """positionIdx as Bybit checks it: 0 in one-way mode, 1/2 (the legs) in hedge mode (10001 otherwise).

        The paper exchange shows hedge-mode positions from a scenario but does not trade their legs.
        """
        if instrument.category == "spot":
            return 0
        try:
            index = int(params.get("positionIdx") or 0)
        except (TypeError, ValueError):
            raise SimReject(10001, "params error: positionIdx invalid") from None
        if instrument.symbol in self.hedge_symbols:
            raise SimReject(
                10001,
                MODE_MISMATCH if index == 0 else "paper exchange: hedge-mode legs are shown, not traded",
            )
        if index != 0:
            raise SimReject(10001, MODE_MISMATCH)
        return index

    def visible(self, order: SimOrder) -> bool:
        """False while the order is still inside its acknowledgement lag."""
        return order.hidden_reads <= 0

    def count_list_read(self) -> None:
        """One realtime/history read happened: every lagging order is one read closer to showing."""
        for order in list(self.lagging.values()):
            order.hidden_reads -= 1
            if order.hidden_reads <= 0:
                del self.lagging[order.order_id]

    def retained(self, order: SimOrder, now_ms: int) -> bool:
        """Whether order history still lists a closed order (order-list.mdx retention rules)."""
        age = now_ms - order.updated_ms
        if order.status in SHORT_LIVED and order.cum_exec_qty == 0:
            return age <= SHORT_RETENTION_MS
        return age <= RETENTION_MS or order.cum_exec_qty > 0

    def prune(self, now_ms: int) -> None:
        """Forget closed orders history no longer shows, and keep at most MAX_CLOSED_ORDERS closed ones.

        Reading every order costs as much as the history is long, so history's retention is read only
        PRUNE_EVERY_MS of exchange time after the last reading (history itself asks `retained`, so an order
        past its time shows nowhere meanwhile; only its memory waits). Over the cap, the oldest closed
        orders go at once, found from the oldest order on (every open one is in `open_orders` or waiting).
        """
        del self.executions[: max(len(self.executions) - MAX_EXECUTIONS, 0)]
        if self._pruned_ms is None or not 0 <= now_ms - self._pruned_ms < PRUNE_EVERY_MS:
            self._pruned_ms = now_ms
            closed = (o for o in self.orders.values() if o.status not in OPEN)
            self._forget_orders([o for o in closed if not self.retained(o, now_ms)])
        excess = len(self.orders) - len(self.open_orders) - len(self.stop_book.waiting) - MAX_CLOSED_ORDERS
        if excess > 0:
            oldest = []
            for order in self.orders.values():
                if order.status not in OPEN:
                    oldest.append(order)
                    if len(oldest) == excess:
                        break
            self._forget_orders(oldest)

    def _forget_orders(self, orders: list[SimOrder]) -> None:
        """Let closed orders go, with their fills (funding rows, funding.py, belong to no order: they stay)."""
        if not orders:
            return
        if self.forgotten is not None:
            self.forgotten.extend(o.order_id for o in orders)
        for order in orders:
            del self.orders[order.order_id]
            del self.ranks[order.order_id]
            self.lagging.pop(order.order_id, None)
            if order.order_link_id:
                self.links.pop((order.category, order.order_link_id), None)
        # fills are in time order and none of an order's is later than its last update: look only that far
        last = max(o.updated_ms for o in orders)
        reach = 0
        while reach < len(self.executions) and self.executions[reach].time_ms <= last:
            reach += 1
        self.executions[:reach] = [
            e for e in self.executions[:reach] if e.order.order_id in self.orders or e.exec_type == "Funding"
        ]

    def _market_units(self, instrument: InstrumentSpec, new: NewOrder, ask: Decimal) -> NewOrder:
        if new.category != "spot" or new.order_type != "Market" or new.market_unit != "quoteCoin":
            return new
        base_qty = floor_to(new.qty / ask, instrument.qty_step)
        if base_qty <= 0:
            raise SimReject(170136, "Order quantity is lower than the minimum.")
        return NewOrder(
            new.category,
            new.symbol,
            new.side,
            new.order_type,
            base_qty,
            None,
            new.time_in_force,
            new.order_link_id,
            False,
            "baseCoin",
        )

    def _reduce_only_qty(self, instrument: InstrumentSpec, new: NewOrder) -> Decimal:
        size = self.accounts.positions[instrument.symbol].size
        if size == 0 or (size > 0) == (new.side == "Buy"):
            raise SimReject(
                110017,
                "current position is zero, cannot fix reduce-only order qty"
                if size == 0
                else "reduce-only order would increase the position",
            )
        return min(new.qty, abs(size))

    def _check_balance(
        self, instrument: InstrumentSpec, buy: bool, reduce_only: bool, qty: Decimal, price: Decimal
    ) -> None:
        if instrument.category == "spot":
            self.check_spot_balance(instrument, buy, qty, price)
            return
        if reduce_only:
            return
        position = self.accounts.positions[instrument.symbol]
        closable = abs(position.size) if position.size and (position.size > 0) != buy else ZERO
        opening = max(qty - closable, ZERO)
        required = opening * price / position.leverage + qty * price * self.taker_fee
        if required > self.available_margin():
            raise SimReject(110007, "ab not enough for new order")

    def can_afford(self, instrument: InstrumentSpec, order: SimOrder, price: Decimal) -> bool:
        """Whether the account has the margin for `order` at `price` now (a conditional order at its trigger)."""
        try:
            self._check_balance(instrument, order.is_buy, order.reduce_only, order.qty, price)
        except SimReject:
            return False
        return True

    def check_spot_balance(self, instrument: InstrumentSpec, buy: bool, qty: Decimal, price: Decimal) -> None:
        coin = instrument.quote_coin if buy else instrument.base_coin
        needed = qty * price if buy else qty
        if needed > self.accounts.wallet.get(coin, ZERO) - self.locked(coin):
            raise SimReject(170131, "Insufficient balance.")

    def available_margin(self) -> Decimal:
        accounts = self.accounts
        used = sum((accounts.position_im(p) for p in accounts.positions.values() if p.size), ZERO)
        return accounts.settle_equity() - used - self.order_im()

    def order_im(self) -> Decimal:
        total = ZERO
        for order in self.open_orders.values():
            if order.category == "linear" and not order.reduce_only:
                total += order.leaves_qty * order.price / self.accounts.positions[order.symbol].leverage
        return total

    def locked(self, coin: str) -> Decimal:
        """Spot balance held by open orders (the quote coin for buys, the base coin for sells), and by the
        spot TP/SL orders waiting for their trigger (spot_stops.py)."""
        total = self.spot_stops.held(coin)
        for order in self.open_orders.values():
            if order.category != "spot":
                continue
            instrument = self.instruments[("spot", order.symbol)]
            if order.is_buy and instrument.quote_coin == coin:
                total += order.leaves_qty * order.price
            elif not order.is_buy and instrument.base_coin == coin:
                total += order.leaves_qty
        return total

    def limit_for(self, instrument: InstrumentSpec, order: SimOrder) -> Decimal:
        """The limit a triggered order matches at: a Limit one its price (moved into the band on linear; on
        spot a price outside the band is refused, and the order then takes the band's edge), a Market one
        the band's edge on its side."""
        quote = self.market.quote(order.symbol)
        buy_limit, sell_limit = price_limits(instrument, quote)
        edge = buy_limit if order.is_buy else sell_limit
        if order.order_type != "Limit":
            return edge
        try:
            order.price = apply_price_limit(instrument, quote, order.side, order.price)
        except SimReject:
            order.price = edge
        return order.price

    # ---- matching ----------------------------------------------------------------------------

    def match_new(self, instrument: InstrumentSpec, order: SimOrder, limit: Decimal) -> None:
        levels = self._crossing_levels(instrument, order, limit)
        if order.time_in_force == "PostOnly" and levels:
            self._close(order, "Cancelled", reason="EC_PostOnlyWillTakeLiquidity")
            return
        if order.time_in_force == "FOK" and sum((size for _, size in levels), ZERO) < order.qty:
            self._close(order, "Cancelled", reason="EC_CancelForNoFullFill")
            return
        for price, size in levels:
            if order.leaves_qty <= 0:
                break
            self._fill(instrument, order, price, min(size, order.leaves_qty), maker=False)
        if order.status not in OPEN:
            return
        if order.time_in_force in ("IOC", "FOK"):
            self.cancel_rest(order, "EC_NoImmediateQtyToFill" if order.cum_exec_qty == 0 else "EC_NoError")
        else:
            self.open_orders[order.order_id] = order

    def _crossing_levels(
        self, instrument: InstrumentSpec, order: SimOrder, limit: Decimal
    ) -> list[tuple[Decimal, Decimal]]:
        bids, asks = self.market.book(instrument)
        if order.is_buy:
            return [(p, s) for p, s in asks if p <= limit]
        return [(p, s) for p, s in bids if p >= limit]

    def rematch(self, symbols: list[str]) -> None:
        """Fill resting orders whose price the new quotes cross, as maker at the order's own price; then
        trigger the conditional and TP/SL orders the new prices reach. The one call after any price move."""
        self._rematch(symbols)
        self.trigger_stops(symbols)

    def trigger_stops(self, symbols: list[str]) -> None:
        """Fire the Untriggered orders of `symbols` whose trigger the prices now reach (stop_book.py)."""
        self.stop_book.trigger(symbols)

    def position_changed(self, symbol: str, before: Decimal) -> None:
        """Call after anything changes a linear position's size (a fill here; a liquidation or an ADL
        elsewhere): its TP/SL follow the size, and a position that closed or flipped loses them."""
        self.stop_book.position_changed(symbol, before)

    def _rematch(self, symbols: list[str]) -> None:
        for order in list(self.open_orders.values()):
            if order.symbol not in symbols:
                continue
            instrument = self.instruments[(order.category, order.symbol)]
            available = sum((size for _, size in self._crossing_levels(instrument, order, order.price)), ZERO)
            if available > 0:
                self._fill(instrument, order, order.price, min(available, order.leaves_qty), maker=True)

    def _fill(
        self, instrument: InstrumentSpec, order: SimOrder, price: Decimal, qty: Decimal, *, maker: bool
    ) -> None:
        if order.reduce_only:
            qty = min(qty, abs(self.accounts.positions[order.symbol].size))
            if qty <= 0:
                self.cancel_rest(order, "EC_NoError", cancel_type="CancelByReduceOnly")
                return
        rate = self.maker_fee if maker else self.taker_fee
        now = self.clock_ms()
        closed = cash_flow = pnl = ZERO
        if instrument.category == "linear":
            fee, fee_coin = qty * price * rate, instrument.quote_coin
            signed = qty if order.is_buy else -qty
            position = self.accounts.positions[order.symbol]
            entry, before = position.avg_price, position.size
            closed = self.accounts.apply_linear_fill(order.symbol, signed, price, fee, now)
            if closed:
                cash_flow = (price - entry) * closed * (1 if before > 0 else -1)
                pnl = self._book_closed_pnl(order, closed, entry, before, price, fee, qty, now)
            self.position_changed(order.symbol, before)
            self.stop_book.attach(order, qty)
        else:
            fee = (qty if order.is_buy else qty * price) * rate
            fee_coin = instrument.base_coin if order.is_buy else instrument.quote_coin
            self.accounts.apply_spot_fill(instrument, order.is_buy, qty, price, fee)
            # what the order's fills have brought so far, net of the fee a buy pays in the coin it buys
            arrived = order.cum_exec_qty + qty - ((order.cum_exec_fee + fee) if order.is_buy else ZERO)
            self.spot_stops.attach(order, floor_to(arrived, instrument.qty_step))
        order.cum_exec_qty += qty
        order.cum_exec_value += qty * price
        order.cum_exec_fee += fee
        order.fee_coin = fee_coin
        order.updated_ms = now
        order.status = "Filled" if order.cum_exec_qty >= order.qty else "PartiallyFilled"
        self.executions.append(
            SimExecution(
                str(uuid.uuid4()),
                order,
                price,
                qty,
                fee,
                rate,
                fee_coin,
                maker,
                self.market.quote(order.symbol).mark,
                closed,
                now,
                next(self.seq),
                order.qty,
                order.leaves_qty,
                cash_flow=cash_flow,
                exec_pnl=pnl,
            )
        )
        if order.status == "Filled":
            self.open_orders.pop(order.order_id, None)
        elif order.reduce_only and self.accounts.positions[order.symbol].size == 0:
            self.cancel_rest(order, "EC_NoError", cancel_type="CancelByReduceOnly")

    def _book_closed_pnl(
        self,
        order: SimOrder,
        closed: Decimal,
        entry: Decimal,
        before: Decimal,
        price: Decimal,
        fee: Decimal,
        qty: Decimal,
        now: int,
    ) -> Decimal:
        """Add a fill that closed part of a position to its order's closed-pnl row (closed-pnl.mdx): the
        gross PnL of the closed size, less this fill's fee and the opening fee of that size (taker rate).
        Returns what this fill added."""
        direction = 1 if before > 0 else -1
        share = fee * closed / qty  # this fill's fee on the closed part (a flip opens the rest)
        pnl = (price - entry) * closed * direction - share - closed * entry * self.taker_fee
        row = (
            self.closed_pnl[-1]
            if self.closed_pnl and self.closed_pnl[-1].order_id == order.order_id
            else None
        )
        if row is None:
            self.closed_pnl.append(
                SimClosedPnl(
                    order.order_id,
                    order.symbol,
                    order.side,
                    order.qty,
                    order.price,
                    order.order_type,
                    closed,
                    entry,
                    price,
                    pnl,
                    self.accounts.positions[order.symbol].leverage,
                    1,
                    now,
                    now,
                )
            )
        else:
            total = row.closed_size + closed
            row.avg_exit_price = (row.avg_exit_price * row.closed_size + price * closed) / total
            row.avg_entry_price = (row.avg_entry_price * row.closed_size + entry * closed) / total
            row.closed_size, row.closed_pnl = total, row.closed_pnl + pnl
            row.fill_count, row.updated_ms = row.fill_count + 1, now
        del self.closed_pnl[: max(len(self.closed_pnl) - MAX_EXECUTIONS, 0)]
        return pnl

    def cancel_rest(self, order: SimOrder, reason: str, cancel_type: str = "UNKNOWN") -> None:
        partly = order.cum_exec_qty > 0
        status = "PartiallyFilledCanceled" if partly and order.category == "spot" else "Cancelled"
        self._close(order, status, reason=reason, cancel_type=cancel_type)

    def _close(
        self, order: SimOrder, status: str, *, reason: str = "EC_NoError", cancel_type: str = "UNKNOWN"
    ) -> None:
        order.status = status
        order.reject_reason = reason
        order.cancel_type = cancel_type
        order.updated_ms = self.clock_ms()
        self.open_orders.pop(order.order_id, None)

    # ---- amend / cancel ----------------------------------------------------------------------

    def find(self, category: str, symbol: str, order_id: str | None, link: str | None) -> SimOrder | None:
        if not order_id and link:
            order_id = self.links.get((category, link))
        order = self.orders.get(order_id or "")
        if order is None or order.category != category or order.symbol != symbol:
            return None
        return order

    def _open_order(self, category: str, params: dict[str, Any], verb: str) -> SimOrder:
        symbol = str(params.get("symbol") or "")
        self.instrument(category, symbol)
        if not params.get("orderId") and not params.get("orderLinkId"):
            raise SimReject(pick(category, 10001, 170130), "params error: orderId or orderLinkId is required")
        order = self.find(category, symbol, params.get("orderId"), params.get("orderLinkId"))
        if order is not None and order.status in OPEN:
            return order
        if order is not None and order.status in ("Cancelled", "PartiallyFilledCanceled", DEACTIVATED):
            raise SimReject(pick(category, 110010, 170142), "Order has been cancelled")
        raise SimReject(pick(category, 110001, 170213), f"order not exists or too late to {verb}")

    def cancel_order(self, category: str, params: dict[str, Any]) -> SimOrder:
        """Cancel one open order; a conditional or TP/SL order is Deactivated (with the leg bound to it)."""
        order = self._open_order(category, params, "cancel")
        if category == "spot" and not spot_filter_matches(order, params.get("orderFilter")):
            raise SimReject(170213, "Order does not exist.")  # cancel-order.mdx: Order when none is sent
        if order.untriggered:
            self.stop_book.cancel(order)
        else:
            self.cancel_rest(order, "EC_NoError", cancel_type="CancelByUser")
        return order

    def cancel_all(
        self,
        category: str,
        symbol: str | None,
        order_filter: str | None = None,
        stop_order_type: str | None = None,
    ) -> list[SimOrder]:
        """cancel-all.mdx: on linear without orderFilter every kind (active, conditional, TP/SL, trailing);
        Order the active orders; StopOrder the conditional and TP/SL orders, with stopOrderType Stop the
        conditional ones only. Spot cancels its active orders by default."""
        if category == "spot":
            order_filter = order_filter or "Order"
        wanted = order_filter_of(category, order_filter, stop_order_type)

        def mine(order: SimOrder) -> bool:
            return order.category == category and (symbol is None or order.symbol == symbol) and wanted(order)

        active = [o for o in self.open_orders.values() if mine(o)]
        waiting = [o for o in self.stop_book.waiting.values() if mine(o)]
        for order in active:
            self.cancel_rest(order, "EC_NoError", cancel_type="CancelByUser")
        for order in waiting:
            self.stop_book.cancel(order, with_pair=False)
        return active + waiting

    def fire_dcp(self) -> list[SimOrder]:
        """Cancel every order of each product whose DCP window ran out with no `dcp` connection (CancelByDCP)."""
        cancelled: list[SimOrder] = []
        for product in self.dcp.due(self.clock_ms()):
            categories = DCP_CATEGORIES[product]
            for order in [o for o in self.open_orders.values() if o.category in categories]:
                self.cancel_rest(order, "EC_NoError", cancel_type="CancelByDCP")
                cancelled.append(order)
            for order in [o for o in self.stop_book.waiting.values() if o.category in categories]:
                self.stop_book.cancel(order, with_pair=False)
                cancelled.append(order)
        return cancelled

    def amend_order(self, category: str, params: dict[str, Any]) -> SimOrder:
        """amend-order.mdx: an active order's qty, price and TP/SL ("0" cancels one); a conditional or TP/SL
        order's trigger price (stop_book.py)."""
        order = self._open_order(category, params, "replace")
        instrument = self.instruments[(category, order.symbol)]
        if order.untriggered and category == "spot":
            self.spot_stops.amend(instrument, order, params)
            return order
        if order.untriggered:
            self.stop_book.amend(instrument, order, params)
            return order
        bad = pick(category, 10001, 170130)
        qty = wire_decimal(params["qty"], "qty", bad) if params.get("qty") not in (None, "") else order.qty
        price = order.price
        if params.get("price") not in (None, ""):
            price = wire_decimal(params["price"], "price", bad)
        check_qty(instrument, qty)
        check_price(instrument, price)
        if qty <= order.cum_exec_qty:
            raise SimReject(
                pick(category, 110064, 170313), "The modified qty must be greater than the filled qty"
            )
        if category != "linear" and any(params.get(n) not in (None, "") for n in ("takeProfit", "stopLoss")):
            raise SimReject(bad, "params error: takeProfit/stopLoss are not supported here")
        tpsl_changed = self.stop_book.amend_attached(instrument, order, params, price)
        if qty == order.qty and price == order.price and not tpsl_changed:
            raise SimReject(bad, "params error: nothing to amend")
        order.qty, order.price, order.updated_ms = qty, price, self.clock_ms()
        self.rematch([order.symbol])
        return order

    # ---- leverage / stops --------------------------------------------------------------------

    def set_leverage(self, category: str, params: dict[str, Any]) -> None:
        if category != "linear":
            raise SimReject(10001, "params error: category only support linear")
        instrument = self.instrument(category, str(params.get("symbol") or ""))
        buy = Decimal(str(params.get("buyLeverage", "0")))
        sell = Decimal(str(params.get("sellLeverage", "0")))
        if buy != sell:
            raise SimReject(10001, "params error: buy leverage must equal sell leverage in one-way mode")
        if not 1 <= buy <= instrument.max_leverage:
            raise SimReject(10001, f"params error: leverage must be within [1, {instrument.max_leverage}]")
        position = self.accounts.positions[instrument.symbol]
        if position.leverage == buy:
            raise SimReject(110043, "leverage not modified")
        position.leverage = buy
        position.updated_ms = self.clock_ms()

    def trading_stop(self, category: str, params: dict[str, Any]) -> None:
        """/v5/position/trading-stop on a one-way linear position (stop_book.py has the rules)."""
        if category != "linear":
            raise SimReject(10001, "params error: category only support linear")
        instrument = self.instrument(category, str(params.get("symbol") or ""))
        self._position_idx(instrument, params)
        self.stop_book.trading_stop(instrument, params)

    def step(self) -> None:
        """Advance the random walks one step and fill what the new prices cross."""
        self.rematch(self.market.step_walks())


def _with_price(new: NewOrder, price: Decimal) -> NewOrder:
    return new if price == new.price else dataclasses.replace(new, price=price)
