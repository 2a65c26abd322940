"""The paper exchange's WebSocket messages in Bybit's stream shapes, made from its REST views (views.py).

A push is not a REST row: Bybit's stream pages (websocket/private/*.mdx, websocket/public/*.mdx) and the
recorded messages in tests/fixtures/bybit_streams/ name other fields. What differs is written here, once:

* position: `entryPrice` where the list has `avgPrice` (the recorded pushes carry no avgPrice), `category`,
  "0" for an unset take-profit, stop-loss or trailing stop, and for a flat position's prices and values;
* order: `category`, `closedPnl` (the order's closed PnL so far), `feeCurrency` (deprecated, spot only);
* execution: `category`, `isLeverage`, `execPnl`, `feeCurrency` (the fee's coin on every category);
* wallet: the coin fields of the page (no `free`, `colRes`); pushed when the wallet changes, not when only
  the unrealised PnL moves ("The unrealised PnL change does not trigger an event");
* tickers: the stream's fields (a spot ticker has no bid and ask), `tickDirection`, a cross sequence `cs`;
* publicTrade and kline rows from the exchange's own trades and moves (history.py).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pilot.paper import views
from pilot.paper.engine import SimExecution, SimOrder
from pilot.paper.history import Bar, Print
from pilot.paper.scenario import InstrumentSpec

POSITION_DROPPED = ("avgPrice", "delta", "gamma", "vega", "theta")  # option-only greeks, REST's avgPrice
UNSET_AS_ZERO = ("takeProfit", "stopLoss", "trailingStop")
FLAT_ZEROS = ("entryPrice", "positionValue", "unrealisedPnl", "liqPrice")
ORDER_DROPPED = ("basePrice", "extraFees")
EXECUTION_DROPPED = ("execFeeV2",)
WALLET_COIN_DROPPED = ("free", "colRes")
LINEAR_TICKER_FIELDS = (
    "symbol",
    "tickDirection",
    "price24hPcnt",
    "lastPrice",
    "prevPrice24h",
    "highPrice24h",
    "lowPrice24h",
    "prevPrice1h",
    "markPrice",
    "indexPrice",
    "openInterest",
    "openInterestValue",
    "turnover24h",
    "volume24h",
    "fundingIntervalHour",
    "fundingCap",
    "nextFundingTime",
    "fundingRate",
    "bid1Price",
    "bid1Size",
    "ask1Price",
    "ask1Size",
    "preOpenPrice",
    "preQty",
    "curPreListingPhase",
)
SPOT_TICKER_FIELDS = (
    "symbol",
    "lastPrice",
    "highPrice24h",
    "lowPrice24h",
    "prevPrice24h",
    "volume24h",
    "turnover24h",
    "price24hPcnt",
    "usdIndexPrice",
)
KLINE_INTERVALS = {"1", "3", "5", "15", "30", "60", "120", "240", "360", "720", "D", "W", "M"}


def position(row: dict[str, Any]) -> dict[str, Any]:
    """A /v5/position/list row as the `position` topic pushes it."""
    push = {"category": "linear"} | {k: v for k, v in row.items() if k not in POSITION_DROPPED}
    push["entryPrice"] = row.get("avgPrice") or "0"
    for key in UNSET_AS_ZERO:
        push[key] = push.get(key) or "0"
    if not row.get("side"):
        push |= dict.fromkeys(FLAT_ZEROS, "0")
    return push


def order(view: dict[str, Any], sim: SimOrder, closed_pnl: Decimal) -> dict[str, Any]:
    """An order view as the `order` topic pushes it."""
    push = {"category": sim.category} | {k: v for k, v in view.items() if k not in ORDER_DROPPED}
    push["closedPnl"] = views.num(closed_pnl)
    push["feeCurrency"] = sim.fee_coin if sim.category == "spot" else ""
    return push


def execution(view: dict[str, Any], fill: SimExecution) -> dict[str, Any]:
    """An execution view as the `execution` topic pushes it."""
    push = {"category": fill.order.category} | {k: v for k, v in view.items() if k not in EXECUTION_DROPPED}
    push["isLeverage"] = "0"
    push["execPnl"] = views.num(fill.exec_pnl)
    push["feeCurrency"] = fill.fee_coin
    push["marketUnit"] = ""  # spot market orders' unit; "" elsewhere, as the documented linear push shows
    return push


FAST_FIELDS = ("category", "symbol", "execId", "execPrice", "execQty", "orderId", "isMaker", "orderLinkId")


def fast_execution(push: dict[str, Any]) -> dict[str, Any] | None:
    """An `execution` push row as `execution.fast` pushes it: trades only, fewer fields, a maker's link id ""
    (websocket/private/fast-execution.mdx); None for anything but a trade."""
    if push.get("execType") != "Trade":
        return None
    row = {k: push[k] for k in FAST_FIELDS}
    if row["isMaker"]:
        row["orderLinkId"] = ""
    return row | {"side": push["side"], "execTime": push["execTime"], "seq": push["seq"]}


def wallet(accounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wallet-balance accounts as the `wallet` topic pushes them."""
    return [
        account
        | {"coin": [{k: v for k, v in c.items() if k not in WALLET_COIN_DROPPED} for c in account["coin"]]}
        for account in accounts
    ]


def wallet_moved(accounts: list[dict[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """What a wallet push follows: each coin's balance, locked amount, order margin and realised PnL (a
    change of the unrealised PnL alone, and of what the marks value, is not pushed)."""
    keys = ("coin", "walletBalance", "locked", "totalOrderIM", "cumRealisedPnl", "borrowAmount")
    return tuple(tuple(str(c.get(k)) for k in keys) for account in accounts for c in account["coin"])


def ticker(view: dict[str, Any], category: str, direction: str) -> dict[str, Any]:
    """A REST ticker row with the stream's fields for its category."""
    if category == "spot":
        return {k: view[k] for k in SPOT_TICKER_FIELDS if k in view}
    data = {k: view.get(k, "") for k in LINEAR_TICKER_FIELDS}
    data["tickDirection"] = direction
    return data


def tick_direction(before: str | None, now: str, previous: str) -> str:
    """enum.mdx tickDirection: the last price up (PlusTick) or down (MinusTick) from the one before, or the
    same after a rise (ZeroPlusTick) or a fall (ZeroMinusTick)."""
    if before is None or Decimal(now) == Decimal(before):
        return "ZeroMinusTick" if previous in ("MinusTick", "ZeroMinusTick") else "ZeroPlusTick"
    return "PlusTick" if Decimal(now) > Decimal(before) else "MinusTick"


def trade(spec: InstrumentSpec, trade: Print, direction: str) -> dict[str, Any]:
    """One trade as the `publicTrade` topic pushes it (`L` on derivatives only)."""
    row: dict[str, Any] = {
        "T": trade.at_ms,
        "s": spec.symbol,
        "S": trade.side,
        "v": views.step(trade.qty, spec.qty_step),
        "p": views.step(trade.price, spec.tick_size),
    }
    if spec.category != "spot":
        row["L"] = direction
    return row | {"i": trade.exec_id, "BT": False, "RPI": False, "seq": trade.seq}


def kline(
    spec: InstrumentSpec, bar: Bar, interval: str, width_ms: int, confirm: bool, ts: int
) -> dict[str, Any]:
    """One bar as the `kline` topic pushes it; `confirm` once the bar has ended."""
    tick = spec.tick_size
    return {
        "start": bar.start_ms,
        "end": bar.start_ms + width_ms - 1,
        "interval": interval,
        "open": views.step(bar.open, tick),
        "close": views.step(bar.close, tick),
        "high": views.step(bar.high, tick),
        "low": views.step(bar.low, tick),
        "volume": views.num(bar.volume),
        "turnover": views.num(bar.turnover),
        "confirm": confirm,
        "timestamp": ts,
    }
