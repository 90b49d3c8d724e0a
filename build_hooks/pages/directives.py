"""The grammar of the Markdown directives, and the build errors that name file and line.

    <!-- md:widget NAME key=value ... -->      alone on its line (indented inside a list
                                               item or an admonition is fine)
    <!-- md:value INSTANCE.VALUE key=value ... -->   anywhere in a line of prose
    <!-- md:exercise NAME -->                  alone on its line, as a widget; no parameters

Exactly one space after `<!--` and before `-->`, on one line. Anything else outside code
that looks like a directive (`<!-- md:…`, `md:widget`, `md:value`) is an error, never
silently left as a comment: a typo (`md:widgte`), a missing space, an unclosed or empty
directive, a widget or an exercise in the middle of a line. Keys appear once. `prerender`
does the placing; this module only reads and refuses.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from widgets_py.engine.params import Param, ParamError, pairs

CODE = re.compile(r"(^(```|~~~).*?^\2[ \t]*$|`[^`\n]+`)", re.M | re.S)  # fenced blocks, code spans
KINDS = ("widget", "value", "exercise")
ALONE = ("widget", "exercise")  # kinds that stand alone on their line (they become a block)
DIRECTIVE = re.compile(r"<!-- md:(" + "|".join(KINDS) + r") (\S[^\n]*?) -->")  # the only accepted form
# directives other hook modules own and check themselves (glossary.py, quiz.py), in the same
# well-spaced form; a new one is added here so that misspelt ones are still caught
OTHERS = ("glossari", "exercicis", "quiz", "end-quiz", "question", "option", "model", "why")
OTHER = re.compile(r"<!-- md:(?:" + "|".join(map(re.escape, OTHERS)) + r")(?: [^\n]*?)? -->")
LOOKALIKE = re.compile(r"<!--\s*md\s*:|\bmd:(?:" + "|".join(KINDS) + r")\b", re.I)  # anything resembling one
ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")  # an instance id: safe in id, for and data-* as written
ALLOWED = ("permès: '<!-- md:widget NOM clau=valor … -->' o '<!-- md:exercise NOM -->' sols a la seva línia, "
           "o '<!-- md:value INSTÀNCIA.VALOR clau=valor … -->', amb un espai després de '<!--' i abans de '-->'")


class DirectiveError(ParamError):
    """A directive the build refuses; `line` is the line in the Markdown source file."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Directive:
    kind: str  # 'widget', 'value' or 'exercise'
    args: str  # what follows `md:KIND `
    start: int  # span of the comment in the page's Markdown
    end: int
    line: int  # 1-based line in the source file (front matter counted)
    line_start: int  # span of its whole line (a widget or an exercise replaces the line)
    line_end: int
    indent: str  # the whitespace before a widget or an exercise (kept: lists and admonitions)


def source(page) -> str:
    """The page's Markdown file as an error names it: from the repository's root (where the
    build runs), `docs/cap15/index.md`, so it can be opened as written."""
    path = page.file.abs_src_path
    if not path:
        return f"docs/{page.file.src_uri}"
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def split(args: str) -> tuple[str, dict[str, str]]:
    """`NAME key=value ...` -> (NAME, {key: value}); a key given twice is refused."""
    head, *rest = shlex.split(args)
    return head, pairs(rest)


def check_id(instance: str) -> str:
    if not ID.fullmatch(instance):
        raise ParamError(f"id={instance!r} no és vàlid; permès: una lletra i després lletres, xifres, '-' o '_'")
    return instance


def check_grid(params: tuple[Param, ...], written: dict[str, str], values: dict, shown: list[str] | None) -> None:
    """A value written for a shown slider must be one of its positions (else the first touch
    of another control would recompute with the slider's nearest value instead)."""
    for p in params:
        if p.name in written and (shown is None or p.name in shown) and not p.on_grid(values[p.name]):
            grid = p.positions()
            listed = ", ".join(p.display(v) for v in grid[:12]) + (" …" if len(grid) > 12 else "")
            raise ParamError(f"paràmetre '{p.name}': {written[p.name]} no és un valor del control; permès: "
                             f"{listed} (o deixa'l fix amb controls= sense '{p.name}')")


def what_is_wrong(line_text: str) -> str:
    """Why a directive-like text (from where it starts to the end of its line) is refused."""
    kind = re.match(r"(?:<!--\s*)?md\s*:\s*([\w-]*)", line_text, re.I)
    name = kind.group(1) if kind else ""
    if name in OTHERS:
        return f"directiva md:{name} mal escrita"
    if name not in KINDS:
        others = ", ".join(f"md:{o}" for o in OTHERS)
        return (f"directiva desconeguda 'md:{name}' (permeses: {', '.join(f'md:{k}' for k in KINDS)}; "
                f"i, d'altres mòduls, {others})")
    if "-->" not in line_text:
        return f"directiva md:{name} sense tancar a la mateixa línia"
    if re.match(rf"<!-- md:{name}\s*-->", line_text):
        return f"directiva md:{name} buida: falta el nom"
    return f"directiva md:{name} mal espaiada"


def line_offset(abs_src_path: str | None, markdown: str) -> int:
    """Lines MkDocs dropped before `markdown` (the front matter), to report source lines."""
    try:
        source = Path(abs_src_path).read_text(encoding="utf-8-sig")
    except (OSError, TypeError):
        return 0
    return source[: len(source) - len(markdown)].count("\n") if source.endswith(markdown) else 0


def scan(markdown: str, offset: int = 0) -> list[Directive]:
    """Every directive outside code, in order; raises DirectiveError at the first bad one."""
    code = [m.span() for m in CODE.finditer(markdown)]
    inside = lambda at, spans: any(a <= at < b for a, b in spans)  # noqa: E731
    line_of = lambda at: offset + markdown.count("\n", 0, at) + 1  # noqa: E731
    found = [m for m in DIRECTIVE.finditer(markdown) if not inside(m.start(), code)]
    covered = [m.span() for m in found]
    covered += [m.span() for m in OTHER.finditer(markdown)]
    for bad in LOOKALIKE.finditer(markdown):
        if not inside(bad.start(), code) and not inside(bad.start(), covered):
            end = markdown.find("\n", bad.start())
            text = markdown[bad.start(): None if end < 0 else end]
            raise DirectiveError(f"{what_is_wrong(text)}; {ALLOWED}", line_of(bad.start()))
    out = []
    for m in found:
        line_start = markdown.rfind("\n", 0, m.start()) + 1
        line_end = markdown.find("\n", m.end())
        line_end = len(markdown) if line_end < 0 else line_end
        indent = markdown[line_start:m.start()]
        if m.group(1) in ALONE and (indent.strip() or markdown[m.end():line_end].strip()):
            raise DirectiveError(f"md:{m.group(1)} ha d'anar sol a la seva línia (pot anar sagnat dins d'una "
                                 f"llista o d'un avís); {ALLOWED}", line_of(m.start()))
        out.append(Directive(m.group(1), m.group(2), m.start(), m.end(), line_of(m.start()),
                             line_start, line_end, indent))
    return out
