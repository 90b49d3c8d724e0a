"""Offline reading after one visit: a versioned service worker that precaches the site.

Only for `mkdocs build`: under `mkdocs serve` a cache-first worker would hide the edits
that live reload is meant to show, so pages get no registration flag there.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

TEMPLATE = Path(__file__).with_name("sw.js")
FLAG = '<meta name="tw-sw" content="sw.js">'


def on_post_page(output: str, *, page, config, build) -> str:
    if build.is_serve:
        return output
    return output.replace("<head>", "<head>" + FLAG, 1)


def precache_list(site: Path) -> list[str]:
    """Every file of the site, as URLs relative to its root; folders for their index.html."""
    urls = []
    for path in sorted(p for p in site.rglob("*") if p.is_file() and p.name != "sw.js"
                       and not p.name.endswith(".descarrega.html")):  # a chapter as one file (export.py): downloaded
        rel = path.relative_to(site).as_posix()
        urls.append(rel)
        if path.name == "index.html":
            urls.append(rel[: -len("index.html")] or "./")
    return urls


def on_post_build(*, config, build) -> None:
    if build.is_serve:
        return
    site = Path(config["site_dir"])
    files = precache_list(site)
    digest = hashlib.sha256()
    for rel in files:
        if not rel.endswith("/") and rel != "./":
            digest.update(rel.encode() + hashlib.sha256((site / rel).read_bytes()).digest())
    script = TEMPLATE.read_text().replace("__VERSION__", digest.hexdigest()[:16]).replace("__FILES__", json.dumps(files))
    (site / "sw.js").write_text(script)
