"""Offline reading after one visit, and one build at a time: a content-versioned service worker.

Only for `mkdocs build`: under `mkdocs serve` a cache-first worker would hide the edits
that live reload is meant to show, so pages get no service worker there.

- Every page loads `assets/tw/offline.js` from <head> (before Python boots), so the worker
  controls the page, and Pyodide's worker (claimed on its own if it started first), before
  Python's files are fetched: what the page downloads goes into the offline cache on its way,
  and the precache afterwards fetches only what is still missing. Each file once, even where
  the HTTP cache keeps nothing (a private window keeps no file as big as pyodide.asm.wasm).
- The precache lists files, never folders (`cap15/index.html`, not `cap15/` too), and leaves
  out what no page requests: source maps, lunr's languages the search does not use, files
  for hosts and tools.
- `sw.js` lists each precached file with a hash of its bytes; its version is a hash of that
  list. The same source builds the same bytes (see reference.py), so a rebuild without a
  change leaves sw.js byte-identical and costs readers nothing; after a change, a new cache
  copies the unchanged files from the old one and downloads only the changed ones.
- Our own scripts and styles are linked as `NAME?v=HASH` of their bytes, so no HTTP cache
  can pair a page with another build's scripts; so are the files that scripts load by URL
  (the workers, what they import, the lock: `LOADED`), whose hashes the site config carries
  (`build.versions`). The service worker answers `NAME?v=HASH` from its cache only when HASH
  is its own build's: a page of another build gets the network's copy, never a mix.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from ..runtime import bundle

TEMPLATE = Path(__file__).with_name("sw.js")
SCRIPT = "assets/tw/offline.js"
NOT_FOUND = "404.html"
OWN_ASSET = re.compile(r'((?:src|href)="[^"?#]*?assets/tw/([\w.-]+\.(?:js|css)))"')
NEVER_REQUESTED = re.compile(r".*\.map$|.*\.gz$|.*\.br$|_headers$|nginx-headers\.conf$"  # for hosts and tools: no page asks
                             r"|.*\.descarrega\.html$")  # a chapter as one file (single_file.py): downloaded, not read here
LUNR = "assets/javascripts/lunr/"
LOADED = ("assets/tw/worker.js", "assets/tw/protocol.js", "assets/tw/lockdown.js",
          bundle.RUNTIME_DIR + bundle.LOCK)  # loaded by scripts (kernel.js, worker.js), by URL with ?v=


def _serving(build) -> bool:
    return build is not None and build.is_serve


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def versioned(output: str, docs_dir: Path) -> str:
    """`assets/tw/host.js"` -> `assets/tw/host.js?v=<hash of its bytes>"`."""
    def stamp(m: re.Match) -> str:
        source = docs_dir / "assets" / "tw" / m.group(2)
        return f'{m.group(1)}?v={digest(source.read_bytes())}"' if source.is_file() else m.group(0)
    return OWN_ASSET.sub(stamp, output)


STAMPED = re.compile(r'((?:src|href)="[^"?#]*?assets/tw/[\w.-]+\.(?:js|css))\?v=[0-9a-f]+"')


def restamped(output: str, docs_dir: Path) -> str:
    """A page rendered by an earlier build with the hashes of our scripts and styles as they are
    now: what a dirty serve writes into the pages it does not render again after such a file
    changed (the same bytes as `versioned` on a fresh render)."""
    return versioned(STAMPED.sub(r'\1"', output), docs_dir)


def on_files(files, *, config, build) -> None:
    """The hash of each file in LOADED, as the site serves it, for the site config (a site
    without our scripts, such as a test's bare page, has nothing to version)."""
    for path in LOADED:
        file = files.get_file_from_path(path)
        if file is not None:
            build.versions[path] = digest(file.content_bytes)


def _with_script(output: str, root: str, docs_dir: Path) -> str:
    """offline.js first in <head> (after the title, before Python's kernel starts)."""
    tag = versioned(f'<script src="{root}{SCRIPT}"></script>', docs_dir)
    return output.replace("</title>", "</title>" + tag, 1)


def on_post_page(output: str, *, page, config, build=None) -> str:
    docs_dir = Path(config["docs_dir"])
    if _serving(build):
        return versioned(output, docs_dir)
    return _with_script(versioned(output, docs_dir), "../" * page.url.count("/"), docs_dir)


def on_post_template(output: str, *, template_name: str, config, build=None) -> str:
    """404.html links from the site's root path (it is served at any depth)."""
    if not template_name.endswith(".html"):
        return output
    docs_dir = Path(config["docs_dir"])
    if _serving(build):
        return versioned(output, docs_dir)
    root = urlsplit(config.get("site_url") or "/").path or "/"
    return _with_script(versioned(output, docs_dir), root if root.endswith("/") else root + "/", docs_dir)


def _search_languages(site: Path) -> list[str]:
    index = site / "search" / "search_index.json"
    return json.loads(index.read_text())["config"]["lang"] if index.is_file() else ["en"]


def lunr_needed(site: Path) -> set[str]:
    """The lunr files Material's search worker imports for the configured languages."""
    langs = [lang for lang in _search_languages(site) if lang != "en"]
    need = {f"{LUNR}min/lunr.{lang}.min.js" for lang in langs}
    if langs:
        need.add(f"{LUNR}min/lunr.stemmer.support.min.js")
    if len(langs) > 1:
        need.add(f"{LUNR}min/lunr.multi.min.js")
    need |= {f"{LUNR}tinyseg.js" for lang in langs if lang == "ja"} | {f"{LUNR}wordcut.js" for lang in langs if lang == "th"}
    return need


def precache_list(site: Path) -> list[str]:
    """The files a reader may request, relative to the site's root (folders: their index.html)."""
    lunr = lunr_needed(site)
    return [rel for rel in sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
            if rel != "sw.js" and not NEVER_REQUESTED.match(rel) and (not rel.startswith(LUNR) or rel in lunr)]


def manifest(site: Path) -> dict[str, str]:
    """path -> hash of its bytes, for every precached file."""
    return {rel: digest((site / rel).read_bytes()) for rel in precache_list(site)}


def service_worker(files: dict[str, str]) -> str:
    version = digest(json.dumps(files, sort_keys=True).encode())  # the content decides, nothing else
    return (TEMPLATE.read_text().replace("__VERSION__", version).replace("__NOT_FOUND__", NOT_FOUND)
            .replace("__FILES__", json.dumps(files, indent=0, sort_keys=True)))


def on_post_build(*, config, build=None) -> None:
    if _serving(build):
        return
    site = Path(config["site_dir"])
    (site / "sw.js").write_text(service_worker(manifest(site)))
