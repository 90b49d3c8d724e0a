"""Accessibility, measured (issue 15 §7): axe-core 4 on every page of the built site, light
and dark schemes, widgets ready (and, on a widget page, widgets whose Python failed to load);
zero violations of WCAG 2.0/2.1 A and AA rules and best practices.

The pages are found in the built site, not listed: a new chapter (like the suite's fixture
chapter, cap99) is probed without editing this file. axe-core is the pinned test fixture of
tests/axe.py, injected through the browser: it is never part of the site."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from axe import TAGS, axe_source  # noqa: F401 - the pinned axe-core, as a fixture
from book import chapter_pages, widget_pages
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


def pages(site: Path) -> list[str]:
    """Every page of the built site; a chapter page's single-file download (NAME.descarrega.html)
    is that same page with its files inlined, not another page."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if not p.name.endswith(SUFFIX))


def probe(browser, url: str, axe_source: str, scheme: str, *, python: bool = True) -> list[tuple[str, str, str]]:
    """(rule, target, why) of each violation on the page once its widgets settle: ready, or
    in their error state when python=False (Pyodide's loader blocked)."""
    context = browser.new_context(color_scheme=scheme, service_workers="block")
    try:
        context.add_init_script(axe_source)  # a test-only script: through the browser, not the site
        page = context.new_page()
        if not python:
            page.route("**/pyodide/pyodide.js", lambda route: route.abort())
        page.goto(url)
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')]"  # settled, no run under way
                               ".every(w => ['ready', 'error'].includes(w.dataset.state) && !w.dataset.busy)",
                               timeout=BOOT_MS)
        states = page.eval_on_selector_all(".tw-widget", "ws => ws.map(w => [w.id, w.dataset.state])")
        expected = "ready" if python else "error"
        assert all(state == expected for _, state in states), f"{url}: widgets not {expected}: {states}"
        assert page.get_attribute("body", "data-md-color-scheme") == SCHEMES[scheme], url
        found = page.evaluate(AXE_RUN, [None if python else ".tw-widget", TAGS])
    finally:
        context.close()
    return [(rule, target, why) for rule, target, why in found if (rule, target) not in THEME]


def report(found: list[tuple[str, str, str, str]]) -> str:
    """Violations grouped by page and rule, a few nodes each, one line per node."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for page, rule, target, why in found:
        groups[page, rule].append((target, why))
    lines = [f"{len(found)} violation(s):"]
    for (page, rule), nodes in groups.items():
        lines.append(f"{page}  {rule}: {len(nodes)} node(s)")
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


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_violation_on_any_page(browser, server, site, axe_source, scheme):
    found = [(path, *v) for path in pages(site) for v in probe(browser, server + path, axe_source, scheme)]
    if found:
        pytest.fail(report(found), pytrace=False)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_violation_in_widgets_without_python(browser, server, site, axe_source, scheme):
    path = widget_pages(site)[0]  # the widgets' error state: status line, disabled controls
    found = [(path, *v) for v in probe(browser, server + path, axe_source, scheme, python=False)]
    if found:
        pytest.fail(report(found), pytrace=False)


def download_pages(site: Path) -> list[str]:
    """The single-file chapters (build_hooks/export/downloads.py), each the page with its files inlined."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob(f"*{SUFFIX}"))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_violation_on_the_download_pages(browser, server, site, axe_source, scheme):
    paths = download_pages(site)
    assert paths, "no single-file chapter in the site"
    found = [(path, *v) for path in paths for v in probe(browser, server + path, axe_source, scheme)]
    if found:
        pytest.fail(report(found), pytrace=False)


PENDING = ".tw-widget:has(.tw-values .tw-pending)"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_violation_while_values_are_pending(browser, server, site, axe_source, scheme):
    """A long run's values still to come (the clock timing, host.js showPartial) are shown
    pending: still text a reader must be able to read (issue 28: #808080 on #f5f5f5)."""
    context = browser.new_context(color_scheme=scheme, service_workers="block")
    try:
        context.add_init_script(axe_source)
        page = context.new_page()
        page.goto(server + widget_pages(site)[0])
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                               timeout=BOOT_MS)
        # a staged run's values still to come, as host.js marks them (classList "tw-pending"): set
        # here rather than caught in flight, since a fast run shows them for less than a frame
        page.evaluate("""() => document.querySelectorAll('.tw-widget').forEach(w =>
            w.querySelectorAll('.tw-values [data-value]').forEach((row, i) => i % 2 || row.classList.add('tw-pending')))""")
        page.wait_for_selector(PENDING, timeout=5_000)
        found = page.evaluate(AXE_RUN, [PENDING, TAGS])
    finally:
        context.close()
    found = [("pending", *v) for v in found if (v[0], v[1]) not in THEME]
    if found:
        pytest.fail(report(found), pytrace=False)
