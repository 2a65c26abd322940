"""The band the mark alone vouches for judges an order as the exchange's own band does (issue 41).

An order priced within the instrument's margin around the mark (Bybit's priceLimitRatioX) is judged on the
inner band instead of the band read from the exchange, which saves a request per judgement. Held here: for
every band Bybit's published formula can serve (account/set-price-limit: any index, any premium, any weight
of it at or above zero, Y at or above X), the judgement on the inner band is the judgement on that band,
and the inner band lies inside it. The band below is worked out here from the formula, not by Pilot.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from hypothesis import event, given
from hypothesis import strategies as st

from pilot.core.evaluate import Evaluation, evaluate
from pilot.core.facts import BUY, Facts, OrderType, PriceBand
from pilot.core.policy import Policy
from pilot.core.valuation import band_inside, send_price
from tests.strategies import decimals, facts, policies

MARGINS = decimals("0", "0.02", 4)
ONE = Decimal(1)


def bybit_band(
    facts: Facts, x: Decimal, y: Decimal, index: Decimal, premium: Decimal, alpha: Decimal
) -> PriceBand:
    """Bybit's derivatives price limit: the highest buy min(mark(1+Y), max(index, mark(1+X) + a max(0, P))),
    the lowest sell max(mark(1-Y), min(index, mark(1-X) + a min(0, P))), on the tick inwards."""
    mark, tick = facts.touch.mark, facts.rules.tick_size
    buy = min(mark * (ONE + y), max(index, mark * (ONE + x) + alpha * max(Decimal(0), premium)))
    sell = max(mark * (ONE - y), min(index, mark * (ONE - x) + alpha * min(Decimal(0), premium)))
    buy = (buy / tick).to_integral_value(rounding=ROUND_FLOOR) * tick
    sell = (sell / tick).to_integral_value(rounding=ROUND_CEILING) * tick
    return PriceBand(buy, max(sell, tick))


@given(
    policy=policies(),
    f=facts(),
    x=MARGINS,
    wider=decimals("0", "0.05", 4),
    index_off=decimals("-0.05", "0.05", 4),
    premium_off=decimals("-0.01", "0.01", 4),
    alpha=decimals("0", "2", 2),
)
def test_an_order_inside_the_inner_band_is_judged_as_on_any_band_bybit_can_serve(
    policy: Policy,
    f: Facts,
    x: Decimal,
    wider: Decimal,
    index_off: Decimal,
    premium_off: Decimal,
    alpha: Decimal,
) -> None:
    assert f.touch is not None and f.rules is not None
    rules = replace(f.rules, band_margin=x)
    f = replace(f, rules=rules)
    mark = f.touch.mark
    band = bybit_band(f, x, x + wider, mark * (ONE + index_off), mark * premium_off, alpha)
    slippage = policy.limits_for(f.order.symbol).max_slippage_pct
    inner = band_inside(f.order, f.touch, rules, slippage)
    price = send_price(f.order, f.touch, rules, slippage)
    event("band read" if inner is None else "inner band")
    if inner is None:  # only a price past mark x (1 +/- X) reads the band
        edge = mark * (ONE + x) if f.order.side is BUY else mark * (ONE - x)
        assert price > edge - rules.tick_size if f.order.side is BUY else price < edge + rules.tick_size
        return
    assert band.sell_limit <= inner.sell_limit and inner.buy_limit <= band.buy_limit
    assert judged(evaluate(policy, replace(f, band=inner))) == judged(evaluate(policy, replace(f, band=band)))


def judged(evaluation: Evaluation) -> tuple[object, ...]:
    """Everything a judgement decides and derives, but the band it was given."""
    s = evaluation.situation
    derived = s._replace(facts=replace(s.facts, band=None)) if s is not None else None
    return evaluation.violations, evaluation.next_safe_action, derived


@given(f=facts())
def test_without_a_margin_the_band_is_always_read(f: Facts) -> None:
    assert f.touch is not None and f.rules is not None
    assert band_inside(f.order, f.touch, replace(f.rules, band_margin=None), Decimal("0.5")) is None


@given(f=facts(), x=st.sampled_from([Decimal("0.01"), Decimal("0.05")]))
def test_a_limit_at_the_mark_needs_no_band(f: Facts, x: Decimal) -> None:
    """The common case the saving is for: a limit at the mark lies inside any margin."""
    assert f.touch is not None and f.rules is not None
    mark = f.touch.mark
    order = replace(f.order, limit_price=mark, order_type=OrderType.LIMIT)
    assert band_inside(order, f.touch, replace(f.rules, band_margin=x), Decimal("0.5")) is not None
