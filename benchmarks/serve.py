"""How long `./dev serve` takes to show an edit, on a synthetic book of N chapters (book.py).

    .venv/bin/python benchmarks/serve.py N [--edits 5] [--commands preview plain] [--before main]

For each serve command (tests/preview.py: `preview` is ./dev serve's dirty rebuilds on this
tree; `plain`, the reference, ProperDocs' serve as it was, on the tree of the commit `--before`,
whose hooks rebuild and recompute everything), in the same run on its own copy of the book: the
first build, then `--edits` one-line edits of one page (the last chapter's second page) and one
edit of a widget's module (the title of `cost`, placed on both pages of every chapter). Each edit
is timed from saving the file to (signal) the server's answer to /livereload/, as a page's
live-reload script asks it, and (shown) every page it changes served with the edit, and by the
CPU time the serve used for it (the machine's load changes the wall time, this much less). Prints
the median and the range of the page edits, and the widget edit; `uptime` says the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))  # first: its book.py is the synthetic book, not the tests' helpers

from book import chapter_names  # noqa: E402
from conftest import free_port  # noqa: E402
from preview import COMMANDS, Serve, edit  # noqa: E402

WIDGET = ("widgets_py/cap15/cost.py", 'title="El que costa servir un model"')  # shown where `cost` is placed
TIMEOUT = 900  # seconds: a plain rebuild of a big book on a loaded machine


def timed(serve: Serve, pages: list[str], change, token: str) -> tuple[float, float, float]:
    """(signal, shown, cpu) seconds after change() saves a file that puts `token` on `pages`;
    cpu: the serve's CPU time for it (wall time grows with the machine's load, this much less)."""
    waiter = serve.reload_signal(pages[0])
    cpu = serve.cpu()
    start = time.perf_counter()
    change()
    shown = serve.until(lambda: serve.shows(pages, token), TIMEOUT, f"{token} on {pages}")
    waiter.join(TIMEOUT)
    signal = (waiter.at - start) if waiter.at else float("nan")
    return signal, shown, serve.cpu() - cpu


def book_of(tree: Path, n: int, dest: Path) -> Path:
    """A synthetic book of n chapters made by `tree`'s own benchmarks/book.py (its code, its pages)."""
    make = ("import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; import book; "
            f"book.synthetic_book({n}, Path({str(dest)!r}))")
    subprocess.run([sys.executable, "-c", make], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    return dest


def tree_at(commit: str, dest: Path) -> Path:
    """The files of `commit` (git archive) in `dest`."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(n: int, command: str, edits: int, tmp: Path, tree: Path = ROOT) -> dict:
    project = book_of(tree, n, tmp / "book")
    last = chapter_names(n)[-1]
    page = f"{last}/sense-formules"
    widget_pages = [f"{c}/{p}.html" for c in chapter_names(n) for p in ("index", "sense-formules")]
    with Serve(project, COMMANDS[command], free_port(), tmp) as serve:
        first = serve.until(lambda: serve.get(page + ".html") is not None, TIMEOUT, "the first build")
        times = []
        for i in range(edits):
            source = project / "docs" / f"{page}.md"
            token = f"Edicio{i}x{n}"
            times.append(timed(serve, [page + ".html"], lambda: source.write_text(source.read_text() + f"\n{token}.\n"), token))
        path, old = WIDGET
        widget = timed(serve, widget_pages, lambda: edit(project / path, old, old[:-1] + ' 4242"'), "model 4242")
    return {"first": first, "page": times, "widget": widget}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, help="chapters in the book")
    parser.add_argument("--edits", type=int, default=5, help="one-line page edits (their median is shown)")
    parser.add_argument("--commands", nargs="+", default=["preview", "plain"], choices=sorted(COMMANDS))
    parser.add_argument("--before", default="main", help="the commit whose tree `plain` serves (default main)")
    args = parser.parse_args()
    print(f"serve, a book of {args.n} chapter(s): seconds from saving an edit to the live-reload signal / "
          f"to every changed page served with it / the serve's CPU seconds for it "
          f"(load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for command in args.commands:
        with tempfile.TemporaryDirectory(prefix=f"serve-{command}-") as tmp:
            tree = tree_at(args.before, Path(tmp) / "tree") if command == "plain" else ROOT
            got = measure(args.n, command, args.edits, Path(tmp), tree)
        signals, shown, cpu = zip(*got["page"])
        name = f"{command}@{args.before[:8]}" if command == "plain" else command
        print(f"  {name:11} first build {got['first']:6.1f} | page edit (median of {len(shown)}): "
              f"signal {statistics.median(signals):5.2f}, shown {statistics.median(shown):5.2f} "
              f"(range {min(shown):.2f}-{max(shown):.2f}), cpu {statistics.median(cpu):5.2f} | widget edit: "
              f"signal {got['widget'][0]:5.2f}, shown {got['widget'][1]:5.2f}, cpu {got['widget'][2]:5.2f}", flush=True)


if __name__ == "__main__":
    main()
