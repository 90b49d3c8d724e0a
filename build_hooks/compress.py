"""Precompressed copies of the big files, for hosts that serve them as they are.

A static host compresses on the fly (GitHub Pages: gzip) or not at all; nginx with
`gzip_static on` (and `brotli_static on`, with the ngx_brotli module) serves `FILE.gz` /
`FILE.br` beside `FILE` when the browser accepts it, at the best ratio, with no CPU per
request. So the last step of a build writes, beside every file of a kind that compresses and
of at least MIN_BYTES, its gzip (level 9, no name, no time: the same bytes on every build)
and, where Google's `brotli` package is installed, its brotli (quality 11, as deterministic).
nginx-headers.conf (headers.py) turns them on. The service worker neither precaches nor
requests them (offline.py: NEVER_REQUESTED): a browser asks for `FILE`, the host picks.
"""

from __future__ import annotations

import gzip
from pathlib import Path

try:
    import brotli
except ImportError:  # optional: gzip alone then
    brotli = None

MIN_BYTES = 1024
KINDS = (".html", ".js", ".mjs", ".css", ".json", ".wasm", ".zip", ".svg", ".txt", ".xml", ".map")


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def siblings(path: Path) -> dict[str, bytes]:
    """{suffix: compressed bytes} for `path`, each only where it is smaller than the file."""
    data = path.read_bytes()
    out = {".gz": _gzip(data)}
    if brotli is not None:
        out[".br"] = brotli.compress(data, quality=11)
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
