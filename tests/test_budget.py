"""The site's size budget (build_hooks/hosting/size.py, issue 43): what a chapter adds stays within
MAX_CHAPTER, no file passes MAX_FILE, and the runtime is the site's once, not a chapter's."""

from __future__ import annotations

import hashlib
import logging

import pytest

from build_hooks.export import downloads
from build_hooks.hosting import size


def test_the_budget_counts_each_file_once_in_its_chapter_or_the_shared_part(tmp_path):
    files = {"index.html": 10, "pyodide/pyodide.asm.wasm": 1000, "cap15/index.html": 30, "cap15/capitol.descarrega.html": 500,
             "cap99/index.html": 7, "capitols.html": 3, "assets/cap15/x.png": 2}
    for rel, n in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x" * n)
    budget = size.measure(tmp_path)
    assert budget.chapters == {"cap15": 530, "cap99": 7}
    assert budget.shared == 1015 and budget.total == sum(files.values())
    assert budget.largest == ("pyodide/pyodide.asm.wasm", 1000)
    assert budget.line() == ("mida: lloc 0.0 MB; compartit 0.0 MB; per capítol: cap15 0.0 MB, cap99 0.0 MB; "
                             "fitxer més gran pyodide/pyodide.asm.wasm 0.0 MB")


def test_the_build_prints_its_budget(tmp_path, caplog):
    (tmp_path / "cap15").mkdir()
    (tmp_path / "cap15" / "index.html").write_bytes(b"x" * 1_500_000)

    class Serve:
        is_serve = True

    with caplog.at_level(logging.INFO, logger="mkdocs"):
        size.on_post_build(config={"site_dir": str(tmp_path)}, build=Serve())  # `mkdocs serve`: not measured
        assert caplog.messages == []
        size.on_post_build(config={"site_dir": str(tmp_path)})
    assert caplog.messages == ["mida: lloc 1.5 MB; compartit 0.0 MB; per capítol: cap15 1.5 MB; fitxer més gran cap15/index.html 1.5 MB"]


@pytest.mark.build
def test_the_site_keeps_its_budget(site):
    budget = size.measure(site)
    assert {"cap15", "cap98", "cap99"} <= set(budget.chapters)
    assert budget.largest[1] <= size.MAX_FILE, budget.line()
    assert budget.chapters["cap15"] <= size.MAX_CHAPTER, budget.line()
    for chapter in ("cap15", "cap98", "cap99"):  # each chapter: its pages and ONE download, nothing of the runtime
        assert (site / chapter / downloads.FILE).is_file()
        assert len(list((site / chapter).glob("*.descarrega.html*"))) == 1, chapter
    runtime = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in (site / "pyodide").iterdir() if p.stat().st_size > 100_000}
    copies = [p for p in site.rglob("*") if p.is_file() and p.parent != site / "pyodide" and p.stat().st_size > 100_000
              and hashlib.sha256(p.read_bytes()).hexdigest() in runtime]
    assert copies == []  # the runtime's files are the site's, once
    single = (site / "cap15" / downloads.FILE).read_text()
    assert single.count('data-name="pyodide.asm.wasm"') == 1  # and once in the chapter's file, for both its tracks
