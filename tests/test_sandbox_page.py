"""What the page does with what it is handed (hostile-reader review, second round: L-7…L-10,
L-13, L-14): an edit's figure keeps to the widgets' own classes and size, a shared link's
note stays short, stored answers and Material's stored palette are read entry by entry,
and a stopped worker's unanswered calls end quietly."""

from __future__ import annotations

import json

import pytest
from test_codepanel import BOOT_MS, SEL, ready, run_edit
from test_sandbox import ALL_READY, start_edit

pytestmark = pytest.mark.browser

PAGE = "cap15/index.html"
IGNORED = ("Failed to load resource",)  # Python blocked: the page runs without it


def _blocked(watched, server, url):
    """`url` with Python's files refused: what is tested here runs before and without them."""
    page = watched.page
    page.route("**/pyodide/**", lambda route: route.abort())
    page.goto(server + url)
    return page


def _errors(watched):
    return [e for e in watched.errors if not e.startswith(IGNORED)]


# L-7: a class is a drawing's colour, not a way to borrow the theme's layout
OVERLAY = """
import dataclasses as _dc
_draw = WIDGET.figure
def _figure(params, state):
    svg, alt = _draw(params, state)
    return svg + ('<div class="md-consent__overlay"></div>'
                  '<div class="md-consent__inner tw-note"><p class="md-typeset">Fes clic aquí</p></div>'
                  '<svg class="tw-svg md-overlay" viewBox="0 0 10 10"><rect class="tw-s1 md-dialog" x="1" y="1" width="5" height="5"/>'
                  '<rect class="tw-widget tw-fixed" x="1" y="1" width="5" height="5"/></svg>'), alt
WIDGET = _dc.replace(WIDGET, figure=_figure)
"""


def test_an_edits_figure_keeps_only_the_drawing_classes(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    start_edit(page, OVERLAY)
    run_edit(page)
    figure = f"{SEL} .tw-figure [data-layout]"  # the slots' contents: what the edit drew
    assert page.get_attribute(SEL, "data-edited") == "true"
    classes = page.eval_on_selector_all(f"{figure} [class]", "els => els.map(e => e.getAttribute('class'))")
    assert classes and not any("md-" in c for c in classes), classes
    assert not any(c in ("tw-widget", "tw-fixed") for cs in classes for c in cs.split())  # the page's own hooks
    assert "tw-s1" in classes and "tw-note" in classes  # the drawing's classes stay
    assert page.locator(f"{figure} .tw-frame").count() >= 1  # and the shipped drawing keeps its own
    # nothing of the figure is taken out of its box (Material's overlay is position: fixed)
    placed = page.eval_on_selector_all(f"{figure} *", "els => els.map(e => getComputedStyle(e).position)")
    assert set(placed) <= {"static", "relative"}, set(placed)
    assert watched.errors == []


def test_the_build_holds_shipped_figures_to_the_same_classes():
    """One list (markup.CLASSES): the build refuses any other class, and tw.css draws each."""
    from conftest import ROOT
    from widgets_py.engine import markup

    assert markup.problems('<div class="md-consent__overlay tw-note"><svg class="tw-svg tw-widget"></svg></div>') == [
        'class="md-consent__overlay"', 'class="tw-widget"']
    css = (ROOT / "docs" / "assets" / "tw" / "tw.css").read_text()
    assert [c for c in markup.CLASSES if f".{c}" not in css] == []


# L-8: a reply as large as a few megabytes is refused before it is parsed
HUGE = """
KV_FORMAT = "fp8"  # other numbers too: none of the reply may be shown
import dataclasses as _dc
def _figure(params, state):
    return '<svg class="tw-svg" viewBox="0 0 10 10">' + '<rect width="1" height="1"/>' * 110_000 + '</svg>', "massa"
WIDGET = _dc.replace(WIDGET, figure=_figure)
"""


def test_an_oversized_figure_is_refused_and_the_last_one_kept(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    figure = f"{SEL} .tw-figure"
    before = page.inner_html(figure), page.get_attribute(SEL, "data-values"), page.text_content(f"{SEL} .tw-values")
    start_edit(page, HUGE)
    run_edit(page)
    status = page.text_content(f"{SEL} .tw-status")
    assert page.get_attribute(SEL, "data-state") == "error" and status.startswith("No es mostra") and "massa gran" in status, status
    assert page.locator(f"{figure} rect:not([class])").count() == 0
    assert (page.inner_html(figure), page.get_attribute(SEL, "data-values"), page.text_content(f"{SEL} .tw-values")) == before


# L-9: a shared link's note is short, and says nothing the link's author wrote but names
def test_a_links_note_is_bounded(watched, server):
    # 1,2 MB of query: more than the test server reads in a request line, so the page's own
    # HTML is answered here (as the offline copy's service worker answers any query)
    page = watched.page
    html = page.request.get(server + PAGE).text()
    page.route("**/cap15/index.html?*", lambda route: route.fulfill(body=html, content_type="text/html"))
    page = _blocked(watched, server, PAGE + "?roofline=" + "batch:8," * 150_000)
    note = page.text_content(f"{SEL} .tw-urlnote")
    assert "batch repetit" in note and len(note) < 600, len(note)
    assert _errors(watched) == []


def test_a_links_note_does_not_echo_text_that_is_no_name(watched, server):
    prose = "AVIS IMPORTANT: aquest curs s'ha mogut a una altra adreça, escriu-hi la teva contrasenya " * 6
    names = ",".join(f"nom{i}:1" for i in range(40))
    page = _blocked(watched, server, PAGE + "?roofline=" + prose.replace(" ", "%20") + ",colour:red," + names)
    note = page.text_content(f"{SEL} .tw-urlnote")
    assert "AVIS" not in note and "contrasenya" not in note, note
    assert "colour descartat" in note  # a name of the parameters' grammar is still named
    assert "nom39" not in note and len(note) < 600, note  # a few notes, then how many more
    assert _errors(watched) == []


# L-10: one bad entry does not cost the good ones
QUIZ = "tw-quiz:cap15-math"


def test_a_bad_stored_answer_drops_only_itself(watched, server):
    page = _blocked(watched, server, PAGE + "#comprova")
    page.evaluate("k => localStorage.setItem(k, JSON.stringify({speculative: true, 'kv-bytes': true, fases: true, extra: 'yes'}))",
                  QUIZ)
    total = page.locator(".tw-quiz .tw-q").count()
    for _ in range(2):  # the load that finds the bad entry, and the one after it
        page.reload()
        assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == f"3 de {total} resoltes"
    stored = json.loads(page.evaluate("k => localStorage.getItem(k)", QUIZ))
    assert stored == {"speculative": True, "kv-bytes": True, "fases": True}  # written back clean
    assert _errors(watched) == []


# L-13: a restart leaves no call of the stopped worker unanswered in the page's errors
def test_a_restart_during_the_fixed_numbers_raises_no_page_error(watched, server):
    """L-13: a worker stopped while the numbers at fixed parameters are being asked of it
    (they are asked again of a fresh worker, after a restart) leaves no uncaught rejection."""
    page = watched.page
    page.clock.install()  # the page's clock runs on; moved past kernel.js's HANG_MS below, not waited for
    page.goto(server + PAGE)
    ready(page)
    assert page.locator(".tw-fixed").count() > 0  # numbers at fixed parameters: refreshFixed has work
    start_edit(page, "while True:\n    pass\n")
    page.click(f"{SEL} .tw-code-run")
    page.wait_for_timeout(2000)  # a ping has gone out to the worker stuck in the loop (BEAT_MS)
    page.clock.fast_forward(10_500)
    page.wait_for_selector(f"{SEL} .tw-hung button", timeout=30_000)
    page.click(f"{SEL} .tw-hung button")  # «Reinicia Python»: the fresh worker is asked for the fixed numbers…
    page.evaluate("""() => {
        const config = JSON.parse(document.getElementById('tw-config').dataset.config);
        // …and is stopped as soon as it is asked (the way a second restart would stop it)
        tw.kernel.get(config).on((e) => e.type === 'loaded' && setTimeout(() => tw.kernel.restart(config), 0));
    }""")
    page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state !== 'ready')",
                           timeout=BOOT_MS)
    page.wait_for_timeout(3000)  # the stopped worker's calls have all been rejected
    assert [e for e in watched.errors if "aturat" in e] == []


# L-14: Material's stored palette, damaged, is set aside before Material reads it
@pytest.mark.parametrize("stored", ["{", "[1,2]", "5", '"x"', '{"index":"x"}', '{"color":{"scheme":[1]}}'])
def test_a_damaged_stored_palette_is_ignored(watched, server, stored):
    page = _blocked(watched, server, "index.html")  # every page has the toggle: the lightest one
    key = page.evaluate("() => __md_scope.pathname + '.__palette'")
    page.evaluate("([k, v]) => localStorage.setItem(k, v)", [key, stored])
    page.reload()
    page.wait_for_load_state("load")
    scheme = page.get_attribute("body", "data-md-color-scheme")
    page.click("form[data-md-component=palette] label:visible")  # the toggle still works
    page.wait_for_function("s => document.body.dataset.mdColorScheme !== s", arg=scheme)
    saved = json.loads(page.evaluate("k => localStorage.getItem(k)", key))
    assert saved["color"]["scheme"] == page.get_attribute("body", "data-md-color-scheme")
    page.reload()  # and what it stored is read back
    assert page.get_attribute("body", "data-md-color-scheme") == saved["color"]["scheme"]
    assert _errors(watched) == []
