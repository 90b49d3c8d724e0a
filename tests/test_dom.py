"""The page's DOM contract is one declaration (widgets_py/engine/dom.py), generated into
protocol.js with the messages (tests/test_protocol.py checks the file is current): the build
writes every name it declares, every script that looks the page up names them through
`tw.protocol.DOM`, and none spells one itself (a renamed class fails here, not on a page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from build_hooks.pages import codepanel, exercises, prerender, widget_html
from widgets_py.engine import dom, registry, svg

ROOT = Path(__file__).resolve().parents[1]
TW = ROOT / "docs" / "assets" / "tw"
# the scripts that read what the build's HTML carries (quiz.js reads quiz.py's own markup)
READERS = ("host.js", "url-state.js", "trainer.js", "figures.js", "codepanel.js", "markup.js", "kernel.js", "offline.js",
           "exercise.js")
SCRIPT_WRITES = (dom.Data.SOLVED, dom.Data.VERDICT)  # exercise.js sets them: tests and tools read them
# a script's own attribute on an element it makes, spelt like a name of the contract: the code
# panel's section, and an exercise's editor, say which editor they made (data-editor="codemirror",
# tests read it)
OWN = {"codepanel.js": "this.section.dataset.editor", "exercise.js": "this.view.dataset.editor"}


def code(path: Path) -> str:
    """A script without its comments (a comment may name a class: it is prose)."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    return re.sub(r"(^|\s)//.*", r"\1", text, flags=re.M)


def built_html() -> str:
    """Every widget as the build writes it, with and without its controls, and a live and a
    fixed value in prose, and every exercise."""
    config = type("Config", (), {"markdown_extensions": [], "mdx_configs": {}})()
    parts = []
    for name in registry.names():
        params = registry.validate_params(name, {})
        result = registry.run(name, params, layouts=svg.LAYOUTS)
        parts += [widget_html.widget(name, name, params, result), widget_html.widget(name, name, params, result, shown=[])]
    parts += [exercises.html(name, config) for name in registry.exercise_names()]
    parts.append(exercises.progress_html(registry.exercise_names()))
    return "".join(parts + [widget_html.live_number("a.b", "1", None), widget_html.live_number("a.b", "1", {"k": 1})])


def test_the_names_are_the_contract_s_kinds():
    for c in dom.Class:
        assert re.fullmatch(r"tw-[a-z]+(-[a-z]+)*", c), c
    for d in dom.Data:
        assert re.fullmatch(r"[a-z]+", d), f"data-{d}: one lowercase word, its dataset key as it is"
    assert dom.constants()["CLASS"]["STATUS"] == "tw-status"


def test_the_build_writes_every_name():
    html = built_html()
    written = set(re.findall(r'class="([^"]+)"', html))
    for c in dom.Class:
        assert any(c in classes.split() for classes in written), f"no element of class {c}"
    for d in dom.Data:
        if d not in (dom.Data.CONFIG, dom.Data.ENABLED, dom.Data.EDITOR, *SCRIPT_WRITES):
            assert f" data-{d}=" in html, f"no data-{d}"
    page = type("Page", (), {"meta": {}, "url": "cap15/", "file": type("F", (), {"abs_src_path": None})()})()
    build = type("Build", (), {"editor": "assets/editor.js", "site_config": lambda self: {"sha256": "0"}})()
    head = prerender.on_post_page("<title>x</title>" + html, page=page, config={}, build=build)
    assert re.search(rf'<script [^>]*data-{dom.Data.CONFIG}="[^"]+" id="{dom.Id.CONFIG}">', head)
    panel = codepanel.on_page_content(html, page=page, config={}, files=None, build=build)
    assert re.search(rf'<div id="{dom.Id.CODE}" hidden data-{dom.Data.ENABLED}="true" data-{dom.Data.EDITOR}="[^"]+">', panel)


def test_the_site_config_is_written_once_on_a_page_that_needs_python():
    page = type("Page", (), {"url": "cap15/"})()
    build = type("Build", (), {"site_config": lambda self: {"sha256": "0"}})()
    for body, live in (('<div class="tw-widget" data-widget="x">', True), ('<span class="tw-live tw-wrap">', True),
                       ('<div class="tw-exercise" data-exercise="x">', True),
                       ('<span class="tw-fixed">', True), ("<code>class=&quot;tw-widget&quot;</code>", False)):
        out = prerender.on_post_page(f"<head><title>x</title></head><body>{body}</body>", page=page, config={}, build=build)
        assert out.count(f"data-{dom.Data.CONFIG}=") == (1 if live else 0), body


@pytest.mark.parametrize("script", READERS)
def test_no_script_spells_a_name(script):
    js = code(TW / script).replace(OWN.get(script, "\0"), "")
    for c in dom.Class:
        assert not re.search(rf"(?<![\w-]){c}(?![\w-])", js), f"{script} spells the class {c}: use DOM.CLASS.{c.name}"
    for d in dom.Data:
        assert not re.search(rf"\.dataset\.{d}\b|\bdata-{d}(?![\w-])", js), f"{script} spells data-{d}: use DOM.DATA.{d.name}"
    for i in dom.Id:
        assert not re.search(rf"getElementById\([\"'`]{i}\b|#{i}(?![\w-])", js), f"{script} spells the id {i}: use DOM.ID.{i.name}"


def test_every_name_is_looked_up():
    """No name declared for nothing: some script reads each one."""
    js = "".join(code(TW / script) for script in READERS)
    for kind, members in (("CLASS", dom.Class), ("DATA", dom.Data), ("ID", dom.Id)):
        for m in members:
            assert re.search(rf"\b{kind}\.{m.name}\b", js), f"no script reads DOM.{kind}.{m.name}"


def test_the_check_sees_a_spelt_name(tmp_path):
    bad = tmp_path / "bad.js"
    bad.write_text('// .tw-status in a comment is prose\nw.querySelector(".tw-status"); w.dataset.layout;\n')
    js = code(bad)
    assert re.search(r"(?<![\w-])tw-status(?![\w-])", js) and js.count("tw-status") == 1
    assert re.search(r"\.dataset\.layout\b", js)


@pytest.mark.browser
def test_a_widget_page_reached_from_one_without_widgets_boots_from_its_one_config(watched, server):
    """The config is on the head's script alone: instant navigation from a page without it
    brings it in (Material adds the new page's <head> elements), and the widgets go live."""
    page = watched.page
    page.goto(server + "glossari.html")
    assert page.locator(f"#{dom.Id.CONFIG}").count() == 0
    page.evaluate("window.__samePage = true")  # survives an instant navigation, not a reload
    page.locator("a.md-nav__link[href*='sense-formules']").first.click()
    page.wait_for_url("**/sense-formules.html")
    page.wait_for_function("() => document.querySelector('.tw-widget') && [...document.querySelectorAll('.tw-widget')]"
                           ".every(w => w.dataset.state === 'ready')", timeout=90_000)
    assert page.evaluate("window.__samePage === true"), "the swap reloaded the page"
    assert page.evaluate(f"() => [...document.querySelectorAll('[data-{dom.Data.CONFIG}]')].map(e => e.parentNode.tagName)") == ["HEAD"]
    assert watched.errors == []
