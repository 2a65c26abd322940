"""The checks evaluate(policy, facts) runs, at plan time and again right before sending.

Each is a small function returning a Breach (a broken rule) or None, in the module of its family:
`admission` (who may trade what), `grid` (the instrument's grid), `caps` (the policy's caps), `acceptance`
(what the exchange and the approval path would refuse), `loss` (the loss rules), `pretrade` (the platform's
pre-trade controls, stated in pilot.core.controls) and `protective` (stops and take-profits). They read one
`Situation` (`situation`), worked out once per order. `registry.REGISTRY` registers each check once, in the
order they run; CHECKS, SIZE_CHECKS, which checks a policy leaves out, and this list are derived from it:

 1. check_listed              The exchange lists the instrument (unknownSymbol: terminal, never a retry).
 2. check_facts               Every fact the decision needs is present (missing: a growing order waits).
 3. check_trading_state       Halted refuses every new order; reducing anything that grows a position.
 4. check_allowed_market      Only allowedMarkets may grow (decided from the policy alone).
 5. check_authority           validUntil and maxSessionMinutes: past either, only what shrinks a position.
 6. check_reduce_only         A reduce-only order needs a position on the other side.
 7. check_message_rate        maxOrderMessagesPerSecond/Minute: one more message stays within the throttle.
 8. check_qty_step            Whole lot steps.
 9. check_price_tick          A limit price on the tick.
10. check_price_band          A limit price inside the exchange's price band.
11. check_price_collar        priceCollarPct/Ticks: a limit price no farther from mark than the collar.
12. check_min_qty             The instrument's minimum quantity.
13. check_max_qty             The instrument's maximum quantity per order.
14. check_reduce_only_qty     A reduce-only order no larger than the position (or than the minimum order).
15. check_min_notional        The instrument's minimum order value (reduce-only orders exempt, as on Bybit).
16. check_held_qty            A spot sell of coin held and not already offered in open sells.
17. check_resting_orders      maxRestingOrdersPerMarket and maxRestingOrders: a limit order rests.
18. check_daily_order_cap     Orders sent today (UTC) below dailyOrderCap.
19. check_order_notional      maxOrderNotionalUsd, at the worst fill.
20. check_position_notional   maxNotionalUsd on the coin's exposure the order leaves, at the worst fill.
21. check_turnover_day        maxTurnoverUsdPerDay: the notional sent since 00:00 UTC plus this order's.
22. check_turnover_24h        maxTurnoverUsd24h: as check_turnover_day, over the last 24 hours.
23. check_leverage            maxLeverage: the position it leaves over account equity.
24. check_liquidation         minLiquidationDistancePct: the estimated liquidation's distance from mark.
25. check_funds               The available balance pays for it (margin and fee; a spot buy's quote coin).
26. check_human_reach         An order that needs a human is not planned for a caller who cannot ask one.
27. check_trading_hours       tradingHours: a growing order only inside a UTC window (retry_after: the next).
28. check_daily_loss          dailyLossLimitUsd/Pct: the day's realised plus unrealised loss below the limit.
29. check_drawdown            maxDrawdownUsd/Pct: the equity's fall from its peak (the latch is the app's).
30. check_cooldown            cooldown: no growing order for a while after enough losing trades.
31. check_open_positions      maxOpenPositions: markets with a non-zero position, this order's included.
32. check_loss_per_trade      maxLossPerTradeUsd/Pct: the loss of the position it leaves, at its stops.
33. check_protection          requireStopLoss, and a stop_loss / take_profit on the right side of the price.

The caps, the loss rules, authority, drawdown and the cooldown judge only orders that can grow the
worst-case exposure (pilot.core.risk): shrinking risk is never refused by a cap. A reduce-only order grows it
when it would leave orders pending on its side free to open a larger position the other way (closing a long
under resting sells). The message throttles, the price collar and the resting orders judge every order: the
exchange counts every message, a limit price is a limit price, a limit order rests. The funds check exempts
only a reduce-only order, as Bybit does; protection requires a stop only of an order that can grow the
position and carry one (not a reduce-only order), and checks any stop an order carries.

A check registered with the fields it judges (`Registered.when`) passes at once while policy.json leaves them
all unset, and `checks_for` leaves it out then: an order judged without them pays nothing. Breaches of the
size codes (pilot.core.codes: size_cap and size_grid) carry no next action of their own: evaluate() gives
them all one size (at a price on the tick and inside the band) that satisfies every one of them at once (see
pilot.core.sizing).
"""

from pilot.core.rules.admission import GROWING_NEEDS, check_facts, check_listed, reduce_only_limit
from pilot.core.rules.loss import (
    DayLoss,
    day_loss,
    from_flat,
    judged_position,
    loss_limit,
    position_left,
)
from pilot.core.rules.pretrade import check_price_collar, price_collar
from pilot.core.rules.protective import collared_stop, stop_problem, stop_reference, take_profit_problem
from pilot.core.rules.registry import CHECKS, REGISTRY, SIZE_CHECKS, Check, Registered, checks_for
from pilot.core.rules.running import refused_only_for_pending, run_checks, size_breaches, without_cancelled
from pilot.core.rules.situation import (
    Situation,
    close_option,
    outlives,
    plan_args,
    retry_missing,
    situate,
)

__all__ = [
    "CHECKS",
    "GROWING_NEEDS",
    "REGISTRY",
    "SIZE_CHECKS",
    "Check",
    "DayLoss",
    "Registered",
    "Situation",
    "check_facts",
    "check_listed",
    "check_price_collar",
    "checks_for",
    "close_option",
    "collared_stop",
    "day_loss",
    "from_flat",
    "judged_position",
    "loss_limit",
    "outlives",
    "plan_args",
    "position_left",
    "price_collar",
    "reduce_only_limit",
    "refused_only_for_pending",
    "retry_missing",
    "run_checks",
    "situate",
    "size_breaches",
    "stop_problem",
    "stop_reference",
    "take_profit_problem",
    "without_cancelled",
]
