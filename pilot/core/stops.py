"""set_trading_stop judged: a stop moved closer or added is always allowed; moved away or removed, it must
keep the position's loss at the stop within maxLossPerTradeUsd/Pct, and requireStopLoss keeps one in place."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.policy import Policy
from pilot.core.rules import TAKER_FEE
from pilot.core.valuation import ceil_to_step, floor_to_step
from pilot.core.violations import NextAction, Violation, plain, usd

ZERO = Decimal(0)


def position_loss_at_stop(size: Decimal, entry: Decimal, stop: Decimal) -> Decimal:
    """What a position loses from its entry if its stop is hit, with the taker fee both ways (as a trade)."""
    move = entry - stop if size > 0 else stop - entry
    return abs(size) * (move + TAKER_FEE * (entry + stop))


def loosens(size: Decimal, current: Decimal | None, new: Decimal | None) -> bool:
    """Whether the new stop (None: removed) lets the position lose more than the current one."""
    if current is None:
        return False  # adding a stop where there was none only ever limits the loss
    if new is None:
        return True
    return new < current if size > 0 else new > current


def check_trading_stop(
    policy: Policy,
    symbol: str,
    size: Decimal,
    entry: Decimal,
    equity: Decimal | None,
    current: Decimal | None,
    new: Decimal | None,
    tick: Decimal,
) -> list[Violation]:
    """Violations of moving a position's stop from `current` to `new` (None: no stop / removed)."""
    if size == 0 or not loosens(size, current, new):
        return []
    limits = policy.limits_for(symbol)
    keep = {"symbol": symbol, "stop_loss": plain(current)} if current is not None else None
    if new is None and limits.require_stop_loss:
        return [
            Violation(
                Code.REQUIRE_STOP_LOSS,
                "a stop_loss",
                "none",
                "policy.json requires a stop on every position; it cannot be removed",
                _keep(keep, "keep the stop where it is"),
            )
        ]
    caps = []
    if limits.max_loss_per_trade_usd is not None:
        caps.append((limits.max_loss_per_trade_usd, Code.MAX_LOSS_PER_TRADE_USD))
    if limits.max_loss_per_trade_pct is not None and equity is not None:
        caps.append((max(equity, ZERO) * limits.max_loss_per_trade_pct / 100, Code.MAX_LOSS_PER_TRADE_PCT))
    if not caps:
        return []
    cap, rule = min(caps, key=lambda pair: pair[0])
    if new is not None and position_loss_at_stop(size, entry, new) <= cap:
        return []
    farthest = stop_for_position(size, entry, cap, tick)
    loss = (
        "unbounded"
        if new is None
        else plain(position_loss_at_stop(size, entry, new).quantize(Decimal("0.01")))
    )
    detail = (
        f"without a stop the {plain(abs(size))} {symbol} position's loss is unbounded, above the {usd(cap)} a trade may lose"
        if new is None
        else f"a stop at {plain(new)} would let the {plain(abs(size))} {symbol} position lose ${loss} from its "
        f"entry {plain(entry)}, above the {usd(cap)} a trade may lose"
    )
    if farthest is not None:
        args = {"symbol": symbol, "stop_loss": plain(farthest)}
        action = NextAction.call("set_trading_stop", args, f"move the stop no farther than {plain(farthest)}")
    else:
        action = _keep(keep, "keep the stop where it is: no farther stop fits the loss limit")
    return [Violation(rule, plain(cap.quantize(Decimal("0.01"))), loss, detail, action)]


def stop_for_position(size: Decimal, entry: Decimal, cap: Decimal, tick: Decimal) -> Decimal | None:
    """The farthest stop at which the position loses at most `cap` (on the tick towards the entry)."""
    qty, fee = abs(size), TAKER_FEE
    if size > 0:
        stop = max(ceil_to_step((entry * (1 + fee) - cap / qty) / (1 - fee), tick), tick)
        return stop if stop < entry else None
    stop = floor_to_step((cap / qty + entry * (1 - fee)) / (1 + fee), tick)
    return stop if stop > entry else None


def _keep(args: dict[str, str] | None, text: str) -> NextAction:
    if args is None:
        return NextAction.stop(text, human="raise maxLossPerTradeUsd/Pct in policy.json")
    return NextAction.call("set_trading_stop", args, text)
