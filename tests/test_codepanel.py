"""The widgets' code panel in Chromium: read the shipped module, edit it, run it, break it,
stop it, reload, restore; offline too, and with no request leaving the origin."""

from __future__ import annotations

import json
import re
from build_hooks.runtime import zips
from urllib.parse import urlsplit

import pytest

import tolerance
from widgets_py.engine import browser as entry

pytestmark = pytest.mark.browser

PAGE = "cap15/"
SEL = '.tw-widget[data-widget="roofline"]'
OTHER = '.tw-widget[data-widget="kv_cache"]'
BOOT_MS = 90_000
EDIT = 'KV_FORMAT = "fp8"  # la prova: la memòria cau KV en 8 bits\n'  # typed at the module's end (its last line is empty)


def ready(page, sel=SEL, timeout=BOOT_MS):
    page.wait_for_function("s => { const w = document.querySelector(s); return w.dataset.state === 'ready' && !w.dataset.busy; }",
                           arg=sel, timeout=timeout)


def values(page, sel=SEL) -> dict:
    return json.loads(page.get_attribute(sel, "data-values"))


def open_panel(page, sel=SEL):
    page.click(f"{sel} .tw-code-toggle")
    page.wait_for_selector(f"{sel} .tw-code[data-editor]", timeout=BOOT_MS)


def editor_text(page, sel=SEL) -> str:
    """The panel's text, once it has one: a fresh worker (after «Restaura», «Atura») is asked
    for the module again, its source fetched again (worker.js)."""
    page.wait_for_function("s => window.tw.codepanel.text(document.querySelector(s)) !== null", arg=sel, timeout=BOOT_MS)
    return page.eval_on_selector(sel, "w => window.tw.codepanel.text(w)")


def type_at_end(page, text: str, sel=SEL):
    page.click(f"{sel} .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.insert_text(text)


def run_edit(page, sel=SEL):
    page.click(f"{sel} .tw-code-run")
    page.wait_for_function("s => !document.querySelector(s).dataset.busy && document.querySelector(s).dataset.state !== 'loading'",
                           arg=sel, timeout=30_000)


def assert_edited_matches_cpython(page, code: str, sel=SEL):
    params = page.eval_on_selector(sel, "w => window.tw.readParams(w)")
    expected = json.loads(entry.render_edited("roofline", "cpython", code, json.dumps(params)))["values"]
    shown = values(page, sel)
    assert shown.keys() == expected.keys()
    for key, value in expected.items():
        assert shown[key] == tolerance.expected("roofline", key, value), key


def shipped_module(site, module: str) -> str:
    """The module's source as the site ships it: in the sources' package (bundle.py), else the code's."""
    name = module.replace(".", "/") + ".py"
    for package in sorted((site / "pyodide").glob("widgets_py*" + zips.TAR_BZ2)):
        members = zips.tar_members(package.read_bytes())
        if name in members:
            return members[name].decode()
    raise KeyError(f"{name} in no package of {site / 'pyodide'}")


def test_the_source_is_fetched_when_a_panel_first_opens(watched, server, site):
    """The code's wheel ships the worker's modules as bytecode alone; their source, a wheel apart
    (bundle.py), is fetched when a panel first opens, once, and not while Python boots (issue 44)."""
    from build_hooks.runtime import bundle
    from conftest import KERNEL_WARM

    lock = json.loads((site / bundle.RUNTIME_DIR / bundle.LOCK).read_text())
    if bundle.SOURCES_KEY not in lock["packages"]:
        pytest.skip("no node: no bytecode, so every source is in the code's wheel")
    wheel = lock["packages"][bundle.SOURCES_KEY]["file_name"]
    fetched = lambda: [u for u in watched.requests if urlsplit(u).path.endswith("/" + wheel)]  # noqa: E731
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    page.wait_for_function(KERNEL_WARM, timeout=BOOT_MS)  # the warm-up too reads no source
    assert fetched() == []
    open_panel(page)
    assert editor_text(page) == shipped_module(site, "widgets_py.cap15.roofline")
    open_panel(page, OTHER)
    assert editor_text(page, OTHER) == shipped_module(site, "widgets_py.cap15.kv_cache")
    assert len(fetched()) == 1 and watched.errors == []


def test_edit_run_break_reload_and_restore(watched, server, site):
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    # a shipped run at the defaults: the numbers and figure that "Restaura" must give back exactly
    page.select_option(f"{SEL} select[name=model]", "mixtral-8x7b")
    ready(page)
    page.select_option(f"{SEL} select[name=model]", "llama-3-70b")
    ready(page)
    original, figure = values(page), page.inner_html(f"{SEL} .tw-figure")

    open_panel(page)
    assert page.get_attribute(f"{SEL} .tw-code", "data-editor") == "codemirror"
    assert page.locator(f"{SEL} .cm-lineNumbers .cm-gutterElement").count() > 5
    assert page.eval_on_selector(SEL, """w => {  // highlighted: some tokens get the site's code colours
        const c = w.querySelector('.cm-content'), base = getComputedStyle(c).color;
        return [...c.querySelectorAll('.cm-line span')].some(s => getComputedStyle(s).color !== base); }""")
    module = page.eval_on_selector(SEL, "w => w.querySelector('.tw-code-file').textContent").split(" ")[0]
    shipped = editor_text(page)
    assert shipped == shipped_module(site, module[:-3].replace("/", "."))  # the wheel's text, not a copy

    # change a constant: the figure and the numbers change, as CPython computes them from the same code
    page.click(f"{SEL} .tw-code-edit")
    type_at_end(page, EDIT)
    code = editor_text(page)
    assert code == shipped + EDIT
    run_edit(page)
    assert page.get_attribute(SEL, "data-state") == "ready" and page.get_attribute(SEL, "data-edited") == "true"
    assert page.inner_html(f"{SEL} .tw-figure") != figure
    assert values(page)["kv_prompt_gb"] == pytest.approx(original["kv_prompt_gb"] / 2)
    assert_edited_matches_cpython(page, code)
    assert page.is_visible(f"{SEL} .tw-code-mark")
    live = page.locator('.tw-live[data-live="roofline.kv_prompt_gb"]')
    assert "tw-edited" in live.get_attribute("class") and live.get_attribute("title")
    edited_figure, edited_values = page.inner_html(f"{SEL} .tw-figure"), values(page)

    # the controls keep working with the edited code
    page.select_option(f"{SEL} select[name=model]", "mixtral-8x7b")
    ready(page)
    assert_edited_matches_cpython(page, code)
    page.select_option(f"{SEL} select[name=model]", "llama-3-70b")
    ready(page)
    assert values(page) == edited_values

    # a syntax error: its line in the panel, the last good figure kept, the other widgets fine
    type_at_end(page, "def (\n")
    bad_line = editor_text(page).count("\n")
    run_edit(page)
    assert page.get_attribute(f"{SEL} .tw-code", "data-error-line") == str(bad_line)
    status = page.text_content(f"{SEL} .tw-code-status")
    assert f"Línia {bad_line}" in status and "SyntaxError" in status
    assert page.locator(f"{SEL} .tw-code-error-line").count() == 1
    assert page.inner_html(f"{SEL} .tw-figure") == edited_figure and values(page) == edited_values
    assert page.get_attribute(OTHER, "data-values") is None  # still the prerendered figure
    page.focus(f"{OTHER} input[type=range]")
    page.keyboard.press("ArrowRight")
    ready(page, OTHER, 30_000)
    assert page.get_attribute(OTHER, "data-values")  # it ran, with the shipped code
    page.click(f"{SEL} .cm-content")
    page.keyboard.press("Control+End")
    for _ in range(len("def (\n")):
        page.keyboard.press("Backspace")
    assert editor_text(page) == code
    run_edit(page)
    assert page.get_attribute(SEL, "data-state") == "ready" and values(page) == edited_values

    # a reload keeps the edit as a draft: shown and marked, run only when the reader asks
    page.reload()
    ready(page)
    assert page.get_attribute(SEL, "data-edited") is None and page.get_attribute(SEL, "data-draft") == "true"
    assert page.text_content(f"{SEL} .tw-code-mark") == "edició desada (no aplicada)" and page.is_visible(f"{SEL} .tw-code-mark")
    assert page.get_attribute(SEL, "data-values") is None  # the prerendered figure: nothing ran
    open_panel(page)
    assert editor_text(page) == code and "No s'ha executat" in page.text_content(f"{SEL} .tw-code-status")
    run_edit(page)
    assert page.get_attribute(SEL, "data-edited") == "true" and values(page) == edited_values
    assert "tw-edited" in page.get_attribute('.tw-live[data-live="roofline.kv_prompt_gb"]', "class")
    assert page.is_visible(f"{OTHER} .tw-code-page-mark")  # every widget says the page runs edited code

    # restore: the shipped code in a fresh worker, exactly the original numbers and figure
    page.click(f"{SEL} .tw-code-restore")
    ready(page)
    page.wait_for_function("s => !document.querySelector(s).dataset.edited", arg=SEL)
    assert values(page) == original and page.inner_html(f"{SEL} .tw-figure") == figure
    assert editor_text(page) == shipped and not page.is_visible(f"{SEL} .tw-code-mark")
    assert not page.is_visible(f"{OTHER} .tw-code-page-mark")
    assert "tw-edited" not in (page.get_attribute('.tw-live[data-live="roofline.kv_prompt_gb"]', "class") or "")
    page.reload()
    ready(page)
    assert page.get_attribute(SEL, "data-edited") is None

    origin = urlsplit(server).netloc
    assert all(urlsplit(url).netloc == origin for url in watched.requests if not url.startswith(("data:", "blob:")))  # blob: the page's own workers
    assert watched.errors == []


def test_a_run_that_never_ends_can_be_stopped(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    ready(page)
    open_panel(page)
    page.click(f"{SEL} .tw-code-edit")
    type_at_end(page, "while True:\n    pass\n")
    page.click(f"{SEL} .tw-code-run")
    page.wait_for_selector(f"{SEL} .tw-code-stop:not([hidden])", timeout=10_000)
    page.click(f"{SEL} .tw-code-stop")
    ready(page)  # a fresh worker, the shipped code
    assert page.get_attribute(SEL, "data-edited") is None
    assert "while True" in editor_text(page)  # the edit is kept
    page.focus(f"{OTHER} input[type=range]")
    page.keyboard.press("ArrowRight")
    ready(page, OTHER, 30_000)
    assert page.get_attribute(OTHER, "data-values")
    page.select_option(f"{SEL} select[name=model]", "mixtral-8x7b")
    ready(page)
    assert values(page)["params_total"] != 70553706496 and watched.errors == []


def test_the_edit_runs_offline(browser, server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(server + PAGE)
    page.wait_for_function("() => document.documentElement.dataset.twOffline === 'ready'", timeout=120_000)
    context.set_offline(True)
    page.reload()
    ready(page)
    open_panel(page)
    assert page.get_attribute(f"{SEL} .tw-code", "data-editor") == "codemirror"  # the editor came from the cache
    page.click(f"{SEL} .tw-code-edit")
    type_at_end(page, EDIT)
    run_edit(page)
    assert page.get_attribute(SEL, "data-edited") == "true"
    assert_edited_matches_cpython(page, page.eval_on_selector(SEL, "w => window.tw.codepanel.text(w)"))
    context.close()



def test_without_the_editor_a_textarea_edits_and_runs(watched, server):
    page = watched.page
    page.route("**/assets/tw/editor/*", lambda route: route.abort())  # the bundle cannot load
    page.goto(server + PAGE)
    ready(page)
    open_panel(page)
    assert page.get_attribute(f"{SEL} .tw-code", "data-editor") == "textarea"
    shipped = page.input_value(f"{SEL} textarea.tw-code-plain")
    assert page.text_content(f"{SEL} .tw-code-numbers").split("\n")[-1] == str(shipped.count("\n") + 1)
    page.click(f"{SEL} .tw-code-edit")
    page.fill(f"{SEL} textarea.tw-code-plain", shipped + EDIT)
    run_edit(page)
    assert page.get_attribute(SEL, "data-edited") == "true"
    assert_edited_matches_cpython(page, shipped + EDIT)
    assert "No s'ha pogut desar" not in page.text_content(f"{SEL} .tw-code-status")
    page.evaluate("() => { Storage.prototype.setItem = () => { throw new DOMException('full', 'QuotaExceededError'); }; }")
    page.fill(f"{SEL} textarea.tw-code-plain", shipped + EDIT + "# encara\n")
    run_edit(page)
    assert "No s'ha pogut desar" in page.text_content(f"{SEL} .tw-code-status")  # said, not silently lost
    page.fill(f"{SEL} textarea.tw-code-plain", shipped + "def (\n")
    run_edit(page)
    assert page.get_attribute(f"{SEL} .tw-code", "data-error-line") == str(shipped.count("\n") + 1)

def test_the_no_formulas_track_hides_the_panel(site):
    html = (site / "cap15" / "sense-formules.html").read_text()
    assert '<div id="tw-code" hidden data-enabled="false"' in html
    assert '<div id="tw-code" hidden data-enabled="true"' in (site / "cap15" / "index.html").read_text()


def test_the_contributor_guide_explains_the_panel_and_its_page_option():
    from build_hooks.pages import codepanel
    from conftest import ROOT

    guide = (ROOT / "docs" / "contribuir.md").read_text()
    assert "**Codi**" in guide and "**Executa**" in guide and "**Restaura**" in guide
    assert f"{codepanel.OPTION}: false" in guide
    assert f"{codepanel.OPTION}: false" in (ROOT / "docs" / "cap15" / "sense-formules.md").read_text()


def test_the_editor_is_one_same_origin_file_without_eval_and_precached(site):
    html = (site / "cap15" / "index.html").read_text()
    src = re.search(r'<div id="tw-code" hidden data-enabled="true" data-editor="([^"]+)"', html).group(1)
    bundle = (site / src).read_text()
    assert "window.twEditor" in bundle or "var twEditor" in bundle
    assert not re.search(r"\beval\(|new Function\(", bundle)  # the page's CSP has no 'unsafe-eval'
    assert src in (site / "sw.js").read_text()  # offline: the service worker precaches it


def test_a_tarball_with_another_hash_is_refused(tmp_path, monkeypatch):
    from build_hooks.runtime import assets, editor_assets

    monkeypatch.setenv("TEXTBOOK_CACHE", str(tmp_path))
    spec = "crelt@1.0.7"
    target = editor_assets._tarball_path(spec)
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not the pinned tarball")
    with pytest.raises(assets.AssetError, match="crelt@1.0.7: sha256"):
        editor_assets.tarball(spec)


from axe import TAGS, axe_source  # noqa: E402,F401 - the pinned axe-core, as a fixture


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_open_panel_passes_axe(browser, server, axe_source, scheme):  # noqa: F811
    context = browser.new_context(color_scheme=scheme, service_workers="block")
    context.add_init_script(axe_source)
    page = context.new_page()
    page.goto(server + PAGE)
    ready(page)
    open_panel(page)
    page.click(f"{SEL} .tw-code-edit")
    type_at_end(page, "def (\n")
    run_edit(page)  # the error state too: its status and the marked line
    assert page.get_attribute(f"{SEL} .tw-code", "data-error-line")
    violations = page.evaluate("""async ([sel, tags]) => {
        const r = await axe.run({ include: [[sel + ' .tw-code-toggle'], [sel + ' .tw-code-mark'], [sel + ' .tw-code']] },
                                { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
        return r.violations.map(v => [v.id, v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary).join('; ')]);
    }""", [SEL, TAGS])
    context.close()
    assert violations == [], "\n".join(f"{rule}: {nodes}" for rule, nodes in violations)
