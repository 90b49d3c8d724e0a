"""The phone profile (issue 28 §1): a chapter's cold visit as a mid-range phone gets it.

    .venv/bin/python benchmarks/phone.py [--page cap15/index.html] [--rounds 3] [--before]

A 390 x 844 CSS px touch viewport, the page's CPU slowed 4x (CDP Emulation.setCPUThrottlingRate),
and a network shaped on the server's side, so that the worker's downloads (Pyodide, numpy, the
widgets) pay it as the page's do: every response gzip-compressed where a host would compress it,
its first byte 150 ms after the request, and all responses together limited to 9 Mbit/s (one
token bucket for the whole server: a phone's link is shared by its parallel downloads).
No service worker (a first visit: its precache comes after the widgets are interactive).
Prints time to first contentful paint, to the first widget interactive and to all of them,
and the bytes on the wire (compressed) and before compression, until all are interactive.
With `--before`, the same for the same build with its runtime laid out as before trim.py
(whole standard library and numpy, bytecode beside the sources: budget.layout_before), the
two in turn in every round.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import book  # noqa: E402
from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path, free_port  # noqa: E402

VIEWPORT = {"width": 390, "height": 844}
CPU_SLOWDOWN = 4
BANDWIDTH = 9e6 / 8  # bytes per second: 9 Mbit/s
LATENCY = 0.150  # seconds before a response's first byte
CHUNK = 16 * 1024
COMPRESSED = (".html", ".js", ".css", ".json", ".svg", ".wasm", ".txt", ".xml", ".py", ".map")  # what a host gzips
# when each widget first became ready, in ms since navigation started (performance.now())
WATCH = """(() => {
  window.twReady = {};
  new MutationObserver(() => document.querySelectorAll('.tw-widget[data-state=ready]').forEach(w => {
    if (!(w.id in window.twReady)) window.twReady[w.id] = performance.now();
  })).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-state'] });
})();"""
ALL_READY = "() => { const ws = [...document.querySelectorAll('.tw-widget')]; return ws.length > 0 && ws.every(w => w.dataset.state === 'ready'); }"


class Link:
    """One shaped link: a token bucket all responses draw from."""

    def __init__(self, rate: float):
        self.rate, self.lock, self.free_at = rate, threading.Lock(), time.monotonic()
        self.wire = self.raw = 0

    def send(self, out, data: bytes) -> None:
        for i in range(0, len(data), CHUNK):
            piece = data[i:i + CHUNK]
            with self.lock:
                start = max(self.free_at, time.monotonic())
                self.free_at = start + len(piece) / self.rate
                self.wire += len(piece)
            time.sleep(max(0.0, start + len(piece) / self.rate - time.monotonic()))
            out.write(piece)


def handler(link: Link):
    class Shaped(_Quiet):
        protocol_version = "HTTP/1.1"  # keep-alive, as a browser gets from a host

        def do_GET(self):
            data = self.send_head_shaped()
            if data is not None:
                link.send(self.wfile, data)

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
            self.send_header("Cache-Control", "no-store")
            http.server.BaseHTTPRequestHandler.end_headers(self)
            return data

    return Shaped


def visit(browser, url: str) -> dict:
    ctx = browser.new_context(viewport=VIEWPORT, is_mobile=True, has_touch=True, device_scale_factor=2,
                              service_workers="block")
    try:
        ctx.add_init_script(WATCH)
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
        page.goto(url, wait_until="commit")
        page.wait_for_function(ALL_READY, timeout=600_000, polling=250)
        ready = page.evaluate("() => Object.values(window.twReady || {})")
        assert ready, page.evaluate("() => [typeof window.twReady, document.querySelectorAll('.tw-widget[data-state=ready]').length]")
        fcp = page.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
        return {"fcp": fcp, "first": min(ready), "all": max(ready), "widgets": len(ready)}
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
    served = {}
    for name, root in layouts.items():
        link = Link(BANDWIDTH)
        at = port if name == "after" else free_port()
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", at), functools.partial(handler(link), directory=str(root)))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        served[name] = (link, httpd, f"http://127.0.0.1:{at}/{chapter}")
    from playwright.sync_api import sync_playwright

    runs: dict[str, list[dict]] = {name: [] for name in layouts}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for round_ in range(args.rounds):
            for name in sorted(layouts, reverse=round_ % 2 == 1):  # which goes first alternates: no order bias
                link, _, url = served[name]
                link.wire = link.raw = 0
                runs[name].append(visit(browser, url) | {"wire": link.wire, "raw": link.raw})
        browser.close()
    for _, httpd, _ in served.values():
        httpd.shutdown()
    print(f"profile: {VIEWPORT['width']} px, CPU {CPU_SLOWDOWN}x slower, {BANDWIDTH * 8 / 1e6:.0f} Mbit/s, "
          f"{LATENCY * 1e3:.0f} ms per request, gzip; {chapter}, median of {args.rounds}")
    for name, each_run in runs.items():
        if len(runs) > 1:
            print(f"\n{name}: " + ("the site as built" if name == "after" else "the runtime before trim.py"))
        print_runs(each_run)


def print_runs(runs: list[dict]) -> None:
    med = {k: statistics.median(r[k] for r in runs) for k in ("fcp", "first", "all", "wire", "raw")}

    def each(key: str) -> str:
        return ", ".join(f"{r[key] / 1e3:.2f}" for r in runs)

    rows = [
        ("first contentful paint", f"{med['fcp'] / 1e3:.2f} s  (per run {each('fcp')})"),
        ("first widget interactive", f"{med['first'] / 1e3:.2f} s  (per run {each('first')})"),
        (f"all {runs[0]['widgets']} widgets interactive", f"{med['all'] / 1e3:.2f} s  (per run {each('all')})"),
        ("bytes on the wire until then", f"{med['wire'] / 1e6:.2f} MB  ({med['raw'] / 1e6:.2f} MB before gzip)"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")

if __name__ == "__main__":
    main()
