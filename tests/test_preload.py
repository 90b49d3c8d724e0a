"""What a page asks for first: its <head>'s files and Python's first scripts, at once
(build_hooks/hosting/preload.py), and Pyodide's packages while Pyodide boots (worker.js)."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from build_hooks.hosting import csp, preload
from widgets_py.engine.dom import Id

PAGE = "cap15/index.html"
HEAD_FILE = re.compile(r'<script\b[^>]*\bsrc="([^"]+)"|<link rel="stylesheet" href="([^"]+)"')


def head(site, page: str = PAGE) -> str:
    html = (site / page).read_text()
    return html[:html.index("</head>")]


@pytest.mark.build
def test_a_widget_page_preloads_its_head_and_the_workers_first_scripts_before_any_script(site):
    text = head(site)
    config = json.loads(unescape(re.search(f'data-config="([^"]*)"[^>]*id="{Id.CONFIG}"', text).group(1)))
    policy = csp.POLICY_META.search(text)
    assert policy, "the page carries no policy"
    links = list(preload.PRELOAD.finditer(text))
    # all of them right after the policy, before the first script the parser waits for
    assert links and links[0].start() == policy.end() and links[-1].end() < text.index("<script")
    assert "".join(m.group(0) for m in links) == text[policy.end():links[-1].end()]
    asked = [(unescape(re.search(r'href="([^"]*)"', m.group(0)).group(1)), m.group(0).split('as="')[1][:-2]) for m in links]
    found = HEAD_FILE.findall(text[links[-1].end():])
    scripts = [(src, "script") for src, _ in found if src]
    styles = [(href, "style") for _, href in found if href]
    boot = [("../" + config["worker"], "script"), ("../" + config["runtime"] + "pyodide.js", "script")]
    assert asked == scripts + boot + styles  # what starts Python first; each once
    assert any("offline.js" in src for src, _ in scripts) and any("kernel.js" in src for src, _ in scripts)
    for url, _ in asked:
        assert (site / "cap15" / url.split("?")[0]).resolve().is_file(), url


@pytest.mark.build
def test_a_page_without_widgets_preloads_its_head_only(site):
    text = head(site, "glossari.html")
    asked = [m.group(0) for m in preload.PRELOAD.finditer(text)]
    assert asked and not any("worker.js" in a or "pyodide.js" in a for a in asked)


@pytest.mark.browser
def test_pyodide_fetches_the_widgets_and_numpy_while_it_boots(browser, server, site):
    """worker.js passes its package to loadPyodide (`packages`): the wheels are asked for as
    soon as the lock is in, while the WebAssembly is still on its way (here: held, never
    answered), not once Python is up."""
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    wheels = {lock["packages"][name]["file_name"] for name in ("widgets-py", "numpy")}
    context = browser.new_context(service_workers="block")
    context.route("**/pyodide/pyodide.asm.wasm", lambda route: None)  # Python's boot held
    page = context.new_page()
    asked = []
    page.on("request", lambda r: asked.append(r.url.rsplit("/", 1)[-1]))
    page.goto(server + "cap15/")
    page.wait_for_load_state("load")
    for _ in range(100):
        if wheels <= set(asked):
            break
        page.wait_for_timeout(100)
    assert wheels <= set(asked), f"asked for, with the wasm held: {asked}"
    context.close()
