"""The phone profile (issue 28 §1): a chapter's cold visit as a mid-range phone gets it.

    .venv/bin/python benchmarks/phone.py [--page cap15/index.html] [--rounds 3] [--before] [--versus SITE] [--inventory]

A 390 x 844 CSS px touch viewport, the page's main thread slowed 4x (CDP
Emulation.setCPUThrottlingRate; Chromium throttles no worker, so Python, in one, runs at this
machine's speed: `throttle`), and a network shaped on the server's side, so that the worker's downloads (Pyodide, numpy, the
widgets) pay it as the page's do: every response gzip-compressed where a host would compress it,
its first byte 150 ms after the request, and all responses together limited to 9 Mbit/s (one
token bucket for the whole server: a phone's link is shared by its parallel downloads), each
cacheable for 10 minutes as GitHub Pages sends them (CACHE_CONTROL: a file the page and its
worker both load is fetched once). The server speaks HTTP/1.1 (six connections at a time, where
a host's HTTP/2 has no such limit).
No service worker (a first visit: its precache comes after the widgets are interactive).
Prints time to first contentful paint, to the first widget interactive, to every calculator
(the widgets that read no model data: Widget.models) and to all of them, and the bytes on the
wire (compressed) and before compression, until the first widget answers and until all do.
For the clock (the widget that times the machine), beside its bound (clock.BUDGET_S): the time
from its first run's start (it runs as soon as it is interactive, while the model widgets warm
up) to its figure shown, and the same once the worker is idle, asked again at its defaults.
Beside it, in turn in every round, the floor (issue 44): an empty page of the same server
whose worker boots the site's own Pyodide (its lock, its trimmed standard library, numpy
fetched while Pyodide boots: `packages`, as worker.js does) and imports numpy, what any page
with Python pays; each figure is printed as a ratio to it.
Compare ratios, not seconds: on this shared machine the same floor took 9.1 s at rest and
18.4 s with a load average of 17 (issue 44: the 21.3 s once published, against 12.1 s).
With `--before`, the same for the same build with its runtime laid out as before trim.py
(whole standard library and numpy, bytecode beside the sources: budget.layout_before), the
two in turn in every round; with `--versus DIR`, another built site's chapter (another
branch's: before and after a change, in the same run). With `--inventory`, every response of
each one's last visit: by group and by URL, its bytes on the wire before the first widget
answered, and when it was sent.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import book  # noqa: E402
import turns  # noqa: E402
from build_hooks.runtime import bundle  # noqa: E402
from widgets_py.cap15 import clock  # noqa: E402
from widgets_py.engine import registry  # noqa: E402
from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path, free_port  # noqa: E402

VIEWPORT = {"width": 390, "height": 844}
CPU_SLOWDOWN = 4
BANDWIDTH = 9e6 / 8  # bytes per second: 9 Mbit/s
LATENCY = 0.150  # seconds before a response's first byte
CACHE_CONTROL = "max-age=600"  # what GitHub Pages sends (https://ja.stackoverflow.com/posts/47280/revisions)
CHUNK = 16 * 1024
COMPRESSED = (".html", ".js", ".css", ".json", ".svg", ".wasm", ".txt", ".xml", ".py", ".map")  # what a host gzips
MARK = "/__mark__"  # the page asks for it when its first widget is ready: the server notes the bytes sent so far
FLOOR = "/__floor__/"  # the floor's page (floor_page), served from memory
# when each widget first became ready, in ms since navigation started (performance.now()), by
# id -> [widget name, ms]; the first one tells the server (MARK). The clock's first run, which
# host.js starts as the clock goes ready: window.twClock = [ms it began, ms its figure was shown
# (data-values, set for a final result only), its values]. window.twIdle: ms when the worker's
# warm-up of what reads the model data was over (kernel.js's "warm" after its "model-data").
WATCH = """(() => {
  window.twReady = {};
  new MutationObserver(() => document.querySelectorAll('.tw-widget[data-state=ready]').forEach(w => {
    if (w.id in window.twReady) return;
    if (!Object.keys(window.twReady).length) fetch('%s', { cache: 'no-store' });
    window.twReady[w.id] = [w.dataset.widget, performance.now()];
    if (w.dataset.widget === '%s' && !window.twClock) window.twClock = [performance.now(), null, null];
  })).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-state'] });
  new MutationObserver((records) => records.forEach(({ target: w }) => {
    if (w.dataset.widget === '%s' && window.twClock && window.twClock[1] === null)
      window.twClock = [window.twClock[0], performance.now(), JSON.parse(w.dataset.values)];
  })).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-values'] });
  document.addEventListener('DOMContentLoaded', () => setTimeout(() => {  // host.js has made the kernel
    const config = document.querySelector('script[data-config]');
    if (!config || !window.tw || !tw.kernel) return;
    let models = false;
    tw.kernel.get(JSON.parse(config.dataset.config)).on((e) => {
      if (e.type === 'model-data') models = true;
      else if (e.type === 'warm' && models) window.twIdle = performance.now();
    });
  }));
})();""" % (MARK, clock.WIDGET.name, clock.WIDGET.name)
# The clock asked again at its defaults (its controls' input event, as a reader's change): ms
# until its figure is shown, and its values
ASK_CLOCK = """(sel) => new Promise((resolve) => {
  const w = document.querySelector(sel), t0 = performance.now();
  new MutationObserver((_, obs) => { obs.disconnect(); resolve([performance.now() - t0, JSON.parse(w.dataset.values)]); })
    .observe(w, { attributes: true, attributeFilter: ['data-values'] });
  w.querySelector('.tw-controls').dispatchEvent(new Event('input', { bubbles: true }));
})"""
CLOCK = f'.tw-widget[data-widget="{clock.WIDGET.name}"]'
ALL_READY = "() => { const ws = [...document.querySelectorAll('.tw-widget')]; return ws.length > 0 && ws.every(w => w.dataset.state === 'ready'); }"


def floor_page(runtime: str, lock: str) -> bytes:
    """An empty page whose worker boots Pyodide from the site's runtime folder with its lock,
    loads numpy and imports it (as worker.js does, without the widgets), then tells the page
    (window.twFloor: ms since navigation) and the server (MARK)."""
    worker = f"""importScripts(self.origin + '/{runtime}pyodide.js');
(async () => {{
  const py = await loadPyodide({{ indexURL: self.origin + '/{runtime}', lockFileURL: self.origin + '/{runtime}{lock}',
                                 packages: ['numpy'], stdout: () => {{}}, stderr: () => {{}} }});
  py.runPython('import numpy');
  postMessage('ready');
}})();"""
    return f"""<!doctype html><html lang="ca"><head><meta charset="utf-8"><title>floor</title></head><body><p>floor</p>
<script>
const w = new Worker(URL.createObjectURL(new Blob([{worker!r}], {{ type: 'text/javascript' }})));
w.onmessage = () => {{ window.twFloor = performance.now(); fetch('{MARK}', {{ cache: 'no-store' }}); }};
</script></body></html>""".encode()


class Link:
    """One shaped link: a token bucket all responses draw from."""

    def __init__(self, rate: float):
        self.rate, self.lock, self.free_at = rate, threading.Lock(), time.monotonic()
        self.reset()

    def reset(self) -> None:
        self.wire = self.raw = 0
        self.marked: int | None = None  # the bytes on the wire when the page first asked for MARK
        self.marked_at: float | None = None  # and when, in s since reset()
        self.began = time.monotonic()
        self.log: list[dict] = []  # one entry per response: what, its bytes (on the wire, before MARK), when

    def send(self, out, data: bytes, path: str) -> None:
        entry = {"path": path, "wire": len(data), "before": 0, "start": time.monotonic() - self.began}
        self.log.append(entry)
        for i in range(0, len(data), CHUNK):
            piece = data[i:i + CHUNK]
            with self.lock:
                start = max(self.free_at, time.monotonic())
                self.free_at = start + len(piece) / self.rate
                self.wire += len(piece)
                if self.marked is None:
                    entry["before"] += len(piece)
            time.sleep(max(0.0, start + len(piece) / self.rate - time.monotonic()))
            out.write(piece)
        entry["end"] = time.monotonic() - self.began


def handler(link: Link, floor: bytes):
    class Shaped(_Quiet):
        protocol_version = "HTTP/1.1"  # keep-alive, as a browser gets from a host

        def do_GET(self):
            if self.path.startswith(MARK):  # not shaped, not counted
                with link.lock:
                    if link.marked is None:
                        link.marked = link.wire
                        link.marked_at = time.monotonic() - link.began
                return self.reply(b"", "text/plain")
            if self.path.startswith(FLOOR):
                time.sleep(LATENCY)
                link.raw += len(floor)
                self.reply(b"", "text/html", len(floor))
                return link.send(self.wfile, floor, self.path)
            data = self.send_head_shaped()
            if data is not None:
                link.send(self.wfile, data, self.path)

        def send_head_shaped(self):
            """send_head, with the body read whole: gzip it (and say so) where a host would."""
            time.sleep(LATENCY)
            path = self.translate_path(self.path)
            if Path(path).is_dir():
                path = str(Path(path) / "index.html")
            try:
                data = Path(path).read_bytes()
            except OSError:
                self.send_error(404)
                return None
            link.raw += len(data)
            packed = self.path.split("?")[0].endswith(COMPRESSED) and "gzip" in self.headers.get("Accept-Encoding", "")
            if packed:
                buf = io.BytesIO()
                with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0) as z:
                    z.write(data)
                data = buf.getvalue()
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Length", str(len(data)))
            if packed:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Cache-Control", CACHE_CONTROL)
            http.server.BaseHTTPRequestHandler.end_headers(self)
            return data

        def reply(self, body: bytes, kind: str, length: int | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.send_header("Cache-Control", "no-store")
            http.server.BaseHTTPRequestHandler.end_headers(self)
            self.wfile.write(body)

    return Shaped


def throttle(context, page, rate: float = CPU_SLOWDOWN):
    """Slow the page's main thread `rate` times; its CDP session, for more commands. Only that
    thread: Chromium refuses the command for a worker's own session ("Operation is only
    supported for pages, not workers"), and the page's does not reach its workers, so Python
    runs at this machine's full speed (benchmarks/throttle.py measures both)."""
    cdp = context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
    return cdp


def new_visit(browser):
    """A phone's first visit: its context and its page, throttled (`throttle`)."""
    ctx = browser.new_context(viewport=VIEWPORT, is_mobile=True, has_touch=True, device_scale_factor=2,
                              service_workers="block")
    ctx.add_init_script(WATCH)
    page = ctx.new_page()
    throttle(ctx, page)
    return ctx, page


def visit_floor(browser, url: str) -> dict:
    ctx, page = new_visit(browser)
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function("() => window.twFloor", timeout=600_000, polling=250)
        at = page.evaluate("() => window.twFloor")
        return {"first": at, "calculators": at, "all": at}
    finally:
        ctx.close()


def visit(browser, url: str, clocked: bool = True) -> dict:
    """The chapter's visit; with `clocked` (the site as built), the clock's times as well."""
    ctx, page = new_visit(browser)
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function(ALL_READY, timeout=600_000, polling=250)
        ready = page.evaluate("() => Object.values(window.twReady || {})")
        assert ready, page.evaluate("() => [typeof window.twReady, document.querySelectorAll('.tw-widget[data-state=ready]').length]")
        fcp = page.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
        times = [ms for _, ms in ready]
        calculators = [ms for name, ms in ready if not registry.get(name).models] or times
        run = {"fcp": fcp, "first": min(times), "calculators": max(calculators), "all": max(times),
               "widgets": len(ready), "calculator_widgets": len(calculators)}
        if clocked and page.locator(CLOCK).count():  # its first run, then asked again once the worker is idle
            page.wait_for_function("() => window.twClock && window.twClock[1] !== null && window.twIdle",
                                   timeout=600_000, polling=250)
            began, shown, values = page.evaluate("() => window.twClock")
            again, values_again = page.evaluate(ASK_CLOCK, CLOCK)
            run |= {"clock_first": shown - began, "clock_measures": values["measures"],
                    "clock_again": again, "clock_measures_again": values_again["measures"]}
        return run
    finally:
        ctx.close()


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", help="the chapter page (default: the book's first with widgets)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--site", help="a site already built (default: build one)")
    ap.add_argument("--before", action="store_true",
                    help="also the same build with the runtime laid out as before trim.py, in turn (issue 33)")
    ap.add_argument("--inventory", action="store_true",
                    help="also every response of the last round, by group: its bytes on the wire, those "
                         "sent before the first widget answered, and when")
    ap.add_argument("--versus", help="also this other built site (another branch's, say), in turn: its chapter "
                                     "beside the same floor")
    args = ap.parse_args()
    port = free_port()
    if args.site:
        site = Path(args.site)
    else:
        site = Path(tempfile.mkdtemp()) / "site"
        done = build_site(site, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})
        assert done.returncode == 0, done.stderr[-2000:]
    chapter = args.page or book.widget_pages(site)[0]
    layouts = {"after": site}  # the site as built
    if args.before:  # the same build with its runtime as laid out before trim.py (issue 33)
        from budget import layout_before

        layouts["before"] = Path(tempfile.mkdtemp()) / "before"
        layout_before(site, layouts["before"])
    if args.versus:
        layouts["versus"] = Path(args.versus)
    lock = json.loads((site / bundle.RUNTIME_DIR / bundle.LOCK).read_text())
    floor = floor_page(bundle.RUNTIME_DIR, bundle.LOCK)
    served = {}
    for name, root in layouts.items():
        link = Link(BANDWIDTH)
        at = port if name == "after" else free_port()
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", at), functools.partial(handler(link, floor), directory=str(root)))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        served[name] = (link, httpd, f"http://127.0.0.1:{at}/")
    # what each round visits, in turn: the floor on the as-built site's server, then each layout's chapter
    targets = {"floor": ("after", FLOOR, visit_floor),  # the clock timed on the site as built only
               **{name: (name, chapter, functools.partial(visit, clocked=name == "after")) for name in layouts}}
    from playwright.sync_api import sync_playwright

    runs: dict[str, list[dict]] = {name: [] for name in targets}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for name in turns.in_turn(targets, args.rounds):
            server, path, how = targets[name]
            link, _, origin = served[server]
            link.reset()
            run = how(browser, origin + path.lstrip("/"))
            runs[name].append(run | {"wire": link.wire, "raw": link.raw, "wire_first": link.marked,
                                     "log": link.log, "marked_at": link.marked_at})
        browser.close()
    for _, httpd, _ in served.values():
        httpd.shutdown()
    print(f"profile: {VIEWPORT['width']} px, CPU {CPU_SLOWDOWN}x slower (the page's main thread: not its workers, "
          f"where Python runs), {BANDWIDTH * 8 / 1e6:.0f} Mbit/s, "
          f"{LATENCY * 1e3:.0f} ms per request, gzip; {chapter}, median of {args.rounds} rounds")
    print(f"floor: an empty page whose worker boots the site's Pyodide and imports numpy "
          f"(lock: {', '.join(sorted(lock['packages']))})")
    for name in layouts:
        if len(layouts) > 1:
            print(f"\n{name}: " + {"after": f"the site as built ({site})", "before": "the runtime before trim.py",
                                   "versus": f"the other site ({args.versus})"}[name])
        print_runs(runs[name], runs["floor"])
        if args.inventory:
            print_inventory(runs[name][-1])
    if args.inventory:
        print("\nfloor:")
        print_inventory(runs["floor"][-1])


def print_runs(runs: list[dict], floor: list[dict]) -> None:
    """The medians over rounds; each ratio is the median of the rounds' own ratios, the chapter
    to the floor visited beside it in the same round (a machine whose load drifts during the
    run moves both)."""
    keys = ("fcp", "first", "calculators", "all", "wire_first", "wire", "raw")
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    low = {k: statistics.median(r[k] for r in floor) for k in ("first", "wire", "raw")}

    def ratio(key: str, base: str) -> float:
        return statistics.median(r[key] / f[base] for r, f in zip(runs, floor))

    def timed(key: str) -> str:
        return f"{med[key] / 1e3:5.2f} s  {ratio(key, 'first'):.2f}x the floor  (per run {each(runs, key)})"

    rows = [
        ("floor: Pyodide + numpy imported", f"{low['first'] / 1e3:5.2f} s  (per run {each(floor, 'first')}); "
                                            f"{low['wire'] / 1e6:.2f} MB on the wire ({low['raw'] / 1e6:.2f} MB before gzip)"),
        ("first contentful paint", f"{med['fcp'] / 1e3:5.2f} s  (per run {each(runs, 'fcp')})"),
        ("first widget interactive", timed("first")),
        (f"all {runs[0]['calculator_widgets']} calculators interactive", timed("calculators")),
        (f"all {runs[0]['widgets']} widgets interactive", timed("all")),
        ("bytes on the wire before the first", f"{med['wire_first'] / 1e6:.2f} MB  {ratio('wire_first', 'wire'):.3f}x the floor's"),
        ("bytes on the wire until all", f"{med['wire'] / 1e6:.2f} MB  {ratio('wire', 'wire'):.3f}x the floor's "
                                        f"({med['raw'] / 1e6:.2f} MB before gzip)"),
    ]
    if "clock_first" in runs[0]:  # its bound, read from clock.py: each time beside it, and the timings each point got
        bound = clock.BUDGET_S * 1e3
        for key, measures, what in (("clock_first", "clock_measures", "clock: its first run, to its figure"),
                                    ("clock_again", "clock_measures_again", "clock: asked again once idle")):
            rows.append((what, f"{med_of(runs, key) / 1e3:5.2f} s  {med_of(runs, key) / bound:.2f}x its bound of "
                               f"{clock.BUDGET_S:g} s  (per run {each(runs, key)}; timings per point "
                               f"{', '.join(str(r[measures]) for r in runs)})"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


GROUPS = (  # (group, what a path starts with, after the site's root), in the order they are tried
    ("Pyodide + stdlib", ("pyodide/pyodide", "pyodide/python_stdlib")),
    ("numpy", ("pyodide/numpy-",)),
    ("widgets code package", ("pyodide/widgets_py-",)),
    ("calculators' own packages", ("pyodide/widgets_py_widget_",)),
    ("widgets sources package", ("pyodide/widgets_py_sources-",)),
    ("model data package", ("pyodide/widgets_py_models-",)),
    ("lock", ("pyodide/",)),
    ("code editor (CodeMirror)", ("assets/tw/editor/",)),
    ("site scripts + css", ("assets/tw/",)),
    ("search (index, worker, lunr)", ("search/", "assets/javascripts/workers/", "assets/javascripts/lunr/")),
    ("theme (Material)", ("assets/",)),
    ("floor page", (FLOOR.lstrip("/"),)),
)


def group_of(path: str) -> str:
    path = path.split("?")[0].lstrip("/")
    for name, prefixes in GROUPS:
        if path.startswith(prefixes):
            return name
    return "pages and the rest" if not path.endswith(".xml") else "sitemap"


def print_inventory(run: dict) -> None:
    """Every response of one visit: by group, the bytes on the wire and those sent before the
    first widget answered (MARK), then each response that sent bytes before it, with when it
    began and ended (s since the navigation)."""
    mark = run["marked_at"]
    print(f"  inventory (the last round; the first widget answered at {mark if mark is None else f'{mark:.2f}'} s "
          f"on the server's clock):")
    groups: dict[str, list[int]] = {}
    for e in run["log"]:
        g = groups.setdefault(group_of(e["path"]), [0, 0])
        g[0] += e["wire"]
        g[1] += e["before"]
    for name, (wire, before) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"    {name:<30} {before / 1e3:8.1f} KB before the first widget  ({wire / 1e3:8.1f} KB in all)")
    print(f"    {'total':<30} {sum(g[1] for g in groups.values()) / 1e3:8.1f} KB before the first widget  "
          f"({sum(g[0] for g in groups.values()) / 1e3:8.1f} KB in all)")
    for e in sorted(run["log"], key=lambda e: e["start"]):
        if e["before"]:
            print(f"      {e['start']:6.2f}-{e.get('end', float('nan')):6.2f} s  {e['before'] / 1e3:8.1f} KB  {e['path']}")


def med_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def each(runs: list[dict], key: str) -> str:
    return ", ".join(f"{r[key] / 1e3:.2f}" for r in runs)


if __name__ == "__main__":
    main()
