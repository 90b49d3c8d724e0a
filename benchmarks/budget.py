"""The performance budget of the built site, measured side by side in one run.

    .venv/bin/python benchmarks/budget.py

Headless Chromium on 127.0.0.1, a fresh browser context per visit. Prints one table:
first paint (are the prerendered figures there?), cold time-to-interactive of the first
chapter page with widgets (or `--page`) beside the bare cost of booting Pyodide + numpy as published (the pinned files,
no bytecode of ours: bytecode.py) in an empty page (same run, same
server, in turn, `--rounds` times: the median of the pairs' ratios), time-to-interactive of the
second widget page reached by in-site navigation,
control change -> new figure per widget (median, p95), bytes served for a first and a
repeat visit (beside what the offline cache holds), `properdocs build` cold (fresh interpreter
and site folder; the Pyodide files and what `./dev` makes of them once per machine, their
bytecode, copied in, not downloaded; everything made from this project's files is made
again) and warm, and whether the
two builds are byte-identical. Each figure is printed beside its goal (issue 13).

Then the first visit in two layouts of the same build, in turn in the same run (issue 33):
`before`, the runtime as it was laid out before build_hooks/runtime/trim.py (whole python_stdlib.zip
and numpy wheel, bytecode beside their source: `assemble.assemble(trimmed=False)`, in a
copy of the site served on another port) and `after`, the site as built (trimmed bytecode,
the whole archives beside, fetched only on a miss). Both without a service worker, whose
precache starts only once the page is interactive and would blur what each layout needs:
every file requested before every widget is ready, its bytes on the wire as a static host
serves them (gzip -9 of the file; images and fonts as they are), and the cold
time-to-interactive (median of `--rounds`).
"""

from __future__ import annotations

import filecmp
import functools
import gzip
import http.server
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # first: its book.py reads a built site (benchmarks/book.py makes a book)

import book  # noqa: E402
from conftest import CHROMIUM_ARGS, _Quiet, build_site, chromium_path, free_port  # noqa: E402
from recompute import MEASURE, p95  # noqa: E402

from build_hooks.hosting import offline  # noqa: E402
from build_hooks.runtime import assemble, assets, bundle, trim  # noqa: E402

ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')"
BARE_PAGE = """<!doctype html><meta charset="utf-8"><title>bare</title><script>
const t0 = performance.now();
const w = new Worker("bare-worker.js" + location.search);
w.onmessage = (e) => { document.title = "done"; window.bareMs = performance.now() - t0; };
</script>"""
BARE_WORKER = """const dir = new URLSearchParams(location.search).get("runtime");  // bare/ or the site's pyodide/
importScripts(dir + "pyodide.js");
(async () => { const py = await loadPyodide({indexURL: new URL(dir, location.href).href});
  await py.loadPackage("numpy"); py.runPython("import numpy"); postMessage("done"); })();"""


class Counting(_Quiet):
    served = 0

    def copyfile(self, source, outputfile):
        data = source.read()
        Counting.served += len(data)
        outputfile.write(data)


def timed_build(dest: Path, cache: Path, port: int) -> float:
    t = time.perf_counter()
    done = build_site(dest, env={"TEXTBOOK_CACHE": str(cache), "TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})
    assert done.returncode == 0, done.stderr[-2000:]
    return time.perf_counter() - t


def differing(a: Path, b: Path) -> int:
    """How many files differ between two trees (or are in one only)."""
    cmp = filecmp.dircmp(a, b)
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return (len(cmp.left_only) + len(cmp.right_only) + len(mismatch) + len(errors)
            + sum(differing(a / d, b / d) for d in cmp.common_dirs))


def bare_runtime(dest: Path) -> None:
    """The reference: Pyodide and numpy as published (pinned bytes, source only: no bytecode of
    ours), with a lock that lists numpy alone."""
    dest.mkdir()
    for name in assets.PINNED:
        shutil.copyfile(assets.fetch(name), dest / name)
    (dest / bundle.LOCK).write_text(bundle.lock(None))


def layout_before(site: Path, dest: Path) -> None:
    """A copy of `site` whose runtime is laid out as before trim.py (same build, same widgets wheel)."""
    shutil.copytree(site, dest)
    runtime = dest / bundle.RUNTIME_DIR
    lock = (runtime / bundle.LOCK).read_text()
    for name in (trim.STDLIB_FULL, assets.NUMPY_WHEEL, json.loads(lock)["packages"]["numpy"]["file_name"]):
        (runtime / name).unlink()
    packages = json.loads(lock)["packages"]
    # ours, laid out as before: bytecode beside its source (the pages still name the sources' wheel:
    # a «Codi» panel would not open there; the benchmarks open none)
    for key in (bundle.PACKAGE_KEY, bundle.SOURCES_KEY):
        if key in packages:
            (runtime / packages[key]["file_name"]).unlink()
    core, numpy, wheel, models, _, _ = assemble.assemble(is_serve=False, trimmed=False)
    assert (runtime / models.file_name).read_bytes() == models.data, "the site was built from other sources"
    for name, data in {**core, numpy.file_name: numpy.data, wheel.file_name: wheel.data}.items():
        (runtime / name).write_bytes(data)
    (runtime / bundle.LOCK).write_text(bundle.lock(wheel, numpy, models))


UNCOMPRESSED = (".png", ".jpg", ".ico", ".woff", ".woff2")  # a host sends these as they are


@functools.cache
def on_the_wire(path: Path) -> int:
    data = path.read_bytes()
    return len(data) if path.suffix in UNCOMPRESSED else len(gzip.compress(data, 9, mtime=0))


def served_file(root: Path, url: str) -> Path | None:
    rel = urlsplit(url).path.lstrip("/")
    path = root / rel
    if path.is_dir():
        path = path / "index.html"
    return path if path.is_file() else None


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", help="the chapter page measured, e.g. cap15/index.html (default: the book's first with widgets)")
    ap.add_argument("--rounds", type=int, default=5, help="cold boots of each (bare, chapter), in turn: the ratio drifts ±0.2 between pairs here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cache = tmp / "cache"
    shutil.copytree(assets.cache_dir(), cache / assets.cache_dir().name)  # Pyodide files only: no download
    port = free_port()
    build_cold = timed_build(tmp / "site", cache, port)
    build_warm = timed_build(tmp / "again", cache, port)
    site = tmp / "site"
    rebuild_diff = differing(site, tmp / "again")
    chapter = args.page or book.widget_pages(site)[0]
    precached = sum((site / rel).stat().st_size for rel in offline.precache_list(site))
    (site / "bare.html").write_text(BARE_PAGE)
    (site / "bare-worker.js").write_text(BARE_WORKER)
    bare_runtime(site / "bare")

    os.environ["TEXTBOOK_CACHE"] = str(cache)  # the stages' results the build just cached
    layout_before(site, tmp / "before")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Counting, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_port}/"
    before_httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), functools.partial(_Quiet, directory=str(tmp / "before")))
    threading.Thread(target=before_httpd.serve_forever, daemon=True).start()
    layouts = {"before": (f"http://127.0.0.1:{before_httpd.server_port}/", tmp / "before"), "after": (base, site)}
    rows: list[tuple[str, str]] = []
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)

        def bare_boot(runtime: str) -> float:
            """Pyodide + numpy in an empty page: as published (bare/), or with the site's bytecode (pyodide/)."""
            ctx = browser.new_context(service_workers="block")
            page = ctx.new_page()
            page.goto(base + "bare.html?runtime=" + runtime)
            page.wait_for_function("() => window.bareMs", timeout=120_000)
            ms = page.evaluate("window.bareMs")
            ctx.close()
            return ms

        def cold_visit():
            ctx = browser.new_context()
            page = ctx.new_page()
            Counting.served = 0
            t0 = time.perf_counter()
            page.goto(base + chapter, wait_until="domcontentloaded")
            page.wait_for_function(ALL_READY, timeout=180_000)
            return ctx, page, 1e3 * (time.perf_counter() - t0)

        def layout_visit(layout: str) -> tuple[float, dict[str, int]]:
            """A cold visit without a service worker: ms to interactive, and file -> bytes on the wire of
            each file requested before then (the page's and its workers')."""
            url, root = layouts[layout]
            ctx = browser.new_context(service_workers="block")
            requested: list[str] = []
            ctx.on("request", lambda r: requested.append(r.url))
            page = ctx.new_page()
            t0 = time.perf_counter()
            page.goto(url + chapter, wait_until="domcontentloaded")
            page.wait_for_function(ALL_READY, timeout=180_000)
            ms = 1e3 * (time.perf_counter() - t0)
            files = {}
            for u in list(requested):
                if u.startswith(url) and (path := served_file(root, u)):
                    files[path.relative_to(root).as_posix()] = on_the_wire(path)
            ctx.close()
            return ms, files

        # cold boots drift by a second on a shared machine: pairs in turn, the median of their ratios
        pairs, ours = [], []
        layout_ms: dict[str, list[float]] = {"before": [], "after": []}
        layout_files: dict[str, dict[str, int]] = {}
        for round_ in range(args.rounds):
            for layout in sorted(layout_ms, reverse=round_ % 2 == 1):  # which goes first alternates: no order bias
                ms, layout_files[layout] = layout_visit(layout)
                layout_ms[layout].append(ms)
            bare = bare_boot("bare/")
            ours.append(bare_boot(bundle.RUNTIME_DIR))
            ctx, page, tti = cold_visit()
            pairs.append((bare, tti))
            if round_ < args.rounds - 1:
                ctx.close()  # the last visit goes on to the byte count and the controls
        bare_ms = statistics.median(b for b, _ in pairs)
        tti_ms = statistics.median(t for _, t in pairs)
        tti_ratio = statistics.median(t / b for b, t in pairs)
        ours_ms = statistics.median(ours)
        page_ratio = statistics.median(t / o for (_, t), o in zip(pairs, ours))
        page.wait_for_function("() => document.documentElement.dataset.twOffline === 'ready'", timeout=180_000)
        first_bytes = Counting.served
        ctx2 = browser.new_context()
        fresh = ctx2.new_page()
        fresh.goto(base + chapter, wait_until="domcontentloaded")  # first paint, on a cold visit
        blank = fresh.evaluate("() => [...document.querySelectorAll('.tw-widget')].filter(w => !w.querySelector('.tw-figure svg')).length")
        fcp = fresh.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
        ctx2.close()

        recompute = []
        for name, _ in page.eval_on_selector_all(".tw-widget", "ws => ws.map(w => [w.dataset.widget, 0])"):
            sel = f'.tw-widget[data-widget="{name}"]'
            control = page.eval_on_selector(f"{sel} .tw-controls", """f => {
                const el = [...f.querySelectorAll('[name]')].find(e => e.type === 'range' || e.tagName === 'SELECT');
                return el ? [el.name, el.tagName === 'SELECT' ? [...el.options].map(o => o.value) : null, el.value, el.max] : null;
            }""")
            if not control:
                continue
            key, options, current, top = control
            other = next(o for o in options if o != current) if options else ("0" if current != "0" else top)
            times = [done for _, done in page.evaluate(MEASURE, [sel, key, [other, current] * 10])]
            recompute.append((name, statistics.median(times), p95(times)))

        t1 = time.perf_counter()
        page.click("a[href$='sense-formules.html'] >> visible=true")
        page.wait_for_url("**/sense-formules.html")
        page.wait_for_function(ALL_READY, timeout=120_000)
        second_ms = 1e3 * (time.perf_counter() - t1)

        Counting.served = 0
        page.goto(base + chapter)
        page.wait_for_function(ALL_READY, timeout=120_000)
        repeat_bytes = Counting.served
        browser.close()
    httpd.shutdown()
    before_httpd.shutdown()

    rows += [
        ("first paint: widgets without a prerendered figure", f"{blank} (first contentful paint {fcp:.0f} ms)" if fcp else f"{blank}"),
        ("bare Pyodide + numpy boot (as published), empty page", f"{bare_ms / 1e3:.2f} s  (median of {len(pairs)})"),
        (f"{chapter} cold time-to-interactive", f"{tti_ms / 1e3:.2f} s  (median of {len(pairs)}; per pair "
         f"{', '.join(f'{t / b:.2f}' for b, t in pairs)}: median {tti_ratio:.2f}× the bare boot; goal ≤ 1.15×)"),
        ("bare boot with the site's bytecode (its Pyodide and numpy files)", f"{ours_ms / 1e3:.2f} s  (median of {len(ours)}; "
         f"the chapter takes {page_ratio:.2f}× this: the page's own cost, bytecode set aside)"),
        ("second widget page by in-site navigation", f"{second_ms / 1e3:.2f} s  (Python kept warm)"),
    ]
    rows += [(f"control change → figure, {n}", f"median {m:.0f} ms, p95 {q:.0f} ms") for n, m, q in recompute]
    rows += [
        ("bytes served, first visit (incl. offline precache)",
         f"{first_bytes / 1e6:.2f} MB for {precached / 1e6:.2f} MB precached ({first_bytes / precached:.3f}×; goal ≤ 1.05×)"),
        ("bytes served, repeat visit", f"{repeat_bytes} B  (goal 0)"),
        ("properdocs build, cold", f"{build_cold:.1f} s  (goal ≤ 20 s)"),
        ("properdocs build, again", f"{build_warm:.1f} s"),
        ("files that differ between the two builds", f"{rebuild_diff}  (goal 0: sw.js unchanged, readers download nothing)"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print_layouts(chapter, layout_files, layout_ms)


def print_layouts(chapter: str, files: dict[str, dict[str, int]], ms: dict[str, list[float]]) -> None:
    """Bytes on the wire per file before/after, their totals, and the cold time-to-interactive of each."""
    def label(name: str) -> str:  # a versioned package's name changes with its bytes: one row per package
        return name.split("+")[0].split("-")[0] + " package" if name.endswith((".whl", ".tar.bz2")) else name

    rows: dict[str, dict[str, int]] = {}
    for layout, got in files.items():
        for name, size in got.items():
            rows.setdefault(label(name), {}).setdefault(layout, 0)
            rows[label(name)][layout] += size
    print(f"\nfirst visit of {chapter} without a service worker: bytes on the wire (gzip -9) before every widget is ready")
    width = max(len(k) for k in rows)
    print(f"{'file':<{width}}  {'before':>10}  {'after':>10}")
    for name, sizes in sorted(rows.items(), key=lambda kv: -max(kv[1].values())):
        if max(sizes.values()) >= 10_000:
            print(f"{name:<{width}}  {sizes.get('before', 0) / 1e6:>7.2f} MB  {sizes.get('after', 0) / 1e6:>7.2f} MB")
    small = {layout: sum(v.get(layout, 0) for v in rows.values() if max(v.values()) < 10_000) for layout in files}
    print(f"{'(files under 10 kB)':<{width}}  {small['before'] / 1e6:>7.2f} MB  {small['after'] / 1e6:>7.2f} MB")
    total = {layout: sum(got.values()) for layout, got in files.items()}
    print(f"{'total (goal after ≤ 9 MB)':<{width}}  {total['before'] / 1e6:>7.2f} MB  {total['after'] / 1e6:>7.2f} MB"
          f"  ({total['after'] * 8 / 9e6:.1f} s against {total['before'] * 8 / 9e6:.1f} s at 9 Mbit/s)")
    before, after = (statistics.median(ms[k]) for k in ("before", "after"))
    print(f"{'cold time-to-interactive':<{width}}  {before / 1e3:>8.2f} s  {after / 1e3:>8.2f} s"
          f"  (median of {len(ms['after'])}, in turn; after/before per round {', '.join(f'{a / b:.2f}' for b, a in zip(ms['before'], ms['after']))}:"
          f" median {statistics.median(a / b for b, a in zip(ms['before'], ms['after'])):.2f}×)")


if __name__ == "__main__":
    main()
