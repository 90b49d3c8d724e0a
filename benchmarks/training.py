"""In-browser training of the mini-GPT beside CPython: ms per step and achieved GFLOP/s.

    .venv/bin/python benchmarks/training.py [--steps 500]

CPython runs the same `widgets_py.browser.Trainer` the worker runs, in this process;
Chromium (headless, 127.0.0.1) presses the page's "Entrena des de zero" button. Both
train from scratch with the widget's default settings; the table prints ms per step,
the FLOP rate from `train.flops_per_step` (counted from the shapes), the held-out loss
reached, and the bigram bound it must beat.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path  # noqa: E402

from widgets_py import corpus, pretrained, registry, train  # noqa: E402
from widgets_py.browser import Trainer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=registry.get("training").params[0].default)
    args = ap.parse_args()
    cfg, tc = pretrained.specs()["mini"]
    flops = train.flops_per_step(cfg, tc.batch)

    trainer = Trainer("training", json.dumps({"steps": args.steps}))
    t0 = time.perf_counter()
    while not json.loads(trainer.advance(5))["done"]:
        pass
    cpython_s = time.perf_counter() - t0
    cpython_loss = train.evaluate(trainer.run.params, cfg, corpus.data()[1])

    from playwright.sync_api import sync_playwright

    site = Path(tempfile.mkdtemp()) / "site"
    done = build_site(site)
    assert done.returncode == 0, done.stderr
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    sel = '.tw-widget[data-widget="training"]'
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{httpd.server_port}/cap15/")
        page.wait_for_selector(f"{sel}[data-state=ready]", timeout=120_000)
        page.eval_on_selector(f"{sel} [name=steps]", """(el, steps) => {
            el.value = JSON.parse(el.dataset.positions).indexOf(steps);
            el.dispatchEvent(new Event('input', {bubbles: true}));
        }""", args.steps)
        page.click(f"{sel} .tw-train-start")
        page.wait_for_function("s => document.querySelector(s).dataset.trainElapsed", arg=sel, timeout=600_000)
        page.wait_for_function("s => !document.querySelector(s).dataset.busy", arg=sel)
        browser_s = float(page.get_attribute(sel, "data-train-elapsed"))
        browser_loss = json.loads(page.get_attribute(sel, "data-values"))["heldout_loss"]
        browser.close()
    httpd.shutdown()

    print(f"mini-GPT {cfg.d}×{cfg.layers}, {args.steps} steps of {tc.batch}×{cfg.context} tokens, "
          f"{flops / 1e6:.1f} MFLOP per step; bigram bound {corpus.bigram_bound():.3f} nats\n")
    print(f"{'where':<22} {'total s':>8} {'ms/step':>8} {'GFLOP/s':>8} {'held-out':>9}")
    for where, secs, loss in (("CPython (native numpy)", cpython_s, cpython_loss),
                              ("Chromium (Pyodide)", browser_s, browser_loss)):
        print(f"{where:<22} {secs:>8.1f} {1e3 * secs / args.steps:>8.1f} {flops * args.steps / secs / 1e9:>8.2f} {loss:>9.3f}")
    print(f"\nbrowser / CPython time: {browser_s / cpython_s:.1f}×")


if __name__ == "__main__":
    main()
