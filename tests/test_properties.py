"""Hypothesis sweeps of every widget's declared parameter space (CPython).

Any valid combination runs without an exception and gives finite numbers; any value
outside the declared range is refused with a ParamError that names the parameter.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from widgets_py import ParamError, get, names, run

SLOW = {"quantize": 6, "speculative": 8, "clock": 3, "training": 3, "sampling": 8}  # examples per widget


def value_strategy(p):
    if p.kind == "choice":
        return st.sampled_from(p.values())
    if p.kind == "bool":
        return st.booleans()
    if p.ticks:  # what the page's slider can send, and anything else in range
        inside = st.integers(int(p.min), int(p.max)) if p.kind == "int" else st.floats(p.min, p.max)
        return st.one_of(st.sampled_from(p.ticks), inside)
    if p.kind == "int":
        return st.integers(int(p.min), int(p.max))
    return st.floats(p.min, p.max, allow_nan=False)


def params_strategy(name):
    return st.fixed_dictionaries({p.name: value_strategy(p) for p in get(name).params})


@pytest.mark.parametrize("name", names())
def test_every_valid_input_gives_finite_outputs(name):
    @settings(max_examples=SLOW.get(name, 25), deadline=None, suppress_health_check=list(HealthCheck))
    @given(params_strategy(name))
    def check(params):
        result = run(name, params)
        for key, value in result.values.items():
            if isinstance(value, float):
                assert math.isfinite(value), (key, params)
        assert result.figure.startswith("<svg") and result.alt

    check()


def out_of_range(p):
    if p.kind == "choice":
        return st.text(min_size=1, max_size=8).filter(lambda s: s not in p.values())
    if p.kind == "bool":
        return st.sampled_from(["maybe", "2", ""])
    span = max(1.0, abs(p.max - p.min))
    below = st.floats(p.min - 1e6 * span, p.min - 1e-6 * span, allow_nan=False)
    above = st.floats(p.max + 1e-6 * span, p.max + 1e6 * span, allow_nan=False)
    return st.one_of(below, above, st.just(float("nan")), st.sampled_from(["abc", "1e999"]))


@pytest.mark.parametrize("name", names())
def test_out_of_range_input_names_the_parameter(name):
    params = get(name).params

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(params).flatmap(lambda p: st.tuples(st.just(p), out_of_range(p))))
    def check(case):
        p, bad = case
        with pytest.raises(ParamError) as err:
            run(name, {p.name: bad})
        assert f"'{p.name}'" in str(err.value) and "permès" in str(err.value)

    check()
