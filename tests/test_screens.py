"""Every reader, every screen (issue 28 §1, §2): phones, tablets and print, measured.

At 360, 390 and 768 CSS px, on every chapter page (found in the built site, tests/book.py):
- the page never scrolls sideways (documentElement.scrollWidth == the viewport);
- every text of every figure renders at >= 11 CSS px on a phone: font size times the SVG's
  scale on screen (getScreenCTM), so a figure shrunk to the column counts as what it shows;
  at 768 px the wide drawing is the one shown (the figures a desktop shows, unchanged);
- no figure text is cut by its own SVG's box (a compact drawing that overflows);
- a box that scrolls sideways is reachable by keyboard and named (tabindex 0, a label);
- every control and button is at least 24 x 24 CSS px (WCAG 2.2, 2.5.8).

Print: each chapter page rendered by Chromium to an A4 PDF (page.pdf, print media). In
print media no control, button or code panel is laid out (the quiz's options excepted: they
are the questions' text, printed as a list without borders). Whether a widget is split by a
page break is read from the PDF itself, not guessed from boxes (print emulation lays the page
out at the viewport's width and never paginates): two marker strings are placed absolutely
at the top and the bottom edge of each widget (no effect on layout), and pdftotext
(poppler-utils) must find both on the same page. The PDF's text also must not hold the
screen's status lines or buttons, must hold each question and none of the quiz's answers,
and must print the target of an external link.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from book import chapter_pages

pytestmark = pytest.mark.browser

WIDTHS = (360, 390, 768)
PHONE = 480  # CSS px: below it a figure's box shows its compact drawing (engine/svg.COMPACT_BELOW)
MIN_TEXT_PX = 11
TARGET_PX = 24
# every block laid out: tw.css lets blocks out of view skip layout (content-visibility)
ALL_LAID_OUT = ".md-content__inner > * { content-visibility: visible !important; }"

FIGURE_TEXTS = """() => [...document.querySelectorAll('.tw-figure svg text')]
  .filter(t => t.getClientRects().length && t.textContent.trim())
  .map(t => {
    const m = t.getScreenCTM(), svg = t.ownerSVGElement.getBoundingClientRect(), r = t.getBoundingClientRect();
    const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    const out = r.left < svg.left - 1 || r.right > svg.right + 1 || r.top < svg.top - 1 || r.bottom > svg.bottom + 1;
    const slot = t.closest('[data-layout]');  // none: a page from before issue 28
    return [t.closest('.tw-widget').id, slot ? slot.dataset.layout : '-', t.textContent.slice(0, 40),
            Math.round(px * 10) / 10, out];
  })"""
SHOWN_LAYOUTS = """() => [...document.querySelectorAll('.tw-figure')].map(f =>
  [f.closest('.tw-widget').id, [...f.querySelectorAll(':scope > [data-layout]')]
     .filter(s => getComputedStyle(s).display !== 'none').map(s => s.dataset.layout)])"""
SIDEWAYS_SCROLLERS = """() => [...document.querySelectorAll('body *')].filter(e => {
    const s = getComputedStyle(e);
    return ['auto', 'scroll'].includes(s.overflowX) && e.scrollWidth > e.clientWidth + 1 && e.getClientRects().length
      && !e.closest('.md-sidebar, .md-header, .md-search, .cm-editor');
  }).filter(e => !(e.tabIndex >= 0 && e.getAttribute('aria-label')))
  .map(e => e.tagName + '.' + e.className + ' ' + e.textContent.trim().slice(0, 40))"""
SMALL_TARGETS = """(min) => [...document.querySelectorAll(
    'button, input:not([type=hidden]), select, textarea, summary, [role=button], label.md-header__button, a.md-header__button')]
  .filter(e => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden')
  .filter(e => !e.closest('.md-sidebar, .md-search'))  // the drawers and the search dialog are closed
  .map(e => [e, e.getBoundingClientRect()])
  .filter(([e, r]) => r.width || r.height)  // a visually hidden input (Material's palette radios): its label is the target
  .filter(([e, r]) => r.width < min - 0.5 || r.height < min - 0.5)
  .map(([e, r]) => `${e.tagName}.${e.className} ${e.getAttribute('name') || e.textContent.trim().slice(0, 30)}: `
                   + `${r.width.toFixed(1)}x${r.height.toFixed(1)}`)"""


def open_at(browser, url: str, width: int, **context):
    ctx = browser.new_context(viewport={"width": width, "height": 800}, service_workers="block", **context)
    page = ctx.new_page()
    page.route("**/pyodide/**", lambda route: route.abort())  # the prerendered page: what a reader sees first
    page.goto(url)
    page.add_style_tag(content=ALL_LAID_OUT)
    return ctx, page


# after a resize: two frames, for the theme's and the page's resize listeners to lay out again
RESIZED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def test_pages_fit_the_screen_and_figures_are_readable(browser, server, site):
    """Each page opened once and measured at each width in turn (issue 43: one visit per page,
    not one per page and width); the layouts switch by CSS (container and media queries), as
    they do when a reader turns a tablet."""
    problems, measured = [], dict.fromkeys(WIDTHS, 0)
    for path in chapter_pages(site):
        ctx, page = open_at(browser, server + path, WIDTHS[0])
        try:
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 800})
                page.evaluate(RESIZED)
                problems += fit_problems(page, f"{path} @ {width}px", width, measured)
        finally:
            ctx.close()
    assert all(n > 100 for n in measured.values()), f"figure texts found per width: {measured}"
    assert not problems, "\n".join(problems)


def fit_problems(page, where: str, width: int, measured: dict[int, int]) -> list[str]:
    """What does not fit the screen at `width` on the open page; counts its figure texts in `measured`."""
    problems = []
    scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    if scroll[0] != scroll[1]:
        problems.append(f"{where}: the page scrolls sideways (scrollWidth {scroll[0]} > {scroll[1]})")
    for wid, shown in page.evaluate(SHOWN_LAYOUTS):
        expected = ["compact"] if width < PHONE else ["wide"]
        if shown != expected:
            problems.append(f"{where}: {wid} shows {shown}, not {expected}")
    texts = page.evaluate(FIGURE_TEXTS)
    measured[width] += len(texts)
    for wid, layout, text, px, out in texts:
        if width < PHONE and px < MIN_TEXT_PX:
            problems.append(f"{where}: {wid} ({layout}) «{text}» at {px} px")
        if out:
            problems.append(f"{where}: {wid} ({layout}) «{text}» cut by the figure's edge")
    for box in page.evaluate(SIDEWAYS_SCROLLERS):
        problems.append(f"{where}: scrolls sideways, not focusable or named: {box}")
    return problems


def test_controls_and_buttons_are_big_enough_to_touch(browser, server, site):
    problems = []
    for path in chapter_pages(site):
        ctx, page = open_at(browser, server + path, 390, has_touch=True, is_mobile=True)
        try:
            page.wait_for_selector(".tw-quiz[data-ready], .tw-widget", state="attached")
            problems += [f"{path}: {t}" for t in page.evaluate(SMALL_TARGETS, TARGET_PX)]
        finally:
            ctx.close()
    assert not problems, f"smaller than {TARGET_PX}x{TARGET_PX} CSS px:\n" + "\n".join(problems)


def test_a_glossary_term_opens_its_tooltip_on_tap(browser, server, site):
    path = chapter_pages(site)[0]
    ctx, page = open_at(browser, server + path, 390, has_touch=True, is_mobile=True)
    try:
        term = page.locator("abbr[tabindex='0']").first
        term.scroll_into_view_if_needed()
        term.tap()
        page.wait_for_selector(".md-tooltip2--active, .md-tooltip--active", timeout=5000)
    finally:
        ctx.close()


# --- print ---------------------------------------------------------------------------------

SCREEN_ONLY = """() => [...document.querySelectorAll(
    'input:not([type=hidden]), select, textarea, button:not(.tw-choose), .tw-code, .tw-code-toggle, .cm-editor, '
    + '.tw-status, .tw-progress, .md-header, .md-sidebar, .md-footer')]
  .filter(e => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden')
  .map(e => e.tagName + '.' + e.className + ' ' + (e.textContent || '').trim().slice(0, 30))"""
MARK = """() => { document.querySelectorAll('.tw-widget').forEach((w, i) => {
  w.style.position = 'relative';
  for (const [edge, text] of [['top', `TWTOP${i}X`], ['bottom', `TWEND${i}X`]]) {
    const m = document.createElement('span');
    m.textContent = text;
    m.style.cssText = `position:absolute;${edge}:1px;left:2px;font-size:5px;line-height:5px;color:#000`;
    w.append(m);
  }
}); return document.querySelectorAll('.tw-widget').length; }"""
QUIZ = """() => ({
  questions: [...document.querySelectorAll('.tw-q')].map(q => (q.querySelector('p') || q).textContent),
  answers: [...document.querySelectorAll('.tw-why, details.tw-model > :not(summary)')].map(a => a.textContent),
  links: [...document.querySelectorAll('.md-content a[href^="http"]')]  // external, and printed
    .filter(a => new URL(a.href).origin !== location.origin && a.getClientRects().length).map(a => a.getAttribute('href')),
})"""
SCREEN_WORDS = ("Copia l'enllaç", "Figura calculada en construir la pàgina", "Interactiu:", "Torna a començar",
                "Mostra una resposta model", "Marge acceptat", "Entrena des de zero")


def squeeze(text: str) -> str:
    """Text without whitespace or soft hyphens: pdftotext breaks lines where the page did."""
    return re.sub(r"[\s\u00ad]+", "", text)


def pdf_pages(pdf: bytes, tmp_path) -> list[str]:
    if not shutil.which("pdftotext"):
        why = "pdftotext (Debian: poppler-utils) is not installed; ./dev test installs it"
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    path = tmp_path / "page.pdf"
    path.write_bytes(pdf)
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True).stdout
    return text.split("\f")


@pytest.mark.parametrize("scheme", ["light"])
def test_print_is_an_edition(browser, server, site, tmp_path, scheme):
    problems, links = [], 0
    for path in chapter_pages(site):
        ctx, page = open_at(browser, server + path, 1280, color_scheme=scheme)
        try:
            page.wait_for_selector(".tw-widget[data-hosted]", state="attached")
            page.emulate_media(media="print")
            for el in page.evaluate(SCREEN_ONLY):
                problems.append(f"{path}: printed: {el}")
            quiz = page.evaluate(QUIZ)
            widgets = page.evaluate(MARK)
            pages = pdf_pages(page.pdf(format="A4", print_background=False), tmp_path)
        finally:
            ctx.close()
        for i in range(widgets):
            top = [n for n, text in enumerate(pages) if f"TWTOP{i}X" in text]
            end = [n for n, text in enumerate(pages) if f"TWEND{i}X" in text]
            if not top or top != end:
                problems.append(f"{path}: widget {i} split across pages (top on {top}, bottom on {end})")
        whole = squeeze("".join(pages))
        problems += [f"{path}: the PDF prints «{w}»" for w in SCREEN_WORDS if squeeze(w) in whole]
        problems += [f"{path}: question not printed: «{q[:40]}»" for q in quiz["questions"] if squeeze(q)[:25] not in whole]
        problems += [f"{path}: answer printed: «{a[:40]}»" for a in quiz["answers"] if squeeze(a)[:60] in whole]
        links += len(quiz["links"])
        problems += [f"{path}: link target not printed: {href}" for href in quiz["links"][:5] if squeeze(href)[:40] not in whole]
    assert links, "no external link printed on any chapter page: the link check checked nothing"
    assert not problems, "\n".join(problems)


def test_print_shows_the_parameters_the_reader_chose(browser, server, site):
    """A moved control is not printed, so its value is, on the widget's line of parameters;
    and the figure printed is the one drawn for them."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    try:
        page = ctx.new_page()
        page.goto(server + "cap15/index.html")
        sel = "#tw-roofline"
        page.wait_for_selector(f"{sel}[data-state=ready]", timeout=120_000)
        before = page.inner_html(f"{sel} .tw-figure")
        slider = page.locator(f"{sel} input[name=batch]")
        slider.focus()
        page.keyboard.press("End")
        page.wait_for_function(f"() => document.querySelector('{sel}').dataset.state === 'ready' && "
                               f"!document.querySelector('{sel}').dataset.busy && "
                               f"document.querySelector('{sel} .tw-figure').innerHTML !== {before!r}", timeout=60_000)
        label = page.inner_text(f"{sel} input[name=batch] ~ output, {sel} label[for$=batch] output")
        page.emulate_media(media="print")
        line = page.inner_text(f"{sel} .tw-params")
        assert label.strip() and label.strip() in line, (label, line)
        shown = page.evaluate(f"() => [...document.querySelectorAll('{sel} .tw-figure > [data-layout]')]"
                              ".filter(s => getComputedStyle(s).display !== 'none').map(s => [s.dataset.layout, !!s.dataset.stale])")
        assert shown == [["wide", False]], shown
    finally:
        ctx.close()
