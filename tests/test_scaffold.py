"""`./dev new` (issues 30 and 41): the session's site holds a chapter, a widget and an exercise
written by the scaffold (conftest.scaffold_into), so every book-wide test (strict build and its
proof of every exercise, prerender, CPython ↔ browser parity, screens, offline) covers them
unchanged; here, their own tests pass in a copy of the project, and what the scaffold must not
do, it refuses before writing anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SCAFFOLDED, SCAFFOLDED_EXERCISE, book_with_fixture

from build_hooks.authoring import scaffold
from widgets_py.engine import registry
from widgets_py.maths import serving


@pytest.mark.build
def test_the_site_holds_the_scaffolded_chapter_live(site):
    chapter, name = SCAFFOLDED
    html = (site / chapter / "index.html").read_text()
    assert f'data-widget="{name}"' in html and f'data-live="{name}.weights_gb"' in html and "141,1 GB" in html
    assert f'href="{chapter}/index.html"' in (site / "index.html").read_text()  # in the navigation
    assert f'data-exercise="{SCAFFOLDED_EXERCISE}"' in html and "Mixtral 8×7B en té 8 per capa" in html


def test_the_scaffolded_exercise_is_proven_found_and_the_chapters_code():
    """What the build asks of it (build_hooks/pages/exercises.py), and a reference that is the
    shared maths itself, not a copy of its formula."""
    e = registry.exercise(SCAFFOLDED_EXERCISE)
    where, line = registry.declared_at(SCAFFOLDED_EXERCISE)
    assert where.endswith(f"widgets_py/{SCAFFOLDED[0]}/ex_{SCAFFOLDED_EXERCISE}.py") and e.name == SCAFFOLDED_EXERCISE
    assert Path(where).read_text().splitlines()[line - 1] == "EXERCISE = Exercise("
    assert e.proof() is None and e.reference is serving.expected_experts
    starter = e.check(e.starter)
    assert starter.verdict == "fail" and starter.call.startswith(f"{SCAFFOLDED_EXERCISE}(n_experts=")
    assert 1 <= len(e.hints) <= 2 and e.hidden > 0 and len(e.examples) >= 2


def test_the_scaffolded_widget_and_exercise_pass_the_suites_tests_for_them(tmp_path):
    """The commands as a contributor runs them (`./dev new` is `python -m build_hooks.authoring.scaffold`),
    in a copy of the book (its conftest scaffolds cap98 as this session's did: cap97 is another number no chapter takes),
    then the suite's tests for the widget and the exercise's own."""
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", "site", "__pycache__", "node_modules",
                                                                  "*.egg-info"))
    env = {**os.environ, "PYTHONPATH": str(project)}
    said = ""
    for args in (["chapter", "cap97", "Un altre capítol"], ["widget", "cap97", "esquelet_memoria"],
                 ["exercise", "cap97", "esquelet_exercici"]):
        done = subprocess.run([sys.executable, "-m", "build_hooks.authoring.scaffold", *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        said += done.stdout
    written = [line.split(": ", 1)[1] for line in said.splitlines() if line.startswith("escrit: ")]
    assert written == ["widgets_py/cap97/__init__.py", "docs/cap97/index.md", "mkdocs.yml",
                       "widgets_py/cap97/esquelet_memoria.py", "tests/test_esquelet_memoria.py",
                       "tests/golden/esquelet_memoria.json", "widgets_py/cap97/ex_esquelet_exercici.py",
                       "tests/test_ex_esquelet_exercici.py"]
    assert "<!-- md:widget esquelet_memoria -->" in said and "./dev test -k esquelet_memoria" in said
    assert "<!-- md:exercise esquelet_exercici -->" in said and "./dev test -k esquelet_exercici" in said
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                            "-m", "not browser and not build", "-k", "esquelet_memoria or esquelet_exercici",
                            "tests/test_esquelet_memoria.py", "tests/test_golden.py", "tests/test_properties.py",
                            "tests/test_ex_esquelet_exercici.py"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert int(tests.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1]) >= 7, tests.stdout[-500:]
    assert "PASSED tests/test_ex_esquelet_exercici.py::test_the_build_proves_it" in tests.stdout, tests.stdout[-3000:]
    assert not (ROOT / "tests" / "test_esquelet_memoria.py").exists()
    assert not (ROOT / "tests" / "test_ex_esquelet_exercici.py").exists()


@pytest.mark.parametrize("call, words", [
    (lambda: scaffold.widget("cap15", "roofline"), ["roofline", "únics"]),
    (lambda: scaffold.widget("cap77", "nou"), ["cap77", "./dev new chapter"]),
    (lambda: scaffold.widget("cap15", "Nou-Widget"), ["minúscules"]),
    # a free widget name whose test file is taken (tests/test_fmt.py tests engine.fmt): before
    # issue 42 the module was written first and stayed behind, building as a widget
    (lambda: scaffold.widget("cap15", "fmt"), ["tests/test_fmt.py", "no escric res"]),
    (lambda: scaffold.exercise("cap15", "kv_bytes"), ["exercici 'kv_bytes'", "únics"]),
    (lambda: scaffold.exercise("cap15", "roofline"), ["widget 'roofline'", "-k roofline"]),
    (lambda: scaffold.exercise("cap77", "nou"), ["cap77", "./dev new chapter"]),
    (lambda: scaffold.exercise("cap15", "Nou-Exercici"), ["minúscules"]),
    (lambda: scaffold.exercise("cap15", "lambda"), ["paraula de Python"]),
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


def test_an_exercise_whose_file_is_taken_is_refused_before_writing(tmp_path):
    """A free name whose test file is there already: neither file is written (the module
    alone would build, as a widget's did before issue 42)."""
    (tmp_path / "widgets_py" / "cap15").mkdir(parents=True)
    (tmp_path / "widgets_py" / "cap15" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ex_nou.py").write_text("")
    with pytest.raises(scaffold.ScaffoldError, match="test_ex_nou.py ja existeix: no escric res"):
        scaffold.exercise("cap15", "nou", root=tmp_path)
    assert not (tmp_path / "widgets_py" / "cap15" / "ex_nou.py").exists()
