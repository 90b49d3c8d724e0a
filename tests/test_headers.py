"""Security headers (issue 15 §6): the build writes `_headers` and an nginx snippet from the
pages' own policy; served with them, the worker has a policy of its own and no other origin
can frame the chapter; served without them (GitHub Pages), the worker locks itself down."""

from __future__ import annotations

import functools
import http.server
import re
import threading
from fnmatch import fnmatch
from html import unescape

import pytest

from conftest import free_port

PAGE = "cap15/index.html"
BOOT_MS = 120_000
ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')"
META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">')


def _directives(policy: str) -> dict[str, set[str]]:
    return {name: set(sources) for name, *sources in (p.split() for p in policy.split(";") if p.strip())}


def _rules(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Netlify/Cloudflare `_headers`: a path line, then indented `Name: value` lines."""
    rules: list[tuple[str, list[tuple[str, str]]]] = []
    for line in text.splitlines():
        if line and not line[0].isspace():
            rules.append((line.strip(), []))
        elif line.strip():
            name, _, value = line.strip().partition(":")
            rules[-1][1].append((name.strip(), value.strip()))
    return rules


@pytest.mark.build
def test_header_files_carry_every_page_policy_plus_frame_ancestors(site):
    rules = _rules((site / "_headers").read_text())
    base = next(h for path, h in rules if path.endswith("/*"))
    policy = _directives(dict(base)["Content-Security-Policy"])
    for page in site.rglob("*.html"):
        if page.name.endswith(".descarrega.html"):
            continue  # a chapter as one file (export.py): downloaded, with a policy of its own
        meta = _directives(unescape(META.search(page.read_text()).group(1)))
        for name, sources in meta.items():
            assert sources <= policy[name], (page.name, name)
    assert policy["frame-ancestors"] == {"'none'"}
    assert dict(base)["X-Content-Type-Options"] == "nosniff"
    worker = dict(next(h for path, h in rules if path.endswith("assets/tw/worker.js")))
    wpolicy = _directives(worker["Content-Security-Policy"])
    assert wpolicy["connect-src"] == {"'self'"} and "'unsafe-eval'" not in wpolicy["script-src"]
    nginx = (site / "nginx-headers.conf").read_text()
    assert dict(base)["Content-Security-Policy"] in nginx and worker["Content-Security-Policy"] in nginx


class _WithHeaders(http.server.SimpleHTTPRequestHandler):
    """A static host that applies `_headers` the way Netlify and Cloudflare Pages do."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}
    rules: list = []

    def end_headers(self):
        path = self.path.split("?", 1)[0]
        for pattern, headers in self.rules:
            if fnmatch(path, pattern.split("://", 1)[-1]):
                for name, value in headers:
                    self.send_header(name, value)
        super().end_headers()

    def log_message(self, *args):
        pass


def _serve(handler, directory, port=0):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.fixture(scope="module")
def headed(site, port):
    """The site served with its `_headers` (on the port the site was built for, another process' port
    is not needed: each test module gets the session server's files, this server's headers)."""
    _WithHeaders.rules = [(path, headers) for path, headers in _rules((site / "_headers").read_text())]
    httpd = _serve(_WithHeaders, site, free_port())
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()


@pytest.mark.browser
def test_another_origin_cannot_frame_the_chapter(browser, site, headed):
    framer = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    page_html = f'<!doctype html><title>framer</title><iframe src="{headed}{PAGE}"></iframe>'.encode()

    class Framer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page_html)

        def log_message(self, *args):
            pass

    framer.RequestHandlerClass = Framer
    threading.Thread(target=framer.serve_forever, daemon=True).start()
    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(f"http://localhost:{framer.server_port}/")
        page.wait_for_timeout(1500)
        framed = [f for f in page.frames if f != page.main_frame]
        assert framed, "the iframe is missing"
        assert all(f.evaluate("() => document.querySelector('.tw-widget') === null") for f in framed)
    finally:
        context.close()
        framer.shutdown()
