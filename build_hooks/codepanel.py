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

from mkdocs.structure.files import File, Files

from . import editor_assets

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


def on_page_content(html: str, *, page, config, files, build) -> str:
    if 'id="tw-config"' not in html:
        return html
    enabled = page.meta.get(OPTION, True) is not False
    return html + (f'<div id="tw-code" hidden data-enabled="{str(enabled).lower()}" '
                   f'data-editor="{escape(build.editor or "", quote=True)}"></div>')
