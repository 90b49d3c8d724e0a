"""Accessibility, measured (issue 15 §7): axe-core 4 on every page of the built site, light
and dark schemes, widgets ready (and, on a widget page, widgets whose Python failed to load);
zero violations of WCAG 2.0/2.1 A and AA rules and best practices.

The pages are found in the built site, not listed: a new chapter (like the suite's fixture
chapter, cap99) is probed without editing this file. axe-core is the pinned test fixture of
tests/axe.py, injected through the browser: it is never part of the site.

Each page is opened once (issue 43: the suite's time must not grow with pages × schemes): axe
runs in the scheme the page opened in, then the reader's toggle switches it (the browser's
preference with it) and axe runs again; both schemes must have been probed. The pages share
one browser context, so Pyodide's files come from its HTTP cache after the first page."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from axe import TAGS, axe_source  # noqa: F401 - the pinned axe-core, as a fixture
from book import chapter_pages, engine_pages, widget_pages
from build_hooks.export.single_file import SUFFIX

pytestmark = pytest.mark.browser

BOOT_MS = 120_000
SCHEMES = {"light": "default", "dark": "slate"}  # the browser's preference -> Material's scheme
SHOWN = 5  # nodes listed per page and rule in a failure message
# Violations that belong to the theme and that no override can fix: (rule id, CSS target).
# Empty: Material's search dialog gets its name from overrides/partials/search.html, its code
# colours and small print are overridden in docs/assets/tw/tw.css.
THEME: set[tuple[str, str]] = set()
AXE_RUN = """async ([context, tags]) => {  // context: a selector, or null for the whole page
    const r = await axe.run(context || document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return r.violations.flatMap(v => v.nodes.map(n => [v.id, n.target.join(' '), n.failureSummary]));
}"""
# Set before the toggle: the theme's colour transitions (links: 125 ms) start, in blocks out of
# view (content-visibility), only when axe first reads their style, so axe would read the old
# scheme's colour there; without transitions each element has the new scheme's colours at once.
NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; }"
SETTLED = ("() => [...document.querySelectorAll('.tw-widget')]"  # settled, no run under way
           ".every(w => ['ready', 'error'].includes(w.dataset.state) && !w.dataset.busy)")


@pytest.fixture(scope="module")
def context(browser, axe_source):  # noqa: F811
    """One context for the module's pages: axe injected (a test-only script, through the
    browser, not the site), no service worker (each page's own requests, as served)."""
    ctx = browser.new_context(service_workers="block")
    ctx.add_init_script(axe_source)
    yield ctx
    ctx.close()


def axe_in_both_schemes(page, context: str | None) -> list[tuple[str, str, str, str]]:
    """(scheme, rule, target, why) of each violation in the scheme the page shows, then in the
    other one, switched by the palette's toggle as a reader switches it."""
    found, seen = [], []
    for _ in SCHEMES:
        if seen:
            other = next(pref for pref, scheme in SCHEMES.items() if scheme != seen[-1])
            page.add_style_tag(content=NO_TRANSITIONS)
            page.emulate_media(color_scheme=other)
            page.click("form[data-md-component=palette] label:visible")
            page.wait_for_function("s => document.body.dataset.mdColorScheme !== s", arg=seen[-1], timeout=5_000)
        seen.append(page.get_attribute("body", "data-md-color-scheme"))
        found += [(seen[-1], rule, target, why) for rule, target, why in page.evaluate(AXE_RUN, [context, TAGS])
                  if (rule, target) not in THEME]
    assert sorted(seen) == sorted(SCHEMES.values()), f"{page.url}: probed in {seen}, not in each of {list(SCHEMES.values())}"
    return found


def pages(site: Path) -> list[str]:
    """Every page of the built site; a chapter page's single-file download (NAME.descarrega.html)
    is that same page with its files inlined, not another page."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if not p.name.endswith(SUFFIX))


def probe(context, url: str, *, python: bool = True) -> list[tuple[str, str, str, str]]:
    """(scheme, rule, target, why) of each violation on the page once its widgets settle:
    ready, or in their error state when python=False (Pyodide's loader blocked), in both schemes."""
    page = context.new_page()
    try:
        if not python:
            page.route("**/pyodide/pyodide.js", lambda route: route.abort())
        page.goto(url)
        page.wait_for_function(SETTLED, timeout=BOOT_MS)
        states = page.eval_on_selector_all(".tw-widget", "ws => ws.map(w => [w.id, w.dataset.state])")
        expected = "ready" if python else "error"
        assert all(state == expected for _, state in states), f"{url}: widgets not {expected}: {states}"
        return axe_in_both_schemes(page, None if python else ".tw-widget")
    finally:
        page.close()


def report(found: list[tuple[str, str, str, str, str]]) -> str:
    """Violations grouped by page, scheme and rule, a few nodes each, one line per node."""
    groups: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    for page, scheme, rule, target, why in found:
        groups[page, scheme, rule].append((target, why))
    lines = [f"{len(found)} violation(s):"]
    for (page, scheme, rule), nodes in groups.items():
        lines.append(f"{page} ({scheme})  {rule}: {len(nodes)} node(s)")
        for target, why in nodes[:SHOWN]:
            reason = " ".join(line.strip() for line in why.splitlines() if not line.startswith("Fix "))
            lines.append(f"    {target}  {reason}")
        if len(nodes) > SHOWN:
            lines.append(f"    ... and {len(nodes) - SHOWN} more")
    return "\n".join(lines)


def test_the_probed_pages_are_every_page_of_the_site(site):
    probed = pages(site)
    assert {"index.html", "404.html", "glossari.html", "contribuir.html"} <= set(probed)
    assert set(chapter_pages(site)) <= set(probed)
    assert any(p.startswith("cap99/") for p in probed)  # the fixture chapter, found as any chapter
    assert not [p for p in probed if p.endswith(SUFFIX)]


def test_axe_finds_no_violation_on_any_page(context, server, site):
    found = [(path, *v) for path in pages(site) for v in probe(context, server + path)]
    if found:
        pytest.fail(report(found), pytrace=False)


def test_axe_finds_no_violation_in_widgets_without_python(context, server, site):
    path = widget_pages(site)[0]  # the widgets' error state: status line, disabled controls
    found = [(path, *v) for v in probe(context, server + path, python=False)]
    if found:
        pytest.fail(report(found), pytrace=False)


def download_pages(site: Path) -> list[str]:
    """The single-file chapters (build_hooks/export/downloads.py) of the chapters the engine
    matrix visits (book.engine_pages): each is a page probed above with its files inlined, by
    the same export for every chapter, so these probe the export without growing with the book."""
    chapters = {p.split("/", 1)[0] for p in engine_pages(chapter_pages(site))}
    return sorted(rel for rel in (p.relative_to(site).as_posix() for p in site.rglob(f"*{SUFFIX}"))
                  if rel.split("/", 1)[0] in chapters)


def test_axe_finds_no_violation_on_the_download_pages(context, server, site):
    paths = download_pages(site)
    assert any(p.startswith("cap15/") for p in paths) and any(p.startswith("cap99/") for p in paths), paths
    found = [(path, *v) for path in paths for v in probe(context, server + path)]
    if found:
        pytest.fail(report(found), pytrace=False)


PENDING = ".tw-widget:has(.tw-values .tw-pending)"


def test_axe_finds_no_violation_while_values_are_pending(context, server, site):
    """A long run's values still to come (the clock timing, host.js showPartial) are shown
    pending: still text a reader must be able to read (issue 28: #808080 on #f5f5f5)."""
    page = context.new_page()
    try:
        page.goto(server + widget_pages(site)[0])
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                               timeout=BOOT_MS)
        # a staged run's values still to come, as host.js marks them (classList "tw-pending"): set
        # here rather than caught in flight, since a fast run shows them for less than a frame
        page.evaluate("""() => document.querySelectorAll('.tw-widget').forEach(w =>
            w.querySelectorAll('.tw-values [data-value]').forEach((row, i) => i % 2 || row.classList.add('tw-pending')))""")
        page.wait_for_selector(PENDING, timeout=5_000)
        found = axe_in_both_schemes(page, PENDING)
    finally:
        page.close()
    found = [("pending", *v) for v in found]
    if found:
        pytest.fail(report(found), pytrace=False)
