"""The closed set of codes an answer can carry, each in one group: agents and tests branch on these.

    Group          what fixes it                                   codes
    -------------  ----------------------------------------------  ----------------------------------------
    size_cap       a smaller order                                 maxOrderNotionalUsd, maxNotionalUsd,
                                                                   maxLeverage, minLiquidationDistancePct,
                                                                   instrument.maxOrderQty, reduceOnlyQty,
                                                                   account.availableBalance,
                                                                   account.heldQty, confirm.aboveNotionalUsd,
                                                                   maxLossPerTradeUsd, maxLossPerTradePct
    size_grid      a size or price on the instrument's grid,       instrument.qtyStep, instrument.tickSize,
                   at or above its minimums, inside its band       instrument.minOrderQty,
                                                                   instrument.minNotionalValue,
                                                                   instrument.priceBand
    blocker        no size: another order, waiting, or a human     tradingState, allowedMarkets, reduceOnly,
                                                                   dailyOrderCap, unknownSymbol,
                                                                   dailyLossLimitUsd, dailyLossLimitPct,
                                                                   maxOpenPositions, tradingHours,
                                                                   orderNotOpen
    protection     a stop-loss (or take-profit) price on the       requireStopLoss, stopLoss, takeProfit
                   right side of the price, as the answer gives
    facts          reading the exchange again                      facts
    policy         a human mending policy.json                     policy
    lifecycle      a fresh plan id                                 planNotFound, planExpired, planAlreadyUsed
    confirmation   a human's approval                              confirmationRequired,
                                                                   confirmationChannelUnavailable
    idempotency    another idempotency key, or waiting             idempotencyConflict, idempotencyInProgress
    keys           a human fixing the exchange key                 apiKeyPermissions
    wait           waiting for another process on this home        sendTurnBusy
    store          a human freeing disk space or repairing         storeUnavailable
                   Pilot's database
    account        a human changing the exchange account's         positionMode
                   settings (Pilot reads one-way positions only)
    arguments      the agent's own call, corrected as the answer   invalidArgument
                   says (nothing was judged or sent)

Sizing searches over the two size groups; "nothing fits" names a size_cap code.
"""

from __future__ import annotations

from enum import StrEnum


class Group(StrEnum):
    SIZE_CAP = "size_cap"
    SIZE_GRID = "size_grid"
    BLOCKER = "blocker"
    FACTS = "facts"
    POLICY = "policy"
    LIFECYCLE = "lifecycle"
    CONFIRMATION = "confirmation"
    IDEMPOTENCY = "idempotency"
    KEYS = "keys"
    WAIT = "wait"
    STORE = "store"
    ACCOUNT = "account"
    ARGUMENTS = "arguments"
    PROTECTION = "protection"


class Code(StrEnum):
    """Every code a violation can carry. The value is what answers and the journal show."""

    FACTS = "facts"
    TRADING_STATE = "tradingState"
    ALLOWED_MARKETS = "allowedMarkets"
    REDUCE_ONLY = "reduceOnly"
    REDUCE_ONLY_QTY = "reduceOnlyQty"
    UNKNOWN_SYMBOL = "unknownSymbol"
    PRICE_BAND = "instrument.priceBand"
    AVAILABLE_BALANCE = "account.availableBalance"
    HELD_QTY = "account.heldQty"
    CONFIRM_ABOVE = "confirm.aboveNotionalUsd"
    QTY_STEP = "instrument.qtyStep"
    TICK_SIZE = "instrument.tickSize"
    MIN_ORDER_QTY = "instrument.minOrderQty"
    MAX_ORDER_QTY = "instrument.maxOrderQty"
    MIN_NOTIONAL = "instrument.minNotionalValue"
    DAILY_ORDER_CAP = "dailyOrderCap"
    MAX_ORDER_NOTIONAL = "maxOrderNotionalUsd"
    MAX_NOTIONAL = "maxNotionalUsd"
    MAX_LEVERAGE = "maxLeverage"
    MIN_LIQUIDATION_DISTANCE = "minLiquidationDistancePct"
    POLICY = "policy"
    PLAN_NOT_FOUND = "planNotFound"
    PLAN_EXPIRED = "planExpired"
    PLAN_ALREADY_USED = "planAlreadyUsed"
    CONFIRMATION_REQUIRED = "confirmationRequired"
    CONFIRMATION_CHANNEL_UNAVAILABLE = "confirmationChannelUnavailable"
    IDEMPOTENCY_CONFLICT = "idempotencyConflict"
    IDEMPOTENCY_IN_PROGRESS = "idempotencyInProgress"
    API_KEY_PERMISSIONS = "apiKeyPermissions"
    SEND_TURN_BUSY = "sendTurnBusy"
    STORE_UNAVAILABLE = "storeUnavailable"
    POSITION_MODE = "positionMode"
    INVALID_ARGUMENT = "invalidArgument"
    MAX_LOSS_PER_TRADE_USD = "maxLossPerTradeUsd"
    MAX_LOSS_PER_TRADE_PCT = "maxLossPerTradePct"
    REQUIRE_STOP_LOSS = "requireStopLoss"
    STOP_LOSS = "stopLoss"
    TAKE_PROFIT = "takeProfit"
    DAILY_LOSS_LIMIT_USD = "dailyLossLimitUsd"
    DAILY_LOSS_LIMIT_PCT = "dailyLossLimitPct"
    MAX_OPEN_POSITIONS = "maxOpenPositions"
    TRADING_HOURS = "tradingHours"
    ORDER_NOT_OPEN = "orderNotOpen"

    @property
    def group(self) -> Group:
        return GROUP_OF[self]


GROUP_OF: dict[Code, Group] = {
    Code.FACTS: Group.FACTS,
    Code.TRADING_STATE: Group.BLOCKER,
    Code.ALLOWED_MARKETS: Group.BLOCKER,
    Code.REDUCE_ONLY: Group.BLOCKER,
    Code.REDUCE_ONLY_QTY: Group.SIZE_CAP,
    Code.UNKNOWN_SYMBOL: Group.BLOCKER,
    Code.PRICE_BAND: Group.SIZE_GRID,
    Code.AVAILABLE_BALANCE: Group.SIZE_CAP,
    Code.HELD_QTY: Group.SIZE_CAP,
    Code.CONFIRM_ABOVE: Group.SIZE_CAP,
    Code.QTY_STEP: Group.SIZE_GRID,
    Code.TICK_SIZE: Group.SIZE_GRID,
    Code.MIN_ORDER_QTY: Group.SIZE_GRID,
    Code.MAX_ORDER_QTY: Group.SIZE_CAP,
    Code.MIN_NOTIONAL: Group.SIZE_GRID,
    Code.DAILY_ORDER_CAP: Group.BLOCKER,
    Code.MAX_ORDER_NOTIONAL: Group.SIZE_CAP,
    Code.MAX_NOTIONAL: Group.SIZE_CAP,
    Code.MAX_LEVERAGE: Group.SIZE_CAP,
    Code.MIN_LIQUIDATION_DISTANCE: Group.SIZE_CAP,
    Code.POLICY: Group.POLICY,
    Code.PLAN_NOT_FOUND: Group.LIFECYCLE,
    Code.PLAN_EXPIRED: Group.LIFECYCLE,
    Code.PLAN_ALREADY_USED: Group.LIFECYCLE,
    Code.CONFIRMATION_REQUIRED: Group.CONFIRMATION,
    Code.CONFIRMATION_CHANNEL_UNAVAILABLE: Group.CONFIRMATION,
    Code.IDEMPOTENCY_CONFLICT: Group.IDEMPOTENCY,
    Code.IDEMPOTENCY_IN_PROGRESS: Group.IDEMPOTENCY,
    Code.API_KEY_PERMISSIONS: Group.KEYS,
    Code.SEND_TURN_BUSY: Group.WAIT,
    Code.STORE_UNAVAILABLE: Group.STORE,
    Code.POSITION_MODE: Group.ACCOUNT,
    Code.INVALID_ARGUMENT: Group.ARGUMENTS,
    Code.MAX_LOSS_PER_TRADE_USD: Group.SIZE_CAP,
    Code.MAX_LOSS_PER_TRADE_PCT: Group.SIZE_CAP,
    Code.REQUIRE_STOP_LOSS: Group.PROTECTION,
    Code.STOP_LOSS: Group.PROTECTION,
    Code.TAKE_PROFIT: Group.PROTECTION,
    Code.DAILY_LOSS_LIMIT_USD: Group.BLOCKER,
    Code.DAILY_LOSS_LIMIT_PCT: Group.BLOCKER,
    Code.MAX_OPEN_POSITIONS: Group.BLOCKER,
    Code.TRADING_HOURS: Group.BLOCKER,
    Code.ORDER_NOT_OPEN: Group.BLOCKER,
}


def codes_in(*groups: Group) -> frozenset[Code]:
    """Every code that belongs to one of `groups`."""
    return frozenset(code for code, group in GROUP_OF.items() if group in groups)


# A smaller order satisfies these: the room a position has left is bounded by them.
SIZE_CAP_CODES = codes_in(Group.SIZE_CAP)
# Any of these is fixed by one suggested size (and price on the tick) that satisfies them all at once.
RESIZE_CODES = codes_in(Group.SIZE_CAP, Group.SIZE_GRID)
# These are fixed by one stop-loss (and take-profit) that fits, with the size sized to pass (sizing.protect).
PROTECTION_CODES = codes_in(Group.PROTECTION)
