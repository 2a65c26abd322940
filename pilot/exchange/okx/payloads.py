"""OKX's JSON and Pilot's models, both ways: the only place that knows OKX's field names.

Every size here is already in coins or still in OKX's units as each function says: a row's size in contracts
becomes coins through its instrument's `Contract` (pilot.exchange.okx.markets). Text OKX wrote (a client id
another client set, a reject reason) is untrusted: it goes where the models say it is untrusted.

What OKX's rows mean, in the port's words (pilot.exchange.models speaks Bybit V5's spelling, which every
adapter maps its venue into):

* an order's `state` live, partially_filled, filled, canceled, mmp_canceled is New, PartiallyFilled, Filled,
  Cancelled; its `ordType` limit is a GTC limit, post_only PostOnly, ioc and fok their time in force, market a
  market order;
* OKX's `fee` is signed the other way round from Bybit's: negative is a fee charged, positive a rebate;
* an algo order (orders-algo-pending) is a stop of the position: one with `closeFraction` 1 closes the whole
  position (StopLoss, or TakeProfit when it has no stop-loss leg), one with its own size is a partial stop
  (PartialStopLoss, PartialTakeProfit); a `trigger` order, or a conditional one that is not reduce-only,
  is a conditional order that may fill (Stop). On spot, where the coin held is the position, a conditional
  or oco algo is a TP/SL of the coin (tpslOrder: what a stop sent with a spot order becomes, docs-v5 "Place
  order", attachAlgoOrds), and a trigger order a conditional one (Stop). Its id is given as "algo:" and
  OKX's algoId, so a cancel knows which endpoint it goes to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.core.facts import InstrumentRules
from pilot.core.venues import StopScope
from pilot.core.violations import plain
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    Balance,
    BookLevel,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderBook,
    OrderRequest,
    PriceBand,
    Ticker,
)
from pilot.exchange.okx.markets import Contract, Named, pilot_client_id, wire_client_id

Row = dict[str, Any]
ALGO_PREFIX = "algo:"
STATES = {
    "live": "New",
    "partially_filled": "PartiallyFilled",
    "filled": "Filled",
    "canceled": "Cancelled",
    "mmp_canceled": "Cancelled",
}
TIME_IN_FORCE = {"limit": "GTC", "post_only": "PostOnly", "ioc": "IOC", "fok": "FOK", "market": "IOC"}
ORDER_TYPES = {"GTC": "limit", "PostOnly": "post_only", "IOC": "ioc", "FOK": "fok"}
ALGO_STATES = {"live": "Untriggered", "pause": "Untriggered", "partially_effective": "Triggered"}
STP_MODES = {"CancelMaker": "cancel_maker", "CancelTaker": "cancel_taker", "CancelBoth": "cancel_both"}


def dec(value: Any, default: Decimal | None = None) -> Decimal:
    """A decimal from OKX's text ("" and absent mean none: `default`, else ValueError)."""
    if value is None or value == "":
        if default is None:
            raise ValueError("an amount is missing")
        return default
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"not an amount: {value!r}") from None


def optional(value: Any) -> Decimal | None:
    return None if value in (None, "", "0") else dec(value)


def ms(value: Any) -> datetime:
    """OKX's millisecond timestamps ("1597026383085")."""
    return datetime.fromtimestamp(int(value or 0) / 1000, UTC)


def wire(amount: Decimal) -> str:
    """An amount as OKX takes it: plain digits, no exponent."""
    return plain(amount)


# ---- market data ---------------------------------------------------------------------------------------


def contract(row: Row) -> Contract:
    """An instrument's contract: ctVal coins (× ctMult) for a perpetual, 1 for spot."""
    if row.get("instType") != "SWAP":
        return Contract()
    return Contract(dec(row.get("ctVal")) * dec(row.get("ctMult"), Decimal(1)))


def instrument_rules(name: Named, row: Row, maintenance_margin_rate: Decimal) -> InstrumentRules:
    """InstrumentRules in coins from a /api/v5/public/instruments row: the lot (lotSz), the smallest order
    (minSz) and the largest limit order (maxLmtSz) are in contracts on a perpetual. OKX sets no minimum
    order value; a spot pair has no leverage and no liquidation."""
    unit = contract(row)
    spot = name.category == "spot"
    return InstrumentRules(
        symbol=name.symbol,
        category=name.category,
        tick_size=dec(row.get("tickSz")),
        qty_step=unit.coins(dec(row.get("lotSz"))),
        min_qty=unit.coins(dec(row.get("minSz"))),
        max_qty=unit.coins(dec(row.get("maxLmtSz"))),
        min_notional=Decimal(0),
        max_leverage=Decimal(1) if spot else dec(row.get("lever"), Decimal(1)),
        maintenance_margin_rate=Decimal(0) if spot else maintenance_margin_rate,
        base_coin=str(row.get("baseCcy") if spot else row.get("ctValCcy") or ""),
        quote_coin=str(row.get("quoteCcy") if spot else row.get("settleCcy") or "USDT"),
    )


def lowest_tier_mmr(tiers: list[Row], inst: str) -> Decimal | None:
    """The maintenance margin rate of an instrument's first tier (/api/v5/public/position-tiers): the
    tier numbered lowest among the rows of its instrument (or of its family, when rows name none)."""
    mine = [t for t in tiers if t.get("instId") in (inst, "", None)] or tiers
    if not mine:
        return None
    first = min(mine, key=lambda tier: int(tier.get("tier") or 10**9))
    return optional(first.get("mmr"))


def ticker(name: Named, row: Row, mark: Decimal | None) -> Ticker:
    return Ticker(
        symbol=name.symbol,
        category=name.category,
        bid=dec(row.get("bidPx")),
        ask=dec(row.get("askPx")),
        last=dec(row.get("last")),
        mark=mark,
        observed_at=ms(row.get("ts")),
    )


def orderbook(name: Named, row: Row, unit: Contract) -> OrderBook:
    """A /api/v5/market/books row: [price, size, deprecated, orders] levels, sizes in OKX's units."""

    def levels(entries: list[Any]) -> tuple[BookLevel, ...]:
        return tuple(BookLevel(price=dec(level[0]), size=unit.coins(dec(level[1]))) for level in entries)

    return OrderBook(
        symbol=name.symbol,
        category=name.category,
        bids=levels(row.get("bids") or []),
        asks=levels(row.get("asks") or []),
        observed_at=ms(row.get("ts")),
    )


def price_band(name: Named, row: Row) -> PriceBand:
    """/api/v5/public/price-limit: OKX rejects an order priced outside it on every instrument (51006)."""
    return PriceBand(
        symbol=name.symbol,
        category=name.category,
        buy_limit=dec(row.get("buyLmt")),
        sell_limit=dec(row.get("sellLmt")),
        outside="reject",
        observed_at=ms(row.get("ts")),
    )


# ---- account ---------------------------------------------------------------------------------------


def account_balance(row: Row) -> AccountBalance:
    """/api/v5/account/balance: `totalEq` in USD; each coin's cash balance (cashBal), its equity and USD
    value, and what orders and margin hold of it (cashBal - availBal). `availEq` at the top is the USD the
    account may still use (multi-currency and portfolio margin only: empty otherwise, not checked)."""
    coins = tuple(
        Balance(
            coin=str(detail.get("ccy", "")),
            wallet_balance=dec(detail.get("cashBal"), Decimal(0)),
            equity=dec(detail.get("eq"), Decimal(0)),
            usd_value=dec(detail.get("eqUsd"), Decimal(0)),
            locked=max(
                dec(detail.get("cashBal"), Decimal(0)) - dec(detail.get("availBal"), Decimal(0)), Decimal(0)
            ),
        )
        for detail in row.get("details") or []
    )
    available = row.get("availEq")
    return AccountBalance(
        total_equity_usd=dec(row.get("totalEq"), Decimal(0)),
        coins=coins,
        available_usd=dec(available) if available not in (None, "") else None,
    )


def api_key_info(row: Row) -> ApiKeyInfo:
    """/api/v5/account/config: `perm` ("read_only,trade,withdraw") and `ip` (the bound addresses, comma
    separated; "" when the key works from anywhere). As Group.Name: "OKX.read_only", "OKX.trade". The key is
    the main account's when its `uid` is the `mainUid` (a sub-account's uid differs); None when either is
    missing."""
    granted = tuple(sorted({p.strip() for p in str(row.get("perm") or "").split(",") if p.strip()}))
    ips = tuple(ip.strip() for ip in str(row.get("ip") or "").split(",") if ip.strip())
    uid, main = str(row.get("uid") or ""), str(row.get("mainUid") or "")
    return ApiKeyInfo(
        read_only="trade" not in granted,
        permissions={"OKX": granted},
        ips=ips,
        is_master=uid == main if uid and main else None,
    )


def signed_position(row: Row, unit: Contract) -> Decimal:
    """A net-mode position's size in coins: `pos` is signed in net mode (negative: short)."""
    return unit.coins(dec(row.get("pos"), Decimal(0)))


def whole_stop(row: Row) -> Decimal | None:
    """The position's whole stop-loss: the closeOrderAlgo that closes all of it (closeFraction 1)."""
    for algo in row.get("closeOrderAlgo") or []:
        if str(algo.get("closeFraction")) == "1" and optional(algo.get("slTriggerPx")) is not None:
            return optional(algo.get("slTriggerPx"))
    return None


def whole_target(row: Row) -> Decimal | None:
    for algo in row.get("closeOrderAlgo") or []:
        if str(algo.get("closeFraction")) == "1" and optional(algo.get("tpTriggerPx")) is not None:
            return optional(algo.get("tpTriggerPx"))
    return None


def exchange_position(name: Named, row: Row, unit: Contract) -> ExchangePosition:
    size = signed_position(row, unit)
    return ExchangePosition(
        symbol=name.symbol,
        category=name.category,
        size=size,
        entry_price=dec(row.get("avgPx"), Decimal(0)),
        mark_price=dec(row.get("markPx"), Decimal(0)),
        leverage=dec(row.get("lever"), Decimal(1)),
        unrealised_pnl=dec(row.get("upl"), Decimal(0)),
        liq_price=optional(row.get("liqPx")),
        position_value=abs(size) * dec(row.get("markPx"), Decimal(0)),
        stop_loss=whole_stop(row),
        take_profit=whole_target(row),
        settle_coin=str(row.get("ccy") or ""),
    )


# ---- orders ----------------------------------------------------------------------------------------


def _side(value: Any) -> str:
    return "Buy" if str(value).lower() == "buy" else "Sell"


def _attached(row: Row, key: str) -> Decimal | None:
    """A TP/SL attached to an order (attachAlgoOrds; older answers: the order's own fields)."""
    for algo in row.get("attachAlgoOrds") or []:
        if (price := optional(algo.get(key))) is not None:
            return price
    return optional(row.get(key))


def exchange_order(name: Named, row: Row, unit: Contract) -> ExchangeOrder:
    """An ordinary order (orders-pending, orders-history, order): sizes from contracts to coins. A spot
    market order sized in the quote coin (tgtCcy quote_ccy: `sz` is USDT) has no base quantity but what
    filled, which is its quantity here (Pilot never sends one; a human may have)."""
    state = str(row.get("state") or "")
    filled = unit.coins(dec(row.get("accFillSz"), Decimal(0)))
    fee = -dec(row.get("fee"), Decimal(0))
    fee_coin = str(row.get("feeCcy") or "")
    ord_type = str(row.get("ordType") or "")
    stop, target = _attached(row, "slTriggerPx"), _attached(row, "tpTriggerPx")
    return ExchangeOrder(
        order_id=str(row.get("ordId") or ""),
        order_link_id=pilot_client_id(str(row.get("clOrdId") or "")),
        symbol=name.symbol,
        category=name.category,
        side=_side(row.get("side")),
        order_type="Market" if ord_type == "market" else "Limit",
        price=dec(row.get("px"), Decimal(0)),
        qty=filled if row.get("tgtCcy") == "quote_ccy" else unit.coins(dec(row.get("sz"), Decimal(0))),
        cum_exec_qty=filled,
        avg_price=optional(row.get("avgPx")),
        cum_exec_fee=fee,
        status=STATES.get(state, state),
        time_in_force=TIME_IN_FORCE.get(ord_type, "GTC"),
        reduce_only=str(row.get("reduceOnly")).lower() == "true",
        reject_reason=str(row.get("cancelSourceReason") or ""),
        created_at=ms(row.get("cTime")),
        updated_at=ms(row.get("uTime") or row.get("cTime")),
        fee_coin=fee_coin,
        fees=((fee_coin, fee),) if fee_coin and fee else (),
        position_idx={"long": 1, "short": 2}.get(str(row.get("posSide")), 0),
        tpsl_mode="Partial" if stop is not None or target is not None else "",
        stop_loss=stop,
        take_profit=target,
    )


def algo_kind(row: Row) -> str:
    """What an algo order is to the port (see the module's docstring)."""
    stop = optional(row.get("slTriggerPx")) is not None
    whole = str(row.get("closeFraction")) == "1"
    reducing = whole or str(row.get("reduceOnly")).lower() == "true"
    tpsl = row.get("ordType") in ("conditional", "oco")
    if tpsl and row.get("instType") == "SPOT":
        return "tpslOrder"
    if not tpsl or not reducing:
        return "Stop"
    if whole:
        return "StopLoss" if stop else "TakeProfit"
    return "PartialStopLoss" if stop else "PartialTakeProfit"


def algo_order(name: Named, row: Row, unit: Contract) -> ExchangeOrder:
    """An algo order (orders-algo-pending) as the port's TP/SL or conditional order."""
    kind = algo_kind(row)
    stop, target = optional(row.get("slTriggerPx")), optional(row.get("tpTriggerPx"))
    if row.get("ordType") == "trigger":  # a trigger order: its own trigger, and the price it then places at
        trigger, limit = optional(row.get("triggerPx")), row.get("ordPx")
    else:  # a TP/SL: the stop-loss leg's trigger when it has one (the one that limits the loss)
        trigger = stop if stop is not None else target
        limit = row.get("slOrdPx") if stop is not None else row.get("tpOrdPx")
    market = str(limit) in ("-1", "", "None")  # OKX's -1: executed at market when triggered
    side = _side(row.get("side"))
    return ExchangeOrder(
        order_id=ALGO_PREFIX + str(row.get("algoId") or ""),
        order_link_id=pilot_client_id(str(row.get("algoClOrdId") or "")),
        symbol=name.symbol,
        category=name.category,
        side=side,
        order_type="Market" if market else "Limit",
        price=Decimal(0) if market else dec(limit, Decimal(0)),
        qty=unit.coins(dec(row.get("sz"), Decimal(0))),
        cum_exec_qty=Decimal(0),
        avg_price=None,
        cum_exec_fee=Decimal(0),
        status=ALGO_STATES.get(str(row.get("state")), str(row.get("state") or "")),
        time_in_force="GTC",
        reduce_only=kind != "Stop",
        reject_reason="",
        created_at=ms(row.get("cTime")),
        updated_at=ms(row.get("uTime") or row.get("cTime")),
        stop_order_type=kind,
        trigger_price=trigger,
        trigger_direction=_direction(kind, side, stop is not None),
        trigger_by={"mark": "MarkPrice", "index": "IndexPrice"}.get(
            str(row.get("slTriggerPxType") or row.get("tpTriggerPxType") or row.get("triggerPxType")),
            "LastPrice",
        ),
        tpsl_mode="Full" if str(row.get("closeFraction")) == "1" else "Partial",
        take_profit=target if kind != "Stop" else None,
        stop_loss=stop if kind != "Stop" else None,
        close_on_trigger=kind != "Stop",
    )


def _direction(kind: str, side: str, stop: bool) -> int:
    """1: triggers when the price rises to it, 2: when it falls. A sell's stop-loss falls to it, a sell's
    take-profit rises; a buy's the other way. A conditional (Stop) order's direction is not said."""
    if kind == "Stop":
        return 0
    falls = (side == "Sell") == stop
    return 2 if falls else 1


def execution(name: Named, row: Row, unit: Contract) -> Execution:
    """A /api/v5/trade/fills row: every row is a trade (OKX lists funding in the bills, never as a fill)."""
    return Execution(
        exec_id=str(row.get("tradeId") or row.get("billId") or ""),
        order_id=str(row.get("ordId") or ""),
        order_link_id=pilot_client_id(str(row.get("clOrdId") or "")),
        symbol=name.symbol,
        side=_side(row.get("side")),
        exec_price=dec(row.get("fillPx")),
        exec_qty=unit.coins(dec(row.get("fillSz"))),
        exec_fee=-dec(row.get("fee"), Decimal(0)),
        exec_time=ms(row.get("ts") or row.get("fillTime")),
        fee_coin=str(row.get("feeCcy") or ""),
    )


def closed_pnl(name: Named, rows: list[Row], unit: Contract) -> ClosedPnl:
    """What one order closed of a position, from its closing fills (fillPnl: the PnL each fill realised,
    before fees; the fees OKX charged are taken off, so closed_pnl is after fees as Bybit's is)."""
    first, last = rows[0], rows[-1]
    qty = sum((unit.coins(dec(r.get("fillSz"))) for r in rows), Decimal(0))
    value = sum((unit.coins(dec(r.get("fillSz"))) * dec(r.get("fillPx")) for r in rows), Decimal(0))
    pnl = sum((dec(r.get("fillPnl"), Decimal(0)) for r in rows), Decimal(0))
    fees = sum((dec(r.get("fee"), Decimal(0)) for r in rows), Decimal(0))  # negative: charged
    exit_price = value / qty if qty else Decimal(0)
    # The closing side sells a long: entry = exit - pnl/qty; a buy closes a short: entry = exit + pnl/qty.
    per_unit = pnl / qty if qty else Decimal(0)
    entry = exit_price - per_unit if _side(first.get("side")) == "Sell" else exit_price + per_unit
    times = sorted(ms(r.get("ts") or r.get("fillTime")) for r in rows)
    return ClosedPnl(
        symbol=name.symbol,
        order_id=str(first.get("ordId") or ""),
        side=_side(last.get("side")),
        qty=qty,
        closed_size=qty,
        avg_entry_price=entry,
        avg_exit_price=exit_price,
        closed_pnl=pnl + fees,
        order_type="Limit",
        exec_type="Trade",
        created_at=times[0],
        updated_at=times[-1],
    )


def closes(row: Row) -> bool:
    """Whether a fill realised PnL (closed some of a position): OKX sets fillPnl on those only."""
    return optional(row.get("fillPnl")) is not None


# ---- requests ----------------------------------------------------------------------------------------


def order_body(request: OrderRequest, inst: str, unit: Contract) -> Row:
    """The POST /api/v5/trade/order body for an OrderRequest: size in OKX's units (contracts on a perpetual),
    cross margin on a perpetual and cash on spot, net position mode (long/short mode is refused when
    positions are read), the stop and target attached for the order's size (attachAlgoOrds: OKX places them
    for what filled once the order is done, pilot.core.venues.OKX), executed at market when triggered.

    Raises:
        ValueError: the request asks for a stop scope OKX does not run, or a size no whole number of
            contracts (nothing is sent).
    """
    spot = request.category == "spot"
    body: Row = {
        "instId": inst,
        "tdMode": "cash" if spot else "cross",
        "side": request.side.lower(),
        "ordType": ORDER_TYPES[request.time_in_force],
        "sz": wire(unit.to_contracts(request.qty)),
        "px": wire(request.price),
        "clOrdId": wire_client_id(request.order_link_id),
    }
    if request.order_type != "Limit":
        raise ValueError("Pilot sends limit orders only (a market intent is a limit IOC)")
    if spot:
        body["tgtCcy"] = "base_ccy"
    if request.reduce_only:
        body["reduceOnly"] = True
    if request.stop_loss is not None or request.take_profit is not None:
        if request.stop_scope is not StopScope.ORDER:
            raise ValueError("OKX attaches a stop to the order's own size only (StopScope.ORDER)")
        body["attachAlgoOrds"] = [_attached_tpsl(request.stop_loss, request.take_profit)]
    if request.smp_type is not None:
        body["stpMode"] = STP_MODES[request.smp_type]
    return body


def _attached_tpsl(stop_loss: Decimal | None, take_profit: Decimal | None) -> Row:
    algo: Row = {}
    if stop_loss is not None:
        algo |= {"slTriggerPx": wire(stop_loss), "slOrdPx": "-1", "slTriggerPxType": "last"}
    if take_profit is not None:
        algo |= {"tpTriggerPx": wire(take_profit), "tpOrdPx": "-1", "tpTriggerPxType": "last"}
    return algo


def tpsl_legs(stop_loss: Decimal | None, take_profit: Decimal | None, *, new: bool) -> Row:
    """The legs of the whole-position algo order, as order-algo (new) or amend-algos (newSlTriggerPx...)
    take them; a leg asked away is sent as 0 to amend-algos (OKX: 0 deletes it)."""
    prefix = "new" if not new else ""

    def key(name: str) -> str:
        return prefix + name[0].upper() + name[1:] if prefix else name

    legs: Row = {}
    for leg, price in (("sl", stop_loss), ("tp", take_profit)):
        if price is None:
            continue
        legs[key(f"{leg}TriggerPx")] = wire(price)
        legs[key(f"{leg}OrdPx")] = "-1" if price else "0"
        if price and new:
            legs[f"{leg}TriggerPxType"] = "last"
    return legs


def client_algo_id(link_id: str) -> str:
    return wire_client_id(link_id)


def countdown_left(row: Row) -> float:
    """The seconds cancel-all-after's answer says are left: triggerTime less ts. OKX documents both in
    milliseconds, while its docs' example gives seconds ("1587971460" and "1587971400" for timeOut 60):
    a value of 12 digits or more is read as milliseconds."""
    trigger, now = int(str(row["triggerTime"])), int(str(row["ts"]))
    left = trigger - now
    return left / 1000 if max(trigger, now) >= 10**12 else float(left)
