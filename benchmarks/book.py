"""A synthetic book of N chapters, each a copy of chapter 15, to watch what grows with the course.

    .venv/bin/python benchmarks/book.py N [--compare M] [--keep DIR]

`synthetic_book(n, dest)` copies the project (as tests/conftest.py's book_with_fixture does)
and adds chapters cap16 … cap(14+N), each the two pages of docs/cap15 with its own entry in the
navigation (ids that must be unique in the book renamed): the same widgets, placed again, as a course of N chapters like this one would be.

`main` builds the book of N (and of M beside it, the reference measured in the same run) with
strict builds of the copy, each with its own empty cache but for the pinned downloads (Pyodide,
npm: linked, never fetched again), and prints, for each: the site's size and what each chapter
adds (size.py's budget), the 5 largest files, and the wall time of a cold build (empty cache),
a warm one (nothing changed), one after a one-line edit of one page (docs/cap15/index.md) and
one after an edit of one widget module (widgets_py/cap15/roofline.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_THE_BOOK = {".git", ".venv", "tests", "benchmarks", "site", "__pycache__", "textbook_ch15.egg-info"}
FIRST = 15  # the chapter that is copied


def chapter_names(n: int) -> list[str]:
    """The chapters of a book of n: cap15, then its copies cap16, cap17 …"""
    return [f"cap{FIRST + i}" for i in range(n)]


def synthetic_book(n: int, dest: Path) -> Path:
    """A copy of the project in `dest` with n chapters: cap15 and n - 1 copies of it."""
    if n < 1:
        raise ValueError(f"a book has at least one chapter (cap15); asked for {n}")
    dest.mkdir(parents=True, exist_ok=True)
    for src in ROOT.iterdir():
        if src.name in NOT_THE_BOOK or src.name.startswith("."):
            continue
        if src.is_dir():
            shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        else:
            shutil.copy(src, dest / src.name)
    config = (dest / "mkdocs.yml").read_text()
    entry = re.search(r'^  - "15 · [^\n]*\n(?:      - [^\n]*\n)+', config, re.M)
    if entry is None:
        raise RuntimeError("mkdocs.yml: chapter 15's nav entry (  - \"15 · …\" and its pages) not found")
    copies = []
    for name in chapter_names(n)[1:]:
        shutil.copytree(dest / "docs" / "cap15", dest / "docs" / name, dirs_exist_ok=True)
        for page in (dest / "docs" / name).glob("*.md"):  # a quiz's id is unique in the book
            page.write_text(page.read_text().replace("cap15-", f"{name}-"))
        number = name[3:]
        copies.append(entry.group(0).replace("15 · ", f"{number} · ", 1).replace("cap15/", f"{name}/"))
    (dest / "mkdocs.yml").write_text(config[:entry.end()] + "".join(copies) + config[entry.end():])
    return dest


PINNED = ("pyodide-", "npm")  # the cache's downloads (build_hooks/runtime/assets.py, editor_assets.py): linked, not fetched
PAGE = "docs/cap15/index.md"
WIDGET = "widgets_py/cap15/roofline.py"


def _cold_cache(dest: Path) -> Path:
    """An empty build cache but for the pinned downloads, linked from this machine's."""
    sys.path.insert(0, str(ROOT))
    from build_hooks import cache

    fresh = dest / "cache"
    fresh.mkdir(parents=True, exist_ok=True)
    for kept in cache.root().iterdir() if cache.root().is_dir() else []:
        if kept.name.startswith(PINNED):
            (fresh / kept.name).symlink_to(kept)
    return fresh


def _build(book: Path, env: dict) -> float:
    """Wall seconds of a strict build of `book` into book/site."""
    sys.path.insert(0, str(ROOT))
    from build_hooks import generator

    start = time.monotonic()
    done = subprocess.run(generator.build_command(book / "site", "--quiet"), cwd=book, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the build of {book} failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - start


def measure(n: int, book: Path, work: Path) -> dict:
    """The figures of `book`, a synthetic book of n chapters, its cache in `work`."""
    from build_hooks.hosting import size

    env = dict(os.environ, TEXTBOOK_CACHE=str(_cold_cache(work / f"cache-{n}")))
    times = {"cold": _build(book, env), "warm": _build(book, env)}
    page = book / PAGE
    page.write_text(page.read_text() + "\nUna línia afegida per mesurar una edició.\n")
    times["page edit"] = _build(book, env)
    widget = book / WIDGET
    widget.write_text(widget.read_text() + "\n# an edit, to measure a rebuild\n")
    times["widget edit"] = _build(book, env)
    site = book / "site"
    budget = size.measure(site)
    files = sorted(((p.stat().st_size, p.relative_to(site).as_posix()) for p in site.rglob("*") if p.is_file()), reverse=True)
    return {"n": n, "budget": budget, "times": times, "largest": files[:5]}


def report(figures: list[dict]) -> str:
    """The figures side by side, one column per book."""
    def row(label: str, cells: list[str]) -> str:
        return f"{label:<34}" + "".join(f"{c:>40}" for c in cells)

    mb = lambda b: f"{b / 1e6:.1f} MB"  # noqa: E731
    lines = [row("", [f"N = {f['n']}" for f in figures])]
    lines.append(row("site", [mb(f["budget"].total) for f in figures]))
    lines.append(row("shared (runtime, theme…)", [mb(f["budget"].shared) for f in figures]))
    lines.append(row("per chapter (its folder, mean)", [mb(sum(f["budget"].chapters.values()) / len(f["budget"].chapters)) for f in figures]))
    if len(figures) == 2 and figures[0]["n"] != figures[1]["n"]:
        a, b = figures
        added = (a["budget"].total - b["budget"].total) / (a["n"] - b["n"])
        lines.append(row(f"per added chapter ({b['n']} -> {a['n']})", [mb(added), ""]))
    for label in figures[0]["times"]:
        lines.append(row(f"build, {label}", [f"{f['times'][label]:.1f} s" for f in figures]))
    lines.append(row("build, warm, per chapter", [f"{f['times']['warm'] / f['n']:.2f} s" for f in figures]))
    for i in range(5):
        lines.append(row(f"largest file {i + 1}", [f"{f['largest'][i][1][-30:]} {mb(f['largest'][i][0])}" for f in figures]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, help="chapters in the book (cap15 and n - 1 copies)")
    parser.add_argument("--compare", type=int, metavar="M", help="a book of M chapters too, measured in the same run")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="book-") as tmp:
        work = args.keep or Path(tmp)
        sizes = [args.n] + ([args.compare] if args.compare else [])
        books = {n: synthetic_book(n, work / f"book-{n}") for n in sizes}  # both copies first: the same project
        figures = [measure(n, books[n], work) for n in sizes]
        for f in figures:
            print(f"N = {f['n']}: {f['budget'].line()}", file=sys.stderr)
        print(report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
