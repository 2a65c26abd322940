"""What plan_order changed of what the agent asked, and why (the quantity floored to the lot step, a notional
turned into a quantity, prices put on the tick on the safe side, reduce-only dropped on spot), and the market
it most likely meant when the symbol is not allowed or not listed.

Each change is an `Adjustment` in the plan's answer (asked, planned, the instrument rule, a sentence), so an
agent that sent "0.015" on a 0.01 step sees that 0.01 will be sent, not only the number.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from decimal import Decimal

from pilot.app.answers.responses import Adjustment, ViolationOut
from pilot.app.orders.inputs import PlanRequest
from pilot.core.codes import Code
from pilot.core.facts import InstrumentRules, OrderIntent, Side
from pilot.core.violations import plain


def adjustments(request: PlanRequest, order: OrderIntent, rules: InstrumentRules | None) -> list[Adjustment]:
    """Every field of `order` (as planned) that differs from `request` (as asked), with its reason."""
    if rules is None:
        return []
    unit = f" {rules.base_coin}" if rules.base_coin else ""
    step = f"the lot step {plain(rules.qty_step)}{unit}"
    found = []
    if request.qty is not None and order.qty != request.qty:
        found.append(
            _changed(
                "qty", request.qty, order.qty, Code.QTY_STEP, f"floored to {step}: a size never rounds up"
            )
        )
    if request.notional_usd is not None and order.qty:
        found.append(
            _changed(
                "notional_usd",
                request.notional_usd,
                order.qty,
                Code.QTY_STEP,
                f"${plain(request.notional_usd)} at the worst fill price, floored to {step}",
            )
        )
    tick = f"the tick {plain(rules.tick_size)}"
    buying = order.side is Side.BUY
    if request.price is not None and order.limit_price is not None and order.limit_price != request.price:
        way = "down: a buy never pays more" if buying else "up: a sell never takes less"
        found.append(
            _changed("price", request.price, order.limit_price, Code.TICK_SIZE, f"put on {tick}, {way}")
        )
    for name, asked, planned, towards in (
        ("stop_loss", request.stop_loss, order.stop_loss, "towards the entry: a smaller loss"),
        ("take_profit", request.take_profit, order.take_profit, "away from the entry: never an earlier exit"),
    ):
        if asked is not None and planned is not None and planned != asked:
            found.append(_changed(name, asked, planned, Code.TICK_SIZE, f"put on {tick}, {towards}"))
    if request.reduce_only and not order.reduce_only:
        found.append(
            Adjustment(
                field="reduce_only",
                asked="true",
                planned="false",
                rule=None,
                reason="spot has no reduce-only orders: the sell is kept to the coin held instead",
            )
        )
    return found


def _changed(field: str, asked: Decimal, planned: Decimal, code: Code, reason: str) -> Adjustment:
    return Adjustment(field=field, asked=plain(asked), planned=plain(planned), rule=code.value, reason=reason)


def nearest_symbol(symbol: str, markets: Iterable[str]) -> str | None:
    """The allowed market closest to a symbol that is not allowed or not listed (BTCUSD -> BTCUSDT), if one
    is close enough to be what was meant."""
    wanted = symbol.upper()
    others = [market for market in markets if market != wanted]
    same_coin = [market for market in others if _base(market) == _base(wanted)]
    if same_coin:  # BTCUSD, BTCPERP, BTC: the coin is right, the quote is not
        return same_coin[0]
    found = difflib.get_close_matches(wanted, others, n=1, cutoff=0.8)  # a typo: SOLUSTD
    return found[0] if found else None


def _base(symbol: str) -> str:
    for quote in _QUOTES:
        if symbol.endswith(quote) and len(symbol) > len(quote):
            return symbol[: -len(quote)]
    return symbol


_QUOTES = ("USDT", "USDC", "PERP", "USD")


def with_nearest_symbol(
    violations: list[ViolationOut], symbol: str, markets: Iterable[str]
) -> list[ViolationOut]:
    """`violations` with the nearest allowed market named where the symbol is the problem."""
    nearest = nearest_symbol(symbol, markets)
    if nearest is None:
        return violations
    return [
        v.model_copy(update={"did_you_mean": nearest, "detail": f"{v.detail}; did you mean {nearest}?"})
        if v.rule in _SYMBOL_RULES
        else v
        for v in violations
    ]


_SYMBOL_RULES = (Code.ALLOWED_MARKETS.value, Code.UNKNOWN_SYMBOL.value)
