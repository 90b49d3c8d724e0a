"""The offline copy's edges (review hostile-round2, M-3 and L-11):

- Two books under sub-paths of one origin (`/a/`, `/b/`: several courses on one
  `user.github.io`, or `/v1/` and `/v2/` of one course) each keep their offline copy: a visit
  to one never deletes the other's. In Chromium, Firefox ESR and WebKitGTK.
- A damaged cached copy plus a deploy never pairs builds: a page that asks for this build's
  `worker.js?v=HASH` while the host serves other bytes gets the clear boot failure, never the
  other build's worker. In Chromium (the service worker's logic is the same in every engine).
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import pytest
from conftest import _Quiet
from test_engines import _fresh_hits, engine, once_more_after_a_crash, wait_ready  # noqa: F401 - fixtures, reused

import engines

pytestmark = pytest.mark.browser

STORED = "() => document.documentElement.dataset.twOffline === 'ready'"
STORED_S = 180
OTHER_BUILD_RAN = "/__other-build-ran"  # what the other build's worker.js asks first (L-11)


class Mounted:
    """Sites under sub-paths of one origin (`{"/a/": site, ...}`), until stop() (the port then
    refuses connections: the network is cut). Nothing is kept by the HTTP cache (no-store), so
    what reads offline comes from the service worker. `rewrite` changes a served file's bytes:
    {"/b/sw.js": function of the bytes}. Paths asked for are in `asked`."""

    def __init__(self, mounts: dict[str, Path], rewrite: dict | None = None):
        rewrite = self.rewrite = dict(rewrite or {})
        asked = self.asked = []

        class Handler(_Quiet):
            def do_GET(self):
                path = self.path.split("?")[0].split("#")[0]
                asked.append(path)
                if path in rewrite:
                    with open(self.translate_path(path), "rb") as f:
                        return self.reply(rewrite[path](f.read()))
                return super().do_GET()

            def translate_path(self, path):
                mount = next((m for m in mounts if path.startswith(m)), None)
                if mount is None:
                    return "/nonexistent"  # 404
                self.directory = str(mounts[mount])
                return super().translate_path("/" + path[len(mount):])

            def end_headers(self):
                self.send_header("Cache-Control", "no-store")
                super().end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory="/nonexistent"))
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chromium(browser):
    page = engines.Chromium(browser)  # service workers allowed
    yield page
    page.close()


def other_version(sw: bytes) -> bytes:
    """The same sw.js with another VERSION: a second book (or build) of the same files."""
    out, n = re.subn(rb'const VERSION = "[^"]+";', b'const VERSION = "0b0b0b0b0b0b0b0b";', sw)
    assert n == 1, "sw.js declares its VERSION on one line"
    return out


def two_books_keep_their_offline_copies(engine, site):
    books = Mounted({"/a/": site, "/b/": site}, rewrite={"/b/sw.js": other_version})
    try:
        for book in ("a/", "b/"):
            engine.goto(books.url + book + "cap15/")
            wait_ready(engine)
            engine.wait(STORED, timeout=STORED_S)
    finally:
        books.stop()
    engine.goto(books.url + "a/cap15/")  # offline: /b/'s visit must have left /a/'s copy
    assert engine.js("() => document.querySelectorAll('.tw-widget').length") > 0, f"{engine.name}: /a/cap15/ offline"
    wait_ready(engine)  # Python too, from /a/'s copy


def test_two_books_under_one_origin_keep_their_offline_copies_chromium(chromium, site):
    two_books_keep_their_offline_copies(chromium, site)


def test_two_books_under_one_origin_keep_their_offline_copies(engine, site):
    once_more_after_a_crash(engine, two_books_keep_their_offline_copies, engine, site)


def another_worker(js: bytes) -> bytes:
    """Another build's worker.js: it says that it ran, first."""
    return f'fetch("{OTHER_BUILD_RAN}");\n'.encode() + js


DAMAGE = """async () => {
  const reg = await navigator.serviceWorker.getRegistration();
  const names = (await caches.keys()).filter((name) => name.startsWith("tw-"));
  for (const name of names) {
    await (await caches.open(name)).put(new URL("assets/tw/worker.js", reg.scope).href, new Response("// damaged"));
  }
  return names.length;
}"""
SETTLED = "() => [...document.querySelectorAll('.tw-widget')].every(w => ['ready', 'error'].includes(w.dataset.state))"
STATES = "() => [...document.querySelectorAll('.tw-widget')].map(w => [w.dataset.state, w.querySelector('.tw-status').textContent])"


def test_a_damaged_copy_and_a_deploy_never_pair_builds(chromium, site):
    """L-11: the stored copy of worker.js damaged, the host serving another build's: the page
    (this build's, from the offline copy) must not run that worker; its widgets fail to boot,
    saying so, and keep their prerendered figures."""
    host = Mounted({"/": site})
    try:
        chromium.goto(host.url + "cap15/")
        wait_ready(chromium)
        chromium.wait(STORED, timeout=STORED_S)
        assert chromium.js(DAMAGE) == 1
        host.rewrite["/assets/tw/worker.js"] = another_worker  # a deploy
        chromium.reload()
        chromium.wait(SETTLED, timeout=120)
        states = chromium.js(STATES)
        assert OTHER_BUILD_RAN not in host.asked, "this build's page ran another build's worker.js"
        assert states and all(state == "error" and status.startswith("No s'ha pogut carregar Python") for state, status in states), states
        assert chromium.js("() => [...document.querySelectorAll('.tw-widget .tw-figure')].every(f => f.innerHTML.trim())")
    finally:
        host.stop()
