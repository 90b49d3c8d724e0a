"""Security headers (issue 15 §6): the build writes `_headers` and an nginx snippet from the
pages' own policy; served with them, no other origin can frame the chapter, and the workers
(started from blob: URLs) inherit the page's policies in every hosting mode."""

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
    pages = list(site.rglob("*.html"))
    assert any(p.name.endswith(".descarrega.html") for p in pages)  # a chapter as one file (single_file.py) too:
    for page in pages:  # the header's policy is enforced beside each page's own, so it must allow them all
        meta = _directives(unescape(META.search(page.read_text()).group(1)))
        for name, sources in meta.items():
            assert sources <= policy[name] or sources == {"'none'"}, (page.name, name, sources - policy[name])
        assert "'none'" not in policy["script-src"]
    assert policy["frame-ancestors"] == {"'none'"}
    assert dict(base)["X-Content-Type-Options"] == "nosniff"
    # the workers inherit the page's policies (kernel.js starts them from blob: URLs): no rule of their own
    assert [path for path, _ in rules] == [path for path, _ in rules if path.endswith("/*")]
    assert policy["connect-src"] == {"'self'"} and "'unsafe-eval'" not in policy["script-src"]
    nginx = (site / "nginx-headers.conf").read_text()
    assert dict(base)["Content-Security-Policy"] in nginx


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


@pytest.mark.browser
def test_a_chapter_download_still_runs_served_with_the_headers(browser, site, headed):
    """The `/*` rule's policy is sent with the single-file downloads too: it must not block them."""
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    try:
        page.goto(headed + "cap15/capitol.descarrega.html?pista=sense-formules")
        page.wait_for_function(ALL_READY, timeout=BOOT_MS)
        assert errors == []
    finally:
        context.close()


def _refused(name: str, call: str) -> str:
    """Python that reports whether `call` was refused. Pyodide sometimes turns a JS throw from these
    calls into a bare SystemError without the message, so the probe says which way it went; its
    targets (another origin: OTHER, the same server under another host name) would work unlocked."""
    return (f"import js\ntry:\n    {call}\nexcept Exception:\n    raise RuntimeError('{name} refusat')\n"
            f"raise RuntimeError('{name} ha funcionat')")


PROBES = {  # Python the reader could type in the code panel, run in the real worker
    "eval": (_refused("eval", "js.eval('1 + 1')"), "eval refusat"),
    "xhr": (_refused("xhr", "js.XMLHttpRequest.new().open('GET', OTHER + 'index.html')"), "xhr refusat"),
    "importScripts": (_refused("importScripts", "js.importScripts(OTHER + 'assets/tw/numbers.js')"), "importScripts refusat"),
    "websocket": ("import js\nif js.WebSocket is not None:\n    raise RuntimeError('WebSocket disponible')", None),
    "nested worker": ("import js\nif js.Worker is not None:\n    raise RuntimeError('Worker disponible')", None),
    "same origin": ("import js\nr = js.XMLHttpRequest.new()\nr.open('GET', '/index.html')", None),  # allowed
}


@pytest.mark.browser
def test_the_worker_locks_itself_down_without_headers(watched, server):
    """Served with no header files (GitHub Pages), the worker's own lock-down (lockdown.js) holds
    against code run in it: no eval, no other origin, no sockets or nested workers."""
    page = watched.page
    page.goto(server + PAGE)
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    other = server.replace("127.0.0.1", "localhost")  # the same files from another origin
    assert other != server
    outcomes = page.evaluate("""async (probes) => {
        const k = tw.kernel.get(JSON.parse(document.getElementById('tw-config').dataset.config));
        const { source } = await k.call(tw.protocol.CALLS.SOURCE, { widget: 'roofline' });
        const out = {};
        for (const [name, [code]] of Object.entries(probes)) {
            const reply = await k.call(tw.protocol.CALLS.EDITED,
                { widget: 'roofline', key: 'probe-' + name, code: source + '\\n' + code + '\\n', params: {} });
            out[name] = reply.error ? reply.error.message : null;
        }
        return out;
    }""", {name: [f"OTHER = {other!r}\n" + code, refused] for name, (code, refused) in PROBES.items()})
    for name, (_, refused) in PROBES.items():
        if refused:
            assert outcomes[name] == refused, (name, outcomes[name])
        else:
            assert outcomes[name] is None, (name, outcomes[name])
    origin = server.rstrip("/")
    assert [u for u in watched.requests if not u.startswith((origin, "data:", "blob:"))] == []
