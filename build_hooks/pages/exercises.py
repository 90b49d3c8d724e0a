"""The chapters' exercises in the build: every one proven, each placed one's static HTML.

    <!-- md:exercise kv_bytes -->   alone on its line (directives.py); prerender.py places it
    <!-- md:exercicis -->           the page's exercises, listed with links (exercise.js marks
                                    the solved ones, counts them and clears them)

The proof (`on_config`, once per build, whether a page places the exercise or not): its
reference and its solution pass every check, its starter fails one (engine.exercise.proof);
otherwise the build stops at the exercise's `EXERCISE =`, file and line.

The HTML (`html`) is what reads without Python (and what assets/tw/exercise.js makes an editor
of: its names are engine/dom.py's): the title, the statement (Markdown, rendered
with the site's extensions) and the starter code. The hints, the solution and the hidden cases
are not in it, so neither are they in the search index: the page asks the worker for them.
"""

from __future__ import annotations

import re
from html import escape

import markdown as md
from mkdocs.exceptions import PluginError

from widgets_py.engine import registry
from widgets_py.engine.dom import Class, Data

from . import directives

PROGRESS = "<!-- md:exercicis -->"

PAGE_ONLY = ("toc", "pymdownx.snippets")  # the page's own: its headings' anchors, the glossary appended


def on_config(config, *, build):
    for name in registry.exercise_names():
        reason = registry.exercise(name).proof()
        if reason is not None:
            where, line = registry.declared_at(name)
            raise PluginError(f"{where}:{line}: l'exercici '{name}' no es pot publicar: {reason}")
    return config


def on_page_markdown(markdown: str, *, page, config, files, build) -> str:
    code = [m.span() for m in directives.CODE.finditer(markdown)] if PROGRESS in markdown else []
    at = [m.start() for m in re.finditer(re.escape(PROGRESS), markdown) if not any(a <= m.start() < b for a, b in code)]
    if not at:
        return markdown  # none, or only inside code (a page that shows how to write one)
    # a bad directive is reported by prerender.py, which runs next, with its page and line
    try:
        names = [d.args.split()[0] for d in directives.scan(markdown) if d.kind == "exercise"]
    except directives.DirectiveError:
        return markdown
    if not names:
        line = markdown[:at[0]].count("\n") + 1 + directives.line_offset(page.file.abs_src_path, markdown)
        raise PluginError(f"{directives.source(page)}:{line}: {PROGRESS} en una pàgina sense exercicis; "
                          "permès: en una pàgina amb almenys un '<!-- md:exercise NOM -->'")
    listed = progress_html(names)
    for i in reversed(at):
        markdown = markdown[:i] + listed + markdown[i + len(PROGRESS):]
    return markdown


def unplaced_figure(name: str, widgets: set[str]) -> str | None:
    """Why exercise `name` cannot go on a page placing `widgets`: one that drives a figure
    («Aplica a la figura») needs that figure on its page."""
    drives = registry.exercise(name).drives
    if drives is None or drives.widget in widgets:
        return None
    return (f"l'exercici '{name}' mou la figura '{drives.widget}', que no és en aquesta pàgina; posa-hi "
            f"'<!-- md:widget {drives.widget} -->' o tria un exercici sense figura")


def progress_html(names: list[str]) -> str:
    """The page's exercises as a list of links, in the page's order: what a reader has solved is
    marked by exercise.js (and counted in the status line), which adds the control that clears it."""
    items = "".join(f'<li data-{Data.LISTED}="{escape(n)}"><a href="#tw-ex-{escape(n)}">'
                    f'{escape(registry.exercise(n).title)}</a></li>' for n in names)
    return (f'\n<div class="{Class.EXERCISES}"><p class="{Class.EXERCISES_STATUS}" role="status" aria-live="polite">'
            f'Els exercicis d\'aquesta pàgina ({len(names)}):</p><ul>{items}</ul></div>\n')


def statement_html(text: str, config) -> str:
    """An exercise's statement as the page's Markdown would render it (maths, lists, code)."""
    extensions = [e for e in config.markdown_extensions if e not in PAGE_ONLY]
    configs = {k: v for k, v in config.mdx_configs.items() if k in extensions}
    return md.markdown(text, extensions=extensions, extension_configs=configs)


def html(name: str, config) -> str:
    """The exercise `name` as the page shows it before Python arrives (and on paper)."""
    e = registry.exercise(name)
    drives = (f'<p class="tw-exercise-drives">Quan la teva funció passi les comprovacions, la podràs aplicar a la '
              f'figura «{escape(registry.get(e.drives.widget).title)}» i veure-la treballar.</p>' if e.drives else "")
    return (f'<div class="{Class.EXERCISE}" id="tw-ex-{escape(name)}" data-{Data.EXERCISE}="{escape(name)}">'
            f'<p class="tw-exercise-title">Exercici: {escape(e.title)}</p>'
            f'<div class="tw-exercise-statement">{statement_html(e.statement, config)}</div>'
            '<p class="tw-exercise-frame">El codi inicial és un primer intent que no passa les comprovacions: '
            'troba què hi falla i corregeix-lo.</p>'
            f'<pre class="{Class.EXERCISE_STARTER}" tabindex="0" aria-label="Codi inicial: {escape(e.title)}">'
            f'<code class="language-python">{escape(e.starter)}</code></pre>{drives}</div>')
