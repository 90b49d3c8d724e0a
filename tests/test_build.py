"""The strict build: prerendered widgets, bundled runtime, no remote origins, fresh code."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from html import unescape
from pathlib import Path
import pytest

from build_hooks.runtime import assets, bundle, zips
import book
from conftest import ROOT
from widgets_py import formatted, run
from widgets_py.engine.registry import is_measured

pytestmark = pytest.mark.build

widget_divs = book.widgets


def test_pyodide_runtime_and_numpy_are_in_the_site(site):
    """The pinned files, python_stdlib.zip and numpy's wheel trimmed to bytecode: test_bytecode.py, test_trimmed_runtime.py."""
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    assert lock["info"]["version"] == assets.PYODIDE_VERSION
    own = {bundle.widget_package(name)[1] for name in ("roofline", "kv_cache", "batching", "cost", "frontier", "tensor_parallel")}
    assert {"numpy", "widgets-py", "widgets-py-models", "widgets-py-sources"} | own <= set(lock["packages"])  # the code; the
    # model data, the sources and each calculator's own apart (the fixture chapters' calculators have theirs too)
    assert all(key.startswith(bundle.WIDGET_KEY) for key in set(lock["packages"]) - {"numpy", "widgets-py", "widgets-py-models",
                                                                                      "widgets-py-sources"})
    for spec in lock["packages"].values():
        assert assets.sha256((site / "pyodide" / spec["file_name"]).read_bytes()) == spec["sha256"], spec["file_name"]


def test_widgets_are_prerendered_and_bundle_hash_registered(site):
    for page in book.widget_pages(site):  # every chapter's, the fixture chapter's too
        check_prerendered(site, page)


def check_prerendered(site, page):
    html = (site / page).read_text()
    widgets = widget_divs(html)
    assert widgets and all(w["state"] == "static" for w in widgets)
    for w in widgets:
        result = run(w["name"], w["params"])
        text = formatted(w["name"], result.values)
        block = html.split(f'data-instance="{w["instance"]}"', 1)[1].split('<div class="tw-widget"', 1)[0]  # its own
        assert "<svg" in block.split("</figure>")[0]
        for key, shown in re.findall(r'<div data-value="([^"]+)"><dt>(?:(?!</dt>).)*</dt><dd>([^<]*)</dd>', block):
            assert is_measured(w["name"], key) or unescape(shown) == text[key]
    config = json.loads(unescape(re.search(r'<script src="[^"]*kernel\.js[^"]*" data-config="([^"]+)" id="tw-config"></script>', html).group(1)))
    assert config["page"] == list(dict.fromkeys(w["name"] for w in widgets))  # its widgets, in its order
    runtime = site / config["runtime"]
    entry = json.loads((runtime / config["lock"]).read_text())["packages"][config["package"]]
    wheel = (runtime / entry["file_name"]).read_bytes()
    assert assets.sha256(wheel) == entry["sha256"] == config["sha256"]  # what loadPackage checks
    lock = json.loads((runtime / config["lock"]).read_text())["packages"]
    data = lock[config["models"]["package"]]  # the model data, a package apart (bundle.py)
    assert assets.sha256((runtime / data["file_name"]).read_bytes()) == data["sha256"] == config["models"]["sha256"]
    sources = lock[config["sources"]]  # the compiled modules' source, a package apart (bundle.py)
    z, s = (tarfile.open(fileobj=io.BytesIO(b)) for b in (wheel, (runtime / sources["file_name"]).read_bytes()))
    d = zipfile.ZipFile(runtime / data["file_name"])  # the model data: a zip (bundle.make_package says why)
    assert "widgets_py/engine/browser.pyc" in z.getnames() and "widgets_py/engine/browser.py" not in z.getnames()
    assert "widgets_py/engine/browser.py" in s.getnames() and "widgets_py/maths/data/ca.txt" not in z.getnames()
    assert {"widgets_py/maths/weights/manifest.json", "widgets_py/maths/data/ca.txt"} <= set(d.namelist())
    assert all(i.mtime == 0 and i.uid == 0 and not i.uname for t in (z, s) for i in t.getmembers())  # no build time, no owner
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in d.infolist())


def test_every_live_number_equals_cpython(site):
    checked = 0
    for page in site.rglob("*.html"):
        html = page.read_text()
        instances = {w["instance"]: w for w in widget_divs(html)}
        for ref, inner in re.findall(r'data-live="([^"]+)">(.*?)</span>', html):
            shown = re.sub(r"<[^>]+>", "", inner)  # its text: a unit may sit in a glossary <abbr>
            instance, key = ref.rsplit(".", 1)
            w = instances[instance]
            if is_measured(w["name"], key):
                continue  # a timing: it differs on every run, and the page says where it was measured
            assert unescape(shown) == formatted(w["name"], run(w["name"], w["params"]).values)[key], ref
            checked += 1
        for ref, params, inner in re.findall(r'data-fixed="([^"]+)" data-params="([^"]+)">(.*?)</span>', html):
            shown = re.sub(r"<[^>]+>", "", inner)
            name, key = ref.rsplit(".", 1)
            values = run(name, json.loads(unescape(params))).values
            assert unescape(shown) == formatted(name, values)[key], ref
            checked += 1
    assert checked >= 10


# Strings in vendored JavaScript that name a CDN but are never requested by our pages;
# the browser tests prove it by failing on any request that leaves 127.0.0.1.
DORMANT = {
    "https://unpkg.com/mermaid": "Material loads Mermaid only for mermaid diagrams; we have none",
    "https://unpkg.com/resize-observer-polyfill": "Material's polyfill for browsers without ResizeObserver",
    "https://cdn.jsdelivr.net/pyodide/v": "pyodide.js default indexURL; the worker always passes its own",
}
CDN_HOSTS = re.compile(r"https?://(cdn\.|unpkg\.|fonts\.g|ajax\.|cdnjs\.|www\.google|[a-z.]*analytics|[a-z.]*tagmanager)[^\s\"'`)]*")
LOADS = re.compile(r'<(?:script|img|iframe|source|audio|video|embed|object)\b[^>]*\bsrc="([^"]*)"|<link\b[^>]*\bhref="([^"]*)"', re.I)


VENDORED_URLS = {"http://www.w3.org/1998/Math/MathML", "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml",
                 "https://github.com/babel/babel/blob/main/packages/babel-helpers/LICENSE"}


def test_no_remote_origin_is_referenced(site):
    for page in site.rglob("*.html"):
        html = page.read_text()
        assert 'class="arithmatex"' not in html, f"{page}: a formula was not typeset"
        html = re.sub(r'<link rel="canonical"[^>]*>', "", html)  # names the published address; never fetched
        for src, href in LOADS.findall(html):
            url = src or href
            assert not re.match(r"^(https?:)?//", url), f"{page}: loads {url}"
    for sheet in site.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", sheet.read_text()) + re.findall(r"@import\s+['\"]([^'\"]+)", sheet.read_text()):
            assert not re.match(r"^(https?:)?//", url), f"{sheet}: {url}"
    for own in (site / "assets" / "tw").glob("*.js"):
        urls = re.findall(r"https?://[^\s`'\")]*", own.read_text())
        if own.name == "purify.min.js":  # DOMPurify, vendored: XML namespace names and its licence, never fetched
            assert set(urls) <= VENDORED_URLS, set(urls) - VENDORED_URLS
        else:
            assert not urls, own
    for script in site.rglob("*.js"):
        for match in CDN_HOSTS.finditer(script.read_text(errors="replace")):
            assert any(match.group(0).startswith(d) for d in DORMANT), f"{script}: {match.group(0)}"


def test_maths_is_mathml_without_a_renderer(site):
    html = (site / "cap15" / "index.html").read_text()
    assert html.count("<math") >= 2 and "katex" not in html.lower() and "mathjax" not in html.lower()


def copy_project(dest: Path) -> Path:
    """The files a build reads, copied to `dest` (no caches, no virtual environment)."""
    for part in ("docs", "includes", "widgets_py", "build_hooks", "corpus", "overrides", "mkdocs.yml"):
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dest / part)
    return dest


def test_a_copy_builds_its_own_widgets_with_the_shared_generator_command(tmp_path):
    """A copy of the project built by the virtual environment's `properdocs` (what `./dev build`
    runs; a copied checkout keeps the .venv of the original): the copy's widgets are the ones
    prerendered and bundled, not those of the checkout the environment's editable install
    points at, which imports would otherwise find first."""
    project = copy_project(tmp_path / "project")
    path = project / "widgets_py" / "cap15" / "roofline.py"
    path.write_text(path.read_text().replace('title="Prefill contra decode', 'title="COPIA Prefill contra decode'))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(Path(sys.executable).parent / "properdocs"), "build", "-f", "mkdocs.yml", "--site-dir", str(tmp_path / "site")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MkDocs 2" not in done.stderr and "NO_MKDOCS_2_WARNING" not in done.stderr  # Material's banner stays off
    html = (tmp_path / "site" / "cap15" / "index.html").read_text()
    assert "COPIA Prefill contra decode" in html
    package = next((tmp_path / "site" / "pyodide").glob("widgets_py_sources-*.tar.bz2"))  # the source the «Codi» panel shows
    assert "COPIA Prefill contra decode" in zips.tar_members(package.read_bytes())["widgets_py/cap15/roofline.py"].decode()


def test_every_page_has_a_same_origin_content_security_policy(site):
    for page in site.rglob("*.html"):
        html = page.read_text()
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
        assert csp, f"{page}: no CSP"
        policy = csp.group(1)
        assert "default-src 'self'" in policy and "'unsafe-inline'" not in policy.split("style-src")[0]
        assert not re.search(r"https?:|\*", policy), f"{page}: CSP names another origin"
        # inline scripts run only by their sha256: a CSP violation would be a console error,
        # which the browser tests forbid on every page they visit
