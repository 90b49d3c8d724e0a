"""The glossary: one Markdown file, `includes/glossari.md`, read once per build.

Markdown's `abbr` with `pymdownx.snippets` auto_append (mkdocs.yml) already explains every
term in the prose. This module covers what Markdown never sees:

- widget labels, titles and help, which Python renders (widget_html.py), get the same
  `<abbr title=…>`, so a term reads the same in a sentence and in a widget;
- `<!-- md:glossari -->` on a page becomes the table of every term;
- in the prose, a term carries its definition at its first use in each `<h2>` section, as a
  book defines a word where it first needs it: Markdown's `abbr` marks every use (648 on the
  chapter page), and Material mounts a tooltip for each while the page loads, about a second
  of the main thread that Python's boot shares two cores with;
- the first `<abbr>` of each term in each section gets `tabindex="0"`, so Material's
  tooltip (theme feature content.tooltips) opens on keyboard focus as well as on hover.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from html import escape
from pathlib import Path

SOURCE = "includes/glossari.md"
DEFINITION = re.compile(r"^\*\[(.+?)\]:[ \t]*(.+?)[ \t]*$", re.M)
TECHNICAL = re.compile(r"^## Paraules tècniques\n(.*)", re.M | re.S)
DIRECTIVE = "<!-- md:glossari -->"
# the text of a widget's title, control label, help line and value name (widget_html.py)
LABEL = re.compile(r'(<p class="tw-title">|<dt>|<small class="tw-help"[^>]*>|<label for="[^"]*">(?:<input [^>]*>)?)([^<]+)')
ABBR = re.compile(r'<abbr title="([^"]*)">([^<]*)</abbr>')


@dataclass(frozen=True)
class Glossary:
    terms: dict[str, str]  # term -> definition, as written in the source (case matters in prose)
    technical: tuple[str, ...]  # words that need an entry wherever a widget label shows them

    @classmethod
    def load(cls, path: Path) -> "Glossary":
        text = path.read_text(encoding="utf-8")
        terms = dict(DEFINITION.findall(text))
        assert terms, f"{path}: no `*[TERM]: definició` lines"
        tail = TECHNICAL.search(text)
        return cls(terms, tuple(re.findall(r"`([^`]+)`", tail.group(1))) if tail else ())

    def define(self, word: str) -> str | None:
        """The definition of `word`, matched exactly, else ignoring case."""
        if word in self.terms:
            return self.terms[word]
        return next((d for t, d in self.terms.items() if t.casefold() == word.casefold()), None)

    @cached_property
    def pattern(self) -> re.Pattern:
        """Any term as a whole word (not a piece of `LLM.int8`), ignoring case, longest terms first."""
        words = sorted(self.terms, key=len, reverse=True)
        return re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, words)) + r")(?![\w-]|\.\w)", re.I)

    def wrap(self, text: str) -> str:
        """Escaped label text with each term inside an <abbr>."""
        return self.pattern.sub(lambda m: f'<abbr title="{escape(self.define(m.group(1)), quote=True)}">{m.group(1)}</abbr>',
                           text)

    def table(self) -> str:
        """Markdown table of the glossary: terms with the same definition share a row."""
        rows: dict[str, list[str]] = {}
        for term, definition in self.terms.items():
            rows.setdefault(definition, []).append(term)
        key = lambda d: unicodedata.normalize("NFKD", rows[d][0]).casefold()  # noqa: E731  (à sorts as a)
        lines = [f"| {', '.join(rows[d])} | {d} |" for d in sorted(rows, key=key)]
        return "| Terme | Què vol dir |\n|---|---|\n" + "\n".join(lines)


def on_config(config, *, build):
    build.glossary = Glossary.load(Path(config.config_file_path).parent / SOURCE)
    return config


def on_page_markdown(markdown: str, *, page, config, files, build) -> str:
    if DIRECTIVE not in markdown:
        return markdown
    return markdown.replace(DIRECTIVE, build.glossary.table())


def joined(m: re.Match) -> bool:
    """Whether an <abbr> is a piece of a longer name (the LLM of TensorRT-LLM): Markdown's abbr
    matches at a hyphen, the glossary's own pattern (Glossary.pattern) does not."""
    before, after = m.string[m.start() - 1:m.start()], m.string[m.end():m.end() + 1]
    return bool(re.fullmatch(r"[\w-]", before) or re.fullmatch(r"[\w-]", after))


def per_section(html: str, mark) -> str:
    """`mark(match, first)` for each <abbr> of the page; `first`: the term's first in its <h2> section.
    An <abbr> inside a longer name is plain text (`joined`)."""
    out = []
    for section in re.split(r"(?=<h2[ >])", html):
        seen: set[str] = set()

        def each(m: re.Match) -> str:
            if joined(m):
                return m.group(2)
            term = m.group(2).casefold()
            first = term not in seen
            seen.add(term)
            return mark(m, first)

        out.append(ABBR.sub(each, section))
    return "".join(out)


def first_uses(html: str) -> str:
    """The prose's <abbr> at each term's first use per <h2> section; later uses are plain text."""
    return per_section(html, lambda m, first: m.group(0) if first else m.group(2))


def focusable(html: str) -> str:
    """tabindex on the first <abbr> of each term per <h2> section: keyboard users reach
    every explanation without a tab stop at each repetition."""
    return per_section(html, lambda m, first: f'<abbr title="{m.group(1)}" tabindex="0">{m.group(2)}</abbr>'
                       if first else m.group(0))


def on_page_content(html: str, *, page, config, files, build) -> str:
    html = first_uses(html)  # the prose's: a widget's labels are wrapped below, every one
    html = LABEL.sub(lambda m: m.group(1) + build.glossary.wrap(m.group(2)), html)
    return focusable(html)
