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


def test_bars_spans_and_stacks_land_where_their_data_says():
    import re

    from widgets_py.engine import svg

    with svg.drawing(svg.WIDE):
        plot = Plot(height=200, left=40, right=40, top=0, bottom=0).scales((0, 10), (0, 1))
    plot.bar(2, 3, 0, 0.5, "tw-s1").span(0, 5, 10.0, 20, "tw-slot-used").stack(0, [(4, "tw-s2"), (6, "tw-cut")], 50, 8)
    rects = [dict(re.findall(r'(\w[\w-]*)="([^"]*)"', r)) for r in re.findall(r"<rect [^>]*/>", "".join(plot.parts))]
    assert [r["class"] for r in rects] == ["tw-bar tw-s1", "tw-slot-used", "tw-bar tw-s2", "tw-bar tw-cut"]
    bar = {k: float(v) for k, v in rects[0].items() if k != "class"}
    assert bar == {"x": plot.x(2), "y": plot.y(0.5), "width": pytest.approx(plot.x(3) - plot.x(2), abs=0.005),
                   "height": pytest.approx(plot.y(0) - plot.y(0.5), abs=0.005)}
    assert float(rects[2]["x"]) + float(rects[2]["width"]) == pytest.approx(float(rects[3]["x"]), abs=0.005)
    assert float(rects[3]["x"]) + float(rects[3]["width"]) == pytest.approx(plot.x(10), abs=0.005)


def test_every_class_the_kit_lists_is_styled_in_the_stylesheet():
    """svg.py's docstring is the list a widget author reads; tw.css must colour each class,
    and each series for every shape that fills (a `tw-s2` bar was black before)."""
    import re
    from pathlib import Path

    from widgets_py.engine import svg

    css = (Path(__file__).resolve().parent.parent / "docs" / "assets" / "tw" / "tw.css").read_text()
    listed = set(re.findall(r"`(tw-[a-z0-9-]+)`", svg.__doc__))
    assert {"tw-s1", "tw-s2", "tw-s3", "tw-cut", "tw-slot-used", "tw-roof"} <= listed
    assert not [c for c in sorted(listed) if f".{c}" not in css]
    for series in ("tw-s1", "tw-s2", "tw-s3"):
        rule = re.search(rf"\.tw-svg :is\(([^)]*)\)\.{series} \{{ fill", css)
        assert rule and {".tw-dot", ".tw-bar", ".tw-tok", "text"} <= {s.strip() for s in rule.group(1).split(",")}, series
        assert f".tw-line.{series} {{ stroke" in css
