"""Every chapter of the built site, found in the site: widgets placed, twins linked both ways,
quizzes well formed. The fixture chapter (tests/fixtures/book) is one of them."""

from __future__ import annotations

import posixpath
import re

import pytest

from book import REPRESENTATIVE, chapter_pages, engine_pages, ids, quiz_pages, twin_links, widget_pages, widgets
from widgets_py import get, names
from widgets_py.engine import registry

pytestmark = pytest.mark.build


def test_the_fixture_chapter_is_part_of_the_site(site):
    assert {"cap15/index.html", "cap99/index.html", "cap99/sense-formules.html"} <= set(chapter_pages(site))
    assert {"cap15", "cap99"} <= set(registry.chapters())


def test_the_engine_matrix_pages_do_not_grow_with_the_book(site):
    """Firefox and WebKit visit chapter 15's first page and every page of the suite's own
    chapters (book.engine_pages), whatever the number of chapters (issue 43)."""
    pages = chapter_pages(site)
    matrix = engine_pages(pages)
    assert REPRESENTATIVE in matrix and {"cap98", "cap99"} <= {p.split("/")[0] for p in matrix}, matrix
    assert [p for p in pages if p.startswith("cap99/")] == [p for p in matrix if p.startswith("cap99/")]
    assert "cap15/sense-formules.html" in pages and "cap15/sense-formules.html" not in matrix
    more = [f"cap{n}/{name}" for n in range(16, 46) for name in ("index.html", "sense-formules.html")]  # 30 more chapters
    assert engine_pages(sorted(pages + more)) == matrix


def test_every_registered_widget_is_placed_on_some_page_of_its_chapter(site):
    placed: dict[str, set[str]] = {}
    for page in widget_pages(site):
        for w in widgets((site / page).read_text()):
            placed.setdefault(w["name"], set()).add(page.split("/")[0])
    assert set(placed) == set(names())
    for name, chapters in placed.items():
        home = get(name).compute.__module__.split(".")[1]  # widgets_py.capNN.module
        assert home in chapters, f"{name} (from {home}) is only on {sorted(chapters)}"


def test_every_twin_link_lands_on_a_heading_that_links_back(site):
    checked = 0
    for page in chapter_pages(site):
        html = (site / page).read_text()
        for href, anchor in twin_links(html):
            other = posixpath.normpath(posixpath.join(posixpath.dirname(page), href))
            there = (site / other).read_text()
            assert anchor in ids(there), f"{page} → {other}#{anchor}: no such section"
            assert anchor in ids(html), f"{page}: its own section #{anchor} is missing"
            back = [posixpath.normpath(posixpath.join(posixpath.dirname(other), h)) for h, a in twin_links(there) if a == anchor]
            assert page in back, f"{other}#{anchor} has no twin link back to {page}"
            checked += 1
    assert checked >= 10


def test_quizzes_have_unique_keys_and_well_formed_questions(site):
    keys = []
    for page in quiz_pages(site):
        html = (site / page).read_text()
        keys += re.findall(r'<div class="tw-quiz" data-quiz="([^"]+)"', html)
        for kind in re.findall(r'class="tw-q" data-q="[^"]+" data-kind="([^"]+)"', html):
            assert kind in ("open", "number", "choice"), page
    assert len(keys) == len(set(keys)) >= 3
