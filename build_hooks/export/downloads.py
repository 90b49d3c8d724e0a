"""Each chapter as one file: the link on its pages, the file in its folder, and `./dev export`.

A chapter page (docs/capNN/*.md) gets "Descarrega el capítol" under its title; after the
build has written the pages, single_file.py makes ONE file of all the chapter's pages (both
tracks: the runtime once, a reader switches track inside it) and puts it in the chapter's
folder as capitol.descarrega.html (not precached by the service worker: see offline.py); every
page of the chapter links it. Under `mkdocs serve` there is neither. `./dev export CHAPTER
OUT.html` (CHAPTER: cap15, or one of its pages) builds the site (or takes --site DIR) and
writes the file, with its progress and a per-part breakdown.
"""

from __future__ import annotations

import argparse
import posixpath
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import cache, generator
from .single_file import SUFFIX, ExportError, export

CHAPTER = re.compile(r"^cap\d+/[^/]+\.md$")  # the pages that offer their file
ROOT = Path(__file__).resolve().parents[2]  # the project, where mkdocs.yml is


def _cache() -> Path:
    return cache.folder("export")  # the runtime files without bytecode, and their gzip, by sha256


FILE = "capitol" + SUFFIX  # cap15/capitol.descarrega.html: the chapter's one file


def download_name(folder: str) -> str:
    """cap15 -> cap15.html: the name a reader's browser saves the chapter's file under."""
    return folder.strip("/").replace("/", "-") + ".html"


def on_post_page(output: str, *, page, config, build) -> str:
    if build.is_serve or not CHAPTER.match(page.file.src_uri):
        return output  # under `mkdocs serve` no file is written, so no link either
    link = (f'<p class="tw-download"><a href="{FILE}" download="{download_name(posixpath.dirname(page.file.dest_uri))}">'
            "Descarrega el capítol</a>: un sol fitxer HTML amb Python inclòs i totes les pàgines del capítol, "
            "interactiu sense connexió "
            "(provat amb Chromium, el motor de Chrome i Edge; Firefox ESR; i WebKitGTK, el motor de Safari, "
            "no Safari mateix).</p>")
    return re.sub(r"(</h1>)", r"\1" + link.replace("\\", "\\\\"), output, count=1)


def chapters(site: Path) -> list[str]:
    """The folders whose pages offer the chapter's file."""
    return sorted({page.parent.relative_to(site).as_posix() for page in site.rglob("*.html")
                   if not page.name.endswith(SUFFIX) and 'class="tw-download"' in page.read_text()})


def on_post_build(*, config, build) -> None:
    if build.is_serve:
        return
    site = Path(config["site_dir"])
    shared: dict = {}  # the runtime's files and their packed form, the same in every chapter's file
    for folder in chapters(site):
        export(site, folder, site / folder / FILE, kept_in=_cache(), shared=shared)
    cache.prune(_cache())  # an entry per edit of the package


def _mb(n: int) -> str:
    return f"{n / 1e6:6.2f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev export", description="One chapter (all its pages) as one self-contained HTML file.")
    parser.add_argument("chapter", help="the chapter's folder as in docs/, e.g. cap15, or one of its pages, e.g. cap15/index.md")
    parser.add_argument("out", type=Path, help="the HTML file to write")
    parser.add_argument("--site", type=Path, help="an already built site (default: build one now, strict)")
    args = parser.parse_args(argv)
    say = lambda line: print(f"export: {line}", file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            say("construint el lloc (properdocs build --strict)…")
            done = subprocess.run(generator.build_command(site, "--quiet"), cwd=ROOT)
            if done.returncode:
                return done.returncode
        try:
            parts = export(site, args.chapter, args.out, kept_in=_cache(), say=say)
        except (ExportError, OSError) as exc:
            print(f"export: error: {exc}", file=sys.stderr)
            return 1
    print(f"{'part':<52} {'original':>10} {'al fitxer':>10}")
    for p in parts:
        print(f"{p.label:<52} {_mb(p.raw) if p.raw else '':>10} {_mb(p.stored):>10}")
    print(f"{'total ' + str(args.out):<52} {'':>10} {_mb(args.out.stat().st_size):>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
