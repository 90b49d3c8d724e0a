"""What a phone's column needs from a page's HTML: wide things scroll in their own box.

A chapter's tables (the phase table of §1, the quantization table) are wider than a phone's
column; Material's own scroll wrapper, added by its JavaScript, is not reachable by keyboard
and an inline formula has none. So, as the widgets' tables already do (widget_html.py):
- each table of the prose is wrapped in a scroll box that is focusable and named (axe's
  scrollable-region-focusable: a region with a label, tabindex 0), `.tw-scroll` in tw.css;
- a display formula's box (mathml.py, `.tw-math`) is made focusable and named the same way;
- a long inline formula is wrapped in `.tw-imath`, which scrolls only in a narrow column
  (tw.css): MathML does not break lines inside a formula. Focusable and named like the
  tables' boxes (a tab stop on a wide screen too: a box cannot know it scrolls without JS).
Without this the page itself scrolls sideways (issue 28: 881 px of a 360 px screen).
"""

from __future__ import annotations

import re
from html import unescape

TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.S)
CAPTION = re.compile(r"<caption[^>]*>(.*?)</caption>", re.S)
HEADER = re.compile(r"<th\b[^>]*>(.*?)</th>", re.S)
TAG = re.compile(r"<[^>]+>")
INLINE_MATH = re.compile(r'<math display="inline">.*?</math>', re.S)
LONG_MATH = 24  # characters of an inline formula's text from which it may be wider than a phone's column


def _text(html: str) -> str:
    return " ".join(unescape(TAG.sub(" ", html)).split())


def label(table: str) -> str:
    """The scroll box's name: the table's caption, or its column headings."""
    caption = CAPTION.search(table)
    if caption:
        return f"Taula: {_text(caption.group(1))}"
    heads = [_text(h) for h in HEADER.findall(table)]
    return f"Taula: {', '.join(h for h in heads if h)}"[:120]


def _in_widget(html: str, start: int) -> bool:
    """A widget is one line of HTML (widget_html.widget): its tables scroll in its own box."""
    line = html[html.rfind("\n", 0, start) + 1:start]
    return 'class="tw-widget"' in line


def on_page_content(html: str, *, page, config, files, build) -> str:
    seen: dict[str, int] = {}  # a region's name is unique on its page (two tables with the same headings)

    def table(m: re.Match) -> str:
        if _in_widget(html, m.start()):
            return m.group(0)
        name = label(m.group(0))
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name} ({seen[name]})"
        name = name.replace('"', "&quot;")
        return f'<div class="tw-scroll" tabindex="0" role="region" aria-label="{name}">{m.group(0)}</div>'

    def formula(m: re.Match) -> str:
        if len(_text(m.group(0))) < LONG_MATH:
            return m.group(0)
        return f'<span class="tw-imath" tabindex="0" role="group" aria-label="Fórmula">{m.group(0)}</span>'

    html = INLINE_MATH.sub(formula, TABLE.sub(table, html))
    return html.replace('<div class="tw-math">', '<div class="tw-math" tabindex="0" role="group" aria-label="Fórmula">')
