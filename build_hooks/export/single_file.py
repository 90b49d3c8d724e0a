"""One chapter, every page of its folder, as one HTML file that is interactive from disk (issues 16, 43).

Browsers refuse workers and fetches from `file://`, but a page may start a worker from a
Blob URL and compile WebAssembly from bytes it holds. So the exported file carries:

- each page of the chapter (its tracks: the page with formulas, the lay one) once, its body
  in a <template>, beside the head and closing scripts they share; export_tracks.js puts
  in the one `?pista=NAME` names (default the chapter's index), and links between the
  chapter's pages are `?pista=` links to the file itself;
- the pages as the site renders them, read from the BUILT site (this module knows the built
  HTML and the files it references, not how the build made them): styles and scripts
  inlined, the favicon as a data URI, Material's search and instant navigation switched
  off (one page, no index, no sitemap), links to other pages sent to the published site
  when its address is known (the page's canonical link, if not a loopback address) and
  marked as not included otherwise, and a CSP that allows no connection at all;
- Pyodide's runtime, numpy, the widgets wheel (code, trained weights, corpus) and the lock,
  each gzip-compressed and written in base 85 (encode85) in a <script type="application/x-tw-payload">;
- export_decode.js (base 85's decoder, in the page and the worker), export_boot.js (page) and
  export_worker.js (worker prelude), which unpack them with DecompressionStream and answer the
  worker's importScripts/fetch from memory.

Compressing the runtime is the slow part (zopfli: ~40 s of CPU, a file per core); the gzip of
each file is kept in the cache by the sha256 of its bytes, so a rebuild with unchanged inputs
costs ~0.3 s per chapter.

The site's chapter pages link their chapter's file, and `./dev export` writes one: downloads.py.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import posixpath
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from html import escape, unescape
from pathlib import Path
from urllib.parse import urlsplit

import zopfli.gzip

from widgets_py.engine.dom import Class

from .. import cache
from ..hosting import csp, preload
from ..runtime import assets, bytecode, trim, zips

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
ANCHOR = re.compile(r'<a\b([^>]*?)\shref="([^"]*)"')
CONFIG = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.S)
DOWNLOAD = re.compile(r'<p class="tw-download">.*?</p>', re.S)
EDITOR = re.compile(r'<div id="([\w-]+)"[^>]*\bdata-editor="([^"]+)"')  # codepanel.js's CodeMirror bundle
INLINE = re.compile(r"<script(?![^>]*\btype=)[^>]*>(.*?)</script>", re.S)
BODY = re.compile(r"<body\b[^>]*>")
TAIL = '<script id="__config"'  # Material's config, then its bundle and the site's scripts: every page's own
TITLE = re.compile(r"<title>(.*?)</title>", re.S)
HEAD_META = re.compile(r'\s*<(?:meta name="description"|link rel="canonical")[^>]*>')  # a page's own, not the file's
TRACK_PARAM = "pista"  # FILE?pista=sense-formules shows that page of the chapter
TRACK_ATTR = "data-tw-pista"


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
    """`data` as gzip, by zopfli: the format the browser inflates (DecompressionStream), 4 % under
    gzip -9 on the runtime (8.27 MB against 8.64), at 40 s of CPU for the runtime's files, so kept
    in the folder `kept_in` by the sha256 of the input: paid once per distinct file, not per
    chapter or build. One iteration: five save 0.3 % more for 30 % more time."""
    return cache.kept(kept_in, data, ".zopfli1.gz", lambda d: zopfli.gzip.compress(d, numiterations=1))


# base64.b85encode's alphabet, and export_decode.js's: printable ASCII without " & ' / < = > \ `
B85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
TW85 = re.search(r'const TW85 = "([^"]+)"', (HERE / "export_decode.js").read_text()).group(1).encode()
TO_TW85 = bytes.maketrans(B85, TW85)


def encode85(data: bytes) -> str:
    """`data` as export_decode.js reads it: base 85 (a quarter over the bytes, where base64 adds
    a third: 0.8 MB less per chapter) in characters that cannot end or escape a <script>."""
    return base64.b85encode(data).translate(TO_TW85).decode("ascii")


def decode85(text: str) -> bytes:
    """encode85's inverse (tests read the payloads with it)."""
    return base64.b85decode(text.encode("ascii").translate(bytes.maketrans(TW85, B85)))


def published_url(html: str) -> str | None:
    """The site's public address, from the page's canonical link; None for a local build."""
    m = re.search(r'<link rel="canonical" href="([^"]+)"', html)
    if not m or urlsplit(m.group(1)).hostname in LOOPBACK:
        return None
    return m.group(1)


def _script(code: str) -> str:
    return "<script>" + code.replace("</script", "<\\/script").replace("<!--", "<\\!--") + "</script>"


# Standard-library modules that cannot do their work in a file's worker, whose CSP allows no
# connection and which has no process, terminal or screen of its own: network clients and
# servers, a second process, a debugger on stdin, a browser to open, a GUI. The file leaves them
# out (0,5 MB of its 14) unless the worker imports one (the site's trimmed stdlib lists what
# it imports); an edit that imports one is told "No module named …", as for any absent module.
UNRUNNABLE = frozenset({
    "http", "xmlrpc", "wsgiref", "socketserver", "ftplib", "smtplib", "smtpd", "imaplib", "poplib", "nntplib", "telnetlib",
    "asynchat", "asyncore", "cgi", "cgitb", "webbrowser", "multiprocessing", "pdb", "bdb", "venv", "ensurepip",
    "idlelib", "lib2to3", "turtle", "turtledemo", "tkinter", "curses"})


def top_names(zip_data: bytes) -> set[str]:
    """The top-level module and package names of a zip, sources and bytecode alike."""
    with zipfile.ZipFile(io.BytesIO(zip_data)) as z:
        return {re.sub(r"\.pyc?$", "", name.split("/")[0]) for name in z.namelist()}


def without_unrunnable(stdlib: bytes, imported: set[str]) -> bytes:
    """The stdlib zip without the UNRUNNABLE modules the worker does not import."""
    gone = UNRUNNABLE - imported
    return zips.without(stdlib, lambda name: re.sub(r"\.pyc?$", "", name.split("/")[0]) in gone)


# What of a package's wheel no import in the file can use: type stubs and Cython headers (read
# by tools: trim.NEVER_IMPORTED), and numpy's f2py, which builds Fortran extensions with a
# compiler in a second process (0,3 MB of the file). An edit that imports numpy.f2py is told
# "No module named …", as for any absent module.
UNUSABLE_IN_WHEELS = ("numpy/f2py/",)


def without_unusable(wheel: bytes) -> bytes:
    """A package's whole wheel without what no import in the file can use, its RECORD to match."""
    return zips.without(wheel, lambda name: name.endswith(trim.NEVER_IMPORTED) or name.startswith(UNUSABLE_IN_WHEELS))


def runtime_files(site: Path, config: dict, kept_in: Path | None = None) -> dict[str, bytes]:
    """Pyodide's core files and every package of the site's lock, each checked against the sha256
    the site's config (core files: pinned bytes, but the stdlib the site trimmed) or lock
    (packages) gives it; the whole archives in place of the trimmed ones (trim.py's index says
    which: the file has no server to fetch a left-out module from), but for what no import in
    the file can run or use (without_unrunnable, without_unusable), without bytecode
    (bytecode.py), and the lock with the packages' new names and sha256: bytecode would add
    2.5 MB (3.1 MB in base 85) to a file whose target is size, and it only saves start-up time."""
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
            raw[archive["file"]] = without_unusable(whole)
        else:  # a core file: the whole one under the name Pyodide loads, but what a file cannot run
            raw[archive["completes"]] = without_unrunnable(whole, top_names(raw[archive["completes"]]))
    for spec in lock["packages"].values():  # ours: a plain tar, without bytecode, gzip'd whole below
        if (name := spec["file_name"]).endswith(zips.TAR_BZ2):
            spec["file_name"] = name.removesuffix(zips.TAR_BZ2) + zips.TAR
            raw[spec["file_name"]] = cache.kept(kept_in, raw.pop(name), ".tar", bytecode.strip_tar)
    files = {}
    for name, data in raw.items():
        if name.endswith((".zip", ".whl")):
            data = cache.kept(kept_in, data, ".nobytecode", bytecode.strip)
            data = cache.kept(kept_in, data, ".stored", zips.stored)  # gzip'd whole below: tighter
        files[name] = data
    for spec in lock["packages"].values():
        spec["sha256"] = assets.sha256(files[spec["file_name"]])
    files[config["lock"]] = json.dumps(lock, indent=1, sort_keys=True).encode()
    return files


def _links(html: str, page: str, site_url: str | None, tracks: dict[str, str] | None = None) -> str:
    """Links to other pages of the site: to a track of this file (`tracks`: page -> its name,
    as ?pista=NAME), to the published site, or marked as not included."""
    page_dir = posixpath.dirname(page)
    tracks = tracks or {}

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
        if target in tracks:
            return f'<a{attrs} href="?{TRACK_PARAM}={escape(tracks[target])}' + (f"#{escape(frag)}" if frag else "") + '"'
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


def chapter_pages(site: Path, chapter: str) -> list[str]:
    """The built pages of `chapter` (its folder, or one of its pages as .md or .html), the
    folder's index first: the pages one file carries, each a track."""
    chapter = re.sub(r"\.md$", ".html", chapter.strip("/"))
    folder = posixpath.dirname(chapter) if chapter.endswith(".html") else chapter
    if chapter.endswith(".html") and not (site / chapter).is_file():
        raise ExportError(f"{site / chapter}: no such built page (CHAPTER is a folder or a page under docs/, e.g. cap15 or cap15/index.md)")
    pages = sorted((p.relative_to(site).as_posix() for p in (site / folder).glob("*.html") if not p.name.endswith(SUFFIX)),
                   key=lambda rel: (posixpath.basename(rel) != "index.html", rel))
    if not folder or not pages:
        raise ExportError(f"{site / folder}: no built chapter pages there (CHAPTER is a folder or a page under docs/, e.g. cap15 or cap15/index.md)")
    return pages


def track_name(page: str) -> str:
    """cap15/sense-formules.html -> sense-formules: the page's ?pista= value in the file."""
    return posixpath.basename(page)[: -len(".html")]


def _page(site: Path, page: str, tracks: dict[str, str]) -> str:
    """One built page with its styles, scripts and icon inlined and its links rewritten."""
    html = (site / page).read_text()
    page_dir = posixpath.dirname(page)
    site_url = published_url(html)
    html = csp.POLICY_META.sub("", html)
    html = preload.PRELOAD.sub("", html)  # the file inlines what they fetch
    html = DOWNLOAD.sub("", html)
    html = NAV_LINK.sub("", html)

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
    return _links(html, page, site_url, tracks)


def _site_wide(head: str) -> str:
    """`head` with its site config's `page` emptied: what names a page's own widgets
    (prerender.config_attribute), for its worker's first packages; the file's worker installs
    every package it carries at its boot."""
    def emptied(match: re.Match) -> str:
        config = json.loads(unescape(match.group(1)))
        return f'data-config="{escape(json.dumps({**config, "page": []}), quote=True)}"'
    return re.sub(r'data-config="([^"]+)"', emptied, head, count=1)


def _split(html: str, page: str) -> tuple[str, str, str]:
    """(head up to and with <body…>, the page's own body, the scripts every page ends with)."""
    body = BODY.search(html)
    tail = html.find(TAIL)
    end = html.rfind("</body>")
    if not body or tail < body.end() or end < tail:
        raise ExportError(f"{page}: no <body> with Material's {TAIL!r} in it: single_file.py no longer reads the theme's pages")
    return html[:body.end()], html[body.end():tail], html[tail:end]


def _same(label: str, first: str, page: str, other: str, index: str) -> None:
    if other != first:
        at = next(i for i, (a, b) in enumerate(zip(first + "\0", other + "\1")) if a != b)
        raise ExportError(f"{page}: its {label} from {index}'s near {other[max(0, at - 60):at + 60]!r}; "
                          "a chapter's pages must share their head and scripts to share one file")


def export(site: Path, chapter: str, out: Path, *, kept_in: Path | None = None, say=lambda line: None,
           shared: dict | None = None) -> list[Part]:
    """Write every page of `chapter` (a folder, e.g. cap15, or one of its pages) of the built
    `site` as one file `out`: the runtime once, each page's body once (the index's as it is,
    every other page's in a <template>), the one that ?pista=NAME names put in place of the
    index's at load by export_tracks.js. `shared`, a dict kept across the exports of one build:
    what every chapter's file carries alike (the runtime's files, packed) is made once."""
    shared = {} if shared is None else shared
    pages = chapter_pages(site, chapter)
    tracks = {page: track_name(page) for page in pages}
    first = (site / pages[0]).read_text()
    site_url = published_url(first)
    say(f"pàgines {', '.join(pages)}; enllaços a {site_url or 'cap lloc publicat (marcats com a no inclosos)'}")
    config = None
    bodies, head, tail = [], "", ""
    for page in pages:
        html = _page(site, page, tracks)
        own_head, body, own_tail = _split(HEAD_META.sub("", html), page)
        own_head = _site_wide(own_head)
        title = TITLE.search(own_head)
        if page == pages[0]:
            head, tail = own_head, own_tail
            kernel = re.search(r'<script\b[^>]*data-config="([^"]+)"[^>]*>', head)
            config = json.loads(unescape(kernel.group(1))) if kernel else None
        _same("head differs", TITLE.sub("", head), page, TITLE.sub("", own_head), pages[0])
        _same("scripts differ", tail, page, own_tail, pages[0])
        shown = escape(unescape(title.group(1))) if title else ""
        if page == pages[0]:  # the index reads without JavaScript (and if a script is refused)
            bodies.append(body)
        else:
            bodies.append(f'<template {TRACK_ATTR}="{escape(tracks[page])}" data-title="{shown}">{body}</template>')
    head = head.replace("</head>", f"<style>{HIDE}</style></head>", 1)
    switch = (HERE / "export_tracks.js").read_text().replace("__TRACKS__", json.dumps(
        {"param": TRACK_PARAM, "attr": TRACK_ATTR, "default": tracks[pages[0]]}))
    html = head + "\n".join(bodies) + _script(switch) + tail

    parts: list[Part] = []
    payloads = []
    if config:
        tw = site / "assets" / "tw"
        worker = (tw / "worker.js").read_text()
        imported = [f"{name}.js" for name in re.findall(r'importScripts\(script\("([\w-]+)"\)\)', worker)]
        if not imported:
            raise ExportError("worker.js imports no script by importScripts(script(NAME)): single_file.py no longer reads it")
        sources = {name: (tw / name).read_text() for name in imported}
        decoder = (HERE / "export_decode.js").read_text()
        sources.update({"worker.js": worker, "export_worker.js": (HERE / "export_worker.js").read_text(),
                        "export_decode.js": decoder})
        boot = (HERE / "export_boot.js").read_text().replace("__EXPORT__", json.dumps({
            "sources": sources, "decoder": "export_decode.js", "prelude": "export_worker.js", "entry": "worker.js",
            "payloadType": PAYLOAD_TYPE, "FILES": FILES_MESSAGE,
            "SCRIPTS": SCRIPTS_MESSAGE}).replace("</", "<\\/"))
        # the decoder and the boot go before the first script after the title (protocol.js, then kernel.js)
        at = html.index("<script", html.index("</title>"))
        html = html[:at] + _script(decoder) + _script(boot) + html[at:]
        runtime = json.dumps(config, sort_keys=True)
        if runtime not in shared:
            shared[runtime] = runtime_files(site, config, kept_in)
        files = {name: (data, "") for name, data in shared[runtime].items()}
        editors = list(EDITOR.finditer(html))  # the code panel's editor, loaded when a panel opens or an exercise shows
        wanted = any('data-enabled="false"' not in m.group(0) for m in editors) or f'class="{Class.EXERCISE}"' in html
        if editors and wanted:
            ids = {m.group(1) for m in editors}
            if len(ids) > 1:
                raise ExportError(f"{chapter}: the code panel's element has ids {sorted(ids)}; one file sets one id's editor")
            files[posixpath.basename(editors[0].group(2))] = ((site / editors[0].group(2)).read_bytes(), f"{ids.pop()}:editor")
            for m in reversed(editors):
                html = html[:m.start(2)] + html[m.end(2):]  # set to a blob: URL by the boot
        keys = {name: ("packed", hashlib.sha256(data).hexdigest()) for name, (data, _) in files.items()}
        todo = {keys[name]: data for name, (data, _) in files.items() if keys[name] not in shared}
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # zopfli lets go of the GIL: one file per core
            shared.update(zip(todo, pool.map(lambda data: encode85(gzipped(data, kept_in)), todo.values())))
        for i, (name, (data, into)) in enumerate(sorted(files.items(), key=lambda kv: -len(kv[1][0])), 1):
            packed = shared[keys[name]]
            target = f' data-url-into="{into}"' if into else ""
            payloads.append(f'<script type="{PAYLOAD_TYPE}" data-name="{escape(name)}" data-bytes="{len(data)}"{target}>{packed}</script>')
            parts.append(Part(name, len(data), len(packed) + 80))
            say(f"[{i}/{len(files)}] {name}: {len(data) / 1e6:.2f} MB -> {len(packed) / 1e6:.2f} MB (gzip + base 85)")
    html = html + "\n".join(payloads) + "\n</body>\n</html>\n"
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in INLINE.findall(html)})
    html = html.replace("<head>", f'<head><meta http-equiv="Content-Security-Policy" content="{POLICY.format(hashes=" ".join(hashes))}">', 1)
    leftover = re.findall(r'<(?:script|img|link|iframe|source)\b[^>]*\b(?:src|href)="(?!data:|#|https?:)([^"]*)"', html)
    if leftover:
        raise ExportError(f"{chapter}: still refers to files beside it: {leftover[:5]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    total = out.stat().st_size
    parts.insert(0, Part(f"pàgines ({len(pages)}: HTML, estils, scripts, figures)", 0, total - sum(p.stored for p in parts)))
    return parts
