"""decimal_arg, the one reading of an amount an agent typed: ASCII digits and one dot, nothing around them."""

from __future__ import annotations

import string
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot.app.orders.inputs import InvalidInput, decimal_arg

ASCII_DECIMAL = st.from_regex(r"[0-9]{1,18}(\.[0-9]{1,18})?", fullmatch=True)


@given(st.text(max_size=40))
def test_any_text_is_either_refused_naming_the_field_or_is_plain_ascii_decimal(text):
    try:
        amount = decimal_arg("qty", text, positive=False)
    except InvalidInput as error:
        assert error.field == "qty"
        return
    assert set(text) <= set(string.digits + ".") and text == text.strip()
    assert amount == Decimal(text)


@given(ASCII_DECIMAL, st.sampled_from([" ", "\n", "\t", "\r", "\u00a0", "\u2003", "\u3000"]), st.booleans())
def test_whitespace_on_either_side_of_a_valid_amount_is_refused(text, space, before):
    with pytest.raises(InvalidInput) as caught:
        decimal_arg("price", space + text if before else text + space, positive=False)
    assert caught.value.field == "price"


@given(ASCII_DECIMAL)
def test_every_plain_ascii_decimal_is_read_exactly(text):
    assert decimal_arg("qty", text, positive=False) == Decimal(text)


@given(st.characters(categories=["Nd"]).filter(lambda c: c not in string.digits))
def test_a_digit_of_any_other_script_is_refused(digit):
    with pytest.raises(InvalidInput):
        decimal_arg("qty", f"1{digit}", positive=False)
