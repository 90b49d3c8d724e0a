"""Time to interactive and control latency in Chromium, Firefox ESR and WebKitGTK, side by
side in one run, with each engine's ratio to Chromium (issue 28 §3; goal: WebKit's time to
interactive ≤ 1.3× Chromium's).

    .venv/bin/python benchmarks/engines.py [--rounds 3] [--changes 6] [--page cap15/index.html]

One build of the site, served on 127.0.0.1. Per engine and round, a cold visit: a server on
a port of its own (a new origin: no service worker, no HTTP cache from an earlier round)
and the time, in the page's own clock (performance.now(), from navigation start), at which
every widget is ready; the engines take turns, round by round, so that the machine's drift
falls on all of them. Then, in the last round's page, each widget's first slider or select
is moved back and forth (`--changes` changes) and timed in the page (recompute.MEASURE:
change -> the widget idle again). Engines that are not installed are listed as such
(tests/engines.py says what to install). Chromium is Debian's, through Playwright, as in
the tests. WebKitGTK is Safari's engine family, not Safari.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # first: its engines.py is the drivers, not this script

import book  # noqa: E402
import engines  # noqa: E402
from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path, free_port  # noqa: E402
from recompute import MEASURE  # noqa: E402

# performance.now() when every widget is ready, polled in the page every 10 ms
READY_AT = """() => new Promise((resolve, reject) => {
  const all = () => [...document.querySelectorAll('.tw-widget')].every((w) => w.dataset.state === 'ready');
  const failed = () => [...document.querySelectorAll('.tw-widget')].some((w) => w.dataset.state === 'error');
  const tick = () => all() ? resolve(performance.now()) : failed() ? reject(new Error('a widget failed'))
    : performance.now() > 240000 ? reject(new Error('not ready after 240 s')) : setTimeout(tick, 10);
  tick();
})"""
# each widget's first slider or select: [widget, name, [other value, current value]]
CONTROLS = """() => [...document.querySelectorAll('.tw-widget')].filter((w) => !w.querySelector('.tw-train')).map((w) => {
  const el = [...w.querySelectorAll('.tw-controls [name]')].find((e) => e.type === 'range' || e.tagName === 'SELECT');
  if (!el) return null;
  const other = el.tagName === 'SELECT' ? [...el.options].map((o) => o.value).find((v) => v !== el.value)
    : String(Number(el.value) + (Number(el.value) < Number(el.max) ? 1 : -1) * (Number(el.step) || 1));
  return [w.dataset.widget, el.name, [other, el.value]];
}).filter(Boolean)"""


class Chromium(engines.Engine):
    """Debian's Chromium through Playwright, behind the same interface."""

    name = "chromium"

    def __init__(self):
        from playwright.sync_api import sync_playwright

        self.pw = sync_playwright().start()
        self.browser = self.pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        self.version = "Chromium " + self.browser.version
        self.context = self.browser.new_context()
        self.page = self.context.new_page()

    def goto(self, url):
        self.page.goto(url)

    def js(self, code, *args):
        return self.page.evaluate(self.call_source(code, args))

    def errors(self):
        return []

    def close(self):
        self.browser.close()
        self.pw.stop()


def serve(site: Path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_port}/"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="cold visits per engine, engines in turn")
    ap.add_argument("--changes", type=int, default=6, help="control changes timed per widget")
    ap.add_argument("--page", help="the chapter page (default: the book's first with widgets)")
    args = ap.parse_args()
    site = Path(tempfile.mkdtemp()) / "site"
    done = build_site(site, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{free_port()}/"})
    assert done.returncode == 0, done.stderr[-2000:]
    page = args.page or book.widget_pages(site)[0]

    recorder = engines.Recorder()
    running: dict[str, engines.Engine] = {}
    absent: dict[str, str] = {}
    for name in ("chromium", *engines.ENGINES):
        why = None if name == "chromium" else engines.missing(name)
        if why:
            absent[name] = why
            continue
        running[name] = Chromium() if name == "chromium" else engines.launch(name, recorder.address)

    tti: dict[str, list[float]] = {name: [] for name in running}
    for _ in range(args.rounds):
        for name, engine in running.items():
            httpd, base = serve(site)
            engine.goto(base + page)
            tti[name].append(engine.js(READY_AT))
            if len(tti[name]) < args.rounds:
                httpd.shutdown()
                httpd.server_close()

    latency: dict[str, dict[str, float]] = {}
    for name, engine in running.items():  # in the last round's page, still served
        latency[name] = {}
        for widget, control, values in engine.js(CONTROLS):
            sel = f'.tw-widget[data-widget="{widget}"]'
            times = [last for _, last in engine.js(MEASURE, [sel, control, values * (args.changes // 2)])]
            latency[name][widget] = statistics.median(times)
        engine.close()
    recorder.close()

    names = list(running)
    base_tti = statistics.median(tti["chromium"]) if "chromium" in tti else None
    print(f"{page}: cold time to interactive (every widget ready), median of {args.rounds}; control change -> idle, "
          f"median of {args.changes} per widget")
    print(f"{'':<28}" + "".join(f"{n:>22}" for n in names))
    print(f"{'version':<28}" + "".join(f"{running[n].version[:21]:>22}" for n in names))

    def cell(value: float, ref: float | None, unit: str) -> str:
        ratio = f" ({value / ref:.2f}×)" if ref else ""
        return f"{value:.2f} s{ratio}" if unit == "s" else f"{value:.0f} ms{ratio}"

    print(f"{'time to interactive':<28}" + "".join(
        f"{cell(statistics.median(tti[n]) / 1e3, base_tti / 1e3 if base_tti else None, 's'):>22}" for n in names))
    print(f"{'  each round':<28}" + "".join(f"{' '.join(f'{t / 1e3:.1f}' for t in tti[n]):>22}" for n in names))
    widgets = sorted({w for n in names for w in latency[n]})
    for w in widgets:
        ref = latency.get("chromium", {}).get(w)
        print(f"{'change: ' + w:<28}" + "".join(
            f"{cell(latency[n][w], ref, 'ms') if w in latency[n] else '-':>22}" for n in names))
    for n in names:
        ratios = [latency[n][w] / latency["chromium"][w] for w in latency[n] if "chromium" in latency and latency["chromium"].get(w)]
        if ratios and n != "chromium":
            print(f"{n}: median control latency ratio to Chromium {statistics.median(ratios):.2f}×")
    if "webkit" in tti and base_tti:
        ratio = statistics.median(tti["webkit"]) / base_tti
        print(f"WebKit time to interactive: {ratio:.2f}× Chromium's (goal ≤ 1.3×)")
    for n, why in absent.items():
        print(f"{n}: not measured: {why}")


if __name__ == "__main__":
    main()
