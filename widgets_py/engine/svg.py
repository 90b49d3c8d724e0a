"""A small SVG plotting kit: axes, scales, lines and labels, styled by CSS classes.

Figures carry no colours of their own: classes such as `tw-s1` are coloured by the
site's stylesheet, so light and dark mode both read well and the SVG stays small.

A figure is drawn for the width it is shown at (Observable Plot's habit), in one of two
layouts: `WIDE` (the page's column on a tablet or a desktop) and `COMPACT` (a phone's
column, below `COMPACT_BELOW` CSS px). The registry draws each layout the page needs inside
`drawing(layout)`; a `Plot` made there takes that layout's width, and its axes thin their
labels to what fits. The page holds both drawings and tw.css shows the one its box fits, so
a widget's `figure(params, state)` keeps its signature and draws either: where it places
something by hand it reads `current()` (a legend stacked on a phone, say).

Drawing: `axes`, `line`, `dot`/`dots`, `bar` (data coordinates), `span` and `stack` (bars
on rows placed by hand), `text`; `render` makes the SVG. The classes tw.css colours, in light
and dark mode alike:

- series, for lines, dots, bars and text: `tw-s1` (magenta: a limit, what is lost),
  `tw-s2` (blue: the main quantity), `tw-s3` (green: what fits, what is kept), `tw-cut`
  (grey: what a method leaves out);
- slots: `tw-slot-empty` (an outline), `tw-slot-used`, `tw-slot-used2` (two neighbours);
- marks: `tw-roof` (a ceiling line), `tw-limit` (a dashed limit), `tw-band` (a shaded
  range), `tw-grid`, `tw-frame`;
- text: `tw-note`, `tw-tick`, `tw-label`.

A figure may carry no other class (markup.CLASSES: the page drops it, the build refuses it).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from html import escape

import numpy as np


@dataclass(frozen=True)
class Scale:
    lo: float  # data value at the start of the axis
    hi: float  # data value at the end
    a: float  # pixel at `lo`
    b: float  # pixel at `hi`
    log: bool = False

    def __call__(self, v: float) -> float:
        if self.log:
            t = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return round(self.a + t * (self.b - self.a), 2)

    def many(self, values) -> list[float]:
        """Pixels of many values. A numpy array goes through numpy in one pass: per element the
        same arithmetic and the same rounding (np.round) as calling the scale on its elements,
        at a fraction of the cost (a numpy scalar's round() takes microseconds in Pyodide).
        Anything else (Python numbers, whose round() is Python's) is mapped one by one."""
        if self.log or not isinstance(values, np.ndarray) or values.dtype.kind not in "iuf":
            return [self(v) for v in values]
        t = (values - self.lo) / (self.hi - self.lo)  # [n]
        return np.round(self.a + t * (self.b - self.a), 2).tolist()


@dataclass(frozen=True)
class Layout:
    """The box a figure is drawn for."""

    name: str  # data-layout of its slot in the page (widget_html.py), and of the worker's call
    width: int  # viewBox width, user units: the figure's height is the widget's own, so a narrow layout is taller
    type: float  # font size of the figure's text, user units: tw.css sets it ([data-layout] .tw-svg text)
    compact: bool  # fewer tick labels, legends stacked, labels above rather than beside

    def fits(self, text: str, room: float) -> bool:
        """Whether `text` is likely to fit in `room` user units (a character ~0.6 em wide)."""
        return len(text) * 0.6 * self.type <= room


# A phone's column at 360 CSS px leaves a widget's figure ~300 px: 320 units drawn at 14
# (tw.css) show text at >= 12.5 px there (WCAG's 'readable' and issue 28's >= 11 px), where
# the wide layout's 640 units at 11-12 would show 5-6 px. The wide layout is the figures'
# first and only drawing before issue 28: unchanged, byte for byte.
WIDE = Layout("wide", 640, 12, compact=False)
COMPACT = Layout("compact", 320, 14, compact=True)
LAYOUTS = (WIDE, COMPACT)
COMPACT_BELOW = 480  # CSS px of the figure's box under which COMPACT is shown (tw.css, @container)
_drawn_for: ContextVar[Layout] = ContextVar("layout", default=WIDE)


def current() -> Layout:
    """The layout being drawn (WIDE outside `drawing`)."""
    return _drawn_for.get()


def layout(name: str) -> Layout:
    for lay in LAYOUTS:
        if lay.name == name:
            return lay
    raise ValueError(f"disposició desconeguda '{name}'; permeses: {', '.join(x.name for x in LAYOUTS)}")


@contextmanager
def drawing(lay: Layout):
    """Within the block, figures are drawn for `lay` (a context variable, reset on exit: a
    run's layout never outlives its call)."""
    token = _drawn_for.set(lay)
    try:
        yield lay
    finally:
        _drawn_for.reset(token)


def thinned(ticks, at, size, gap: float) -> list:
    """Every k-th of `ticks` (the first included), k the smallest for which neighbouring
    labels keep `gap` units apart: a label t sits at `at(t)` and is `size(t)` units long."""
    ticks = list(ticks)
    for k in range(1, max(len(ticks), 1)):
        kept = ticks[::k]
        if all(abs(at(b) - at(a)) >= (size(a) + size(b)) / 2 + gap for a, b in zip(kept, kept[1:])):
            return kept
    return ticks[:1]


@dataclass
class Plot:
    """One chart: a plotting box inside a fixed viewBox, with x and y scales."""

    width: int = field(default_factory=lambda: current().width)
    height: int = 360
    left: int = 64
    right: int = 30
    top: int = 16
    bottom: int = 48
    x: Scale | None = None
    y: Scale | None = None
    parts: list[str] = field(default_factory=list)
    layout: Layout = field(default_factory=current)
    below: float = 0  # user units that wrapped text (compact) reaches below `height`: the viewBox grows by them

    def scales(self, x: tuple[float, float], y: tuple[float, float], xlog=False, ylog=False):
        self.x = Scale(x[0], x[1], self.left, self.width - self.right, xlog)
        self.y = Scale(y[0], y[1], self.height - self.bottom, self.top, ylog)
        return self

    def axes(self, xticks, yticks, xlabel: str, ylabel: str, fmt=str) -> "Plot":
        """Grid lines and tick labels at the given data values."""
        x0, x1 = self.left, self.width - self.right
        y0, y1 = self.height - self.bottom, self.top
        xlabelled, ylabelled = set(xticks), set(yticks)
        if self.layout.compact:  # every grid line, but only the labels that fit apart
            em = 0.6 * self.layout.type
            xlabelled = set(thinned(xticks, self.x, lambda t: len(fmt(t)) * em, em))
            ylabelled = set(thinned(yticks, self.y, lambda t: self.layout.type, self.layout.type / 2))
        for t in xticks:
            px = self.x(t)
            self.parts.append(f'<line class="tw-grid" x1="{px}" y1="{y0}" x2="{px}" y2="{y1}"/>')
            if t in xlabelled:
                self.text(px, y0 + 16, fmt(t), "middle", "tw-tick")
        for t in yticks:
            py = self.y(t)
            self.parts.append(f'<line class="tw-grid" x1="{x0}" y1="{py}" x2="{x1}" y2="{py}"/>')
            if t in ylabelled:
                self.text(x0 - 6, py + 4, fmt(t), "end", "tw-tick")
        self.parts.append(f'<rect class="tw-frame" x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}"/>')
        self.text((x0 + x1) / 2, self.height - 8, xlabel, "middle", "tw-label")
        cy = (y0 + y1) / 2
        self.parts.append(
            f'<text class="tw-label" text-anchor="middle" transform="translate(14 {cy}) rotate(-90)">'
            f"{escape(ylabel)}</text>"
        )
        return self

    def line(self, xs, ys, cls: str, dash: bool = False) -> "Plot":
        px, py = self.x.many(xs), self.y.many(ys)
        n = min(len(px), len(py))  # as zip pairs them
        px, py = px[:n], py[:n]
        flat = [0.0] * (2 * n)  # x, y, x, y, …: one % over them all, not a format per point
        flat[::2], flat[1::2] = px, py  # (a training curve's 500 points: 2.3 -> 1.3 ms in Pyodide)
        pts = ("%r,%r " * n % tuple(flat))[:-1]
        extra = ' stroke-dasharray="6 4"' if dash else ""
        self.parts.append(f'<polyline class="tw-line {cls}" points="{pts}"{extra}/>')
        return self

    def dot(self, x: float, y: float, cls: str, r: float = 5) -> "Plot":
        self.parts.append(f'<circle class="tw-dot {cls}" cx="{self.x(x)}" cy="{self.y(y)}" r="{r}"/>')
        return self

    def dots(self, xs, ys, classes, r: float = 5) -> "Plot":
        """dot() at each point, the pixels of all of them in one pass (Scale.many)."""
        for cx, cy, cls in zip(self.x.many(xs), self.y.many(ys), classes):
            self.parts.append(f'<circle class="tw-dot {cls}" cx="{cx}" cy="{cy}" r="{r}"/>')
        return self

    def bar(self, x0: float, x1: float, y0: float, y1: float, cls: str) -> "Plot":
        """A rectangle between data coordinates: a vertical bar (y0=0), a horizontal one (x0=0),
        a cell. `cls` is a series (`tw-s1`…, `tw-cut`): the bar is `tw-bar` of that series."""
        left, right = sorted((self.x(x0), self.x(x1)))
        top, bottom = sorted((self.y(y0), self.y(y1)))
        self.parts.append(f'<rect class="tw-bar {cls}" x="{left}" y="{top}" width="{right - left:.2f}" '
                          f'height="{bottom - top:.2f}"/>')
        return self

    def span(self, x0: float, x1: float, y: float, height: float, cls: str, inset: float = 0) -> "Plot":
        """A horizontal bar on a row drawn by hand: from x0 to x1 in data units, at `y` and
        `height` in user units (rows of a memory map, a slot grid, a Gantt chart). `cls` is a
        series (`tw-s1`…, drawn as `tw-bar`) or a slot (`tw-slot-empty`, `tw-slot-used`,
        `tw-slot-used2`); `inset` units are left clear at its right end (cells that touch)."""
        left, right = self.x(x0), self.x(x1)
        kind = cls if cls.startswith("tw-slot") else f"tw-bar {cls}"
        self.parts.append(f'<rect class="{kind}" x="{left}" y="{y:.2f}" width="{max(right - left - inset, 0.5):.2f}" '
                          f'height="{height:.2f}"/>')
        return self

    def stack(self, x0: float, parts, y: float, height: float, inset: float = 0) -> "Plot":
        """Spans end to end from x0: `parts` is [(length in data units, class)], a stacked bar."""
        for length, cls in parts:
            self.span(x0, x0 + length, y, height, cls, inset)
            x0 += length
        return self

    def text(self, x: float, y: float, s: str, anchor: str = "start", cls: str = "tw-note") -> "Plot":
        if self.layout.compact:
            return self._fitted(x, y, s, anchor, cls)
        self.parts.append(f'<text class="{cls}" x="{x}" y="{y}" text-anchor="{anchor}">{escape(s)}</text>')
        return self

    EM = 0.55  # a character's mean width in em, for the fit below (the system sans fonts, Catalan text)
    EDGE = 3  # user units kept clear at the viewBox's sides

    def _fitted(self, x: float, y: float, s: str, anchor: str, cls: str) -> "Plot":
        """A compact layout's text, kept inside the viewBox: a line longer than the box wraps at
        spaces (the lines below the first), and a line that would cross a side moves in from it.
        Text placed by hand for a 640-unit box (a label beside its line) stays readable."""
        per = self.EM * self.layout.type
        room = self.width - 2 * self.EDGE
        lines, line = [], ""
        for word in s.split(" "):
            if line and len(line) + 1 + len(word) > room / per:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        w = max(len(t) for t in lines) * per
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        left = min(max(left, self.EDGE), self.width - self.EDGE - w)
        x = round({"start": left, "middle": left + w / 2, "end": left + w}[anchor], 2)
        body = escape(lines[0]) + "".join(f'<tspan x="{x}" dy="1.15em">{escape(t)}</tspan>' for t in lines[1:])
        self.below = max(self.below, y + (len(lines) - 1) * 1.15 * self.layout.type + 0.3 * self.layout.type - self.height)
        self.parts.append(f'<text class="{cls}" x="{x}" y="{y}" text-anchor="{anchor}">{body}</text>')
        return self

    def render(self, title: str, desc: str) -> str:
        """The finished SVG: `title` and `desc` make it readable by screen readers."""
        body = "".join(self.parts)
        return (
            f'<svg class="tw-svg" viewBox="0 0 {self.width} {self.height + math.ceil(self.below)}" role="img">'
            f"<title>{escape(title)}</title>"
            f"<desc>{escape(desc)}</desc>{body}</svg>"
        )


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten between lo and hi, inclusive."""
    a, b = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
    return [10.0**k for k in range(a, b + 1)]
