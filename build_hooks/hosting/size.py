"""The site's size budget, printed at the end of every build (issue 43).

A course grows by chapters, so what matters is what each chapter adds: its folder (its pages,
their compressed copies, and the chapter's single-file download, which carries the runtime
once, packed), against the shared part every chapter uses once (Pyodide, numpy, the widgets'
wheel, the theme). The build prints one line: the site's total, the shared part, each
chapter's bytes, the largest file; tests/test_budget.py holds the limits below.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE = 100_000_000  # bytes: GitHub's limit for one file of a repository or a Pages site
MAX_CHAPTER = 15_000_000  # bytes a chapter adds (issue 43: a 30-chapter book within 450 MB)
CHAPTER_FOLDER = re.compile(r"^cap\d+$")  # as downloads.CHAPTER: the folders of chapter pages
log = logging.getLogger("mkdocs")  # printed with the build's own lines (INFO, hidden by --quiet)


@dataclass
class Budget:
    total: int = 0
    shared: int = 0  # everything outside the chapters' folders
    chapters: dict[str, int] = field(default_factory=dict)  # folder -> its bytes, download included
    largest: tuple[str, int] = ("", 0)

    def line(self) -> str:
        chapters = ", ".join(f"{name} {_mb(size)}" for name, size in sorted(self.chapters.items()))
        return (f"mida: lloc {_mb(self.total)}; compartit {_mb(self.shared)}; per capítol: {chapters or 'cap'}; "
                f"fitxer més gran {self.largest[0]} {_mb(self.largest[1])}")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def measure(site: Path) -> Budget:
    """Every file of the built `site`, counted once, in its chapter's share or the shared one."""
    budget = Budget()
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        rel = path.relative_to(site).as_posix()
        size = path.stat().st_size
        budget.total += size
        top = rel.split("/")[0]
        if "/" in rel and CHAPTER_FOLDER.match(top):
            budget.chapters[top] = budget.chapters.get(top, 0) + size
        else:
            budget.shared += size
        if size > budget.largest[1]:
            budget.largest = (rel, size)
    return budget


def on_post_build(*, config, build=None) -> None:
    if build is not None and build.is_serve:
        return
    log.info(measure(Path(config["site_dir"])).line())
