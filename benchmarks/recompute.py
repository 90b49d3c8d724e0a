"""Per-widget recompute time: CPython (native numpy) beside Chromium (Pyodide), same run.

    .venv/bin/python benchmarks/recompute.py [--repeat 1] [--controls 3]

Builds the site into a temporary folder, serves it on 127.0.0.1, and for each widget of
every chapter page (found in the site, as tests/book.py finds them; `--page` picks one) moves up to `--controls` of its controls (sliders and menus) through four of
their positions, `--repeat` times, as issue 13's probe does: the browser time runs from the
control's input event to the widget's next values in the DOM (worker round trip included);
the CPython time is `widgets_py.run` on the same parameters. Prints, per widget, the median
and p95 beside the goals (100 ms median, 250 ms p95), both to the first visible update
(a staged run's first partial, or the result) and to the complete result, and the
browser/CPython ratio:
absolute times are noisy on a shared machine, the ratio less so.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import book  # noqa: E402
from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path  # noqa: E402

from widgets_py import run  # noqa: E402
from widgets_py.engine.session import Session  # noqa: E402

GOAL_MEDIAN_MS, GOAL_P95_MS = 100.0, 250.0  # issue 13, per widget
MEASURE = """async ([sel, name, values]) => {
  // per change: [ms to the first visible update (figure, numbers or status), ms to the last]
  const w = document.querySelector(sel);
  const el = w.querySelector(`[name=${name}]`);
  const times = [];
  for (const value of values) {
    let first = null;
    const t0 = performance.now();
    const shown = new MutationObserver(() => { if (first === null) first = performance.now() - t0; });
    for (const part of w.querySelectorAll('.tw-figure, .tw-values, .tw-tables, .tw-status'))  // not the controls
      shown.observe(part, { subtree: true, childList: true, characterData: true });
    const changed = new Promise((resolve) => {
      const obs = new MutationObserver(() => { if (!w.dataset.busy) { obs.disconnect(); resolve(); } });
      obs.observe(w, { attributes: true, attributeFilter: ["data-busy"] });
    });
    el.value = value;
    el.dispatchEvent(new Event("input", { bubbles: true }));
    await changed;
    const last = performance.now() - t0;
    shown.disconnect();
    times.push([first === null ? last : Math.min(first, last), last]);
  }
  return times;
}"""


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]


def measure_page(page, args) -> list[tuple]:
    """(widget, controls moved, CPython median, browser median, browser p95) for each widget of the page."""
    rows = []
    widgets = page.eval_on_selector_all(
        ".tw-widget", "ws => ws.map(w => [w.dataset.widget, w.dataset.instance, JSON.parse(w.dataset.params)])")
    for name, instance, params in widgets:
        sel = f'.tw-widget[data-instance="{instance}"]'
        controls = page.eval_on_selector(f"{sel} .tw-controls", """f => [...f.querySelectorAll('[name]')]
            .filter(e => e.type === 'range' || e.tagName === 'SELECT')
            .map(el => [el.name, el.tagName === 'SELECT' ? [...el.options].map(o => o.value) : null, el.value, el.max,
                        el.type === 'range' ? [...Array(tw.slider.count(el)).keys()].map((i) => tw.slider.value(el, i)) : null])""")
        browser_ms, first_ms, cpython_ms, moved = [], [], [], []
        for key, options, current, top, positions in controls[:args.controls]:
            choices = options or [str(round(i * int(top) / 3)) for i in range(4)]  # options, or 4 spread positions
            values, last = [], current
            for i in range(4):  # four moves, each to another value than the one before
                pick = [c for c in choices[i:] + choices[:i] if c != last][0]
                values.append(pick)
                last = pick
            py_values = values if options else [positions[int(v)] for v in values]
            timed = page.evaluate(MEASURE, [sel, key, values * args.repeat])
            if args.each:
                for v, (f, b) in zip(values * args.repeat, timed):
                    print(f"  {name:<12} {key}={v:<14} first {f:7.1f}  done {b:7.1f} ms")
            first_ms += [f for f, _ in timed]
            browser_ms += [b for _, b in timed]
            for v in py_values * args.repeat:
                t = time.perf_counter()
                run(name, {**params, key: v})
                cpython_ms.append(1e3 * (time.perf_counter() - t))
            moved.append(key)
        if moved:
            rows.append((name, ",".join(moved), statistics.median(cpython_ms), statistics.median(first_ms),
                         p95(first_ms), statistics.median(browser_ms), p95(browser_ms)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--controls", type=int, default=3)
    ap.add_argument("--each", action="store_true", help="also print every change's times, as they are measured")
    ap.add_argument("--page", help="one chapter page, e.g. cap15/index.html (default: every page with widgets)")
    args = ap.parse_args()
    import functools
    import http.server
    import threading

    from playwright.sync_api import sync_playwright

    site = Path(tempfile.mkdtemp()) / "site"
    done = build_site(site)
    assert done.returncode == 0, done.stderr
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        ready = []
        for url in [args.page] if args.page else book.widget_pages(site):
            t0 = time.perf_counter()
            page.goto(f"http://127.0.0.1:{httpd.server_port}/{url}")
            page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                                   timeout=120_000)
            ready.append((url, time.perf_counter() - t0))
            rows += measure_page(page, args)
        browser.close()
    httpd.shutdown()
    for url, seconds in ready:
        print(f"{url}: interactive after {seconds:.1f} s")
    print()
    print("first = the first visible update (a staged run's first partial, or the result); done = the whole result")
    print(f"{'widget':<12} {'controls moved':<34} {'CPython':>8} {'first':>7} {'p95':>7} {'done':>7} {'p95':>7} "
          f"{'ratio':>7}  goal {GOAL_MEDIAN_MS:.0f}/{GOAL_P95_MS:.0f} ms met? (first / done)")
    for name, keys, c, f, f95, b, b95 in rows:
        met = lambda m, q: "yes" if m <= GOAL_MEDIAN_MS and q <= GOAL_P95_MS else "NO"  # noqa: E731
        print(f"{name:<12} {keys:<34} {c:>8.1f} {f:>7.1f} {f95:>7.1f} {b:>7.1f} {b95:>7.1f} {b / c:>6.1f}×  "
              f"{met(f, f95)} / {met(b, b95)}")


if __name__ == "__main__":
    with Session().active():  # one session for every CPython call, as the worker keeps one
        main()
