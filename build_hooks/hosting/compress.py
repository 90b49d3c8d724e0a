"""Precompressed copies of the big files, for hosts that serve them as they are.

A static host compresses on the fly (GitHub Pages: gzip) or not at all; nginx with
`gzip_static on` (and `brotli_static on`, with the ngx_brotli module) serves `FILE.gz` /
`FILE.br` beside `FILE` when the browser accepts it, at the best ratio, with no CPU per
request. So the last step of a build writes, beside every file of a kind that compresses and
of at least MIN_BYTES (but packed data: PACKED), its gzip (level 9, no name, no time: the same bytes on every build)
and, where Google's `brotli` package is installed, its brotli (quality 11, as deterministic).
nginx-headers.conf (headers.py) turns them on. The service worker neither precaches nor
requests them (offline.py: NEVER_REQUESTED): a browser asks for `FILE`, the host picks.

Brotli at quality 11 costs about a second per megabyte, and most big files (Pyodide's, the
pinned archives) are the same bytes on every build: their brotli is kept in the cache beside
the Pyodide files (and their gzip, a few seconds more), by the sha256 of what was compressed (checked by decompressing it when
used), so a build compresses only what changed.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from .. import cache

try:
    import brotli
except ImportError:  # optional: gzip alone then
    brotli = None

MIN_BYTES = 1024
KINDS = (".html", ".js", ".mjs", ".css", ".json", ".wasm", ".zip", ".svg", ".txt", ".xml", ".map")


# Where gzip leaves at least this share of a file, it is mostly packed data already (a single-file
# chapter carries its archives gzip'd, in base64; a wheel is a zip): its .gz saved 28 % of a
# 14 MB chapter file for 10 MB more on the host per chapter, and brotli 11 gained 1.6 % over
# gzip for 30 s of a build. Such a file gets no sibling: a host that compresses on the fly
# still may; the budget (size.py) counts every byte the site holds.
PACKED = 0.6
CACHED_BYTES = 256 * 1024  # smaller files compress in milliseconds: not worth an entry
# Pages change with every edit (and carry their site's URL), so entries pile up: each build
# prunes the folder (cache.prune; the suite's builds of many variants share what is the same).
FOLDER = "compressed"


def _kept(data: bytes, suffix: str, pack, unpack, errors) -> bytes:
    """pack(data), from the cache when an entry for these bytes unpacks to them."""
    if len(data) < CACHED_BYTES:
        return pack(data)

    def valid(entry: bytes) -> bool:
        try:
            return unpack(entry) == data
        except errors:
            return False  # a damaged entry: made again

    return cache.kept(cache.folder(FOLDER), data, suffix, pack, valid)


def _gzip(data: bytes) -> bytes:
    return _kept(data, "-9.gz", lambda d: gzip.compress(d, compresslevel=9, mtime=0), gzip.decompress,
                 (OSError, EOFError, zlib.error))


def _brotli(data: bytes) -> bytes:
    return _kept(data, f"-q11-{brotli.__version__}.br", lambda d: brotli.compress(d, quality=11), brotli.decompress,
                 brotli.error)


def packed(data: bytes) -> bool:
    """True where gzip keeps at least PACKED of `data`: no compressed sibling for it."""
    return len(_gzip(data)) >= PACKED * len(data)


def siblings(path: Path) -> dict[str, bytes]:
    """{suffix: compressed bytes} for `path`: none for packed data (PACKED), else its gzip and,
    where brotli is installed, its brotli, each only where it is smaller than the file."""
    data = path.read_bytes()
    if packed(data):
        return {}
    out = {".gz": _gzip(data)}
    if brotli is not None:
        out[".br"] = _brotli(data)
    return {suffix: packed for suffix, packed in out.items() if len(packed) < len(data)}


def wanted(path: Path) -> bool:
    return path.suffix in KINDS and path.stat().st_size >= MIN_BYTES


def on_post_build(*, config, build=None) -> None:
    if build is not None and build.is_serve:
        return
    site = Path(config["site_dir"])
    for path in sorted(p for p in site.rglob("*") if p.is_file() and wanted(p)):
        for suffix, packed in siblings(path).items():
            path.with_name(path.name + suffix).write_bytes(packed)
    cache.prune(cache.folder(FOLDER))
