"""What plan_order changed of what the agent asked, and why (the quantity floored to the lot step, a notional
turned into a quantity, prices put on the tick on the safe side, reduce-only dropped on spot), and the market
it most likely meant when the symbol is not allowed or not listed.

Each change is an `Adjustment` in the plan's answer (asked, planned, the instrument rule, a sentence), so an
agent that sent "0.015" on a 0.01 step sees that 0.01 will be sent, not only the number.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from pilot.app.answers.responses import Adjustment, ViolationOut
from pilot.app.orders.inputs import PlanRequest
from pilot.app.road.ports import ExchangeReader
from pilot.core.codes import Code
from pilot.core.facts import InstrumentRules, OrderIntent, Side
from pilot.core.violations import NextAction, Violation, plain
from pilot.exchange.errors import ExchangeError


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
_LISTED_QUOTES = ("USDT", "USDC")  # the quotes of Bybit's linear and spot markets


@dataclass(frozen=True, slots=True)
class Nearest:
    """The listed market a symbol most likely meant, and whether policy.json allows it."""

    symbol: str
    allowed: bool


async def nearest_market(
    exchange: ExchangeReader, category: str, symbol: str, allowed: Sequence[str], listed: bool
) -> Nearest | None:
    """The market a symbol refused as not allowed or not listed most likely meant, among those the exchange
    lists in `category`: an allowed one of the same coin or a close spelling first, else (the symbol itself
    not `listed`) the same coin against a quote the exchange uses (SOLUSD -> SOLUSDT), allowed or not. None
    when nothing listed is close."""
    candidates = [market for market in [nearest_symbol(symbol, allowed)] if market is not None]
    if not listed:
        base = _base(symbol.upper())
        candidates += [base + quote for quote in _LISTED_QUOTES if base + quote != symbol.upper()]
    for candidate in dict.fromkeys(candidates):
        if await _is_listed(exchange, category, candidate):
            return Nearest(candidate, candidate in allowed)
    return None


async def _is_listed(exchange: ExchangeReader, category: str, symbol: str) -> bool:
    try:
        await exchange.get_instrument(category, symbol)
    except ExchangeError:  # no such market, or the exchange could not say: nothing to suggest
        return False
    return True


def pointed_to(violation: Violation, symbol: str, nearest: Nearest) -> Violation:
    """A symbol's refusal (allowedMarkets, unknownSymbol) naming the listed market it most likely meant; when
    policy.json does not allow that one, what only a human can change is to allow it (never the symbol
    asked, which the exchange may not list at all)."""
    if violation.rule not in _SYMBOL_CODES:
        return violation
    meant = nearest.symbol
    detail = f"{violation.detail}; did you mean {meant}?"
    if nearest.allowed:
        return replace(violation, detail=detail)
    step = NextAction.stop(
        f"stop: {symbol} is not a market you may trade, and {meant}, which the exchange lists, is not "
        "allowed either; ask the user",
        human=f"add {meant} to allowedMarkets in policy.json, if {meant} is the market meant",
        options=violation.next.options,
    )
    return replace(violation, detail=f"{detail} ({meant} is listed but not allowed)", next=step)


def with_nearest(
    violations: list[Violation], next_action: NextAction | None, symbol: str, nearest: Nearest | None
) -> tuple[list[Violation], NextAction | None]:
    """The violations and the next action, pointed to the market the symbol most likely meant."""
    if nearest is None:
        return violations, next_action
    pointed = [pointed_to(v, symbol, nearest) for v in violations]
    for before, after in zip(violations, pointed, strict=True):
        if before.next is next_action:
            next_action = after.next
    return pointed, next_action


def named_nearest(violations: list[ViolationOut], nearest: Nearest | None) -> list[ViolationOut]:
    """`violations` as answered, with the market meant in `did_you_mean` where the symbol is the problem."""
    if nearest is None:
        return violations
    said = {"did_you_mean": nearest.symbol, "did_you_mean_allowed": nearest.allowed}
    return [v.model_copy(update=said) if v.rule in _SYMBOL_RULES else v for v in violations]


_SYMBOL_CODES = (Code.ALLOWED_MARKETS, Code.UNKNOWN_SYMBOL)
_SYMBOL_RULES = tuple(code.value for code in _SYMBOL_CODES)
