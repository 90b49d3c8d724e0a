"""Authoring traps (issue 30): each mistake a contributor can make stops the build or the
command, naming the file from the repository's root, the line, and the fix. Each test here
failed on the main before that issue: a value before its widget went silently fixed, a name
declared twice or a chapter without `__init__.py` said nothing of where, a page left out of
`nav:` built with an INFO line, a widget's exception printed a page-level traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from conftest import FIXTURE, ROOT

from build_hooks import context
from build_hooks.pages import prerender


def markdown(text: str, src: str = "cap15/prova.md") -> str:
    """`text` through the widget directives as the build runs them, on a page at docs/`src`."""
    page = SimpleNamespace(file=SimpleNamespace(src_uri=src, abs_src_path=str(ROOT / "docs" / src)))
    return prerender.on_page_markdown(text, page=page, config=None, files=None, build=context.Build(is_serve=False))


def test_a_value_written_before_its_widget_is_live_as_one_after():
    before = markdown("El sostre és <!-- md:value roofline.decode_tps -->.\n\n<!-- md:widget roofline -->\n")
    after = markdown("<!-- md:widget roofline -->\n\nEl sostre és <!-- md:value roofline.decode_tps -->.\n")
    assert 'data-live="roofline.decode_tps"' in before and 'data-live="roofline.decode_tps"' in after
    assert "data-fixed" not in before


def test_a_value_that_binds_to_nothing_names_the_line_and_what_to_write():
    with pytest.raises(PluginError) as caught:
        markdown("# Prova\n\nEl sostre és <!-- md:value segon.decode_tps -->.\n\n<!-- md:widget roofline -->\n")
    message = str(caught.value)
    assert message.startswith("docs/cap15/prova.md:3:"), message
    assert "'segon'" in message and "roofline" in message and "ID.VALOR" in message


def test_a_value_without_parameters_of_a_widget_not_on_the_page_says_it_would_be_fixed():
    """Before issue 42, deleting a page's md:widget kept its md:value, silently turned into a
    number fixed at the widget's defaults; written with its parameters, it is fixed on purpose."""
    with pytest.raises(PluginError) as caught:
        markdown("# Prova\n\nEl sostre és <!-- md:value roofline.decode_tps -->.\n")
    message = str(caught.value)
    assert message.startswith("docs/cap15/prova.md:3:"), message
    assert "no és en aquesta pàgina" in message and "<!-- md:widget roofline -->" in message, message
    assert "<!-- md:value roofline.decode_tps model=" in message, message
    assert 'data-live="roofline.decode_tps"' not in markdown("Fix: <!-- md:value roofline.decode_tps batch=1 -->.\n")


def _python(tmp_path, code: str, *more) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter run from the repository's root, with `tmp_path` (and
    `more`) as folders of the widgets_py package (a contributor's chapter, as conftest adds cap99)."""
    prologue = "".join(f"import widgets_py; widgets_py.__path__.append({str(p)!r})\n" for p in (*more, tmp_path))
    return subprocess.run([sys.executable, "-c", prologue + textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _chapter(tmp_path, name: str, modules: dict[str, str], init: bool = True):
    folder = tmp_path / name
    folder.mkdir()
    if init:
        (folder / "__init__.py").write_text('"""A contributor\'s chapter."""\n')
    for module, text in modules.items():
        (folder / f"{module}.py").write_text(text)
    return folder


KV_SIZE = (FIXTURE / "widgets_py" / "cap99" / "kv_size.py").read_text()


def test_a_widget_name_declared_twice_names_both_modules(tmp_path):
    _chapter(tmp_path, "cap98", {"mida": KV_SIZE})  # the guide's example, copied: the suite's fixture has it too
    done = _python(tmp_path, "from widgets_py.engine import registry; registry.names()", FIXTURE / "widgets_py")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "'kv_size'" in last and "cap98/mida.py" in last and "cap99/kv_size.py" in last, last


def test_a_name_declared_twice_inside_the_book_names_both_files(tmp_path):
    _chapter(tmp_path, "cap98", {"un": KV_SIZE, "dos": KV_SIZE})
    done = _python(tmp_path, "from widgets_py.engine import registry; registry.names()")
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and "cap98/dos.py" in last and "cap98/un.py" in last and "name=" in last, last


def test_a_chapter_folder_without_init_says_which_file_to_create(tmp_path):
    _chapter(tmp_path, "cap97", {"pesos": KV_SIZE.replace('"kv_size"', '"pesos"')}, init=False)
    done = _python(tmp_path, "from widgets_py.engine import registry; registry.get('pesos')")
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and "cap97/__init__.py" in last and "crea" in last, last


@pytest.mark.parametrize("bug, error, said", [
    ("p['params']", "KeyError", "'params'"),
    # a ValueError is no bad directive: before issue 42 it was reported at the page's line alone
    ("raise ValueError('escala negativa')", "ValueError", "escala negativa"),
])
def test_an_exception_inside_a_widget_names_the_directive_and_the_widgets_line(tmp_path, bug, error, said):
    broken = KV_SIZE.replace('"kv_size"', '"trencat"').replace(
        "    plot = Plot(height=120)", f"    {bug}\n    plot = Plot(height=120)")
    _chapter(tmp_path, "cap96", {"trencat": broken})
    done = _python(tmp_path, """
        from types import SimpleNamespace
        from build_hooks import context
        from build_hooks.pages import prerender
        page = SimpleNamespace(file=SimpleNamespace(src_uri="cap96/index.md", abs_src_path=None))
        prerender.on_page_markdown("# Prova\\n\\n<!-- md:widget trencat -->\\n", page=page, config=None,
                                   files=None, build=context.Build(is_serve=False))
    """)
    tail = done.stderr.strip().splitlines()
    message = "\n".join(tail[-5:])
    assert "docs/cap96/index.md:3:" in message and error in message and said in message, message
    assert f"{tmp_path}/cap96/trencat.py:" in message and "figure()" in message, message
    assert len(tail) <= 12, "one short traceback, not the whole build's"


@pytest.mark.build
def test_a_page_missing_from_nav_stops_the_build(tmp_path):
    from test_directives import _project

    done, _ = _project(tmp_path, "# Inici\n", nav="nav:\n  - Inici: index.md\n",
                       more={"oblidada.md": "# Una pàgina fora del menú\n"})
    assert done.returncode != 0, "a page outside nav: built"
    assert "oblidada.md" in done.stderr, done.stderr[-1500:]
