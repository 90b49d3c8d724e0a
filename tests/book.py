"""What the built site holds, found rather than listed: chapters, their pages, widgets, quizzes.

Every chapter-wide test reads the site through these helpers, so a new chapter (like the
suite's fixture chapter, tests/fixtures/book) is covered without editing any test.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

WIDGET = re.compile(r'<div class="tw-widget" id="[^"]+" data-widget="([^"]+)" data-instance="([^"]+)" '
                    r'data-state="([^"]+)" data-params="([^"]+)"[^>]*>')
TWIN = re.compile(r'<a class="tw-twin" href="([^"#]+)#([^"]+)"|<a href="([^"#]+)#([^"]+)" class="tw-twin"')


def chapter_pages(site: Path) -> list[str]:
    """Pages of the chapters (folders capNN/), as paths relative to the site; a chapter's
    single-file download beside it (NAME.descarrega.html) is the same page, not another."""
    from build_hooks.export.single_file import SUFFIX

    return sorted(p.relative_to(site).as_posix() for p in site.glob("cap*/*.html") if not p.name.endswith(SUFFIX))


def widgets(html: str) -> list[dict]:
    """The widget instances of a page: name, instance, state and the params it was built with."""
    return [{"name": m.group(1), "instance": m.group(2), "state": m.group(3), "params": json.loads(unescape(m.group(4)))}
            for m in WIDGET.finditer(html)]


def widget_pages(site: Path) -> list[str]:
    return [p for p in chapter_pages(site) if widgets((site / p).read_text())]


def quiz_pages(site: Path) -> list[str]:
    return [p for p in chapter_pages(site) if 'class="tw-quiz"' in (site / p).read_text()]


# The engine matrix (Firefox ESR, WebKitGTK: tests/test_engines.py) visits these pages, not every
# page: the book's first chapter page, which places every kind of widget the book has, and
# every page of the chapters the suite itself adds (tests/fixtures/book, the scaffold's), so
# the matrix's time does not grow with the book. Checks that must see every page (axe, narrow
# screens, CPython agreement) run on every page, once, in Chromium.
REPRESENTATIVE = "cap15/index.html"


def engine_pages(pages: list[str]) -> list[str]:
    """Of `pages`, those the engine matrix visits (REPRESENTATIVE and the suite's chapters)."""
    from conftest import SUITE_CHAPTERS

    return [p for p in pages if p == REPRESENTATIVE or p.split("/", 1)[0] in SUITE_CHAPTERS]


def twin_links(html: str) -> list[tuple[str, str]]:
    """(href, anchor) of each link to the same section in the other track."""
    return [(a or c, b or d) for a, b, c, d in TWIN.findall(html)]


def ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))
