"""Catalan number formatting: decimal comma, thousands point, a space before units."""

from widgets_py.engine import fmt


def test_decimal_comma_and_thousands_point():
    assert fmt.number(3350) == "3.350"
    assert fmt.number(1234567.891, 2) == "1.234.567,89"
    assert fmt.number(0.8, 1) == "0,8"


def test_units_percent_and_times():
    assert fmt.with_unit(3350, 0, "GB/s") == "3.350 GB/s"
    assert fmt.percent(0.7712) == "77 %"
    assert fmt.with_unit(2.75, 2, "×") == "2,75×"


def test_metric_prefixes_and_tokens():
    assert fmt.si(28320, 2) == "28,32 k"
    assert fmt.si(70_553_706_496, 2) == "70,55 G"
    assert fmt.si(221.25, 2) == "221,25"
    # a token count is written in full: k is 1 000 (si), never 1 024 (issue 40, C13/I17/R8)
    assert fmt.tokens(8192) == "8.192" and fmt.tokens(131072) == "131.072" and fmt.tokens(512) == "512"
    assert " k" not in fmt.tokens(1 << 20) and fmt.si(13457, 1) == "13,5 k"


def test_negative_and_non_finite():
    assert fmt.number(-3.5, 1) == "−3,5"
    assert fmt.number(-0.0001, 2) == "0,00"  # no minus on a value that rounds to zero
    assert fmt.number(float("nan")) == "—"
