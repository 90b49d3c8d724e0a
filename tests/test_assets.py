"""Pinned Pyodide files: verified from any source, refused with one clear message."""

import shutil

import pytest

from build_hooks.runtime import assets
from conftest import build_site

WASM = "pyodide.asm.wasm"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private copy of the real cache, so tests can corrupt it."""
    real = assets.cache_dir()
    for name in assets.PINNED:
        assets.fetch(name)  # make sure the real cache is complete
    monkeypatch.setenv("TEXTBOOK_CACHE", str(tmp_path / "cache"))
    shutil.copytree(real, assets.cache_dir())
    return assets.cache_dir()


def test_cached_files_match_their_pins(cache):
    for name, digest in assets.PINNED.items():
        assert assets.sha256((cache / name).read_bytes()) == digest


def test_missing_everywhere_names_file_hash_and_every_place(cache):
    (cache / WASM).unlink()

    def offline(name):
        raise OSError("network unreachable")

    sources = (("CDN x", offline), ("npm y", offline), ("PyPI z", offline))
    with pytest.raises(assets.AssetError) as err:
        assets.fetch(WASM, sources)
    message = str(err.value)
    assert WASM in message and assets.PINNED[WASM] in message
    for place in (str(cache / WASM), "CDN x", "npm y", "PyPI z"):
        assert place in message


def test_a_source_with_wrong_bytes_is_refused(cache):
    (cache / WASM).unlink()
    sources = (("CDN x", lambda name: b"tampered"),)
    with pytest.raises(assets.AssetError, match="mismatch"):
        assets.fetch(WASM, sources)
    assert not (cache / WASM).exists()  # nothing unverified is ever cached


def test_a_good_source_fills_the_cache(cache):
    good = (cache / WASM).read_bytes()
    (cache / WASM).unlink()
    assert assets.fetch(WASM, (("elsewhere", lambda name: good),)) == cache / WASM
    assert (cache / WASM).read_bytes() == good


@pytest.mark.build
def test_build_with_corrupted_cache_fails_with_the_message(cache, tmp_path):
    data = bytearray((cache / WASM).read_bytes())
    data[1000] ^= 0xFF
    (cache / WASM).write_bytes(bytes(data))
    done = build_site(tmp_path / "site", env={"TEXTBOOK_CACHE": str(cache.parent)})
    assert done.returncode != 0
    assert WASM in done.stderr and assets.PINNED[WASM] in done.stderr
    assert str(cache / WASM) in done.stderr and "corrupted" in done.stderr
