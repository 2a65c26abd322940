"""The matching engine: validates orders, fills them against the synthetic book, rests and re-matches them."""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pilot.exchange.sim.accounts import ZERO, Accounts
from pilot.exchange.sim.market import Market, floor_to
from pilot.exchange.sim.scenario import InstrumentSpec, Scenario
from pilot.exchange.sim.validation import (
    NewOrder,
    SimReject,
    apply_price_limit,
    check_notional,
    check_price,
    check_qty,
    parse_new_order,
    pick,
    price_limits,
    to_decimal,
)

OPEN = ("New", "PartiallyFilled")
SHORT_LIVED = ("Cancelled", "Rejected", "Deactivated")  # order-list.mdx: queryable for 24 hours only
DAY_MS = 86_400_000
SHORT_RETENTION_MS = DAY_MS
RETENTION_MS = 7 * DAY_MS  # order-list.mdx: other closed orders 7 days; beyond, only orders with fills
MAX_CLOSED_ORDERS = 5_000  # the paper exchange's own bound on what it keeps
MAX_EXECUTIONS = 20_000
MODE_MISMATCH = "position idx not match position mode"


@dataclass(slots=True)
class SimOrder:
    order_id: str
    order_link_id: str
    category: str
    symbol: str
    side: str
    order_type: str
    price: Decimal
    qty: Decimal
    time_in_force: str
    reduce_only: bool
    created_ms: int
    updated_ms: int
    status: str = "New"
    cum_exec_qty: Decimal = ZERO
    cum_exec_value: Decimal = ZERO
    cum_exec_fee: Decimal = ZERO
    reject_reason: str = "EC_NoError"
    cancel_type: str = "UNKNOWN"
    fee_coin: str = ""
    last_price_on_created: Decimal = ZERO
    position_idx: int = 0
    hidden_reads: int = 0  # list reads left before the order shows (the acknowledgement lag)
    take_profit: Decimal = ZERO  # TP/SL on create (tpslMode Full): set on the position once it fills
    stop_loss: Decimal = ZERO
    stop_order_type: str = ""  # "StopLoss" / "TakeProfit" for the closing order a trigger creates
    create_type: str = "CreateByUser"  # moving market: "CreateByTakeOver_PassThrough" (liquidation.py)

    @property
    def leaves_qty(self) -> Decimal:
        return self.qty - self.cum_exec_qty if self.status in OPEN else ZERO

    @property
    def is_buy(self) -> bool:
        return self.side == "Buy"


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


class Engine:
    """Orders, fills and the account. Not thread-safe by itself: PaperExchange serialises calls."""

    def __init__(self, scenario: Scenario, clock_ms: Callable[[], int]) -> None:
        self.clock_ms = clock_ms
        self.market = Market(scenario)
        self.instruments = {(i.category, i.symbol): i for i in scenario.instruments}
        self.accounts = Accounts(scenario, self.market, clock_ms())
        self.taker_fee = scenario.taker_fee
        self.maker_fee = scenario.maker_fee
        self.orders: dict[str, SimOrder] = {}
        self.open_orders: dict[str, SimOrder] = {}
        self.links: dict[tuple[str, str], str] = {}
        self.executions: list[SimExecution] = []
        self.closed_pnl: list[SimClosedPnl] = []
        self.hedge_symbols = scenario.hedge_symbols
        self.ack_lag_reads = scenario.ack_lag_reads
        self.tpsl_on_create = scenario.tpsl_on_create
        self.seq = itertools.count(1)

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
        """Validate like Bybit, then match: IOC/FOK take what they can, GTC rests, PostOnly never takes."""
        new = parse_new_order(category, params)
        instrument = self.instrument(category, new.symbol)
        position_idx = self._position_idx(instrument, params)
        quote = self.market.quote(new.symbol)
        new = self._market_units(instrument, new, quote.ask)
        check_qty(instrument, new.qty)
        if new.price is not None:
            check_price(instrument, new.price)
            new = _with_price(new, apply_price_limit(instrument, quote, new.side, new.price))
        buy_limit, sell_limit = price_limits(instrument, quote)
        limit = new.price if new.price is not None else (buy_limit if new.side == "Buy" else sell_limit)
        if not new.reduce_only:  # Bybit takes a closing order below the minimum value (dust closes)
            check_notional(instrument, new.qty, new.price or (quote.ask if new.side == "Buy" else quote.bid))
        if new.order_link_id and (category, new.order_link_id) in self.links:
            raise SimReject(
                pick(category, 110072, 170141),
                "OrderLinkedID is duplicate" if category != "spot" else "Duplicate clientOrderId.",
            )
        qty = self._reduce_only_qty(instrument, new) if new.reduce_only else new.qty
        take_profit, stop_loss = self._tpsl_on_create(instrument, new, params, quote.mid)
        self._check_balance(instrument, new, qty, limit)
        now = self.clock_ms()
        order = SimOrder(
            str(uuid.uuid4()),
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
            last_price_on_created=floor_to(quote.mid, instrument.tick_size),
            position_idx=position_idx,
            hidden_reads=self.ack_lag_reads,
            take_profit=take_profit,
            stop_loss=stop_loss,
        )
        self.prune(now)
        self.orders[order.order_id] = order
        if order.order_link_id:
            self.links[(category, order.order_link_id)] = order.order_id
        self._match_new(instrument, order, limit)
        return order

    def _tpsl_on_create(
        self, instrument: InstrumentSpec, new: NewOrder, params: dict[str, Any], last: Decimal
    ) -> tuple[Decimal, Decimal]:
        """takeProfit / stopLoss on create (create-order.mdx): linear only, on the tick, on the right side of
        the base price (the limit price, or the last price for a market order); 10001 otherwise."""
        wanted = {name: params.get(name) for name in ("takeProfit", "stopLoss")}
        if all(value in (None, "", "0") for value in wanted.values()):
            return ZERO, ZERO
        if instrument.category != "linear":
            raise SimReject(170130, "params error: takeProfit/stopLoss are not supported here")
        base = new.price if new.price is not None else last
        prices = {}
        for name, value in wanted.items():
            if value in (None, "", "0"):
                prices[name] = ZERO
                continue
            price = to_decimal(value, name, 10001)
            check_price(instrument, price)
            prices[name] = price
        buy = new.side == "Buy"
        take_profit, stop_loss = prices["takeProfit"], prices["stopLoss"]
        if take_profit and (take_profit <= base if buy else take_profit >= base):
            side = "higher" if buy else "lower"
            raise SimReject(
                10001,
                f"TakeProfit:{take_profit} set for {new.side} position should be {side} than base_price:{base}",
            )
        if stop_loss and (stop_loss >= base if buy else stop_loss <= base):
            side = "lower" if buy else "higher"
            raise SimReject(
                10001,
                f"StopLoss:{stop_loss} set for {new.side} position should be {side} than base_price:{base}",
            )
        return take_profit, stop_loss

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
        for order in self.orders.values():
            if order.hidden_reads > 0:
                order.hidden_reads -= 1

    def retained(self, order: SimOrder, now_ms: int) -> bool:
        """Whether order history still lists a closed order (order-list.mdx retention rules)."""
        age = now_ms - order.updated_ms
        if order.status in SHORT_LIVED and order.cum_exec_qty == 0:
            return age <= SHORT_RETENTION_MS
        return age <= RETENTION_MS or order.cum_exec_qty > 0

    def prune(self, now_ms: int) -> None:
        """Forget closed orders history no longer shows, and keep at most MAX_CLOSED_ORDERS closed ones."""
        closed = [o for o in self.orders.values() if o.status not in OPEN]
        drop = {o.order_id for o in closed if not self.retained(o, now_ms)}
        kept = [o for o in closed if o.order_id not in drop]
        drop |= {o.order_id for o in kept[: max(len(kept) - MAX_CLOSED_ORDERS, 0)]}
        for order_id in drop:
            order = self.orders.pop(order_id)
            if order.order_link_id:
                self.links.pop((order.category, order.order_link_id), None)
        if drop:  # funding rows (funding.py) belong to no listed order: they stay
            self.executions = [
                e for e in self.executions if e.order.order_id in self.orders or e.exec_type == "Funding"
            ]
        del self.executions[: max(len(self.executions) - MAX_EXECUTIONS, 0)]

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

    def _check_balance(self, instrument: InstrumentSpec, new: NewOrder, qty: Decimal, price: Decimal) -> None:
        if instrument.category == "spot":
            self._check_spot_balance(instrument, new.side == "Buy", qty, price)
            return
        if new.reduce_only:
            return
        position = self.accounts.positions[instrument.symbol]
        closable = (
            abs(position.size) if position.size and (position.size > 0) != (new.side == "Buy") else ZERO
        )
        opening = max(qty - closable, ZERO)
        required = opening * price / position.leverage + qty * price * self.taker_fee
        if required > self.available_margin():
            raise SimReject(110007, "ab not enough for new order")

    def _check_spot_balance(
        self, instrument: InstrumentSpec, buy: bool, qty: Decimal, price: Decimal
    ) -> None:
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
        """Spot balance held by open orders: the quote coin for buys, the base coin for sells."""
        total = ZERO
        for order in self.open_orders.values():
            if order.category != "spot":
                continue
            instrument = self.instruments[("spot", order.symbol)]
            if order.is_buy and instrument.quote_coin == coin:
                total += order.leaves_qty * order.price
            elif not order.is_buy and instrument.base_coin == coin:
                total += order.leaves_qty
        return total

    # ---- matching ----------------------------------------------------------------------------

    def _match_new(self, instrument: InstrumentSpec, order: SimOrder, limit: Decimal) -> None:
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
            self._cancel_rest(order, "EC_NoImmediateQtyToFill" if order.cum_exec_qty == 0 else "EC_NoError")
        else:
            self.open_orders[order.order_id] = order

    def _crossing_levels(self, instrument: InstrumentSpec, order: SimOrder, limit: Decimal) -> list:
        bids, asks = self.market.book(instrument)
        if order.is_buy:
            return [(p, s) for p, s in asks if p <= limit]
        return [(p, s) for p, s in bids if p >= limit]

    def rematch(self, symbols: list[str]) -> None:
        """Fill resting orders whose price the new quotes cross, as maker at the order's own price; then
        trigger the stops and targets the new prices reach."""
        self._rematch(symbols)
        self.trigger_stops(symbols)

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
                self._cancel_rest(order, "EC_NoError", cancel_type="CancelByReduceOnly")
                return
        rate = self.maker_fee if maker else self.taker_fee
        now = self.clock_ms()
        closed = ZERO
        if instrument.category == "linear":
            fee, fee_coin = qty * price * rate, instrument.quote_coin
            signed = qty if order.is_buy else -qty
            position = self.accounts.positions[order.symbol]
            entry, before = position.avg_price, position.size
            closed = self.accounts.apply_linear_fill(order.symbol, signed, price, fee, now)
            if closed:
                self._book_closed_pnl(order, closed, entry, before, price, fee, qty, now)
            self._protect(order)
        else:
            fee = (qty if order.is_buy else qty * price) * rate
            fee_coin = instrument.base_coin if order.is_buy else instrument.quote_coin
            self.accounts.apply_spot_fill(instrument, order.is_buy, qty, price, fee)
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
            )
        )
        if order.status == "Filled":
            self.open_orders.pop(order.order_id, None)
        elif order.reduce_only and self.accounts.positions[order.symbol].size == 0:
            self._cancel_rest(order, "EC_NoError", cancel_type="CancelByReduceOnly")

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
    ) -> None:
        """Add a fill that closed part of a position to its order's closed-pnl row (closed-pnl.mdx): the
        gross PnL of the closed size, less this fill's fee and the opening fee of that size (taker rate)."""
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

    def _protect(self, order: SimOrder) -> None:
        """TP/SL sent with a create apply to the whole position once it fills (tpslMode Full); a closed
        position loses its TP/SL (trading-stop.mdx: the system cancels them when the position closes)."""
        position = self.accounts.positions[order.symbol]
        if position.size == 0:
            position.take_profit = position.stop_loss = ZERO
            return
        if not self.tpsl_on_create:  # the scenario's lost stop: accepted with the create, never applied
            return
        if order.take_profit:
            position.take_profit = order.take_profit
        if order.stop_loss:
            position.stop_loss = order.stop_loss

    def trigger_stops(self, symbols: list[str]) -> None:
        """Close a position whose stop-loss or take-profit the last price has reached (Bybit's default
        trigger, LastPrice), with a reduce-only market order, as Bybit's system does."""
        for symbol in symbols:
            instrument = self.instruments.get(("linear", symbol))
            position = self.accounts.positions.get(symbol)
            if instrument is None or position is None or position.size == 0:
                continue
            last = floor_to(self.market.quote(symbol).mid, instrument.tick_size)
            long = position.size > 0
            hit = ""
            if position.stop_loss and (last <= position.stop_loss if long else last >= position.stop_loss):
                hit = "StopLoss"
            elif position.take_profit and (
                last >= position.take_profit if long else last <= position.take_profit
            ):
                hit = "TakeProfit"
            if hit:
                self._close_by_trigger(instrument, position.size, hit)

    def _close_by_trigger(self, instrument: InstrumentSpec, size: Decimal, kind: str) -> None:
        quote = self.market.quote(instrument.symbol)
        buy_limit, sell_limit = price_limits(instrument, quote)
        side = "Sell" if size > 0 else "Buy"
        now = self.clock_ms()
        order = SimOrder(
            str(uuid.uuid4()),
            "",
            "linear",
            instrument.symbol,
            side,
            "Market",
            ZERO,
            abs(size),
            "IOC",
            True,
            now,
            now,
            last_price_on_created=floor_to(quote.mid, instrument.tick_size),
            stop_order_type=kind,
        )
        self.orders[order.order_id] = order
        self._match_new(instrument, order, sell_limit if side == "Sell" else buy_limit)

    def _cancel_rest(self, order: SimOrder, reason: str, cancel_type: str = "UNKNOWN") -> None:
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
        if order is not None and order.status in ("Cancelled", "PartiallyFilledCanceled"):
            raise SimReject(pick(category, 110010, 170142), "Order has been cancelled")
        raise SimReject(pick(category, 110001, 170213), f"order not exists or too late to {verb}")

    def cancel_order(self, category: str, params: dict[str, Any]) -> SimOrder:
        order = self._open_order(category, params, "cancel")
        self._cancel_rest(order, "EC_NoError", cancel_type="CancelByUser")
        return order

    def cancel_all(self, category: str, symbol: str | None) -> list[SimOrder]:
        orders = [
            o
            for o in self.open_orders.values()
            if o.category == category and (symbol is None or o.symbol == symbol)
        ]
        for order in orders:
            self._cancel_rest(order, "EC_NoError", cancel_type="CancelByUser")
        return orders

    def amend_order(self, category: str, params: dict[str, Any]) -> SimOrder:
        order = self._open_order(category, params, "replace")
        instrument = self.instruments[(category, order.symbol)]
        bad = pick(category, 10001, 170130)
        qty = Decimal(str(params["qty"])) if params.get("qty") not in (None, "") else order.qty
        price = Decimal(str(params["price"])) if params.get("price") not in (None, "") else order.price
        if qty == order.qty and price == order.price:
            raise SimReject(bad, "params error: nothing to amend")
        check_qty(instrument, qty)
        check_price(instrument, price)
        if qty <= order.cum_exec_qty:
            raise SimReject(
                pick(category, 110064, 170313), "The modified qty must be greater than the filled qty"
            )
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
        if category != "linear":
            raise SimReject(10001, "params error: category only support linear")
        instrument = self.instrument(category, str(params.get("symbol") or ""))
        self._position_idx(instrument, params)
        position = self.accounts.positions[instrument.symbol]
        if position.size == 0:
            raise SimReject(10001, "can not set tp/sl/ts for zero position")
        last = floor_to(self.market.quote(instrument.symbol).mid, instrument.tick_size)
        long = position.size > 0
        for name, attribute in (
            ("takeProfit", "take_profit"),
            ("stopLoss", "stop_loss"),
            ("trailingStop", "trailing_stop"),
        ):
            if params.get(name) in (None, ""):
                continue
            value = Decimal(str(params[name]))
            if value < 0:
                raise SimReject(10001, f"params error: {name} cannot be less than 0")
            if value and name != "trailingStop":
                check_price(instrument, value)
                above = name == "takeProfit" if long else name == "stopLoss"
                if value <= last if above else value >= last:
                    side, way = ("Buy" if long else "Sell"), ("higher" if above else "lower")
                    label = "TakeProfit" if name == "takeProfit" else "StopLoss"
                    raise SimReject(
                        10001,
                        f"{label}:{value} set for {side} position should be {way} than base_price:{last}",
                    )
            setattr(position, attribute, value)
        position.updated_ms = self.clock_ms()

    def step(self) -> None:
        """Advance the random walks one step and fill what the new prices cross."""
        self.rematch(self.market.step_walks())


def _with_price(new: NewOrder, price: Decimal) -> NewOrder:
    return new if price == new.price else dataclasses.replace(new, price=price)
