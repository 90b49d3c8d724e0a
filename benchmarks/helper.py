"""Issue 42: does the kernel's helper (a second worker) make quantize faster for a reader?

    .venv/bin/python benchmarks/helper.py [--rounds 3] [--site built/site]

On the phone profile of benchmarks/phone.py (390 px touch viewport, CPU slowed 4x over CDP,
9 Mbit/s, 150 ms per request, gzip), each round visits the chapter twice, in turn (which goes
first alternates): with the helper as the page starts it, and with helper.js answered 404 (the
helper never loads, so stages.evaluate_many scores every format in the Pyodide worker).
As in phone.py, the 4x slowdown reaches the page's main thread only: Chromium refuses it for
workers ("Operation is only supported for pages, not workers", tried through auto-attach), so
the Pyodide worker and the helper run at this machine's speed, on its cores. Per visit: the time from navigation
to the end of the worker's warm-up (which computes quantize at its defaults: six held-out
losses), then four changes of quantize's group (8, 16, 32, 128: fresh, four formats each),
each from the slider's input event to the widget's complete result (data-busy cleared).
Prints the medians and the ratio without/with.
"""

from __future__ import annotations

import functools
import http.server
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import book  # noqa: E402
from conftest import CHROMIUM_ARGS, KERNEL_WARM, build_site, chromium_path, free_port  # noqa: E402
from phone import BANDWIDTH, CPU_SLOWDOWN, LATENCY, VIEWPORT, Link, handler  # noqa: E402

SEL = '.tw-widget[data-widget="quantize"]'
GROUPS = (0, 1, 2, 4)  # slider positions 8, 16, 32, 128: not the default (64), which the warm-up computed
CHANGE = """async ([sel, i]) => {
  const w = document.querySelector(sel), el = w.querySelector('[name=group]');
  const t0 = performance.now();
  const done = new Promise((resolve) => {
    const obs = new MutationObserver(() => { if (!w.dataset.busy) { obs.disconnect(); resolve(); } });
    obs.observe(w, { attributes: true, attributeFilter: ["data-busy"] });
  });
  el.value = i;
  el.dispatchEvent(new Event("input", { bubbles: true }));
  await done;
  return performance.now() - t0;
}"""


def visit(browser, url: str, helper: bool) -> dict:
    ctx = browser.new_context(viewport=VIEWPORT, is_mobile=True, has_touch=True, device_scale_factor=2,
                              service_workers="block")
    try:
        page = ctx.new_page()
        if not helper:
            page.route("**/assets/tw/helper.js*", lambda route: route.fulfill(status=404, body=""))
        cdp = ctx.new_cdp_session(page)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})  # the page's thread only (see above)
        page.goto(url, wait_until="commit")
        page.wait_for_function(f"() => Boolean(window.tw && tw.kernel && document.querySelector('script[data-config]')) && ({KERNEL_WARM})()",
                               timeout=600_000, polling=100)
        warm = page.evaluate("() => performance.now()")
        helped = page.evaluate(KERNEL_WARM)["helped"]
        assert helped == helper, (helped, helper)
        page.wait_for_function("s => { const w = document.querySelector(s); return w.dataset.state === 'ready' && !w.dataset.busy; }",
                               arg=SEL, timeout=60_000)
        changes = [page.evaluate(CHANGE, [SEL, i]) for i in GROUPS]
        return {"warm": warm, "changes": changes}
    finally:
        ctx.close()


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--site", help="a site already built (default: build one)")
    args = ap.parse_args()
    port = free_port()
    if args.site:
        site = Path(args.site)
    else:
        site = Path(tempfile.mkdtemp()) / "site"
        done = build_site(site, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})
        assert done.returncode == 0, done.stderr[-2000:]
    chapter = next(p for p in book.widget_pages(site) if 'data-widget="quantize"' in (site / p).read_text())
    link = Link(BANDWIDTH)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler(link), directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{port}/{chapter}"
    from playwright.sync_api import sync_playwright

    runs: dict[str, list[dict]] = {"with": [], "without": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for round_ in range(args.rounds):
            for name in sorted(runs, reverse=round_ % 2 == 1):  # which goes first alternates
                r = visit(browser, url, helper=name == "with")
                runs[name].append(r)
                print(f"round {round_ + 1} {name:<7}: warm-up over at {r['warm'] / 1e3:.2f} s; changes "
                      + ", ".join(f"{c:.0f}" for c in r["changes"])
                      + " ms", flush=True)
        browser.close()
    httpd.shutdown()
    med = {name: (statistics.median(r["warm"] for r in rs), statistics.median(c for r in rs for c in r["changes"]))
           for name, rs in runs.items()}
    print(f"\nprofile: {VIEWPORT['width']} px, CPU {CPU_SLOWDOWN}x slower, {BANDWIDTH * 8 / 1e6:.0f} Mbit/s, "
          f"{LATENCY * 1e3:.0f} ms per request, gzip; {chapter}; {args.rounds} rounds, in turn; medians")
    print(f"{'':<40} {'with helper':>12} {'without':>12} {'without/with':>13}")
    (w_warm, w_change), (o_warm, o_change) = med["with"], med["without"]
    print(f"{'quantize change -> complete result':<40} {w_change:>9.0f} ms {o_change:>9.0f} ms {o_change / w_change:>12.2f}x")
    print(f"{'navigation -> warm-up over (defaults)':<40} {w_warm / 1e3:>10.2f} s {o_warm / 1e3:>10.2f} s {o_warm / w_warm:>12.2f}x")
    print(f"saved by the helper per change: {o_change - w_change:.0f} ms ({1 - w_change / o_change:.0%})")


if __name__ == "__main__":
    main()
