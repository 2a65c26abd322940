"""Liquidation: a position whose mark reaches its liqPrice is taken over and closed at its bankruptcy price.

The trigger is the liqPrice the paper exchange already serves on /v5/position/list
(`Accounts.liq_price`: pilot.core.valuation.liquidation_price on the account's USDT equity, the cross-margin
estimate position.mdx describes): a long is liquidated when its mark falls to it, a short when its mark
rises to it. What follows is Bybit's takeover (enum.mdx): every open linear order of the account is
cancelled first to free margin (`cancelType` CancelAllBeforeLiq), then the liquidation engine closes the
whole position with an order of its own (`createType` CreateByTakeOver_PassThrough, reduce-only, no
orderLinkId) filled at the bankruptcy price: its executions carry `execType` BustTrade and its
/v5/position/closed-pnl row `execType` BustTrade (closed-pnl.mdx lists it). The position's TP/SL go with
it, as on any close.

The bankruptcy price is where the account's equity would be gone once the fee to close there is paid
(Bybit charges the closing fee at the bankruptcy price): E + q (B - P) = t |q| B, the core's liquidation
equation with the taker fee rate t in the place of the maintenance margin rate. Rounded to the tick in the
trader's favour, so the wallet is left at zero or a hair above, never below. Bybit's insurance fund keeps
the maintenance margin between the two prices; the paper exchange has none to keep.
"""

from __future__ import annotations

import dataclasses
import uuid
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from pilot.core.valuation import liquidation_price
from pilot.paper.accounts import SimPosition
from pilot.paper.engine import Engine, SimOrder
from pilot.paper.market import floor_to

BUST_TRADE = "BustTrade"
TAKEOVER = "CreateByTakeOver_PassThrough"
CANCEL_BEFORE_LIQ = "CancelAllBeforeLiq"


def liquidate_due(engine: Engine) -> list[str]:
    """Liquidate every position whose mark has reached its liqPrice (one may bring the next: they share the
    account's equity); returns the symbols liquidated, in order."""
    done: list[str] = []
    for _ in range(len(engine.accounts.positions)):
        symbol = next((s for s in engine.accounts.positions if due(engine, s)), None)
        if symbol is None:
            break
        liquidate(engine, symbol)
        done.append(symbol)
    return done


def due(engine: Engine, symbol: str) -> bool:
    position = engine.accounts.positions[symbol]
    if position.size == 0 or symbol in engine.hedge_symbols:
        return False
    level = engine.accounts.liq_price(position)
    if level is None:
        return False
    mark = engine.market.quote(symbol).mark
    return mark <= level if position.size > 0 else mark >= level


def bankruptcy_price(engine: Engine, position: SimPosition) -> Decimal:
    """The price that leaves the account's USDT equity at the fee to close there (see the module docstring)."""
    mark = engine.market.quote(position.symbol).mark
    tick = engine.instruments[("linear", position.symbol)].tick_size
    level = liquidation_price(position.size, mark, engine.accounts.settle_equity(), engine.taker_fee)
    if level is None:  # not reached when due(): a position with a liqPrice has a bankruptcy price
        return mark
    rounding = ROUND_CEILING if position.size > 0 else ROUND_FLOOR
    return (level / tick).to_integral_value(rounding=rounding) * tick


def liquidate(engine: Engine, symbol: str) -> SimOrder:
    """Take the position over: cancel the account's open linear orders, close it at its bankruptcy price."""
    for order in list(engine.open_orders.values()):
        if order.category == "linear":
            engine.cancel_rest(order, "EC_NoError", cancel_type=CANCEL_BEFORE_LIQ)
    position = engine.accounts.positions[symbol]
    instrument = engine.instruments[("linear", symbol)]
    price = bankruptcy_price(engine, position)
    now = engine.clock_ms()
    last = floor_to(engine.market.quote(symbol).mid, instrument.tick_size)
    side = "Sell" if position.size > 0 else "Buy"
    order = SimOrder(
        str(uuid.uuid4()), "", "linear", symbol, side, "Market", price, abs(position.size), "IOC", True,
        now, now,
        last_price_on_created=last,
        create_type=TAKEOVER,
    )  # fmt: skip
    engine.add_order(order)
    fills, rows = len(engine.executions), len(engine.closed_pnl)
    engine._fill(instrument, order, price, order.qty, maker=False)
    for index in range(fills, len(engine.executions)):
        engine.executions[index] = dataclasses.replace(engine.executions[index], exec_type=BUST_TRADE)
    for row in engine.closed_pnl[rows:]:
        row.exec_type = BUST_TRADE
    return order
