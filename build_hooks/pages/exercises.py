"""The chapters' exercises in the build: every one proven, each placed one's static HTML.

    <!-- md:exercise kv_bytes -->   alone on its line (directives.py); prerender.py places it

The proof (`on_config`, once per build, whether a page places the exercise or not): its
reference and its solution pass every check, its starter fails one (engine.exercise.proof);
otherwise the build stops at the exercise's `EXERCISE =`, file and line.

The HTML (`html`) is what reads without Python (and what assets/tw/exercise.js makes an editor
of: its names are engine/dom.py's): the title, the statement (Markdown, rendered
with the site's extensions) and the starter code. The hints, the solution and the hidden cases
are not in it, so neither are they in the search index: the page asks the worker for them.
"""

from __future__ import annotations

from html import escape

import markdown as md
from mkdocs.exceptions import PluginError

from widgets_py.engine import registry
from widgets_py.engine.dom import Class, Data

PAGE_ONLY = ("toc", "pymdownx.snippets")  # the page's own: its headings' anchors, the glossary appended


def on_config(config, *, build):
    for name in registry.exercise_names():
        reason = registry.exercise(name).proof()
        if reason is not None:
            where, line = registry.declared_at(name)
            raise PluginError(f"{where}:{line}: l'exercici '{name}' no es pot publicar: {reason}")
    return config


def statement_html(text: str, config) -> str:
    """An exercise's statement as the page's Markdown would render it (maths, lists, code)."""
    extensions = [e for e in config.markdown_extensions if e not in PAGE_ONLY]
    configs = {k: v for k, v in config.mdx_configs.items() if k in extensions}
    return md.markdown(text, extensions=extensions, extension_configs=configs)


def html(name: str, config) -> str:
    """The exercise `name` as the page shows it before Python arrives (and on paper)."""
    e = registry.exercise(name)
    return (f'<div class="{Class.EXERCISE}" id="tw-ex-{escape(name)}" data-{Data.EXERCISE}="{escape(name)}">'
            f'<p class="tw-exercise-title">Exercici: {escape(e.title)}</p>'
            f'<div class="tw-exercise-statement">{statement_html(e.statement, config)}</div>'
            + (f'<p class="tw-exercise-drives">Quan la teva funció passi les comprovacions, la podràs aplicar '
               f'a la figura «{escape(registry.get(e.drives.widget).title)}» i veure-la treballar.</p>'
               if e.drives else '') +
            f'<pre class="{Class.EXERCISE_STARTER}" tabindex="0" aria-label="Codi inicial: {escape(e.title)}">'
            f'<code class="language-python">{escape(e.starter)}</code></pre></div>')
