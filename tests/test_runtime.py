"""The stack under the site (issue 33): built by ProperDocs, precompressed for hosts that can
serve it so, and a first visit that respects a reader who saves data."""

from __future__ import annotations

import gzip
import json
import re

import brotli
import pytest

from build_hooks import cache
from build_hooks.hosting import compress, offline

ALL_READY = "() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')"
STORED = "() => document.documentElement.dataset.twOffline === 'ready'"


@pytest.mark.build
def test_the_site_is_generated_by_properdocs(site):
    html = (site / "index.html").read_text()
    assert re.search(r'<meta name="generator" content="mkdocs-ProperDocs 1\.6\.\d+, mkdocs-material-', html)


@pytest.mark.build
def test_big_files_have_precompressed_siblings_that_are_them(site):
    packed = sorted(p for p in site.rglob("*") if p.suffix in (".gz", ".br") and p.name != "sitemap.xml.gz")
    names = {p.relative_to(site).as_posix() for p in packed}
    assert {"pyodide/pyodide.asm.wasm.gz", "pyodide/pyodide.asm.wasm.br", "cap15/index.html.gz", "sw.js.gz"} <= names
    for p in packed:
        original = p.with_suffix("").read_bytes()
        unpacked = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else brotli.decompress(p.read_bytes())
        assert unpacked == original, p
        assert len(p.read_bytes()) < len(original)
    for p in (p for p in site.rglob("*") if p.is_file() and compress.wanted(p)):
        gz = p.with_name(p.name + ".gz")
        assert gz.exists() != compress.packed(p.read_bytes()), p  # a sibling exactly where gzip gains
    assert not list(site.rglob("*.descarrega.html.*"))  # the chapter's file: packed already
    files = json.loads(re.search(r"const FILES = (\{.*?\});", (site / "sw.js").read_text(), re.S).group(1))
    assert not [f for f in files if f.endswith((".gz", ".br"))] and "pyodide/pyodide.asm.wasm" in files
    assert "gzip_static on;" in (site / "nginx-headers.conf").read_text()
    assert set(offline.precache_list(site)) == set(files)


def test_the_cache_keeps_the_most_recently_used_within_its_limit(tmp_path):
    import os

    folder = tmp_path / "compressed"
    folder.mkdir()
    for i, name in enumerate(["old.br", "used.gz", "new.br"]):
        (folder / name).write_bytes(b"x" * 100)
        os.utime(folder / name, (1000 + i, 1000 + i))
    cache.read(folder / "used.gz")  # a hit since: newest
    writing = "new.br.4242-1" + cache.PART  # another build's entry being written: not ours to prune
    (folder / writing).write_bytes(b"x" * 100)
    os.utime(folder / writing, (1, 1))
    cache.prune(folder, limit=250)
    assert sorted(p.name for p in folder.iterdir()) == ["new.br", writing, "used.gz"]
    cache.prune(folder, limit=250)
    assert len(list(folder.iterdir())) == 3  # within the limit: nothing more goes


def test_a_cache_entry_is_whole_or_absent(tmp_path, monkeypatch):
    entry = tmp_path / "kind" / "entry.gz"
    cache.write(entry, b"first")
    cache.write(entry, b"second")  # over an old one: replaced whole

    def full(*args):
        raise OSError("no space left on device")

    monkeypatch.setattr(cache.os, "replace", full)  # a write that fails once its temp file is written
    with pytest.raises(OSError):
        cache.write(entry, b"third")
    assert entry.read_bytes() == b"second" and [p.name for p in entry.parent.iterdir()] == ["entry.gz"]


def test_packed_data_gets_no_sibling_and_text_gets_both(tmp_path, monkeypatch):
    import base64
    import os

    monkeypatch.setenv("TEXTBOOK_CACHE", str(tmp_path / "cache"))
    packed = tmp_path / "descarrega.html"  # a single-file chapter: archives in base64
    packed.write_bytes(b"<script>" + base64.b64encode(os.urandom(300_000)) + b"</script>")
    text = tmp_path / "index.html"
    text.write_bytes(b"<p>El KV-cache creix amb el context.</p>\n" * 5000)
    assert compress.siblings(packed) == {}
    assert set(compress.siblings(text)) == {".gz", ".br"}
    half = tmp_path / "half.html"  # packed data with enough text around it that gzip gains over PACKED
    half.write_bytes(packed.read_bytes()[:100_000] + text.read_bytes())
    assert set(compress.siblings(half)) == {".gz", ".br"}


def test_a_big_files_brotli_is_kept_and_a_damaged_entry_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTBOOK_CACHE", str(tmp_path / "cache"))
    data = bytes(range(256)) * (compress.CACHED_BYTES // 256 + 1)
    first = compress._brotli(data)
    (entry,) = (tmp_path / "cache" / "compressed").iterdir()
    assert brotli.decompress(first) == data and entry.read_bytes() == first
    calls = []
    real = brotli.compress
    monkeypatch.setattr(brotli, "compress", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert compress._brotli(data) == first and not calls  # kept: nothing compressed again
    entry.write_bytes(first[:-7])  # a truncated entry is not served
    assert compress._brotli(data) == first and calls == [1] and entry.read_bytes() == first


@pytest.mark.browser
def test_a_reader_who_saves_data_is_asked_before_the_site_is_stored(browser, server):
    context = browser.new_context()
    context.add_init_script("Object.defineProperty(Navigator.prototype, 'connection', {get: () => ({saveData: true})})")
    page = context.new_page()
    page.goto(server + "cap15/index.html")
    page.wait_for_function(ALL_READY, timeout=90_000)
    offer = page.locator(".tw-save button")
    offer.wait_for(timeout=30_000)
    page.wait_for_timeout(3000)
    assert page.evaluate("document.documentElement.dataset.twOffline") is None  # nothing precached by itself
    offer.click()
    page.wait_for_function(STORED, timeout=120_000)
    assert "Desat" in page.text_content(".tw-save")
    context.set_offline(True)
    page.goto(server + "glossari.html")  # a page this visit never opened: stored on request
    assert "Glossari" in page.title()
    context.close()
