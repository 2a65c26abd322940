"""Funding: at each funding time a linear position pays or receives position value x rate, settled at the mark.

Bybit's conventions, as recorded (ccxt/ccxt ts/src/test/static/response/bybit.json at 04890d69ab3b: the
`fetchFundingHistory` answer of GET /v5/execution/list, LTCUSDT, and the `fetchLedger` transaction-log row
of type SETTLEMENT): a positive rate makes longs pay shorts; the settlement is an execution row with
`execType` "Funding", `execPrice` the mark at the funding time, `execQty` the position's size,
`execValue` their product, `feeRate` the rate, and `execFee` the signed amount, positive when paid (a long
at a positive rate) and negative when received; `orderType` and `stopOrderType` "UNKNOWN", `orderLinkId`,
`createType` and `feeCurrency` "", `orderPrice`, `orderQty`, `leavesQty` and `closedSize` "0", `isMaker`
false, `execTime` on the interval's grid (00:00, 08:00, 16:00 UTC). The wallet balance moves by the
opposite of `execFee`, and so does the position's realised PnL.

Each row carries an order of its own that no order list shows (Bybit's rows carry an orderId that names no
order either), so the engine's views write the row like any other execution.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from pilot.paper.accounts import SETTLE_COIN, ZERO
from pilot.paper.engine import Engine, SimExecution, SimOrder

FUNDING = "Funding"


def settle(engine: Engine, symbol: str, rate: Decimal, at_ms: int) -> SimExecution | None:
    """Settle one funding time on `symbol`'s position (one-way; hedge legs are shown, not traded)."""
    position = engine.accounts.positions.get(symbol)
    if position is None or position.size == 0 or rate == 0 or symbol in engine.hedge_symbols:
        return None
    mark = engine.market.quote(symbol).mark
    fee = position.size * mark * rate  # signed: a long pays at a positive rate, a short receives
    accounts = engine.accounts
    accounts.wallet[SETTLE_COIN] = accounts.wallet.get(SETTLE_COIN, ZERO) - fee
    position.cur_realised_pnl -= fee
    position.cum_realised_pnl -= fee
    position.updated_ms = at_ms
    side = "Buy" if position.size > 0 else "Sell"
    order = SimOrder(
        str(uuid.uuid4()), "", "linear", symbol, side, "UNKNOWN", ZERO, ZERO, "", False, at_ms, at_ms,
        status="Filled",
        create_type="",
    )  # fmt: skip
    row = SimExecution(
        str(uuid.uuid4()), order, mark, abs(position.size), fee, rate, SETTLE_COIN, False, mark, ZERO, at_ms,
        next(engine.seq), ZERO, ZERO,
        exec_type=FUNDING,
    )  # fmt: skip
    engine.executions.append(row)
    return row
