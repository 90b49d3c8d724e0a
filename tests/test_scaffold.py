"""`./dev new` (issue 30): the session's site holds a chapter and a widget written by the
scaffold (conftest.scaffold_into), so every book-wide test (strict build, prerender, CPython ↔
browser parity, screens, offline) covers them unchanged; here, their own tests pass in a copy
of the project, and what the scaffold must not do, it refuses before writing anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, SCAFFOLDED, book_with_fixture

from build_hooks.authoring import scaffold


@pytest.mark.build
def test_the_site_holds_the_scaffolded_chapter_live(site):
    chapter, name = SCAFFOLDED
    html = (site / chapter / "index.html").read_text()
    assert f'data-widget="{name}"' in html and f'data-live="{name}.weights_gb"' in html and "141,1 GB" in html
    assert f'href="{chapter}/index.html"' in (site / "index.html").read_text()  # in the navigation


def test_the_scaffolded_widget_passes_the_suites_tests_for_it(tmp_path):
    """The commands as a contributor runs them (`./dev new` is `python -m build_hooks.authoring.scaffold`),
    in a copy of the book (its conftest scaffolds cap98 as this session's did: cap97 is another number no chapter takes),
    then the suite's tests for the widget."""
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", "site", "__pycache__", "node_modules",
                                                                  "*.egg-info"))
    env = {**os.environ, "PYTHONPATH": str(project)}
    said = ""
    for args in (["chapter", "cap97", "Un altre capítol"], ["widget", "cap97", "esquelet_memoria"]):
        done = subprocess.run([sys.executable, "-m", "build_hooks.authoring.scaffold", *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        said += done.stdout
    written = [line.split(": ", 1)[1] for line in said.splitlines() if line.startswith("escrit: ")]
    assert written == ["widgets_py/cap97/__init__.py", "docs/cap97/index.md", "mkdocs.yml",
                       "widgets_py/cap97/esquelet_memoria.py", "tests/test_esquelet_memoria.py",
                       "tests/golden/esquelet_memoria.json"]
    assert "<!-- md:widget esquelet_memoria -->" in said and "./dev test -k esquelet_memoria" in said
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not browser and not build",
                            "-k", "esquelet_memoria", "tests/test_esquelet_memoria.py", "tests/test_golden.py", "tests/test_properties.py"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert int(tests.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1]) >= 4, tests.stdout[-500:]
    assert not (ROOT / "tests" / "test_esquelet_memoria.py").exists()


@pytest.mark.parametrize("call, words", [
    (lambda: scaffold.widget("cap15", "roofline"), ["roofline", "únics"]),
    (lambda: scaffold.widget("cap77", "nou"), ["cap77", "./dev new chapter"]),
    (lambda: scaffold.widget("cap15", "Nou-Widget"), ["minúscules"]),
    # a free widget name whose test file is taken (tests/test_fmt.py tests engine.fmt): before
    # issue 42 the module was written first and stayed behind, building as a widget
    (lambda: scaffold.widget("cap15", "fmt"), ["tests/test_fmt.py", "no escric res"]),
    (lambda: scaffold.chapter("cap15", "Un altre"), ["cap15", "ja existeix"]),
    (lambda: scaffold.chapter("capitol", "Un altre"), ["capNN"]),
])
def test_what_the_scaffold_refuses_it_says_before_writing(call, words):
    def files():
        return sorted(p for folder in ("widgets_py", "tests", "docs") for p in (ROOT / folder).rglob("*") if p.is_file())

    before = files()
    with pytest.raises(scaffold.ScaffoldError) as caught:
        call()
    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert files() == before
