"""Per-widget recompute time: CPython (native numpy) beside Chromium (Pyodide), same run.

    .venv/bin/python benchmarks/recompute.py [--repeat 15]

Builds the site into a temporary folder, serves it on 127.0.0.1, and for each widget of
chapter 15 alternates one control between two values: the browser time runs from the
control's input event to the new figure in the DOM (worker round trip included); the
CPython time is `widgets_py.run` on the same parameters. Prints a table of medians, p95s
and the browser/CPython ratio: absolute times are noisy here, the ratio less so.
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

from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path  # noqa: E402

from widgets_py import run  # noqa: E402

PAGE = "cap15/"
MEASURE = """async ([sel, name, values]) => {
  const w = document.querySelector(sel);
  const el = w.querySelector(`[name=${name}]`);
  const times = [];
  for (const value of values) {
    const changed = new Promise((resolve) => {
      const obs = new MutationObserver(() => { if (!w.dataset.busy) { obs.disconnect(); resolve(); } });
      obs.observe(w, { attributes: true, attributeFilter: ["data-busy"] });
    });
    const t0 = performance.now();
    el.value = value;
    el.dispatchEvent(new Event("input", { bubbles: true }));
    await changed;
    times.push(performance.now() - t0);
  }
  return times;
}"""


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
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
        t0 = time.perf_counter()
        page.goto(f"http://127.0.0.1:{httpd.server_port}/{PAGE}")
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                               timeout=120_000)
        ready_s = time.perf_counter() - t0
        widgets = page.eval_on_selector_all(".tw-widget", "ws => ws.map(w => [w.dataset.widget, JSON.parse(w.dataset.params)])")
        for name, params in widgets:
            sel = f'.tw-widget[data-widget="{name}"]'
            control = page.eval_on_selector(f"{sel} .tw-controls", """f => {
                const el = [...f.querySelectorAll('[name]')].find(e => e.type === 'range' || e.tagName === 'SELECT');
                const opts = el.tagName === 'SELECT' ? [...el.options].map(o => o.value) : null;
                return [el.name, el.type, opts, el.value, el.max];
            }""")
            key, kind, options, current, top = control
            if options:
                other = next(o for o in options if o != current)
                values, py_values = [other, current], [other, current]
            else:
                positions = page.eval_on_selector(f"{sel} [name={key}]", "el => JSON.parse(el.dataset.positions)")
                other = "0" if current != "0" else top
                values = [other, current]
                py_values = [positions[int(v)] for v in values]
            browser_ms = page.evaluate(MEASURE, [sel, key, values * args.repeat])
            cpython_ms = []
            for v in py_values * args.repeat:
                t = time.perf_counter()
                run(name, {**params, key: v})
                cpython_ms.append(1e3 * (time.perf_counter() - t))
            rows.append((name, key, statistics.median(cpython_ms), statistics.median(browser_ms), p95(browser_ms)))
        browser.close()
    httpd.shutdown()
    print(f"chapter page interactive after {ready_s:.1f} s (cold Pyodide boot)\n")
    print(f"{'widget':<10} {'control':<14} {'CPython ms':>11} {'browser ms':>11} {'browser p95':>12} {'ratio':>7}")
    for name, key, c, b, b95 in rows:
        print(f"{name:<10} {key:<14} {c:>11.1f} {b:>11.1f} {b95:>12.1f} {b / c:>6.1f}×")


if __name__ == "__main__":
    main()
