"""A reader's edit stays in its sandbox (issue 34): what hostile code in the «Codi» panel could
do on the last release, each tried here and refused. A second loopback server stands for
"another origin" and records whatever reaches it.

Browser-side: lockdown.js (what Python can reach), sw.js (what the offline cache serves),
markup.js + DOMPurify (what an output may put in the page), codepanel.js/host.js (stored
edits are drafts; a worker that ran an edit is replaced; a hung worker is detected).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from html import unescape
from urllib.parse import urlsplit

import pytest
from conftest import _Quiet

from build_hooks.export import downloads
from build_hooks.pages import codepanel
from build_hooks.runtime import zips
from mkdocs.exceptions import PluginError
from test_codepanel import BOOT_MS, OTHER, SEL, open_panel, ready, run_edit, shipped_module, type_at_end
from widgets_py.engine import browser as entry

pytestmark = pytest.mark.browser

PAGE = "cap15/index.html"
ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready' && !w.dataset.busy)"
STORED = "() => document.documentElement.dataset.twOffline === 'ready'"
EDIT = 'KV_FORMAT = "fp8"  # la prova\n'


class Recorder(_Quiet):
    hits: list[str] = []

    def do_GET(self):
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>fora</p>")


@pytest.fixture(scope="module")
def elsewhere():
    """Another origin (another port of 127.0.0.1), recording every request that reaches it."""
    handler = type("R", (Recorder,), {"hits": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}", handler.hits
    httpd.shutdown()


def start_edit(page, text: str, sel: str = SEL) -> None:
    """Open the widget's «Codi» panel, make it editable and type `text` at the module's end."""
    open_panel(page, sel)
    page.click(f"{sel} .tw-code-edit")
    type_at_end(page, text, sel)


def edited_call(page, code: str, widget: str = "cost") -> dict:
    """Runs `code` as an edit of `widget` in the page's worker, as the panel's «Executa» does."""
    return page.evaluate("""async ([code, widget]) => {
        const k = tw.kernel.get(JSON.parse(document.getElementById('tw-config').dataset.config));
        await k.ready;
        return await k.call('edited', {widget, key: 'prova', code, params: {}});
    }""", [code, widget])


PROBE = """
import js, json
out = {}
def attempt(name, fn):
    try:
        got = fn()
        out[name] = "refused" if got is None else "reached"
    except BaseException as e:
        out[name] = "refused"
gone = lambda obj, name: js.Object.getOwnPropertyDescriptor(obj, name)
attempt("caches", lambda: js.caches)
attempt("caches via prototype", lambda: gone(js.WorkerGlobalScope.prototype, "caches"))
attempt("indexedDB", lambda: js.indexedDB)
attempt("BroadcastChannel", lambda: js.BroadcastChannel)
attempt("navigator.storage", lambda: js.navigator.storage)
attempt("postMessage", lambda: js.postMessage)
attempt("close", lambda: js.close)
attempt("Function", lambda: js.Function.new("return 6*7")())
attempt("constructor", lambda: js.Function.prototype.constructor.new("return 6*7")())
attempt("eval", lambda: js.eval("6*7"))
attempt("setTimeout text", lambda: js.setTimeout("self.x = 1", 0))
attempt("fetch via prototype", lambda: js.WorkerGlobalScope.prototype.fetch.call(js.self, "OTHER/proto"))
attempt("importScripts blob", lambda: js.importScripts(js.URL.createObjectURL(js.Blob.new(["self.y = 1"]))))
attempt("XMLHttpRequest", lambda: js.XMLHttpRequest.new().open("GET", "OTHER/xhr"))
js.fetch("OTHER/fetch")  # a rejected promise: refused before any request
raise RuntimeError("PROBE" + json.dumps(out))
"""


def test_python_in_the_worker_reaches_no_storage_code_from_text_or_other_origin(watched, server, elsewhere):
    other, hits = elsewhere
    page = watched.page
    page.goto(server + PAGE)
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    reply = edited_call(page, PROBE.replace("OTHER", other))
    found = json.loads(reply["error"]["message"].split("PROBE", 1)[1])
    assert found and all(v == "refused" for v in found.values()), found
    page.wait_for_timeout(1000)
    assert hits == []
    assert page.evaluate(ALL_READY)  # the page is unharmed


def test_an_edit_cannot_plant_a_page_in_the_offline_cache(browser, server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(server + PAGE)
    page.wait_for_function(STORED, timeout=120_000)
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    plant = """
import js, asyncio
from pyodide.ffi import to_js
async def _p():
    for k in (await js.caches.keys()).to_py():
        c = await js.caches.open(k)
        await c.put(js.location.origin + "/glossari.html", js.Response.new("<title>owned</title>",
                    to_js({"headers": {"Content-Type": "text/html"}}, dict_converter=js.Object.fromEntries)))
asyncio.ensure_future(_p())
"""
    edited_call(page, plant)  # its coroutine runs after the reply: give it time
    page.wait_for_timeout(1000)
    planted = page.evaluate("""async () => {
        for (const k of await caches.keys()) {
            const hit = await (await caches.open(k)).match(location.origin + '/glossari.html');
            if (hit && (await hit.text()).includes('owned')) return true;
        }
        return false;
    }""")
    assert not planted  # there is no js.caches in the worker
    # and what the service worker serves is its own build's, whoever wrote the cache
    page.evaluate("""async () => {
        for (const k of await caches.keys()) {
            const c = await caches.open(k);
            await c.put(location.origin + '/glossari.html', new Response('<title>owned</title>', {headers: {'Content-Type': 'text/html'}}));
        }
    }""")
    page.goto(server + "glossari.html")
    assert page.title() != "owned" and "Glossari" in page.title()
    context.close()


EVIL_FIGURE = """
import dataclasses as _dc
_draw = WIDGET.figure
def _figure(params, state):
    svg, alt = _draw(params, state)
    return svg + ('<meta http-equiv="refresh" content="0; url=OTHER/meta">'
                  '<a href="OTHER/a" class="tw-evil">enllaç</a><style>body{display:none}</style>'
                  '<img src="OTHER/img" onerror="document.title=1"><script>document.title=2</script>'
                  '<svg><foreignObject><iframe src="OTHER/frame"></iframe></foreignObject>'
                  '<image href="OTHER/image"/><text onclick="document.title=3" x="1" y="1">t</text></svg>'), alt
WIDGET = _dc.replace(WIDGET, figure=_figure)
"""


def test_an_edits_figure_cannot_navigate_link_style_or_run(watched, server, elsewhere):
    other, hits = elsewhere
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    start_edit(page, EVIL_FIGURE.replace("OTHER", other))
    run_edit(page)
    page.wait_for_timeout(1500)  # a meta refresh of 0 s would have navigated by now
    assert page.url.startswith(server) and page.get_attribute(SEL, "data-edited") == "true"
    figure = f"{SEL} .tw-figure"
    for bad in ("meta", "a", "style", "img", "script", "foreignObject", "iframe", "image", "[onclick]", "[onerror]"):
        assert page.locator(f"{figure} {bad}").count() == 0, bad
    assert page.locator(f"{figure} svg").count() >= 1 and page.is_visible("body")
    assert page.locator(f'{figure} text[x="1"][y="1"]').count() == 1  # what the list allows stays
    assert hits == [] and page.title() not in ("1", "2", "3")


def test_no_attribute_on_the_list_takes_a_url():
    """markup.js declares every attribute of the list URI-safe (DOMPurify then skips their
    values' URL check: x, d or viewBox hold numbers): so none may be one a browser loads or
    follows, or one whose value may be url(...)."""
    from widgets_py.engine import markup

    loads = {"href", "xlink:href", "src", "srcset", "action", "formaction", "poster", "background", "data",
             "style", "fill", "stroke", "filter", "clip-path", "mask", "marker-start", "marker-mid", "marker-end",
             "cursor", "xmlns", "ping", "lowsrc", "codebase", "cite"}
    assert loads & set(markup.ATTRIBUTES) == set()
    assert all(not name.startswith("on") for name in markup.ATTRIBUTES)


def test_the_build_checks_shipped_figures_against_the_same_list():
    from widgets_py.engine import markup, registry

    for name in registry.names():
        reply = registry.reply(name, {})
        assert markup.problems(reply["figure"] + reply["tables"]) == [], name
    found = markup.problems('<svg viewBox="0 0 1 1"><a href="x"><text onclick="y">t</text></a>'
                            '<foreignObject/><style>s</style></svg><script>z</script><!-- c -->')
    assert found == ["<a>", "<a href>", "<text onclick>", "<foreignObject>".lower(), "<style>", "<script>", "<!-- -->"]


def test_a_patched_module_is_shown_on_every_widget_and_undone_by_restore(watched, server):
    page = watched.page
    roofline, cost = SEL, '.tw-widget[data-widget="cost"]'
    page.goto(server + PAGE)
    ready(page)
    ready(page, cost)
    page.select_option(f"{roofline} select[name=model]", "mixtral-8x7b")
    ready(page)
    shipped = json.loads(page.get_attribute(roofline, "data-values"))
    start_edit(page, "from ..maths import hardware as _hw\nimport dataclasses as _dc\n"
                      "_hw.GPUS['h100-80gb'] = _dc.replace(_hw.GPUS['h100-80gb'], bandwidth=2 * _hw.GPUS['h100-80gb'].bandwidth)\n",
                cost)
    run_edit(page, cost)
    assert page.is_visible(f"{roofline} .tw-code-page-mark")  # roofline says the page runs edited code
    page.select_option(f"{roofline} select[name=model]", "llama-3-70b")
    ready(page)
    page.select_option(f"{roofline} select[name=model]", "mixtral-8x7b")
    ready(page)
    patched = json.loads(page.get_attribute(roofline, "data-values"))
    assert patched["decode_tps"] > 1.5 * shipped["decode_tps"]  # the edit did reach it
    page.click(f"{cost} .tw-code-restore")  # a fresh worker: nothing of the edit is left
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    assert json.loads(page.get_attribute(roofline, "data-values"))["decode_tps"] == pytest.approx(shipped["decode_tps"])
    assert not page.is_visible(f"{roofline} .tw-code-page-mark")
    assert watched.errors == []


def test_python_cannot_forge_the_workers_messages_or_end_it(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    forged = edited_call(page, "import js\njs.postMessage(js.JSON.parse('{\"type\": \"event:error\", \"message\": \"forjat\"}'))\n")
    assert "error" in forged
    closed = edited_call(page, "import js\njs.close()\n")
    assert "error" in closed
    page.wait_for_timeout(500)
    assert page.evaluate(ALL_READY)  # not marked failed
    assert "forjat" not in page.inner_text("body")
    again = edited_call(page, "raise ValueError('encara viu')\n")  # the worker still answers
    assert again["error"]["message"] == "encara viu"


def test_system_exit_in_an_edit_is_reported_with_its_line(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    start_edit(page, "raise SystemExit(3)\n")
    line = page.eval_on_selector(SEL, "w => window.tw.codepanel.text(w)").count("\n")
    run_edit(page)
    page.wait_for_function("s => !document.querySelector(s + ' .tw-code-status').textContent.startsWith('Executant')",
                           arg=SEL, timeout=10_000)
    status = page.text_content(f"{SEL} .tw-code-status")
    assert "SystemExit" in status and f"Línia {line}" in status


def test_edits_are_kept_by_page_not_by_how_its_url_is_spelt(watched, server):
    page = watched.page
    page.goto(server + "cap15/index.html")
    ready(page)
    start_edit(page, EDIT)
    run_edit(page)
    page.goto(server + "cap15/")
    ready(page)
    assert page.get_attribute(SEL, "data-draft") == "true"


def test_from_disk_another_file_cannot_plant_an_edit(browser, site, tmp_path):
    single = tmp_path / "capitol15.html"
    single.write_bytes((site / "cap15" / downloads.FILE).read_bytes())
    other = tmp_path / "altre.html"
    other.write_text("<title>altre</title>")
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    page.goto(other.as_uri())
    code = shipped_module(site, "widgets_py.cap15.roofline") + EDIT
    key = f"tw-codi:{single.as_uri()[len('file://'):]}#roofline"
    page.evaluate("([k, code]) => localStorage.setItem(k, JSON.stringify({code, applied: true}))", [key, code])
    page.goto(single.as_uri())
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    page.wait_for_timeout(1000)
    assert page.get_attribute(SEL, "data-edited") is None and page.get_attribute(SEL, "data-draft") is None
    context.close()


@pytest.mark.parametrize("value", ['"false"', "0", "fals", "", '"no"'])
def test_the_code_option_takes_only_true_or_false(tmp_path, value):
    source = tmp_path / "pagina.md"
    source.write_text(f"---\ntitle: x\ncodi: {value}\n---\n# x\n")
    import yaml

    meta = yaml.safe_load(f"codi: {value}")
    page = type("Page", (), {"meta": meta, "file": type("F", (), {"src_uri": "cap/pagina.md", "abs_src_path": str(source)})()})()
    with pytest.raises(PluginError, match=r"pagina\.md:3: .*codi: true.*codi: false"):
        codepanel.on_page_content('<div class="tw-widget"></div>', page=page, config={}, files=None,
                                  build=type("B", (), {"editor": None})())
    for ok in (True, False):
        page.meta = {"codi": ok}
        assert f'data-enabled="{str(ok).lower()}"' in codepanel.on_page_content(
            '<div class="tw-widget"></div>', page=page, config={}, files=None, build=type("B", (), {"editor": None})())


def test_a_non_finite_output_is_named_in_catalan():
    from widgets_py.engine import edits

    code = edits.source("roofline")
    code = json.loads(code)["source"] + (
        "\nimport dataclasses as _dc\n_v = WIDGET.values or (lambda s: s)\n"
        "WIDGET = _dc.replace(WIDGET, values=lambda s: {**_v(s), 'tpot_ms': float('nan')})\n")
    reply = json.loads(entry.render_edited("roofline", "nan", code, "{}"))
    assert "la sortida 'tpot_ms' no és un nombre finit" in reply["error"]["message"]


PURIFY = "dompurify@3.5.0"
PURIFY_SHA256 = "faa5f2bfe2814384b83d6edb4ed66812fbfdb2a654b4d59edd4b12304058ec20"  # its `npm pack` tarball


def test_the_vendored_sanitizer_is_the_pinned_npm_release():
    """docs/assets/tw/purify.min.js is DOMPurify's own dist file, byte for byte (to upgrade:
    new pin here, copy the tarball's package/dist/purify.min.js)."""
    import tarfile

    from build_hooks.runtime import editor_assets
    from conftest import ROOT

    tarball = editor_assets.tarball(PURIFY, {PURIFY: PURIFY_SHA256})
    with tarfile.open(tarball) as tar:
        shipped = tar.extractfile("package/dist/purify.min.js").read()
    assert (ROOT / "docs" / "assets" / "tw" / "purify.min.js").read_bytes() == shipped


@pytest.mark.build
def test_every_file_a_script_loads_by_url_is_versioned_in_the_config(site):
    from build_hooks.hosting import offline

    html = (site / "cap15" / "index.html").read_text()
    config = json.loads(unescape(re.search(r'data-config="([^"]+)"', html).group(1)))
    assert config["versions"] == {path: offline.digest((site / path).read_bytes()) for path in offline.LOADED}


# Issue 45's low findings (../shared/reviews/hostile-round2.md) that the page's own scripts
# decide, engine-independent: in Chromium. The high and medium ones, in three engines, are
# tests/test_sandbox_engines.py.

CONFIG = "JSON.parse(document.getElementById('tw-config').dataset.config)"


def test_an_edit_hears_none_of_the_pages_later_calls(watched, server):
    """L-2: a listener Python adds to the worker's messages never hears the page's calls
    (worker.js's own listener is the first, and the last to hear each one)."""
    page = watched.page
    page.goto(server + PAGE)
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    spy = ("import js, sys\nfrom pyodide.ffi import create_proxy\nheard = sys.modules['widgets_py'].__dict__.setdefault('_heard', [])\n"
           "js.addEventListener('message', create_proxy(lambda event: heard.append(1)))\n")
    edited_call(page, spy)  # not a widget's module: its error is beside the point, its listener stays
    page.select_option(f"{SEL} select[name=model]", "mixtral-8x7b")  # a call the edit would hear
    ready(page)
    reply = edited_call(page, "import sys\nraise RuntimeError('HEARD' + str(len(sys.modules['widgets_py']._heard)))\n")
    assert reply["error"]["message"] == "HEARD0"


def test_an_edited_worker_ends_with_its_page(watched, server):
    """L-3: instant navigation to a page without widgets ends a worker that ran an edit."""
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    start_edit(page, EDIT)
    run_edit(page)
    page.evaluate(f"() => {{ window.__edited = tw.kernel.get({CONFIG}); }}")
    assert page.evaluate("() => window.__edited.tainted && !window.__edited.failure")
    page.locator("a.md-nav__link[href*='glossari']").first.click()
    page.wait_for_function("() => location.pathname.includes('glossari') && !document.querySelector('.tw-widget')", timeout=10_000)
    assert page.evaluate("() => Boolean(window.__edited)")  # the same document: instant navigation
    page.wait_for_function("() => window.__edited && window.__edited.failure !== null", timeout=5000)


FAKE_SOURCE = """
from ..engine import edits as _edits
import json as _json
_shipped = _edits.source
def _fake(name):
    data = _json.loads(_shipped(name))
    if name == "roofline":
        data["source"] = "# FALS: no és el mòdul que executa el teu navegador\\n"
    return _json.dumps(data)
_edits.source = _fake
"""


def test_a_panel_shows_the_shipped_module_again_once_its_worker_is_replaced(watched, server):
    """L-4: an edit of one widget fakes another's «Codi» view; «Restaura» (a fresh worker)
    shows the shipped module again in the panel that is open."""
    page = watched.page
    cost = '.tw-widget[data-widget="cost"]'
    page.goto(server + PAGE)
    ready(page)
    ready(page, cost)
    start_edit(page, FAKE_SOURCE, cost)
    run_edit(page, cost)
    open_panel(page, SEL)
    assert "FALS" in page.eval_on_selector(SEL, "w => window.tw.codepanel.text(w)")
    page.click(f"{cost} .tw-code-restore")
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    page.wait_for_function("s => { const t = window.tw.codepanel.text(document.querySelector(s)); return t && !t.includes('FALS'); }",
                           arg=SEL, timeout=30_000)
    assert "def " in page.eval_on_selector(SEL, "w => window.tw.codepanel.text(w)")


def test_a_network_cut_at_boot_is_not_blamed_on_the_pin(watched, server):
    """L-12: the network fails while Pyodide loads its packages: the page says the site did
    not answer, not that the sha256 pin refused the files."""
    page = watched.page
    cut = [False]

    def route(r):
        if urlsplit(r.request.url).path.endswith((".whl", zips.TAR_BZ2)):
            cut[0] = True  # Pyodide is in and loads its packages: from now on its folder is out of reach
        if cut[0] and "/pyodide/" in r.request.url:
            return r.abort()
        return r.continue_()

    watched.context.route("**/*", route)  # the worker's requests too
    page.goto(server + PAGE)
    try:
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'error')",
                               timeout=BOOT_MS)
    except Exception:
        pytest.fail(f"{cut}: {page.text_content(f'{SEL} .tw-status')}")
    status = page.text_content(f"{SEL} .tw-status")
    assert "connexió" in status and "sha256" not in status, status
