"""The figures' layouts (engine/svg.py): the build draws each, the wide one as before issue 28."""

from __future__ import annotations

import re

import pytest

from widgets_py import names
from widgets_py.engine import registry, svg
from widgets_py.engine.svg import COMPACT, Plot, drawing, thinned


@pytest.mark.parametrize("name", names())
def test_every_widget_draws_both_layouts_at_their_widths(name):
    result = registry.run(name, None, svg.LAYOUTS)
    assert [lay for lay, _ in result.figures] == ["wide", "compact"]
    assert result.figure == result.figures[0][1]
    for (lay, drawn), want in zip(result.figures, (svg.WIDE, svg.COMPACT)):
        widths = {float(w) for w in re.findall(r'<svg class="tw-svg" viewBox="0 0 (\S+) ', drawn)}
        assert widths == {want.width}, (lay, widths)


def test_a_layout_does_not_outlive_its_drawing():
    with drawing(COMPACT):
        assert Plot().width == COMPACT.width
    assert svg.current() is svg.WIDE and Plot().width == svg.WIDE.width


def test_tick_labels_are_thinned_until_they_keep_apart():
    ticks = [1, 2, 4, 8, 16, 32, 64]
    assert thinned(ticks, lambda t: 10 * ticks.index(t), lambda t: 8, 4) == [1, 4, 16, 64]
    assert thinned(ticks, lambda t: 40 * ticks.index(t), lambda t: 8, 4) == ticks


def test_compact_text_wraps_and_stays_inside_the_box():
    with drawing(COMPACT):
        plot = Plot(height=100)
        plot.text(300, 90, "una etiqueta molt llarga que no cap de cap manera en una sola línia del mòbil", "start")
    x = float(re.search(r' x="(\S+)"', plot.parts[-1]).group(1))
    assert "<tspan" in plot.parts[-1] and 0 < x < COMPACT.width
    assert plot.below > 0 and 'viewBox="0 0 320 ' in plot.render("t", "d") and 'viewBox="0 0 320 100"' not in plot.render("t", "d")


def test_two_tables_with_the_same_headings_get_distinct_region_names():
    """Each prose table scrolls in a named region (build_hooks/pages/narrow.py); two regions with one
    name break axe's landmark-unique rule (the guide has two tables of the same columns)."""
    import re

    from build_hooks.pages import narrow

    table = "<table><thead><tr><th>Missatge</th><th>Què vol dir</th></tr></thead><tbody></tbody></table>"
    html = narrow.on_page_content(f"<p>a</p>{table}<p>b</p>{table}{table}", page=None, config=None, files=None, build=None)
    names = re.findall(r'role="region" aria-label="([^"]+)"', html)
    assert names == ["Taula: Missatge, Què vol dir", "Taula: Missatge, Què vol dir (2)", "Taula: Missatge, Què vol dir (3)"]
