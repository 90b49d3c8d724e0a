"""One chapter page as one HTML file that is interactive from disk (issue 16).

Browsers refuse workers and fetches from `file://`, but a page may start a worker from a
Blob URL and compile WebAssembly from bytes it holds. So the exported file carries:

- the page as the site renders it, read from the BUILT site (this module knows the built
  HTML and the files it references, not how the build made them): styles and scripts
  inlined, the favicon as a data URI, Material's search and instant navigation switched
  off (one page, no index, no sitemap), links to other pages sent to the published site
  when its address is known (the page's canonical link, if not a loopback address) and
  marked as not included otherwise, and a CSP that allows no connection at all;
- Pyodide's runtime, numpy, the widgets wheel (code, trained weights, corpus) and the lock,
  each gzip-compressed and base64-encoded in a <script type="application/x-tw-payload">;
- export_boot.js (page) and export_worker.js (worker prelude), which unpack them with
  DecompressionStream and answer the worker's importScripts/fetch from memory.

Compressing the runtime is the slow part (~3 s); the gzip of each file is kept in the cache
by the sha256 of its bytes, so a rebuild with unchanged inputs costs ~0.3 s per page.

The site's chapter pages link their file, and `./dev export` writes one: downloads.py.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import posixpath
import re
from dataclasses import dataclass
from html import escape, unescape
from pathlib import Path
from urllib.parse import urlsplit

from widgets_py.engine.dom import Class

from .. import cache
from ..runtime import assets, bytecode, trim

HERE = Path(__file__).resolve().parent
SUFFIX = ".descarrega.html"  # cap15/index.html -> cap15/index.descarrega.html
PAYLOAD_TYPE = "application/x-tw-payload"
FILES_MESSAGE = "tw-export:files"
SCRIPTS_MESSAGE = "tw-export:scripts"  # the payloads that are scripts, as blob: URLs the page made
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
POLICY = ("default-src 'self'; script-src 'wasm-unsafe-eval' blob: {hashes}; style-src 'unsafe-inline'; "
          "img-src data:; font-src 'none'; connect-src 'none'; worker-src blob:; object-src 'none'; "
          "base-uri 'none'; form-action 'none'")
HIDE = ('.md-search,.md-header__button[for="__search"]{display:none!important}'
        "a[data-tw-external]::after{content:\" \\2197\"}a[data-tw-absent]{cursor:help;text-decoration:underline dotted}")

SCRIPT_SRC = re.compile(r'<script\b([^>]*?)\s*\bsrc="([^"]+)"([^>]*)></script>')
STYLESHEET = re.compile(r'<link rel="stylesheet" href="([^"]+)"\s*/?>')
ICON = re.compile(r'(<link rel="icon" href=")([^"]+)(")')
NAV_LINK = re.compile(r'<link rel="(?:prev|next|canonical)" href="[^"]*"\s*/?>\s*')
CSP_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">')
ANCHOR = re.compile(r'<a\b([^>]*?)\shref="([^"]*)"')
CONFIG = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.S)
DOWNLOAD = re.compile(r'<p class="tw-download">.*?</p>', re.S)
EDITOR = re.compile(r'<div id="([\w-]+)"[^>]*\bdata-editor="([^"]+)"')  # codepanel.js's CodeMirror bundle
INLINE = re.compile(r"<script(?![^>]*\btype=)[^>]*>(.*?)</script>", re.S)


@dataclass
class Part:
    label: str
    raw: int  # bytes as the site serves them
    stored: int  # bytes in the exported file


class ExportError(RuntimeError):
    pass


def _local(site: Path, page_dir: str, ref: str) -> Path:
    path = posixpath.normpath(posixpath.join(page_dir, ref.split("?")[0].split("#")[0]))
    return site / path


def gzipped(data: bytes, kept_in: Path | None) -> bytes:
    """gzip -9 of `data`, kept in the folder `kept_in` by the sha256 of the input (the slow step)."""
    return cache.kept(kept_in, data, ".gz", lambda d: gzip.compress(d, 9, mtime=0))


def published_url(html: str) -> str | None:
    """The site's public address, from the page's canonical link; None for a local build."""
    m = re.search(r'<link rel="canonical" href="([^"]+)"', html)
    if not m or urlsplit(m.group(1)).hostname in LOOPBACK:
        return None
    return m.group(1)


def _script(code: str) -> str:
    return "<script>" + code.replace("</script", "<\\/script").replace("<!--", "<\\!--") + "</script>"


def runtime_files(site: Path, config: dict, kept_in: Path | None = None) -> dict[str, bytes]:
    """Pyodide's core files and every package of the site's lock, each checked against the sha256
    the site's config (core files: pinned bytes, but the stdlib the site trimmed) or lock
    (packages) gives it; the whole archives in place of the trimmed ones (trim.py's index says
    which: the file has no server to fetch a left-out module from), without bytecode
    (bytecode.py), and the lock with the packages' new names and sha256: bytecode would add
    2.5 MB (3.3 MB in base64) to a file whose target is size, and it only saves start-up time."""
    runtime = site / config["runtime"]
    lock_bytes = (runtime / config["lock"]).read_bytes()
    pins = dict(config["core"])
    for name, pin in pins.items():  # the site changes the stdlib only: the rest must be pinned bytes
        if name != bytecode.STDLIB_FILE and pin not in assets.PINNED.values():
            raise ExportError(f"{name}: the site names sha256 {pin}, which no pinned file has")
    lock = json.loads(lock_bytes)
    pins.update({p["file_name"]: p["sha256"] for p in lock["packages"].values()})
    raw = {}
    for name, pin in pins.items():
        raw[name] = (runtime / name).read_bytes()
        if assets.sha256(raw[name]) != pin:
            raise ExportError(f"{runtime / name}: sha256 {assets.sha256(raw[name])} != {pin} (the site's own); rebuild the site")
    for archive in (trim.read_index(raw[bytecode.STDLIB_FILE]) or {"archives": []})["archives"]:
        whole = raw.pop(archive["file"])
        if archive["completes"] in lock["packages"]:  # a package: the lock names the whole wheel
            spec = lock["packages"][archive["completes"]]
            del raw[spec["file_name"]]
            spec["file_name"] = archive["file"]
            raw[archive["file"]] = whole
        else:  # a core file: the whole one under the name Pyodide loads
            raw[archive["completes"]] = whole
    files = {}
    for name, data in raw.items():
        if name.endswith((".zip", ".whl")):
            data = cache.kept(kept_in, data, ".nobytecode", bytecode.strip)
        files[name] = data
    for spec in lock["packages"].values():
        spec["sha256"] = assets.sha256(files[spec["file_name"]])
    files[config["lock"]] = json.dumps(lock, indent=1, sort_keys=True).encode()
    return files


def _links(html: str, page: str, site_url: str | None) -> str:
    """Links to other pages of the site: to the published site, or marked as not included."""
    page_dir = posixpath.dirname(page)

    def rewrite(m: re.Match) -> str:
        attrs, href = m.group(1), unescape(m.group(2))
        if not href or href.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I):
            return m.group(0)
        path, _, frag = href.partition("#")
        target = posixpath.normpath(posixpath.join(page_dir, path.split("?")[0]))
        if path.endswith("/") or target == ".":
            target = posixpath.join(target, "index.html").lstrip("./")
        if target == page:
            return f'<a{attrs} href="#{escape(frag)}"'
        if site_url:
            url = site_url.rsplit("/", page.count("/") + 1)[0] + "/" + target + (f"#{frag}" if frag else "")
            return f'<a{attrs} href="{escape(url)}" data-tw-external rel="noopener"'
        return f'<a{attrs} data-tw-absent title="Aquesta pàgina no és dins d\'aquest fitxer ({escape(target)})"'

    return ABSENT.sub(_no_name, ANCHOR.sub(rewrite, html))


ABSENT = re.compile(r"<a\b[^>]*\bdata-tw-absent\b[^>]*>")


def _no_name(m: re.Match) -> str:
    """An <a> without href is no link but a generic element: a name of its own (the logo's
    aria-label) is prohibited there (axe: aria-prohibited-attr), and a second title is ignored."""
    tag = re.sub(r'\saria-label="[^"]*"', "", m.group(0))
    first = tag.find(' title="')
    return tag[:first + 1] + re.sub(r'\stitle="[^"]*"', "", tag[first + 1:]) if first >= 0 else tag


def _material_config(m: re.Match) -> str:
    config = json.loads(m.group(2))
    config["features"] = [f for f in config.get("features", []) if not f.startswith("navigation.instant")]
    return m.group(1) + json.dumps(config).replace("</", "<\\/") + m.group(3)


def export(site: Path, page: str, out: Path, *, kept_in: Path | None = None, say=lambda line: None) -> list[Part]:
    """Write `page` (e.g. cap15/index.md or .html) of the built `site` as one file `out`."""
    page = re.sub(r"\.md$", ".html", page)
    source = site / page
    if not source.is_file():
        raise ExportError(f"{source}: no such built page (PAGE is a path under docs/, e.g. cap15/index.md)")
    html = source.read_text()
    page_dir = posixpath.dirname(page)
    site_url = published_url(html)
    say(f"pàgina {page}; enllaços a {site_url or 'cap lloc publicat (marcats com a no inclosos)'}")

    html = CSP_META.sub("", html)
    html = DOWNLOAD.sub("", html)
    html = NAV_LINK.sub("", html) if not site_url else re.sub(r'<link rel="(?:prev|next)" href="[^"]*"\s*/?>\s*', "", html)
    kernel = re.search(r'<script src="[^"]*kernel\.js[^"]*" data-config="([^"]+)"', html)
    config = json.loads(unescape(kernel.group(1))) if kernel else None

    def inline_script(m: re.Match) -> str:
        path = _local(site, page_dir, m.group(2))
        if path.name == "offline.js":
            return ""  # the service worker needs http(s); a file has nothing to cache
        code = path.read_text()
        return _script(code).replace("<script>", f"<script{m.group(1)}{m.group(3)}>", 1)

    html = SCRIPT_SRC.sub(inline_script, html)
    html = STYLESHEET.sub(lambda m: f"<style>{_local(site, page_dir, m.group(1)).read_text()}</style>", html)
    html = ICON.sub(lambda m: m.group(1) + "data:image/png;base64,"
                    + base64.b64encode(_local(site, page_dir, m.group(2)).read_bytes()).decode() + m.group(3), html)
    html = CONFIG.sub(_material_config, html)
    html = html.replace('data-md-component="search"', 'data-md-component="search-off"').replace('name="search"', 'name="search-off"')
    html = html.replace("</head>", f"<style>{HIDE}</style></head>", 1)
    html = _links(html, page, site_url)

    parts: list[Part] = []
    payloads = []
    if config:
        tw = site / "assets" / "tw"
        worker = (tw / "worker.js").read_text()
        imported = [f"{name}.js" for name in re.findall(r'importScripts\(script\("([\w-]+)"\)\)', worker)]
        if not imported:
            raise ExportError("worker.js imports no script by importScripts(script(NAME)): single_file.py no longer reads it")
        sources = {name: (tw / name).read_text() for name in imported}
        sources.update({"worker.js": worker, "export_worker.js": (HERE / "export_worker.js").read_text()})
        boot = (HERE / "export_boot.js").read_text().replace("__EXPORT__", json.dumps({
            "sources": sources, "prelude": "export_worker.js", "entry": "worker.js",
            "payloadType": PAYLOAD_TYPE, "FILES": FILES_MESSAGE,
            "SCRIPTS": SCRIPTS_MESSAGE}).replace("</", "<\\/"))
        # the boot goes before the first script after the title (protocol.js, then kernel.js)
        at = html.index("<script", html.index("</title>"))
        html = html[:at] + _script(boot) + html[at:]
        files = {name: (data, "") for name, data in runtime_files(site, config, kept_in).items()}
        editor = EDITOR.search(html)  # the code panel's editor, loaded when a panel opens or an exercise shows
        if editor and ('data-enabled="false"' not in editor.group(0) or f'class="{Class.EXERCISE}"' in html):
            files[posixpath.basename(editor.group(2))] = ((site / editor.group(2)).read_bytes(), f"{editor.group(1)}:editor")
            html = html[:editor.start(2)] + html[editor.end(2):]  # set to a blob: URL by the boot
        for i, (name, (data, into)) in enumerate(sorted(files.items(), key=lambda kv: -len(kv[1][0])), 1):
            packed = base64.b64encode(gzipped(data, kept_in)).decode()
            target = f' data-url-into="{into}"' if into else ""
            payloads.append(f'<script type="{PAYLOAD_TYPE}" data-name="{escape(name)}" data-bytes="{len(data)}"{target}>{packed}</script>')
            parts.append(Part(name, len(data), len(packed) + 80))
            say(f"[{i}/{len(files)}] {name}: {len(data) / 1e6:.2f} MB -> {len(packed) / 1e6:.2f} MB (gzip + base64)")
    head, body_end, tail = html.rpartition("</body>")  # the page's own: a script may hold the text "</body>"
    html = head + "\n".join(payloads) + "\n" + body_end + tail
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in INLINE.findall(html)})
    html = html.replace("<head>", f'<head><meta http-equiv="Content-Security-Policy" content="{POLICY.format(hashes=" ".join(hashes))}">', 1)
    leftover = re.findall(r'<(?:script|img|link|iframe|source)\b[^>]*\b(?:src|href)="(?!data:|#|https?:)([^"]*)"', html)
    if leftover:
        raise ExportError(f"{page}: still refers to files beside it: {leftover[:5]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    total = out.stat().st_size
    parts.insert(0, Part("pàgina (HTML, estils, scripts, figures)", 0, total - sum(p.stored for p in parts)))
    return parts
