"""The widgets' code panel ("Codi"): the editor bundle in the site, and the page's choice.

The panel itself is docs/assets/tw/codepanel.js; the Python source it shows comes from the
worker (the module as installed from the site's wheel), not from the build. Here:

- `on_config` starts making the editor bundle (editor_assets.py) beside the rest of the build,
  and `on_files` adds it to the site, named by its hash;
- `on_page_content` tells widget pages where the bundle is and whether the panel is shown:
  a page turns it off with `codi: false` in its front matter (the no-formulas track, whose
  readers did not ask for code).
"""

from __future__ import annotations

from html import escape

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from widgets_py.engine.dom import Data, Id

from ..runtime import editor_assets
from . import directives
from .widget_html import is_live

OPTION = "codi"  # front matter: `codi: false` hides the panel on that page


def on_config(config, *, build):
    build.editor_bundle = build.later(editor_assets.bundle)
    return config


def on_files(files: Files, *, config, build) -> Files:
    path = build.editor_bundle.result()
    if path is not None:
        build.editor = editor_assets.site_path(path)
        files.append(File.generated(config, build.editor, abs_src_path=str(path)))
    return files


def _line(path: str, key: str) -> int:
    """The front matter line that sets `key` (1 if it cannot be found)."""
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        return 1
    return next((i for i, line in enumerate(lines, 1) if line.split(":", 1)[0].strip() == key), 1)


def panel_enabled(page) -> bool:
    """The page's `codi:` choice: YAML's true or false, nothing else (`"false"`, `0`, `fals` or
    an empty value would otherwise read as "on" without a word)."""
    value = page.meta.get(OPTION, True)
    if not isinstance(value, bool):
        line = _line(page.file.abs_src_path, OPTION) if page.file.abs_src_path else 1
        raise PluginError(f"{directives.source(page)}:{line}: `{OPTION}: {value!r}` a la capçalera; "
                          f"ha de ser `{OPTION}: true` o `{OPTION}: false` (sense cometes)")
    return value


def on_page_content(html: str, *, page, config, files, build) -> str:
    enabled = panel_enabled(page)  # checked on every page, widgets or not
    if not is_live(html):
        return html
    return html + (f'<div id="{Id.CODE}" hidden data-{Data.ENABLED}="{str(enabled).lower()}" '
                   f'data-{Data.EDITOR}="{escape(build.editor or "", quote=True)}"></div>')
