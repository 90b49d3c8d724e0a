"""A synthetic book of N chapters, each a copy of chapter 15, to watch what grows with the course.

    .venv/bin/python benchmarks/book.py N [--compare M]

`synthetic_book(n, dest)` copies the project (as tests/conftest.py's book_with_fixture does)
and adds chapters cap16 … cap(14+N), each the two pages of docs/cap15 with its own entry in the
navigation (ids that must be unique in the book renamed): the same widgets, placed again, as a course of N chapters like this one would be.
"""

from __future__ import annotations

import re
import shutil
import sys
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


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, help="chapters in the book (cap15 and n - 1 copies)")
    parser.add_argument("dest", type=Path, help="the folder to write the book into")
    args = parser.parse_args()
    print(synthetic_book(args.n, args.dest))
    sys.exit(0)
