"""What a figure draws, as the page holds it and as Python wrote it: its elements, in order,
each with the names of its attributes. The page's sanitiser (docs/assets/tw/markup.js) may
drop an element or an attribute it does not allow; a drawing that reached the page whole
has the structure CPython's has for the same parameters and layout (its numbers may differ
in the last bits: float32 sums in another order). A widget that measures draws what it
timed (its axes' ticks follow the times, a label where it ran may wrap): CPython draws the
page's own numbers for it."""

from __future__ import annotations

from html.parser import HTMLParser

from widgets_py.engine import registry, svg

# The drawing in the slot the page shows (figures.js: tw.figures.shown), and the layout's name
SHOWN = """(w) => { const layout = tw.figures.shown(w);
  const slot = w.querySelector(`.tw-figure > [data-layout="${layout}"]`);
  return [layout, slot ? slot.innerHTML : w.querySelector('.tw-figure').innerHTML]; }"""


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, tuple[str, ...]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, tuple(sorted(name for name, _ in attrs))))

    handle_startendtag = handle_starttag


def structure(html: str) -> list[tuple[str, tuple[str, ...]]]:
    """(tag, its attributes' names, lower case) of every element, in document order."""
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.found


def expected(name: str, params: dict, layout: str, shown: dict, computed: registry.Result) -> str:
    """CPython's drawing to hold the page's to: `computed`'s (the same parameters, in
    `layout`), or for a widget that measures, the page's own values (`shown`) drawn."""
    widget = registry.get(name)
    if not widget.timed:
        return computed.figure
    assert widget.values is None, f"{name}: its values are not its state: CPython cannot redraw them"
    return registry.draw(name, registry.validate_params(name, params), shown, (svg.layout(layout),)).figure
