"""benchmarks/book.py's report (issue 43): the figures of two books side by side, and what each
added chapter costs, from the two books' totals."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from build_hooks.hosting.size import Budget

# by its path: tests/book.py is another module named `book`
_spec = importlib.util.spec_from_file_location("benchmarks_book", Path(__file__).resolve().parents[1] / "benchmarks" / "book.py")
book = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book)


def figures(n: int, total: int) -> dict:
    chapters = {f"cap{15 + i}": 14_000_000 for i in range(n)}
    return {"n": n, "budget": Budget(total, total - sum(chapters.values()), chapters, ("cap15/capitol.descarrega.html", 13_400_000)),
            "times": {"cold": 60.0 + n, "warm": 9.0 * n, "page edit": 9.5 * n, "widget edit": 10.0 * n},
            "largest": [(13_400_000 - i, f"cap{15 + i}/capitol.descarrega.html") for i in range(5)]}


def test_the_report_sets_the_books_side_by_side():
    lines = book.report([figures(3, 90_000_000), figures(1, 62_000_000)]).splitlines()
    rows = {line[:34].strip(): line[34:].split() for line in lines}
    assert rows[""] == ["N", "=", "3", "N", "=", "1"]
    assert rows["site"] == ["90.0", "MB", "62.0", "MB"]
    assert rows["per added chapter (1 -> 3)"] == ["14.0", "MB"]  # (90 - 62) / (3 - 1)
    assert rows["build, warm"] == ["27.0", "s", "9.0", "s"] and rows["build, warm, per chapter"] == ["9.00", "s", "9.00", "s"]
    assert rows["largest file 1"] == ["cap15/capitol.descarrega.html", "13.4", "MB"] * 2


def test_one_book_has_no_per_added_chapter_row():
    assert "per added chapter" not in book.report([figures(2, 70_000_000)])
