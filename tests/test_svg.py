"""The SVG kit: a line's points, mapped in one numpy pass, are the per-value mapping's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from widgets_py.engine.svg import Plot, Scale

DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int32])


@settings(max_examples=200, deadline=None)
@given(st.data(), DTYPES, st.floats(-1e4, 1e4), st.floats(1e-3, 1e4), st.floats(0, 700), st.floats(0, 700))
def test_many_is_the_scale_applied_to_each_value(data, dtype, lo, width, a, b):
    elements = (st.floats(-1e6, 1e6, width=32) if np.dtype(dtype).kind == "f" else st.integers(-10**6, 10**6))
    values = data.draw(hnp.arrays(dtype, st.integers(0, 50), elements=elements))
    scale = Scale(lo, lo + width, a, b)
    assert scale.many(values) == [scale(v) for v in values]


@pytest.mark.parametrize("values", [[0.125, 1 / 3, 2.675], (1, 2, 3)])
def test_python_numbers_keep_pythons_rounding(values):
    scale = Scale(0, 3, 0, 640)
    assert scale.many(values) == [scale(v) for v in values]


def test_log_scale_maps_value_by_value():
    scale = Scale(1, 1000, 0, 300, log=True)
    assert scale.many(np.array([1.0, 10.0, 1000.0])) == [0.0, 100.0, 300.0]


def test_a_line_is_drawn_through_the_mapped_points():
    plot = Plot(width=100, height=100, left=0, right=0, top=0, bottom=0).scales((0, 10), (0, 10))
    plot.line(np.arange(3), np.array([0.0, 5.0, 10.0]), "tw-s1")
    assert 'points="0.0,100.0 10.0,50.0 20.0,0.0"' in plot.parts[-1]
