"""The closed set of codes an answer can carry: each declared once, with everything known about it.

A `Code` member carries its value (what answers and the journal show), its `Group` (what kind of change
fixes it), the sentence the table in docs/refusals.md gives, and, for a size cap, the `Cap`: what "nothing
fits" calls it and what only a human can change. Every other table (the groups' code sets, sizing's names,
the tables in docs/refusals.md, rendered by `code_tables`) is derived from these declarations. Agents and
tests branch on the code, never on the sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pilot.core.channels import REACH_A_HUMAN


class Group(StrEnum):
    """What kind of change fixes a code; sizing searches over the two size groups."""

    SIZE_CAP = "size_cap", "a smaller order"
    SIZE_GRID = (
        "size_grid",
        "a size or price on the instrument's grid, at or above its minimums, inside its band",
    )
    BLOCKER = "blocker", "no size: another order, waiting, or a human"
    PROTECTION = (
        "protection",
        "a stop-loss (or take-profit) price on the right side of the price, as the answer gives",
    )
    FACTS = "facts", "reading the exchange again"
    POLICY = "policy", "a human mending policy.json"
    LIFECYCLE = "lifecycle", "a fresh plan id"
    CONFIRMATION = "confirmation", "a human's approval"
    IDEMPOTENCY = "idempotency", "another idempotency key, or waiting"
    KEYS = "keys", "a human fixing the exchange key"
    WAIT = "wait", "waiting for another process on this home"
    STORE = "store", "a human freeing disk space or repairing Pilot's database"
    ACCOUNT = (
        "account",
        "a human changing the exchange account's settings (Pilot reads one-way positions only)",
    )
    ARGUMENTS = "arguments", "the agent's own call, corrected as the answer says (nothing was judged or sent)"
    AGENT = "agent", "a human giving the agent another role or a new credential (`pilot agent add`)"

    fixed_by: str

    def __new__(cls, value: str, fixed_by: str = "") -> Group:
        member = str.__new__(cls, value)
        member._value_ = value
        member.fixed_by = fixed_by
        return member


# What a size cap's "nothing fits" says a human can change when the cap declares nothing of its own.
NO_HUMAN_FIX = "nothing in policy.json: the exchange's own limit decides"


@dataclass(frozen=True, slots=True)
class Cap:
    """A size cap as "nothing fits" names it: `name` in "no order fits under {name}", `human` what only a
    human can change to make room (`{symbol}` is filled in)."""

    name: str
    human: str = NO_HUMAN_FIX


class Code(StrEnum):
    """Every code a violation can carry, declared once: value, group, the reference's sentence, the cap.

    `Code("maxNotionalUsd")` looks a member up by its value, as for any enum; the other arguments of
    `__new__` are the declaration's and have no use outside this class.
    """

    MAX_ORDER_NOTIONAL = (
        "maxOrderNotionalUsd",
        Group.SIZE_CAP,
        "the order at its worst fill is above the per-order cap",
        Cap(
            "the per-order cap",
            "raise maxOrderNotionalUsd (or markets.{symbol}.maxOrderNotionalUsd) in policy.json",
        ),
    )
    MAX_NOTIONAL = (
        "maxNotionalUsd",
        Group.SIZE_CAP,
        "the coin's exposure the order leaves (worst case, linear and spot together) is above the cap",
        Cap("the cap", "raise maxNotionalUsd (or markets.{symbol}.maxNotionalUsd) in policy.json"),
    )
    MAX_LEVERAGE = (
        "maxLeverage",
        Group.SIZE_CAP,
        "the position it leaves is above this multiple of equity",
        Cap("the leverage limit", "raise maxLeverage in policy.json, or add equity to the account"),
    )
    MIN_LIQUIDATION_DISTANCE = (
        "minLiquidationDistancePct",
        Group.SIZE_CAP,
        "the estimated liquidation would sit too close to mark",
        Cap(
            "the liquidation-distance minimum",
            "lower minLiquidationDistancePct in policy.json, or add equity to the account",
        ),
    )
    MAX_ORDER_QTY = (
        "instrument.maxOrderQty",
        Group.SIZE_CAP,
        "above the exchange's largest order",
        Cap("the instrument's maximum order", "nothing in policy.json: the exchange sets the largest order"),
    )
    REDUCE_ONLY_QTY = (
        "reduceOnlyQty",
        Group.SIZE_CAP,
        "a reduce-only order larger than the position (or than the minimum order, for dust)",
        Cap("the position"),
    )
    AVAILABLE_BALANCE = (
        "account.availableBalance",
        Group.SIZE_CAP,
        "the account cannot pay for it: margin at the position's leverage plus the fee, or a spot buy's quote coin",
        Cap(
            "the account's available balance", "add funds to the account, or close positions that hold margin"
        ),
    )
    HELD_QTY = (
        "account.heldQty",
        Group.SIZE_CAP,
        "a spot sell of more coin than is held and not already offered",
        Cap("the coin held", "nothing: the coin held is all there is to sell"),
    )
    CONFIRM_ABOVE = (
        "confirm.aboveNotionalUsd",
        Group.SIZE_CAP,
        "it would need a human's approval and this client cannot ask one",
        Cap("the size a human must approve", REACH_A_HUMAN),
    )
    MAX_LOSS_PER_TRADE_USD = (
        "maxLossPerTradeUsd",
        Group.SIZE_CAP,
        "the position the action leaves would lose more than this at the stops Bybit will then apply (a stop sent with an order becomes the whole position's; orders pending on its side fill too; partial stops close their own size), from its entry with taker fees both ways; a stop moved away, cancelled or removed is judged the same way; the answer gives the size that fits, or the stop that fits",
        Cap("the loss a trade may take at its stop", "raise maxLossPerTradeUsd in policy.json"),
    )
    MAX_LOSS_PER_TRADE_PCT = (
        "maxLossPerTradePct",
        Group.SIZE_CAP,
        "as above, with the limit a share of equity",
        Cap(
            "the loss a trade may take at its stop",
            "raise maxLossPerTradePct in policy.json, or add equity to the account",
        ),
    )
    MAX_TURNOVER_DAY = (
        "maxTurnoverUsdPerDay",
        Group.SIZE_CAP,
        'the notional of the orders Pilot sent since 00:00 UTC (a resting order in full, an IOC one what it filled, one whose outcome is unknown in full) plus this one at its worst fill is above the cap; "nothing fits" carries `retry_after` (00:00 UTC)',
        Cap("the day's turnover", "raise maxTurnoverUsdPerDay in policy.json, or wait until 00:00 UTC"),
    )
    MAX_TURNOVER_24H = (
        "maxTurnoverUsd24h",
        Group.SIZE_CAP,
        "as above, over the last 24 hours; `retry_after` is when the oldest order counted leaves the window",
        Cap("the last 24 hours' turnover", "raise maxTurnoverUsd24h in policy.json, or wait"),
    )
    QTY_STEP = (
        "instrument.qtyStep",
        Group.SIZE_GRID,
        "not a whole number of lot steps",
    )
    TICK_SIZE = (
        "instrument.tickSize",
        Group.SIZE_GRID,
        "a limit price off the tick",
    )
    MIN_ORDER_QTY = (
        "instrument.minOrderQty",
        Group.SIZE_GRID,
        "below the exchange's smallest order",
    )
    MIN_NOTIONAL = (
        "instrument.minNotionalValue",
        Group.SIZE_GRID,
        "below the exchange's smallest order value (reduce-only orders are exempt)",
    )
    PRICE_BAND = (
        "instrument.priceBand",
        Group.SIZE_GRID,
        "a limit price outside the band the exchange accepts now",
    )
    PRICE_COLLAR = (
        "priceCollar",
        Group.SIZE_GRID,
        "a limit price farther from mark than `priceCollarPct` / `priceCollarTicks` on the side where a mistake costs money (above mark for a buy, below it for a sell); the next action is the same order at the collar's edge",
    )
    TRADING_STATE = (
        "tradingState",
        Group.BLOCKER,
        "halted (only cancels), or reducing (only what shrinks a position)",
    )
    ALLOWED_MARKETS = (
        "allowedMarkets",
        Group.BLOCKER,
        "the symbol is not allowed to grow (decided from the policy alone)",
    )
    REDUCE_ONLY = (
        "reduceOnly",
        Group.BLOCKER,
        "a reduce-only order with no position on the other side",
    )
    DAILY_ORDER_CAP = (
        "dailyOrderCap",
        Group.BLOCKER,
        "the day's orders are used up (`retry_after` is 00:00 UTC)",
    )
    UNKNOWN_SYMBOL = (
        "unknownSymbol",
        Group.BLOCKER,
        "the exchange lists no such instrument in that category",
    )
    DAILY_LOSS_LIMIT_USD = (
        "dailyLossLimitUsd",
        Group.BLOCKER,
        "the day's realised PnL since 00:00 UTC plus the unrealised PnL now, on every product ([The day's loss](policy.md#the-days-loss)), is a loss at or past the limit; trading turns `reducing` until 00:00 UTC (`retry_after`) or `pilot loss-limit reset`, and the agent's resting orders that could grow are cancelled",
    )
    DAILY_LOSS_LIMIT_PCT = (
        "dailyLossLimitPct",
        Group.BLOCKER,
        "as above, with the limit a share of the day's starting equity",
    )
    MAX_OPEN_POSITIONS = (
        "maxOpenPositions",
        Group.BLOCKER,
        "the order would open a position in one market more than allowed (options: `close_position` for the others)",
    )
    ORDER_NOT_OPEN = (
        "orderNotOpen",
        Group.BLOCKER,
        "`plan_amend` (or its `place_order`) names no open order or a TP/SL or conditional one, a total at or below what has filled, or changes nothing",
    )
    NO_POSITION = (
        "noPosition",
        Group.BLOCKER,
        "`set_trading_stop` on a market with no position: Bybit keeps a stop only on a position (a new one's stop goes with `plan_order`'s `stop_loss`)",
    )
    TRADING_HOURS = (
        "tradingHours",
        Group.BLOCKER,
        "outside the UTC trading windows (`retry_after` is the next opening)",
    )
    MAX_ORDER_MESSAGES_PER_SECOND = (
        "maxOrderMessagesPerSecond",
        Group.BLOCKER,
        "this home sent that many creates, amends and cancels in the last second, by every process (Bybit counts per account in a rolling window); `retry_after` is when one leaves the window; it binds reducing actions too",
    )
    MAX_ORDER_MESSAGES_PER_MINUTE = (
        "maxOrderMessagesPerMinute",
        Group.BLOCKER,
        "as above, in the last minute",
    )
    MAX_RESTING_ORDERS_PER_MARKET = (
        "maxRestingOrdersPerMarket",
        Group.BLOCKER,
        "an order that would rest (a limit order) while that many ordinary orders rest on its market; a market order, or `close_position`, never rests",
    )
    MAX_RESTING_ORDERS = (
        "maxRestingOrders",
        Group.BLOCKER,
        "as above, in total on the account",
    )
    MAX_DRAWDOWN_USD = (
        "maxDrawdownUsd",
        Group.BLOCKER,
        "the equity is that far below its peak of the UTC day (or of `drawdownWindowHours`), as Pilot read it (any read: a judgement's, `get_policy`'s, `get_balances`', the wallet stream's); trading turns `reducing` until the window passes (`retry_after`) or `pilot drawdown reset`, and the agent's resting orders that could grow are cancelled",
    )
    MAX_DRAWDOWN_PCT = (
        "maxDrawdownPct",
        Group.BLOCKER,
        "as above, with the limit a share of the peak",
    )
    COOLDOWN = (
        "cooldown",
        Group.BLOCKER,
        "the last `cooldown.afterLosses` closed trades, on every product, were losses (in a row, or within `withinMinutes`): no growing order for `cooldown.minutes` from when Pilot saw it (`retry_after`), and the agent's resting orders that could grow are cancelled",
    )
    VALID_UNTIL = (
        "validUntil",
        Group.BLOCKER,
        "the authority policy.json gives expired at `validUntil` (UTC): only what shrinks a position works until a human extends it",
    )
    MAX_SESSION_MINUTES = (
        "maxSessionMinutes",
        Group.BLOCKER,
        "this MCP session is older than `maxSessionMinutes`: only what shrinks a position works in it",
    )
    REQUIRE_STOP_LOSS = (
        "requireStopLoss",
        Group.PROTECTION,
        "a growing order without a `stop_loss`; the next action adds one that fits",
    )
    STOP_LOSS = (
        "stopLoss",
        Group.PROTECTION,
        "the `stop_loss` is off the tick or not beyond the order's price, the mark and the touch (below all three for a buy)",
    )
    TAKE_PROFIT = (
        "takeProfit",
        Group.PROTECTION,
        "the `take_profit` is off the tick or on the wrong side of the order's price",
    )
    PRICE_COLLAR_STOP = (
        "priceCollar.stopLoss",
        Group.PROTECTION,
        "a `stop_loss` (of a growing order, or moved away by `set_trading_stop`) farther from mark than the price collar; the next action puts it at the collar's edge",
    )
    FACTS = (
        "facts",
        Group.FACTS,
        "a fact could not be read (`retry_after`); risk-reducing orders still work",
    )
    POLICY = (
        "policy",
        Group.POLICY,
        "policy.json is invalid; only orders that shrink a position work",
    )
    PLAN_NOT_FOUND = (
        "planNotFound",
        Group.LIFECYCLE,
        "no such plan (or one an older Pilot wrote)",
    )
    PLAN_EXPIRED = (
        "planExpired",
        Group.LIFECYCLE,
        "the plan's time ran out",
    )
    PLAN_ALREADY_USED = (
        "planAlreadyUsed",
        Group.LIFECYCLE,
        "a plan works once",
    )
    CONFIRMATION_REQUIRED = (
        "confirmationRequired",
        Group.CONFIRMATION,
        "a human became necessary after the call came in",
    )
    CONFIRMATION_CHANNEL_UNAVAILABLE = (
        "confirmationChannelUnavailable",
        Group.CONFIRMATION,
        "a human is needed and cannot be asked",
    )
    IDEMPOTENCY_CONFLICT = (
        "idempotencyConflict",
        Group.IDEMPOTENCY,
        "the key was used with other arguments",
    )
    IDEMPOTENCY_IN_PROGRESS = (
        "idempotencyInProgress",
        Group.IDEMPOTENCY,
        "the key's first call is still running",
    )
    API_KEY_PERMISSIONS = (
        "apiKeyPermissions",
        Group.KEYS,
        "the exchange key may do more than Pilot allows, or could not be checked",
    )
    VENUE_BACKSTOP = (
        "venueBackstop",
        Group.WAIT,
        "the venue's own dead-man's switch (OKX's cancel-all-after) is not known to be running: growing "
        "orders wait for Pilot's next renewal",
    )
    SEND_TURN_BUSY = (
        "sendTurnBusy",
        Group.WAIT,
        "another Pilot process on this home held the send turn too long",
    )
    STORE_UNAVAILABLE = (
        "storeUnavailable",
        Group.STORE,
        "Pilot's database failed (a full disk, an I/O error)",
    )
    AGENT_READ_ONLY = (
        "agentReadOnly",
        Group.AGENT,
        "the agent's credential has role read: it may read, never plan, send, cancel or change a setting; nothing was sent",
    )
    AGENT_REDUCE_ONLY = (
        "agentReduceOnly",
        Group.AGENT,
        "the agent's credential has role reduce: it may close, cancel and send reduce-only orders, never open or add; nothing was sent",
    )
    AGENT_REVOKED = (
        "agentRevoked",
        Group.AGENT,
        "the agent's credential was revoked (`pilot agent revoke`) or is not this home's; nothing was sent",
    )
    POSITION_MODE = (
        "positionMode",
        Group.ACCOUNT,
        "the symbol is held in hedge mode; Pilot reads one-way positions only",
    )
    INVALID_ARGUMENT = (
        "invalidArgument",
        Group.ARGUMENTS,
        "the call itself is wrong (a number for an amount, an unknown or missing argument, a value outside an enum): an error result naming `field`, with the fixed call when Pilot can tell it; nothing was judged",
    )

    group: Group
    refused_because: str
    cap: Cap | None

    def __new__(
        cls, value: str, group: Group | None = None, refused_because: str = "", cap: Cap | None = None
    ) -> Code:
        if group is None:
            raise TypeError(f"code {value!r} is declared without a group")
        member = str.__new__(cls, value)
        member._value_ = value
        member.group = group
        member.refused_because = refused_because
        member.cap = cap
        return member


def codes_in(*groups: Group) -> frozenset[Code]:
    """Every code that belongs to one of `groups`."""
    return frozenset(code for code in Code if code.group in groups)


def code_tables() -> str:
    """The tables of groups and codes in docs/refusals.md, rendered from the declarations
    (tests/core/test_codes.py holds the page to them; scripts/regenerate-code-table writes them)."""
    groups = [
        "| Group | Fixed by |",
        "|---|---|",
        *(f"| {group.value} | {group.fixed_by} |" for group in Group),
    ]
    codes = ["| Code | Group | Refused because |", "|---|---|---|"]
    for code in Code:
        because = code.refused_because.replace("|", "\\|")  # a bar inside a cell is escaped in Markdown
        codes.append(f"| `{code.value}` | {code.group.value} | {because} |")
    return "\n".join([*groups, "", *codes])


# A smaller order satisfies these: the room a position has left is bounded by them.
SIZE_CAP_CODES = codes_in(Group.SIZE_CAP)
# Any of these is fixed by one suggested size (and price on the tick) that satisfies them all at once.
RESIZE_CODES = codes_in(Group.SIZE_CAP, Group.SIZE_GRID)
# These are fixed by one stop-loss (and take-profit) that fits, with the size sized to pass (sizing.protect).
PROTECTION_CODES = codes_in(Group.PROTECTION)
