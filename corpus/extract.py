#!/usr/bin/env python3
"""Extract a Catalan running-prose corpus from the Debian package gimp-help-ca.

Standalone (Python 3.11 standard library only). It

1. downloads pinned Debian packages with ``apt-get download PKG=VERSION`` into a
   temporary directory (or takes them from ``--deb-dir``),
2. refuses to go on unless every .deb matches its pinned sha256,
3. unpacks them with ``dpkg-deb -x``,
4. walks the Catalan GIMP user manual in book order (the DocBook "next" chain
   starting at index.html), keeps the running prose of each page and drops
   navigation, tables, code blocks, figures, short lines, URL-bearing lines,
   untranslated (English) paragraphs and paragraphs that are mostly non-letters,
5. normalises the character set for a character-level model, and
6. writes ``ca.txt`` (paragraphs separated by one blank line) and ``COPYRIGHT``
   (the package's copyright file, verbatim) next to this script.

The output is deterministic: the same packages give a byte-identical ca.txt.

Usage (from the repository root)::

    python corpus/extract.py                 # download, verify, extract
    python corpus/extract.py --deb-dir DIR   # use .deb files already in DIR
                                             # (still verified by sha256)

Held-out rule (see SOURCE.md): the LAST 10 % of the paragraphs of ca.txt (by
count) are held out; the first 90 % are for training.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------
# Pinned inputs.  The sha256 values are those of the .deb files observed in
# Debian 12 "bookworm" (they equal the SHA256 field of the archive's signed
# Packages index).  gimp-help-ca holds the Catalan manual; its
# /usr/share/doc/gimp-help-ca is a symlink to gimp-help-common, whose .deb
# carries the copyright file, so both are pinned.
# --------------------------------------------------------------------------
PACKAGES: list[tuple[str, str, str]] = [
    (
        "gimp-help-ca",
        "2.10.34-2",
        "a3f29be92f5a05439e25e227ba738a9c47a94b1835fa7c16837200175812aa4a",
    ),
    (
        "gimp-help-common",
        "2.10.34-2",
        "5186e5ba19dfca73c141965abb6fbd8cc8abae4a623af5dfea03195e07c4bda8",
    ),
]

MANUAL_DIR = "usr/share/gimp/2.0/help/ca"
START_PAGE = "index.html"
COPYRIGHT_PATH = "usr/share/doc/gimp-help-common/copyright"

# Pages that are not running Catalan prose: the alphabetical index, the
# "help missing" stub, and the GFDL licence text (English).
SKIP_PAGES = re.compile(r"^(gimp-help-index|help-missing|gfdl.*|legal)\.html$")

# Stop adding whole pages (in book order) once the corpus reaches this size.
TARGET_BYTES = 500_000

# Paragraph filters.
MIN_CHARS = 60          # "very short lines" (titles, captions, terms) go
MIN_WORDS = 8
MIN_LETTER_RATIO = 0.75  # letters / non-space characters

# --------------------------------------------------------------------------
# HTML -> paragraphs
# --------------------------------------------------------------------------
VOID = {"br", "img", "hr", "meta", "link", "input", "col", "area", "base",
        "wbr", "param", "source"}
# Elements whose whole content is dropped.
SKIP_TAGS = {"pre", "script", "style", "table", "head", "title", "object",
             "svg", "math", "noscript"}
SKIP_CLASSES = {"navheader", "navfooter", "toc", "list-of-figures",
                "list-of-tables", "list-of-examples", "mediaobject",
                "screen", "programlisting", "literallayout", "synopsis",
                "cmdsynopsis", "funcsynopsis", "titlepage", "indexterm",
                "index", "reportbug", "title", "segmentedlist",
                "simplelist", "revhistory"}
# Elements that end one paragraph and start another.
BLOCK_TAGS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2",
              "h3", "h4", "h5", "h6", "blockquote", "br", "hr", "body",
              "tr", "td", "th", "caption", "center", "section", "article",
              "header", "footer", "nav", "aside", "form", "fieldset",
              "address", "figure", "figcaption"}


class ProseParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, skipping?)
        self.buf: list[str] = []
        self.paragraphs: list[str] = []

    @property
    def skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def flush(self) -> None:
        text = " ".join("".join(self.buf).split())
        self.buf = []
        if text:
            self.paragraphs.append(text)

    def handle_starttag(self, tag, attrs):
        if tag in BLOCK_TAGS:
            self.flush()
        if tag in VOID:
            return
        classes = set()
        for k, v in attrs:
            if k == "class" and v:
                classes.update(v.split())
        skip = (self.skipping or tag in SKIP_TAGS
                or bool(classes & SKIP_CLASSES))
        self.stack.append((tag, skip))

    def handle_startendtag(self, tag, attrs):
        if tag in BLOCK_TAGS:
            self.flush()

    def handle_endtag(self, tag):
        if tag in VOID:
            if tag in BLOCK_TAGS:
                self.flush()
            return
        # Pop up to and including the matching open tag (tolerates sloppy
        # markup; the DocBook XHTML here is well formed anyway).
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break
        if tag in BLOCK_TAGS:
            self.flush()

    def handle_data(self, data):
        if not self.skipping:
            self.buf.append(data)

    def close(self):
        super().close()
        self.flush()


def html_paragraphs(html_text: str) -> list[str]:
    p = ProseParser()
    p.feed(html_text)
    p.close()
    return p.paragraphs


# --------------------------------------------------------------------------
# Character normalisation
# --------------------------------------------------------------------------
CHAR_MAP = {
    # quotes
    "\u2019": "'", "\u2018": "'", "\u201a": "'", "\u201b": "'",
    "\u2032": "'", "\u00b4": "'", "\u0060": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
    "\u00ab": '"', "\u00bb": '"', "\u2033": '"', "\u2039": "'",
    "\u203a": "'",
    # dashes and minus signs
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-",
    "\u2014": "-", "\u2015": "-", "\u2212": "-",
    # ellipsis
    "\u2026": "...",
    # spaces
    "\u00a0": " ", "\u202f": " ", "\u2007": " ", "\u2009": " ",
    "\u200a": " ", "\u2002": " ", "\u2003": " ", "\u3000": " ",
    # invisible
    "\u00ad": "", "\u200b": "", "\u200c": "", "\u200d": "", "\ufeff": "",
    # Catalan "ela geminada" written with the precomposed letters
    "\u0140": "l\u00b7", "\u013f": "L\u00b7",
    # middle-dot look-alikes used for l.l
    "\u2022": "\u00b7", "\u2027": "\u00b7", "\u22c5": "\u00b7",
    "\u02d9": "\u00b7",
    # a few symbols with plain spellings
    "\u00d7": "x",
    "\u2122": "", "\u00ae": "",
    # GUI menu paths: Imatge \u2192 Guies
    "\u2192": ">",
}

# Characters a kept paragraph may contain after normalisation.  Anything
# else (markup symbols, other scripts, maths, "+" of keyboard shortcuts such
# as Ctrl+Z, "/" of file paths and "%" of settings values) makes the
# paragraph drop, so the text stays running prose and the vocabulary small.
# ">" is kept: the manual writes menu paths as "Imatge > Guies" (mapped from
# the arrow U+2192) inside otherwise ordinary sentences.
ALLOWED = set(
    "abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789"
    " .,;:!?'\"()->"
    "àèéíïòóúüç"
    "ÀÈÉÍÏÒÓÚÜÇ"
    "\u00b7"
)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = "".join(CHAR_MAP.get(ch, ch) for ch in text)
    text = re.sub(r"\.{4,}", "...", text)
    # "l · l" written with spaces around the middle dot -> "l·l"
    text = re.sub(r"(?<=[lL]) ?\u00b7 ?(?=[lL])", "\u00b7", text)
    return " ".join(text.split())


# --------------------------------------------------------------------------
# Paragraph filters
# --------------------------------------------------------------------------
CA_WORDS = set("""
el la els les l d del dels de que en un una uns unes per amb és es com al als
si pot poden són està estan aquest aquesta aquests aquestes aquell aquella
més també però cal seu seva seus seves quan hi ho li ja fer molt menys sobre
entre fins sense sota perquè doncs només cada altre altra altres tot tota
tots totes qual quals ara vegada podeu podem heu teniu haureu feu trobareu
ser fa dins des mitjançant segons aquí llavors així aleshores quin quina
""".split())
EN_WORDS = set("""
the and of is in that for with this you are be can it from which your
will by an have or not when if these those their there was were has been
would should could into than then them they its only also may other such
""".split())
# Words shared by both languages are left out of both lists (a, i, on, no,
# per, me, to -- Catalan "to" means hue/tone -- ...).

WORD_RE = re.compile(r"[a-zàèéíïòóúüç]+")
URL_RE = re.compile(r"(://|www\.|\b[\w.-]+@[\w-]+\.\w)", re.I)


def is_catalan(text: str) -> bool:
    words = WORD_RE.findall(text.lower().replace("\u00b7", ""))
    ca = sum(w in CA_WORDS for w in words)
    en = sum(w in EN_WORDS for w in words)
    return ca >= 2 and ca >= 3 * en


def keep_paragraph(text: str) -> bool:
    if len(text) < MIN_CHARS or len(text.split()) < MIN_WORDS:
        return False
    if URL_RE.search(text):
        return False
    # "Mode; Opacitat; Pinzell; Mida; ..." -- option listings, not prose
    n_semi = text.count(";")
    if n_semi >= 3 and len(text) / (n_semi + 1) < 40:
        return False
    if any(ch not in ALLOWED for ch in text):
        return False
    nonspace = [ch for ch in text if not ch.isspace()]
    letters = sum(ch.isalpha() for ch in nonspace)
    if letters < MIN_LETTER_RATIO * len(nonspace):
        return False
    if not is_catalan(text):
        return False
    return True


# --------------------------------------------------------------------------
# Packages
# --------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def deb_name(pkg: str, version: str) -> str:
    # apt-get download names files PKG_VERSION_ARCH.deb with ':' -> '%3a'
    return f"{pkg}_{version.replace(':', '%3a')}_all.deb"


def fetch_debs(workdir: Path, deb_dir: Path | None) -> dict[str, Path]:
    debs: dict[str, Path] = {}
    for pkg, version, expected in PACKAGES:
        name = deb_name(pkg, version)
        target = workdir / name
        if deb_dir is not None:
            src = deb_dir / name
            if not src.is_file():
                sys.exit(f"error: {src} not found (expected in --deb-dir)")
            shutil.copyfile(src, target)
        else:
            print(f"apt-get download {pkg}={version}", file=sys.stderr)
            res = subprocess.run(
                ["apt-get", "download", f"{pkg}={version}"],
                cwd=workdir, capture_output=True, text=True)
            if res.returncode != 0 or not target.is_file():
                sys.exit(
                    f"error: could not download {pkg}={version} "
                    f"(run 'apt-get update' first; the version must be in "
                    f"the apt sources).\n{res.stderr.strip()}")
        actual = sha256_file(target)
        if actual != expected:
            sys.exit(
                f"error: sha256 mismatch for {name}\n"
                f"  expected {expected}\n  got      {actual}\n"
                f"Refusing to extract an unverified package.")
        print(f"verified {name} sha256 {actual}", file=sys.stderr)
        debs[pkg] = target
    return debs


def unpack(deb: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)


# --------------------------------------------------------------------------
# Book order
# --------------------------------------------------------------------------
NEXT_RE = re.compile(r'<link\s+rel="next"\s+href="([^"#]+)')


def book_order(manual: Path) -> list[str]:
    pages: list[str] = []
    seen: set[str] = set()
    page: str | None = START_PAGE
    while page and page not in seen and (manual / page).is_file():
        pages.append(page)
        seen.add(page)
        m = NEXT_RE.search((manual / page).read_text(encoding="utf-8"))
        page = m.group(1) if m else None
    return pages


def build_corpus(manual: Path) -> tuple[list[str], list[str]]:
    paragraphs: list[str] = []
    used_pages: list[str] = []
    seen: set[str] = set()
    total = 0
    for page in book_order(manual):
        if SKIP_PAGES.match(page):
            continue
        html_text = (manual / page).read_text(encoding="utf-8")
        added = 0
        for raw in html_paragraphs(html_text):
            text = normalise(raw)
            if text in seen or not keep_paragraph(text):
                continue
            seen.add(text)
            paragraphs.append(text)
            total += len(text.encode("utf-8")) + 2
            added += 1
        if added:
            used_pages.append(page)
        if total >= TARGET_BYTES:
            break
    return paragraphs, used_pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deb-dir", type=Path, default=None,
                    help="directory holding the pinned .deb files "
                         "(skips apt-get download; sha256 still checked)")
    ap.add_argument("--out-dir", type=Path, default=HERE,
                    help="where to write COPYRIGHT (default: the directory of this script)")
    ap.add_argument("--text", type=Path, default=HERE.parent / "widgets_py" / "data" / "ca.txt",
                    help="where to write ca.txt (default: widgets_py/maths/data/, package data of the bundle)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="ca-corpus-") as tmp:
        work = Path(tmp)
        debs = fetch_debs(work, args.deb_dir)
        root = work / "root"
        for pkg, _version, _sha in PACKAGES:
            unpack(debs[pkg], root)
        manual = root / MANUAL_DIR
        if not manual.is_dir():
            sys.exit(f"error: {MANUAL_DIR} not found in the packages")
        paragraphs, pages = build_corpus(manual)
        copyright_bytes = (root / COPYRIGHT_PATH).read_bytes()

    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    data = ("\n\n".join(paragraphs) + "\n").encode("utf-8")
    args.text.parent.mkdir(parents=True, exist_ok=True)
    args.text.write_bytes(data)
    (out / "COPYRIGHT").write_bytes(copyright_bytes)

    vocab = sorted(set(data.decode("utf-8")) - {"\n"})
    print(f"pages used: {len(pages)} (first {pages[0]}, last {pages[-1]})",
          file=sys.stderr)
    print(f"wrote {args.text}: {len(data)} bytes, "
          f"{len(paragraphs)} paragraphs, {len(vocab)} distinct characters "
          f"(plus newline), sha256 {hashlib.sha256(data).hexdigest()}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
