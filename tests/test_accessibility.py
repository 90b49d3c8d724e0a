# Work in progress (issue 15 §7), not collected by pytest: 6 of 13 probes still fail; rename to test_accessibility.py when green.
"""Accessibility, measured (issue 15 §7): axe-core 4 on every built page, light and dark
schemes, widgets ready; zero violations of WCAG 2.0/2.1 A and AA rules and best practices.

axe-core comes from the npm registry (`npm pack`), pinned by version and sha256, kept in
~/.cache/textbook/npm and injected by this test only: it is never part of the site."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

from axe import TAGS, axe_source  # noqa: E402,F401 - the pinned axe-core, as a fixture

BOOT_MS = 120_000
# Violations that belong to the theme and that no override can fix: (rule id, CSS target).
# Empty: Material's search dialog gets its name from overrides/partials/search.html.
THEME: set[tuple[str, str]] = set()


def _pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))


PAGES = ["index.html", "cap15/index.html", "cap15/sense-formules.html", "glossari.html", "contribuir.html", "404.html"]


def test_every_built_page_is_probed(site):
    assert _pages(site) == sorted(PAGES)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page_path", PAGES)
def test_axe_finds_no_violation(browser, server, axe_source, page_path, scheme):
    context = browser.new_context(color_scheme=scheme, service_workers="block")
    context.add_init_script(axe_source)  # a test-only script: through the browser, not the site
    page = context.new_page()
    page.goto(server + page_path)
    page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')]"
                           ".every(w => w.dataset.state === 'ready')", timeout=BOOT_MS)
    expected = "slate" if scheme == "dark" else "default"
    assert page.get_attribute("body", "data-md-color-scheme") == expected
    violations = page.evaluate("""async (tags) => {
        const r = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
        return r.violations.map(v => ({ id: v.id, nodes: v.nodes.map(n => [n.target.join(' '), n.failureSummary]) }));
    }""", TAGS)
    context.close()
    ours = [(v["id"], target, why) for v in violations for target, why in v["nodes"]
            if (v["id"], target) not in THEME]
    assert ours == [], "\n".join(f"{rule} {target}: {why}" for rule, target, why in ours[:40])
