"""Where a cold boot's time goes, per engine (Chromium, Firefox ESR, WebKitGTK), side by side
in one run (issue 44: WebKit's time to interactive is ~1.7x Chromium's, inside Pyodide's boot).

    .venv/bin/python benchmarks/boot_phases.py [--rounds 3] [--page cap15/index.html]
        [--site DIR] [--against DIR] [--engines chromium,webkit] [--no-sw] [--jsc OPTION=VALUE]

The site (built here, or `--site`) is served on 127.0.0.1, a new port (a new origin: no HTTP
cache, no compiled-code cache, no service worker from an earlier visit) per visit; the
engines take turns, round by round. The server instruments what it serves, and only there
(the built files are untouched; sw.js, which serves only this build's bytes, is given the
instrumented worker's hash): each HTML page gets PAGE first in <head> (it hears the
worker's marks and notes when each widget becomes ready), and the worker's script gets
WORKER in front, which wraps what boot() calls (importScripts, loadPyodide, loadPackage,
pyimport, WebAssembly's compile/instantiate, postMessage) to note when each starts and ends,
in the worker's clock, and posts the marks, with the worker's resource timings, to the page
once the worker says it has loaded. Every time is in ms since the page's navigation started
(timeOrigin + performance.now(): one clock for page and worker).

Printed: per engine, the median (of `--rounds`) of each phase's duration and its ratio to
Chromium's, and the time to the first and to every widget ready. With `--against DIR`,
another build (e.g. main's) in the same rounds, in turn: its rows are labelled `against`.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import os
import re
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import book  # noqa: E402
import engines  # noqa: E402
import turns  # noqa: E402
from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path, free_port  # noqa: E402

PAGE_PATH = "/__tw_phases.js"
# in the page, first in <head>: the worker's marks (window.twPhases.worker) and when each
# widget first became ready (window.twPhases.ready: id -> ms since navigation start)
PAGE = """(() => {
  const phases = (window.twPhases = { ready: {}, worker: null });
  const Prior = window.Worker;
  function Worker(...args) {
    const w = new Prior(...args);
    w.addEventListener("message", (e) => { if (e.data && e.data.type === "tw-phases") phases.worker = e.data; });
    return w;
  }
  Worker.prototype = Prior.prototype;
  window.Worker = Worker;
  new MutationObserver(() => document.querySelectorAll(".tw-widget[data-state=ready]").forEach((w) => {
    if (!(w.id in phases.ready)) phases.ready[w.id] = performance.now();
  })).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-state"] });
})();
"""
# in the worker, before worker.js: marks [name, start, end] in ms of the shared clock
WORKER = """(() => {
  const now = () => performance.timeOrigin + performance.now();
  const marks = [["worker", now(), now()]];
  const mark = (name, start) => marks.push([name, start, now()]);
  const file = (url) => String(url).split("/").pop().split("?")[0];
  const post = self.postMessage.bind(self);
  const timed = (name, fn) => function (...args) {
    const start = now();
    const out = fn.apply(this, args);
    if (out && typeof out.then === "function") return out.then((v) => (mark(name(args), start), v));
    mark(name(args), start);
    return out;
  };
  self.addEventListener("message", (e) => e.data && e.data.type === "init" && mark("init received", now()));
  const imports = self.importScripts;
  self.importScripts = function (...urls) {
    const start = now();
    imports.apply(this, urls);
    mark("importScripts " + urls.map(file).join(","), start);
    if (typeof self.loadPyodide === "function" && !self.loadPyodide.timed) wrapLoad();
  };
  const wrapLoad = () => {
    const load = self.loadPyodide;
    self.loadPyodide = async (config) => {
      const start = now();
      const py = await load(config);
      mark("loadPyodide", start);
      py.loadPackage = timed(() => "loadPackage", py.loadPackage.bind(py));
      py.pyimport = timed((a) => "pyimport " + a[0], py.pyimport.bind(py));
      return py;
    };
    self.loadPyodide.timed = true;
  };
  const size = (a) => (a && a.byteLength ? ` ${(a.byteLength / 1e6).toFixed(2)} MB` : "");
  for (const fn of ["instantiateStreaming", "compileStreaming", "instantiate", "compile"]) {
    const orig = WebAssembly[fn];
    WebAssembly[fn] = timed((a) => `wasm ${fn}${size(a[0])}`, orig.bind(WebAssembly));
  }
  const Module = WebAssembly.Module;
  WebAssembly.Module = new Proxy(Module, { construct(target, args, nt) {
    const start = now();
    const m = Reflect.construct(target, args, nt);
    mark(`wasm new Module${size(args[0])}`, start);
    return m;
  } });
  self.postMessage = function (msg, ...rest) {
    const out = post(msg, ...rest);
    if (msg && (msg.type === "event:loaded" || msg.type === "event:warm")) {
      const resources = performance.getEntriesByType("resource").map((e) => [file(e.name),
        performance.timeOrigin + e.startTime, performance.timeOrigin + e.responseEnd, e.transferSize || e.encodedBodySize || 0]);
      post({ type: "tw-phases", marks: [...marks, [msg.type, now(), now()]], resources });
    }
    return out;
  };
})();
"""

# (label, how it is found among the worker's marks) in boot() order
PHASES = (
    ("page start -> worker runs", lambda m: m["worker"][0]),
    ("worker runs -> init message", lambda m: m["init received"][0] - m["worker"][0]),
    ("importScripts(pyodide.js)", lambda m: span(m, "importScripts pyodide.js")),
    ("loadPyodide", lambda m: span(m, "loadPyodide")),
    ("  pyodide.asm.js fetch+parse+eval", lambda m: span(m, "importScripts pyodide.asm.js")),
    ("  wasm instantiateStreaming", lambda m: span(m, "wasm instantiateStreaming")),
    ("  wasm compileStreaming (started early)", lambda m: span(m, "wasm compileStreaming")),
    ("  wasm instantiate (compiled early)", lambda m: span(m, "wasm instantiate")),
    ("  wasm ready -> Python up (stdlib, init)", lambda m: m["loadPyodide"][1] - core_ready(m)),
    ("loadPackage(numpy, widgets)", lambda m: span(m, "loadPackage")),
    ("  of it: numpy's wasm compiles", lambda m: sum(e - s for n, s, e in m["_all"]
                                                     if n.startswith(("wasm instantiate ", "wasm new Module "))
                                                     and m["loadPackage"][0] <= s <= m["loadPackage"][1])),
    ("import of the entry module", lambda m: next(e - s for n, s, e in m["_all"] if n.startswith("pyimport"))),
    ("entry.prepare -> loaded", lambda m: m["event:loaded"][0] - next(e for n, s, e in m["_all"] if n.startswith("pyimport"))),
    ("worker runs -> loaded", lambda m: m["event:loaded"][0] - m["worker"][0]),
)
RESOURCES = ("pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json", "numpy-", "widgets_py-")
READ = ("() => window.twPhases && window.twPhases.worker && Object.keys(window.twPhases.ready).length > 0"
        " && [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')"
        " ? {origin: performance.timeOrigin, dcl: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,"
        " ...window.twPhases} : null")
FAILED = "() => [...document.querySelectorAll('.tw-widget')].filter(w => w.dataset.state === 'error').map(w => w.id + ': ' + w.querySelector('.tw-status').textContent)"


def core_ready(marks: dict) -> float:
    """When Pyodide's core module was instantiated: by Pyodide, or from worker.js's early compile."""
    return (marks.get("wasm instantiateStreaming") or marks["wasm instantiate"])[1]


def span(marks: dict, name: str) -> float:
    start, end = marks[name]
    return end - start


def phases(got: dict) -> dict[str, float]:
    """Phase -> ms, from one visit's marks (absolute times made relative to navigation start)."""
    origin = got["origin"]
    marks = {}
    for name, start, end in got["worker"]["marks"]:
        marks.setdefault(name, (start - origin, end - origin))  # the first of a name: the boot's
    marks["_all"] = [(name, start - origin, end - origin) for name, start, end in got["worker"]["marks"]]
    out = {}
    for label, find in PHASES:
        try:
            out[label] = find(marks)
        except (KeyError, StopIteration):
            pass
    for name, start, end, _ in got["worker"]["resources"]:
        key = next((r for r in RESOURCES if name.startswith(r)), None)
        if key and f"fetch {key} done" not in out:
            out[f"fetch {key} done"] = end - origin
    out["DOMContentLoaded"] = got["dcl"]
    ready = sorted(got["ready"].values())
    out["first widget ready"] = ready[0]
    out["every widget ready"] = ready[-1]
    return out


def handler(site: Path, no_sw: bool = False):
    class Instrumented(_Quiet):
        def do_GET(self):
            path = self.path.split("?")[0]
            if no_sw and path == "/sw.js":
                return self.send_error(404)  # offline.js: no registration, no gate
            if path == PAGE_PATH:
                return self.reply(PAGE.encode(), "text/javascript")
            file = Path(self.translate_path(self.path))
            if file.is_dir():
                file = file / "index.html"
            if path.endswith("/assets/tw/worker.js"):
                return self.reply(WORKER.encode() + file.read_bytes(), "text/javascript")
            if path == "/sw.js":  # it serves only this build's bytes: the instrumented worker's are
                worker = WORKER.encode() + (site / "assets/tw/worker.js").read_bytes()
                body = re.sub(rb'("assets/tw/worker.js": *")[0-9a-f]+"',
                              rb'\g<1>' + hashlib.sha256(worker).hexdigest()[:16].encode() + b'"', file.read_bytes())
                return self.reply(body, "text/javascript")
            if file.suffix == ".html" and file.is_file():
                html = file.read_bytes().replace(b"<head>", f'<head><script src="{PAGE_PATH}"></script>'.encode(), 1)
                return self.reply(html, "text/html; charset=utf-8")
            return super().do_GET()

    return functools.partial(Instrumented, directory=str(site))


def visit(engine, site: Path, page: str, no_sw: bool = False) -> dict[str, float]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(site, no_sw))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        engine.goto(f"http://127.0.0.1:{httpd.server_port}/{page}")
        got = engine.wait(f"() => ({FAILED})().length ? {{failed: ({FAILED})()}} : ({READ})()", timeout=240, poll=0.25)
        if "failed" in got:
            raise RuntimeError(f"{engine.name}: widgets failed: {got['failed'][:2]}")
        return phases(got)
    finally:
        engine.goto("about:blank")  # its warm-up and the offline precache stop: the next visit has the machine
        httpd.shutdown()
        httpd.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="cold visits per engine (and site), in turn")
    ap.add_argument("--page", help="the chapter page (default: the book's first with widgets)")
    ap.add_argument("--site", help="a site already built (default: build one)")
    ap.add_argument("--against", help="another built site, measured in the same rounds, in turn")
    ap.add_argument("--engines", default="chromium,firefox,webkit")
    ap.add_argument("--no-sw", action="store_true", help="also each site with its service worker absent (404), in turn")
    ap.add_argument("--jsc", action="append", default=[], metavar="OPTION=VALUE",
                    help="also a WebKitGTK session with this JavaScriptCore option (JSC_OPTION in its environment), "
                         "e.g. useWasmIPInt=false: how JSC's wasm tiers share the boot (repeat for several in one session)")
    args = ap.parse_args()
    if args.site:
        site = Path(args.site)
    else:
        site = Path(tempfile.mkdtemp()) / "site"
        done = build_site(site, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{free_port()}/"})
        assert done.returncode == 0, done.stderr[-2000:]
    page = args.page or book.widget_pages(site)[0]
    sites = {"": (site, False)} | ({"against": (Path(args.against), False)} if args.against else {})
    if args.no_sw:
        sites |= {f"{k} no-sw".strip(): (root, True) for k, (root, _) in sites.items()}

    recorder = engines.Recorder()
    running: dict[str, engines.Engine] = {}
    absent: dict[str, str] = {}
    pw = browser = None
    for name in args.engines.split(","):
        if name == "chromium":
            from playwright.sync_api import sync_playwright

            pw = sync_playwright().start()
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            running[name] = engines.Chromium(browser)
        elif why := engines.missing(name):
            absent[name] = why
        else:
            running[name] = engines.launch(name, recorder.address)

    if args.jsc and "webkit" in running:
        saved = dict(os.environ)
        os.environ.update({f"JSC_{o.split('=')[0]}": o.split("=", 1)[1] for o in args.jsc})
        try:
            tuned = running["webkit " + ",".join(args.jsc)] = engines.launch("webkit", recorder.address)
            tuned.version = "JSC " + ",".join(args.jsc)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    runs: dict[tuple[str, str], list[dict]] = {}
    try:
        for label in turns.in_turn(sites, args.rounds):
            root, no_sw = sites[label]
            for name, engine in running.items():
                runs.setdefault((name, label), []).append(visit(engine, root, page, no_sw))
    finally:
        for engine in running.values():
            engine.close()
        if browser:
            browser.close()
            pw.stop()
        recorder.close()
    print_table(page, args.rounds, runs, {n: e.version for n, e in running.items()})
    for name, why in absent.items():
        print(f"{name}: not measured: {why}")


def print_table(page: str, rounds: int, runs: dict[tuple[str, str], list[dict]], versions: dict[str, str]) -> None:
    cols = list(runs)
    med = {c: {k: statistics.median(r[k] for r in runs[c] if k in r) for k in runs[c][0]} for c in cols}
    rows = [label for label, _ in PHASES] + [f"fetch {r} done" for r in RESOURCES] + ["DOMContentLoaded", "first widget ready", "every widget ready"]
    print(f"{page}: cold visit, ms (phases: duration; 'done'/'ready': since navigation start), median of {rounds}; "
          "(×) = ratio to Chromium's in the same site")
    width = 42
    head = [f"{n} {label}".strip() for n, label in cols]
    print(f"{'':<{width}}" + "".join(f"{h:>20}" for h in head))
    print(f"{'version':<{width}}" + "".join(f"{versions[n][:19]:>20}" for n, _ in cols))
    for row in rows:
        cells = []
        for n, label in cols:
            value = med[(n, label)].get(row)
            ref = med.get(("chromium", label), {}).get(row)
            ratio = f" ({value / ref:.2f}×)" if value is not None and ref and n != "chromium" else ""
            cells.append("-" if value is None else f"{value:.0f}{ratio}")
        print(f"{row:<{width}}" + "".join(f"{c:>20}" for c in cells))
    each = {c: " ".join(f"{r['every widget ready'] / 1e3:.1f}" for r in runs[c]) for c in cols}
    print(f"{'  every widget ready (s), each round':<{width}}" + "".join(f"{each[c]:>20}" for c in cols))
    for label in dict.fromkeys(lab for _, lab in cols):
        if ("chromium", label) not in med:
            continue
        ref = med[("chromium", label)]["every widget ready"]
        for n, lab in cols:
            if lab == label and n != "chromium":
                print(f"{n}{' ' + label if label else ''}: time to interactive {med[(n, lab)]['every widget ready'] / ref:.2f}× Chromium's")


if __name__ == "__main__":
    main()
