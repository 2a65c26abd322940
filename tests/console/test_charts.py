"""The equity chart's axis: a minimum span, so a few cents of fees on a thousand dollars stay a few cents and a
real fall keeps its own range (the browser test draws them: tests/console/test_pages.py)."""

from __future__ import annotations

from decimal import Decimal

from pilot.console.charts import equity_axis


def test_a_few_cents_of_fees_do_not_fill_the_equity_axis() -> None:
    axis = equity_axis([Decimal("1000"), Decimal("999.991"), Decimal("999.982")])
    assert axis is not None
    assert axis["max"] - axis["min"] >= 10  # 1 % of $1000: the $0.018 is a flat line
    assert axis["min"] <= 999.982 and axis["max"] >= 1000
    assert axis["change"] == "-0.02"


def test_a_real_fall_keeps_its_own_range() -> None:
    axis = equity_axis([Decimal("1000"), Decimal("800")])
    assert axis is not None and (axis["min"], axis["max"]) == (800, 1000)


def test_no_equity_no_axis() -> None:
    assert equity_axis([]) is None
