"""What a figure draws, as the page holds it and as Python wrote it: its elements, in order,
each with the names of its attributes. The page's sanitiser (docs/assets/tw/markup.js) may
drop an element or an attribute it does not allow; a drawing that reached the page whole
has the structure CPython's has for the same parameters and layout (its numbers may differ
in the last bits: float32 sums in another order). A widget that measures draws what it
timed: how many ticks its axes get depends on the times, so there only the kinds of
element (tag and attribute names) are compared."""

from __future__ import annotations

from html.parser import HTMLParser

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


def same(page_html: str, cpython_html: str, measures: bool) -> bool:
    """Whether the page's drawing is CPython's, as far as `measures` lets it be."""
    page, cpython = structure(page_html), structure(cpython_html)
    return set(page) == set(cpython) if measures else page == cpython
