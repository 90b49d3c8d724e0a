"""Order statistics: numpy's median and percentile, to the bit, without numpy's machinery."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from widgets_py import run
from widgets_py.engine import registry
from widgets_py.engine import session
from widgets_py.maths.quantiles import median, percentile, weighted_percentile


def test_weighted_percentile():
    values, counts = np.array([1.0, 10.0]), np.array([99, 1])
    assert weighted_percentile(values, counts, 99) == 1.0
    assert weighted_percentile(values, counts, 100) == 10.0


@given(st.lists(st.floats(0, 1e6) | st.sampled_from([0.0, 1.0, 2.5]), min_size=1, max_size=60), st.floats(0, 100))
def test_percentile_is_numpys_to_the_bit(values, q):
    """The metrics' percentile is np.percentile's default (linear) method, ties and ends included."""
    x = np.array(values)
    for p in (q, 50, 95, 99, 0, 100):
        assert percentile(x, p) == float(np.percentile(x, p))


@given(hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(1, 80),
                  elements=st.floats(-1e6, 1e6, width=32) | st.sampled_from([0.0, 1.0, 2.5])))
def test_median_is_numpys_to_the_bit(x):
    """Odd and even lengths, ties, float32 and float64: the same value in the same dtype."""
    got, want = median(x), np.median(x)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_no_widget_calls_np_median(monkeypatch):
    """np.median's first call in Pyodide's numpy imports numpy.ma (its NaN check asks
    np.ma.isMaskedArray): 130-250 ms in the browser, which a reader's first change of the
    widget would pay. Every widget, at its defaults and with LLM.int8 (the quantize path that
    takes a median), runs with np.median refused."""
    def refused(*args, **kwargs):
        raise AssertionError("np.median called: use widgets_py.maths.quantiles.median")

    monkeypatch.setattr(np, "median", refused)
    session.forget()  # nothing computed before: every path runs
    for name in registry.names():
        run(name)
    run("quantize", {"outlier_handling": "llmint8"})
