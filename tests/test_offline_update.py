"""Site updates and bytes (issues 13 and 15 §1): one build at a time, each byte once.

- Two builds of the same source are byte-identical, so sw.js (whose version hashes the
  files) does not change and returning readers download nothing.
- A first visit transfers at most 1.05x what it precaches; a repeat visit transfers 0.
- A path missing from the site, offline, gives the site's 404 page.
- After a new build is deployed, a reader never sees HTML of one build with scripts of
  another; the page offers the reload, and after it everything is the new build.
"""

from __future__ import annotations

import filecmp
import functools
import http.server
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import ROOT, _Quiet, book_with_fixture, build_site, free_port

from build_hooks.hosting import offline

pytestmark = pytest.mark.browser

BOOT_MS = 90_000
ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')"
STORED = "() => document.documentElement.dataset.twOffline === 'ready'"


def differing(a: Path, b: Path) -> list[str]:
    """Relative paths that are in one tree only, or differ in bytes."""
    out = []
    cmp = filecmp.dircmp(a, b)
    out += [f"{a.name}/{n} (one side only)" for n in cmp.left_only + cmp.right_only]
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    out += mismatch + errors
    for sub in cmp.common_dirs:
        out += [f"{sub}/{p}" for p in differing(a / sub, b / sub)]
    return out


def test_two_builds_of_the_same_source_are_identical(site, port, tmp_path):
    """The session's site built again, from a fresh copy of the same sources (the book and
    the fixture chapter, as the `site` fixture builds them)."""
    again = tmp_path / "again"
    project = book_with_fixture(tmp_path / "project")
    done = build_site(again, project, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert differing(site, again) == []


class Counting(_Quiet):
    """Serves `root[0]` (swappable: a new deployment) and counts the body bytes it sends;
    the paths in `slow` answer that many seconds late."""

    root: list[Path] = []
    sent = [0]
    slow: dict[str, float] = {}

    def send_head(self):
        time.sleep(self.slow.get(urlsplit(self.path).path, 0))
        return super().send_head()

    def translate_path(self, path):
        self.directory = str(self.root[0])
        return super().translate_path(path)

    def copyfile(self, source, outputfile):
        data = source.read()
        self.sent[0] += len(data)
        outputfile.write(data)


@pytest.fixture
def serve():
    servers = []

    def start(root: Path, port: int = 0, slow: dict[str, float] | None = None) -> tuple[str, type]:
        handler = type("H", (Counting,), {"root": [root], "sent": [0], "slow": slow or {}})
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(root)))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_port}/", handler

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()  # the port is free for the next test of the same deployments


def test_each_byte_once_and_a_repeat_visit_costs_nothing(browser, site, serve):
    """A first visit in a context whose HTTP cache is in memory (a private window: it keeps no
    file as big as pyodide.asm.wasm) transfers at most 1.05x what the offline cache stores.
    On a slow network (sw.js 1 s late, Pyodide's worker.js 3 s late) Pyodide's worker starts
    before the service worker takes the page and runs after: the service worker must claim it,
    or Pyodide's files bypass the offline cache and the precache downloads them again."""
    base, counter = serve(site, slow={"/sw.js": 1, "/assets/tw/worker.js": 3})
    listed = offline.precache_list(site)
    precached = sum((site / rel).stat().st_size for rel in listed)
    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "cap15/index.html")
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    page.wait_for_function(STORED, timeout=120_000)
    first = counter.sent[0]
    assert first <= 1.05 * precached, f"first visit {first / 1e6:.2f} MB for {precached / 1e6:.2f} MB precached"
    assert (site / "assets/javascripts/lunr/wordcut.js").is_file() and "assets/javascripts/lunr/wordcut.js" not in listed
    assert any(site.rglob("*.map")) and not any(rel.endswith(".map") for rel in listed)
    assert "cap15/index.html" in listed and not any(rel.endswith("/") for rel in listed)  # a page once, by its file
    counter.sent[0] = 0
    page.goto(base + "cap15/index.html")
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    page.goto(base + "index.html")
    assert counter.sent[0] == 0, f"repeat visit transferred {counter.sent[0]} bytes"

    context.set_offline(True)  # a missing path, offline: the site's own 404 page
    response = page.goto(base + "cap15/no-such-page.html")
    assert response.status == 404
    assert page.locator("h1", has_text="404").count() == 1
    # offline, a widget page's search (its index held back until Python or the reader asks:
    # kernel.js) finds the chapter from the offline copy
    page.goto(base + "cap15/index.html")
    page.focus("input.md-search__input")
    page.keyboard.type("prefill")
    page.wait_for_selector(".md-search-result__item", timeout=20_000)
    context.close()


def project_copy(dest: Path, marker: str) -> Path:
    """The project's sources with a visible change: the title and host.js say `marker`."""
    for name in ("docs", "build_hooks", "widgets_py", "includes", "overrides", "corpus"):
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = (ROOT / "mkdocs.yml").read_text()
    (dest / "mkdocs.yml").write_text(config.replace("site_name: ", f"site_name: {marker} ", 1))
    host = dest / "docs" / "assets" / "tw" / "host.js"
    host.write_text(host.read_text() + f'\nwindow.twBuildMarker = "{marker}";\n')
    worker = dest / "docs" / "assets" / "tw" / "worker.js"
    worker.write_text(worker.read_text() + f"\n// {marker}\n")  # each build's worker is its own
    return dest


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> tuple[int, dict[str, Path]]:
    """(port, {marker: site}): two deployments of the same book, told apart by a marker in the
    title, host.js and worker.js; built for the port they are served on (instant navigation)."""
    tmp = tmp_path_factory.mktemp("deploys")
    port = free_port()
    sites = {marker: tmp / marker / "site" for marker in ("build-1", "build-2")}
    projects = {marker: project_copy(tmp / marker / "src", marker) for marker in sites}

    def build(marker: str):
        return build_site(sites[marker], project=projects[marker], env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})

    with ThreadPoolExecutor(2) as pool:  # two processes side by side (a build is mostly one core's work)
        for done in pool.map(build, sites):
            assert done.returncode == 0, done.stderr[-3000:]
    # the second is the later deploy: its files newer, as a host's Last-Modified would say (the
    # test server answers If-Modified-Since by mtime, to the second: a tie is a 304, no update)
    later = time.time() + 10
    for f in sites["build-2"].rglob("*"):
        os.utime(f, (later, later))
    return port, sites


def one_build(page) -> str:
    title, script = page.title(), page.evaluate("window.twBuildMarker")
    assert script in title, f"HTML of one build ({title!r}) with host.js of {script!r}"
    return script


WAITING = """async (old) => {
    const reg = await navigator.serviceWorker.getRegistration();
    const keys = await caches.keys();
    return reg && !reg.installing && (reg.waiting || !old.every(k => keys.includes(k)));
}"""


def instant_navigation(page) -> None:
    """Follow a visible link to another page of the site, as a reader would."""
    href = page.evaluate("""() => [...document.querySelectorAll('a[href$=".html"]')].find(a => a.offsetParent
        && new URL(a.href).origin === location.origin && new URL(a.href).pathname !== location.pathname).href""")
    page.evaluate("href => [...document.querySelectorAll('a')].find(a => a.href === href && a.offsetParent).click()", href)
    page.wait_for_function("href => location.href === href", arg=href)
    page.wait_for_timeout(500)  # the swap's scripts run


def test_an_update_never_mixes_two_builds(browser, two_builds, serve):
    port, sites = two_builds
    base, counter = serve(sites["build-1"], port)

    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "index.html")
    page.wait_for_function(STORED, timeout=120_000)
    first_cache = page.evaluate("caches.keys()")
    counter.root[0] = sites["build-2"]  # the new deployment
    page.goto(base + "index.html")
    assert one_build(page) == "build-1"  # the stored build, whole
    page.wait_for_function(WAITING, arg=first_cache, timeout=120_000)
    instant_navigation(page)  # Material swaps the page in, scripts stay
    one_build(page)
    page.click(".tw-update button")  # the page offers the new build
    page.wait_for_function("() => window.twBuildMarker === 'build-2'", timeout=30_000)
    assert one_build(page) == "build-2"
    instant_navigation(page)
    assert one_build(page) == "build-2"
    context.close()


def test_a_stale_tab_reloads_instead_of_restarting_into_the_new_build(browser, two_builds, serve):
    """Issue 34 §6 and §8: a tab opened while an update waits offers it too (its banner runs
    before <body> exists); once another tab lets the new build in, a fresh Python worker
    («Atura») would be the new build's under the old page: the page reloads instead."""
    port, sites = two_builds
    base, counter = serve(sites["build-1"], port)
    context = browser.new_context()
    first = context.new_page()
    first.goto(base + "cap15/index.html")
    first.wait_for_function(STORED, timeout=120_000)
    old = first.evaluate("caches.keys()")
    counter.root[0] = sites["build-2"]
    first.reload()
    first.wait_for_function(WAITING, arg=old, timeout=120_000)
    first.wait_for_selector(".tw-update button")
    second = context.new_page()
    errors = []
    second.on("pageerror", lambda e: errors.append(str(e)))
    second.goto(base + "cap15/index.html")
    second.wait_for_selector(".tw-update button", timeout=30_000)  # the offer, in this tab too
    second.wait_for_function(ALL_READY, timeout=BOOT_MS)
    assert errors == [] and one_build(second) == "build-1"
    first.click(".tw-update button")
    first.wait_for_function("() => window.twBuildMarker === 'build-2'", timeout=30_000)
    second.wait_for_function("() => tw.offline.stale", timeout=30_000)
    sel = '.tw-widget[data-widget="roofline"]'
    second.click(f"{sel} .tw-code-toggle")
    second.wait_for_selector(f"{sel} .tw-code[data-editor]", timeout=BOOT_MS)
    second.click(f"{sel} .tw-code-edit")
    second.click(f"{sel} .cm-content")
    second.keyboard.press("Control+End")
    second.keyboard.insert_text("while True:\n    pass\n")
    second.click(f"{sel} .tw-code-run")
    second.wait_for_selector(f"{sel} .tw-code-stop:not([hidden])", timeout=10_000)
    second.click(f"{sel} .tw-code-stop")
    second.wait_for_function("() => window.twBuildMarker === 'build-2'", timeout=60_000)  # reloaded, whole
    assert one_build(second) == "build-2"
    context.close()


class CachedFor10Minutes(Counting):
    """As GitHub Pages serves: every file may be reused from the HTTP cache for 600 s."""

    paths: list[str] = []

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def send_head(self):
        self.paths.append(self.path)
        return super().send_head()


def test_without_a_service_worker_the_http_cache_cannot_mix_builds(browser, two_builds):
    """Issue 34 §7: with no service worker (a private window, a failed registration) and
    max-age=600, a deploy used to give build 2's page build 1's cached worker.js, whose URL
    did not change. Every script a script loads now carries its build's version."""
    port, sites = two_builds
    handler = type("H", (CachedFor10Minutes,), {"root": [sites["build-1"]], "sent": [0], "slow": {}, "paths": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(sites["build-1"])))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{port}/"
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(base + "cap15/index.html")
        page.wait_for_function(ALL_READY, timeout=BOOT_MS)
        handler.root[0] = sites["build-2"]
        handler.paths.clear()
        page.reload()
        page.wait_for_function(ALL_READY, timeout=BOOT_MS)
        assert one_build(page) == "build-2"
        worker = offline.digest((sites["build-2"] / "assets/tw/worker.js").read_bytes())
        assert f"/assets/tw/worker.js?v={worker}" in [p.split("&")[0] for p in handler.paths], handler.paths
        for path in offline.LOADED:  # what scripts load by URL: each at build 2's version, or from the cache at it
            expected = offline.digest((sites["build-2"] / path).read_bytes())
            asked = [p for p in handler.paths if urlsplit(p).path == "/" + path]
            assert all(f"v={expected}" in p for p in asked), (path, asked)
        context.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
