"""`./dev serve` (build_hooks/authoring/preview.py) on a book of two chapters: a page, a widget's
module and shared assets edited in turn; after each, every page the edit changes is served
with it, on both chapters, and a page edit renders that page alone.

The serve runs on a copy of the project (benchmarks/book.py: cap15 and its copy cap16, the
same widgets placed on both) on a free port; tests/preview.py drives it over HTTP. Waits poll
with generous timeouts (a loaded machine); no assertion rests on a fixed sleep. Before them, the
plan itself (which pages an edit renders again) on a small package, without a serve.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from html import unescape
from pathlib import Path

import pytest

from build_hooks.authoring.preview import EVERYTHING, State, plan
from build_hooks.pages.dependencies import closure, imports
from conftest import ROOT, free_port
from widgets_py.engine.dom import Data
from preview import COMMANDS, Serve, edit

FIRST, EDIT = 900, 300  # seconds: the first build, one rebuild (a loaded 2-core machine)
CHAPTER_PAGES = [f"{c}/{p}.html" for c in ("cap15", "cap16") for p in ("index", "sense-formules")]
EVERY_BUILD = {"404.html"}  # a theme template: ProperDocs renders it on every build, dirty or not
CONFIG = re.compile(f'data-{Data.CONFIG}="([^"]*)"')  # the site config on the kernel's <script> (prerender.py)


def synthetic_book(n: int, dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location("synthetic_book", ROOT / "benchmarks" / "book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_book(n, dest)


def pages(site: Path) -> dict[str, int]:
    """Every HTML page of the site -> its mtime (ns)."""
    return {p.relative_to(site).as_posix(): p.stat().st_mtime_ns for p in site.rglob("*.html")}


def served(serve: Serve, site: Path) -> dict[str, str]:
    """Every HTML page, as the server serves it now."""
    return {page: serve.get(page) or "" for page in pages(site)}


SOURCES = {  # a package as imports() reads it: path -> code
    "widgets_py/__init__.py": "",
    "widgets_py/engine/__init__.py": "",
    "widgets_py/engine/svg.py": "import math\n",
    "widgets_py/engine/fmt.py": "from . import svg\n",
    "widgets_py/cap15/__init__.py": "",
    "widgets_py/cap15/plot.py": "from ..engine import fmt\n",
    "widgets_py/cap15/table.py": "import numpy\nfrom widgets_py.engine.svg import Plot\n",
    "widgets_py/cap15/words.py": "def f():\n    import json\n",
}


def test_a_module_reaches_what_it_imports_relatively_or_absolutely_and_through_them():
    graph = imports(SOURCES)
    assert closure("widgets_py/cap15/plot.py", graph) == {
        "widgets_py/cap15/plot.py", "widgets_py/engine/fmt.py", "widgets_py/engine/svg.py",
        "widgets_py/engine/__init__.py", "widgets_py/__init__.py"}
    assert "widgets_py/engine/fmt.py" not in closure("widgets_py/cap15/table.py", graph)
    assert "widgets_py/engine/svg.py" in closure("widgets_py/cap15/table.py", graph)
    assert closure("widgets_py/cap15/words.py", graph) == {"widgets_py/cap15/words.py"}


def test_plan_renders_what_an_edit_changed():
    inputs = {**{p: "0" for p in SOURCES}, "docs/a.md": "0", "docs/b.md": "0", "docs/c.md": "0",
              "docs/assets/tw/host.js": "0", "includes/glossari.md": "0", "widgets_py/maths/weights.npz": "0"}
    previous = State(inputs, {"a.md": frozenset({"plot"}), "b.md": frozenset({"table", "words"}), "c.md": frozenset()},
                     {"plot": "widgets_py/cap15/plot.py", "table": "widgets_py/cap15/table.py",
                      "words": "widgets_py/cap15/words.py"})
    graph = imports(SOURCES)

    def after(*paths: str) -> set[str] | None:
        """The plan once `paths` changed (or were added)."""
        return plan(previous, {**inputs, **{p: "1" for p in paths}}, graph)

    assert plan(None, inputs, graph) is EVERYTHING
    assert after() == set()
    assert after("docs/c.md") == {"c.md"}
    assert after("widgets_py/engine/fmt.py") == {"a.md"}
    assert after("widgets_py/engine/svg.py") == {"a.md", "b.md"}
    assert after("widgets_py/cap15/words.py") == {"b.md"}
    assert after("docs/assets/tw/host.js") == set()  # its ?v= hashes are rewritten in place
    assert after("includes/glossari.md") is EVERYTHING
    assert after("widgets_py/maths/weights.npz") is EVERYTHING
    assert after("docs/d.md") is EVERYTHING  # a page added: the navigation changed
    assert after("widgets_py/cap15/new.py") is EVERYTHING


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    project = synthetic_book(2, tmp / "book")
    with Serve(project, COMMANDS["preview"], free_port(), tmp) as running:
        running.until(lambda: running.get("cap16/sense-formules.html") is not None, FIRST, "the first build")
        yield running


@pytest.mark.build
def test_a_page_edit_renders_that_page_alone(serve):
    site = serve.site()
    before = pages(site)
    source = serve.project / "docs" / "cap16" / "sense-formules.md"
    source.write_text(source.read_text() + "\nUna frase nova 4242 al final.\n")
    serve.until(lambda: "Una frase nova 4242" in (serve.get("cap16/sense-formules.html") or ""), EDIT, "the page edit")
    after = pages(site)
    assert after["cap16/sense-formules.html"] > before["cap16/sense-formules.html"]
    rendered = {p for p in before if after[p] != before[p]} - EVERY_BUILD
    assert rendered == {"cap16/sense-formules.html"}, "a page edit rendered other pages too"
    assert "Una frase nova 4242" not in (serve.get("cap15/sense-formules.html") or "")


@pytest.mark.build
def test_a_widget_edit_shows_on_every_page_that_places_it_and_no_page_keeps_the_old_wheel(serve):
    """`clock` is placed on each chapter's first page: those render again; the second pages,
    whose widgets import nothing of clock.py, keep their HTML with the new wheel's site config."""
    site = serve.site()
    before = pages(site)
    shipped = json.loads(serve.get("pyodide/pyodide-lock.json"))["packages"]["widgets-py"]["sha256"]
    old = "f\"mesurat amb {v['runtime']}\""  # a note its figure draws (what the widget computes, not its frame)
    edit(serve.project / "widgets_py" / "cap15" / "clock.py", old, "f\"mesurat 4242 amb {v['runtime']}\"")
    placing = ["cap15/index.html", "cap16/index.html"]
    serve.until(lambda: serve.shows(placing, "mesurat 4242 amb"), EDIT, "the widget edit on both chapters")
    now = served(serve, site)
    assert not any('"start">mesurat amb' in now[p] for p in placing), "a figure of the old code is left"
    assert not any("mesurat 4242 amb" in now[p] for p in ("cap15/sense-formules.html", "cap16/sense-formules.html"))
    configs = {page: json.loads(unescape(m.group(1))) for page, html in now.items() if (m := CONFIG.search(html))}
    assert set(CHAPTER_PAGES) <= set(configs)
    for page, config in configs.items():  # each names its own widgets, in its order
        assert config.pop("page") == list(dict.fromkeys(re.findall(r'data-widget="([^"]+)"', now[page]))), page
    assert len({json.dumps(c, sort_keys=True) for c in configs.values()}) == 1, \
        f"pages boot Python with different builds' files: {sorted(configs)}"
    wheel = next(iter(configs.values()))["sha256"]
    lock = json.loads(serve.get("pyodide/pyodide-lock.json"))
    assert lock["packages"]["widgets-py"]["sha256"] == wheel, "the pages name another wheel than the lock's"
    assert wheel != shipped, "the wheel was not rebuilt from the edited module"
    assert pages(site)["index.html"] == before["index.html"], "a page without widgets was written again"


@pytest.mark.build
def test_a_script_edit_restamps_every_page(serve):
    script = serve.project / "docs" / "assets" / "tw" / "host.js"
    script.write_text(script.read_text() + "\n// 4242\n")
    digest = hashlib.sha256(script.read_bytes()).hexdigest()[:16]  # offline.digest
    serve.until(lambda: "// 4242" in (serve.get("assets/tw/host.js") or ""), EDIT, "the script edit")
    now = served(serve, serve.site())
    stamps = {page: re.findall(r'assets/tw/host\.js\?v=(\w+)"', html) for page, html in now.items()}
    assert all(stamps.values()), f"pages without host.js: {[p for p, s in stamps.items() if not s]}"
    stale = {page for page, found in stamps.items() if set(found) != {digest}}
    assert not stale, f"pages that load the old host.js: {sorted(stale)}"


@pytest.mark.build
def test_a_glossary_edit_shows_on_every_page(serve):
    glossary = serve.project / "includes" / "glossari.md"
    site = serve.site()
    old = "*[TTFT]: Time to first token:"
    users = {page for page, html in served(serve, site).items() if "Time to first token:" in html}
    assert set(CHAPTER_PAGES) <= users
    edit(glossary, old, "*[TTFT]: Time to first token (4242):")
    serve.until(lambda: serve.shows(sorted(users), "Time to first token (4242):"), EDIT, "the glossary edit")
    stale = {page for page, html in served(serve, site).items() if "Time to first token:" in html}
    assert not stale, f"pages with the old definition: {sorted(stale)}"
