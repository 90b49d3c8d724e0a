"""A chapter as one HTML file (build_hooks/export/single_file.py): every page of the chapter links
the same file, which carries the runtime once and each page once (a track, shown by ?pista=NAME);
opened from file:// with every route blocked it becomes interactive in each track, agrees with
CPython, keeps the quiz and makes no request at all."""

from __future__ import annotations

import io
import json
import posixpath
import re
import shutil
import zipfile

import pytest

from build_hooks.export import downloads, single_file
from build_hooks.runtime import trim, zips
from conftest import KERNEL_WARM
from test_browser import BOOT_MS, assert_matches_cpython, move_a_control, wait_idle

PAGE = "cap15/index.html"
FILE = "cap15/" + downloads.FILE  # the chapter's one file
LIMIT = 15_000_000  # bytes: the target for chapter 15
ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')"


def test_links_go_to_the_published_site_or_are_marked_absent():
    html = '<a href="../glossari.html#kv">g</a><a href="index.html#x">here</a><a href="#y">y</a><a href="https://a.b/">w</a>'
    published = single_file._links(html, PAGE, "https://llibre.example/curs/cap15/index.html")
    assert 'href="https://llibre.example/curs/glossari.html#kv" data-tw-external' in published
    assert 'href="#x"' in published and 'href="#y"' in published and 'href="https://a.b/"' in published
    local = single_file._links(html, PAGE, None)
    assert "glossari.html" not in local.split("title=")[0] and "data-tw-absent" in local
    tracks = {PAGE: "index", "cap15/sense-formules.html": "sense-formules"}
    twins = single_file._links('<a class="tw-twin" href="sense-formules.html#kv">t</a><a href="./">i</a><a href="../cap15/">c</a>',
                               PAGE, None, tracks)
    assert twins == '<a class="tw-twin" href="?pista=sense-formules#kv">t</a><a href="#">i</a><a href="#">c</a>'
    back = single_file._links('<a href="index.html#kv">i</a><a href="./">j</a>', "cap15/sense-formules.html", None, tracks)
    assert back == '<a href="?pista=index#kv">i</a><a href="?pista=index">j</a>'
    assert single_file.published_url('<link rel="canonical" href="http://127.0.0.1:8000/cap15/index.html">') is None


@pytest.mark.build
def test_every_chapter_page_offers_its_chapters_one_file(site):
    chapters = sorted(p.relative_to(site).as_posix() for p in site.glob("cap*/*.html") if not p.name.endswith(single_file.SUFFIX))
    assert {PAGE, "cap15/sense-formules.html"} <= set(chapters)
    for rel in chapters:
        html = (site / rel).read_text()
        link = re.search(r'<p class="tw-download"><a href="([^"]+)" download="([^"]+)">Descarrega el capítol</a>', html)
        assert link, rel
        target = (site / rel).parent / link.group(1)
        assert target == site / posixpath.dirname(rel) / downloads.FILE, rel  # the chapter's, not the page's
        assert link.group(2) == posixpath.dirname(rel) + ".html", rel
        single = target.read_text()
        assert 'class="tw-download"' not in single and "<h1" in single
        # nothing beside it is loaded: no src= or stylesheet/icon href but data: URIs
        assert not re.findall(r'<(?:script|img|link|iframe)\b[^>]*\b(?:src|href)="(?!data:|https?:)', single), rel
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', single).group(1)
        assert "connect-src 'none'" in csp and "worker-src blob:" in csp
        # every page of the folder is in it once, as a track: the index as it is, the others as templates
        tracks = re.findall(r'<template data-tw-pista="([^"]+)"', single) + ["index"]
        assert sorted(tracks) == sorted({single_file.track_name(c) for c in chapters if c.startswith(posixpath.dirname(rel) + "/")})
        assert "<h1" in single.split("<template", 1)[0]  # the index reads before any script runs
    assert 'class="tw-download"' not in (site / "index.html").read_text()  # not a chapter
    assert not [p for p in site.rglob("*" + single_file.SUFFIX) if p.name != downloads.FILE]  # no file per page

    single = (site / FILE).read_text()
    assert single.count('data-name="pyodide.asm.wasm"') == 1  # the runtime once for both tracks
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    carried = set(re.findall(r'<script type="application/x-tw-payload" data-name="([^"]+)"', single))
    core = {"pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"}  # what loadPyodide loads
    packages = {key: p["file_name"] for key, p in lock["packages"].items()}
    for archive in (trim.read_index((site / "pyodide" / "python_stdlib.zip").read_bytes()) or {"archives": []})["archives"]:
        if archive["completes"] in packages:  # the whole wheel in place of the site's trimmed one
            packages[archive["completes"]] = archive["file"]
        assert archive["file"] not in carried or archive["file"] in packages.values()  # not twice
    packages = {key: name.removesuffix(zips.TAR_BZ2) + zips.TAR if name.endswith(zips.TAR_BZ2) else name
                for key, name in packages.items()}  # ours as plain tars, gzip'd with the rest (single_file)
    assert set(packages.values()) | core <= carried
    assert any(name.startswith("widgets_py-") for name in carried)  # code, weights and corpus
    assert (site / FILE).stat().st_size <= LIMIT
    assert downloads.FILE not in (site / "sw.js").read_text()  # downloaded, never precached


def test_a_chapter_is_named_by_its_folder_or_a_page(tmp_path):
    site = tmp_path / "site"
    for rel in ("cap15/index.html", "cap15/sense-formules.html", "cap15/capitol.descarrega.html", "index.html"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("<html></html>")
    both = ["cap15/index.html", "cap15/sense-formules.html"]  # the index first, never the file itself
    for name in ("cap15", "cap15/", "cap15/sense-formules.md", "cap15/index.html"):
        assert single_file.chapter_pages(site, name) == both, name
    for name in ("cap99", "cap15/nowhere.md", ""):
        with pytest.raises(single_file.ExportError, match="CHAPTER is a folder or a page"):
            single_file.chapter_pages(site, name)


def test_pages_that_do_not_share_their_scripts_are_refused(tmp_path):
    site = tmp_path / "site"
    (site / "cap1").mkdir(parents=True)
    page = '<html><head><title>{t}</title></head><body><h1>{t}</h1><script id="__config">{c}</script></body></html>'
    (site / "cap1" / "index.html").write_text(page.format(t="A", c="{}"))
    (site / "cap1" / "b.html").write_text(page.format(t="B", c='{"x": 1}'))
    with pytest.raises(single_file.ExportError, match="b.html: its scripts differ from cap1/index.html"):
        single_file.export(site, "cap1", tmp_path / "out.html")
    (site / "cap1" / "b.html").write_text(page.format(t="B", c="{}"))
    single_file.export(site, "cap1", tmp_path / "out.html")
    out = (tmp_path / "out.html").read_text()
    assert "<body><h1>A</h1>\n<template" in out and 'data-tw-pista="index"' not in out  # the index as it is
    assert '<template data-tw-pista="b" data-title="B"><h1>B</h1></template>' in out


@pytest.mark.build
def test_the_command_prints_a_breakdown_that_adds_up(site, tmp_path, capsys):
    out = tmp_path / "cap15.html"
    assert downloads.main(["cap15/sense-formules.md", str(out), "--site", str(site)]) == 0
    printed = capsys.readouterr()
    assert "[1/" in printed.err and "pyodide.asm.wasm" in printed.err  # progress while it writes
    rows = [line.split() for line in printed.out.splitlines()[1:-1]]
    stored = [float(row[-2]) for row in rows]  # "... 4.18 MB"
    assert {"pyodide.asm.wasm", "python_stdlib.zip"} <= {row[0] for row in rows}
    assert sum(stored) == pytest.approx(out.stat().st_size / 1e6, abs=0.01 * len(rows))
    assert out.read_bytes() == (site / FILE).read_bytes()  # the site's file, exactly: the chapter's, from any page
    assert downloads.main(["cap15", str(tmp_path / "folder.html"), "--site", str(site)]) == 0
    assert (tmp_path / "folder.html").read_bytes() == out.read_bytes()
    assert downloads.main(["cap15/nowhere.md", str(tmp_path / "x.html"), "--site", str(site)]) == 1


def move_every_widget(page) -> int:
    """Every widget of the shown track moved and checked against CPython; how many there are."""
    widgets = page.eval_on_selector_all(".tw-widget", "ws => ws.map(w => [w.dataset.instance, Boolean(w.querySelector('.tw-train'))])")
    for instance, trainable in widgets:
        if trainable:
            continue  # its controls set up the training button, which test_browser presses
        sel = f'.tw-widget[data-instance="{instance}"]'
        assert move_a_control(page, sel), instance
        assert_matches_cpython(page, sel)
    return len(widgets)


@pytest.mark.browser
def test_the_file_is_interactive_from_disk_with_no_request(browser, site, tmp_path):
    single = tmp_path / "cap15.html"  # as a reader keeps it: alone in a folder
    shutil.copy(site / FILE, single)
    url = single.as_uri()
    context = browser.new_context(service_workers="block")
    requests, errors = [], []
    context.route(lambda u: u.split("?")[0] != url, lambda route: route.abort())  # every route but the file itself
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    page.wait_for_function(KERNEL_WARM, timeout=BOOT_MS)
    assert page.evaluate(KERNEL_WARM) == {"failed": []}
    assert page.title().startswith("Camí matemàtic")  # no ?pista: the chapter's index
    assert move_every_widget(page) >= 8

    roofline = '.tw-widget[data-widget="roofline"]'  # the code panel's editor is in the file too
    page.click(f"{roofline} .tw-code-toggle")
    page.wait_for_selector(f"{roofline} .tw-code[data-editor]", timeout=BOOT_MS)
    assert page.get_attribute(f"{roofline} .tw-code", "data-editor") == "codemirror"

    choice = page.locator('.tw-q[data-kind="choice"]').first
    choice.locator("li[data-correct] button").click()
    progress = page.locator(".tw-quiz .tw-quiz-progress").text_content()
    assert not progress.startswith("0 de")
    page.reload()
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == progress  # kept across a reload
    assert page.locator("a[data-tw-absent]").count() > 0  # links to the site's other pages: not here
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)

    # the other track, by its twin link: the same file, its lay page, its own widgets answering
    twin = page.locator("a.tw-twin").first
    assert twin.get_attribute("href").startswith("?pista=sense-formules#")
    twin.click()
    page.wait_for_url(url + "?pista=sense-formules#*")
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    assert page.title().startswith("Sense fórmules")
    assert page.locator("template").count() == 0 and page.locator("h1").count() == 1  # one track shown
    assert move_every_widget(page) >= 4
    page.locator("a.tw-twin").first.click()  # and back
    page.wait_for_url(url + "?pista=index#*")
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    assert page.title().startswith("Camí matemàtic")

    assert errors == []
    # not the network, not the disk, not data: URLs; blob: URLs are the file's own bytes in memory
    assert [u for u in requests if u.split("?")[0] != url and not u.startswith("blob:")] == []
    context.close()


@pytest.mark.browser
def test_without_javascript_the_file_reads_as_the_index_with_its_figures(browser, site, tmp_path):
    single = tmp_path / "cap15.html"
    shutil.copy(site / FILE, single)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(single.as_uri() + "?pista=sense-formules")  # a track needs the script: the index instead
    assert page.locator("h1").count() == 1 and page.title().startswith("Camí matemàtic")
    figures = page.locator(".tw-widget svg")
    assert figures.count() >= 8 and figures.first.is_visible()  # the prerendered figures
    context.close()


@pytest.mark.browser
def test_the_same_file_works_over_http(watched, server):
    page = watched.page
    page.goto(server + FILE + "?pista=sense-formules")
    page.wait_for_function(ALL_READY, timeout=BOOT_MS)
    assert page.title().startswith("Sense fórmules")  # the lay track, as the URL asks
    sel = '.tw-widget[data-widget="roofline"]'
    assert move_a_control(page, sel)
    wait_idle(page, sel)
    assert_matches_cpython(page, sel)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click(f"{sel} .tw-copy")  # a widget's copied link opens the same track
    page.wait_for_function("s => document.querySelector(s).dataset.link", arg=sel)
    assert re.search(r"\?roofline=[^#]*&pista=sense-formules#", page.get_attribute(sel, "data-link"))
    assert watched.errors == []
    assert [u for u in watched.requests if u != server + FILE + "?pista=sense-formules" and not u.startswith("blob:")] == []


@pytest.mark.build
def test_the_export_refuses_core_files_other_than_the_pinned_ones(site):
    """Only python_stdlib.zip may differ from its pin (it carries bytecode): a page that names
    another pyodide.js is refused, even with a file that matches what the page says."""
    config = {"runtime": "pyodide/", "lock": "pyodide-lock.json", "core": {"pyodide.js": "0" * 64}}
    with pytest.raises(single_file.ExportError, match="pinned"):
        single_file.runtime_files(site, config)


def test_the_files_archives_are_stored_to_be_gzipped_whole():
    import gzip
    import io
    import zipfile

    from build_hooks.runtime import zips

    import random

    rng = random.Random(0)  # modules that share their words, as a package's do: one stream learns them once
    words = [f"name_{rng.getrandbits(40):x}" for _ in range(300)]
    members = {f"pkg/m{i}.py": " ".join(rng.choice(words) for _ in range(400)).encode() for i in range(40)}
    deflated = zips.write(members)
    stored = zips.stored(deflated)
    with zipfile.ZipFile(io.BytesIO(stored)) as z:
        assert [i.compress_type for i in z.infolist()] == [zipfile.ZIP_STORED] * 40
        assert {n: z.read(n) for n in z.namelist()} == members and z.namelist() == list(members)  # order kept
    assert len(gzip.compress(stored, 9)) < len(gzip.compress(deflated, 9))


def test_the_files_stdlib_leaves_out_what_a_file_cannot_run_unless_imported():
    from build_hooks.runtime import zips

    stdlib = zips.write({"json/__init__.py": b"", "http/client.py": b"", "multiprocessing/pool.py": b"",
                         "pdb.py": b"", "statistics.py": b""})
    kept = single_file.without_unrunnable(stdlib, {"json", "multiprocessing"})  # the worker imports multiprocessing here
    assert single_file.top_names(kept) == {"json", "multiprocessing", "statistics"}
    assert single_file.top_names(zips.write({"a/b.pyc": b"", "c.pyc": b"", "d.py": b""})) == {"a", "c", "d"}


def test_the_files_wheels_leave_out_stubs_headers_and_f2py_and_their_record_lines():
    from build_hooks.runtime import zips

    record = "numpy-2.0.2.dist-info/RECORD"
    files = ["numpy/__init__.py", "numpy/__init__.pyi", "numpy/_core/x.pxd", "numpy/f2py/__init__.py",
             "numpy/fft/__init__.py", "numpy/testing/__init__.py", "numpy/f2pyx.py"]
    wheel = zips.write({**{f: b"x" for f in files}, record: "".join(f"{f},sha256=h,1\n" for f in files + [record]).encode()})
    kept = single_file.without_unusable(wheel)
    with zipfile.ZipFile(io.BytesIO(kept)) as z:
        names = z.namelist()
        listed = [line.split(",")[0] for line in z.read(record).decode().splitlines()]
    assert names == ["numpy/__init__.py", "numpy/fft/__init__.py", "numpy/testing/__init__.py", "numpy/f2pyx.py", record]
    assert listed == names  # RECORD names what is there, and only that
    assert single_file.without_unusable(zips.write({"numpy/__init__.py": b""})) == zips.write({"numpy/__init__.py": b""})


@pytest.mark.build
def test_the_files_payloads_are_tighter_than_gzip_9_and_inflate_as_gzip(site):
    """single_file.gzipped is zopfli: still gzip (DecompressionStream's format), smaller than
    gzip -9 of the same bytes (a build back on gzip -9 fails here)."""
    import gzip

    single = (site / FILE).read_text()
    packed = single_file.decode85(re.search(r'data-name="pyodide.asm.wasm"[^>]*>([^<]+)<', single).group(1))
    raw = gzip.decompress(packed)
    assert raw[:4] == b"\0asm" and len(packed) < 0.98 * len(gzip.compress(raw, 9)), len(packed)


@pytest.mark.build
def test_the_files_stdlib_is_the_whole_but_the_unrunnable(site):
    import gzip

    single = (site / FILE).read_text()
    packed = re.search(r'data-name="python_stdlib.zip"[^>]*>([^<]+)<', single).group(1)
    names = single_file.top_names(gzip.decompress(single_file.decode85(packed)))
    assert {"statistics", "fractions", "decimal", "json", "unittest", "pydoc"} <= names  # what a reader's edit may import
    assert not names & single_file.UNRUNNABLE
    packed = re.search(r'data-name="(numpy-[^"]+\.whl)"[^>]*>([^<]+)<', single).group(2)
    with zipfile.ZipFile(io.BytesIO(gzip.decompress(single_file.decode85(packed)))) as z:
        wheel = z.namelist()
        listed = {line.split(",")[0] for line in z.read("numpy-2.0.2.dist-info/RECORD").decode().splitlines()}
    assert {"numpy/fft/__init__.py", "numpy/polynomial/__init__.py", "numpy/ma/__init__.py", "numpy/testing/__init__.py"} <= set(wheel)
    assert not [n for n in wheel if n.startswith("numpy/f2py/") or n.endswith((".pyi", ".pxd"))]
    assert listed == set(wheel)
