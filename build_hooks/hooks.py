"""The one hook module named in mkdocs.yml: it reloads the concern modules on each build.

MkDocs imports a hook file once per process, so `mkdocs serve` would keep running stale
code after an edit. On every `on_config` this module drops `widgets_py` and the other
`build_hooks` modules from `sys.modules` and imports them again, so a rebuild prerenders
with the edited widgets and bundles the edited package.
"""

from __future__ import annotations

import importlib
import os
import sys

CONCERNS = ("build_hooks.pyodide_bundle", "build_hooks.widget_pages", "build_hooks.glossary", "build_hooks.mathml",
            "build_hooks.csp", "build_hooks.offline")  # csp after every <script> is in; offline last
_active: list = []


def _fresh_import() -> list:
    for name in list(sys.modules):
        if name.split(".")[0] in ("widgets_py", "build_hooks") and name != "build_hooks":
            del sys.modules[name]
    importlib.invalidate_caches()
    return [importlib.import_module(name) for name in CONCERNS]


def _each(event: str):
    return [getattr(m, event) for m in _active if hasattr(m, event)]


def on_startup(*, command, dirty):
    os.environ["TW_MKDOCS_COMMAND"] = command  # 'build' or 'serve': offline.py and csp.py ask


def on_config(config):
    _active[:] = _fresh_import()
    for handler in _each("on_config"):
        config = handler(config) or config
    return config


def on_files(files, *, config):
    for handler in _each("on_files"):
        files = handler(files, config=config) or files
    return files


def on_page_markdown(markdown, *, page, config, files):
    for handler in _each("on_page_markdown"):
        markdown = handler(markdown, page=page, config=config, files=files)
    return markdown


def on_page_content(html, *, page, config, files):
    for handler in _each("on_page_content"):
        html = handler(html, page=page, config=config, files=files)
    return html


def on_post_page(output, *, page, config):
    for handler in _each("on_post_page"):
        output = handler(output, page=page, config=config)
    return output


def on_post_template(output_content, *, template_name, config):
    for handler in _each("on_post_template"):
        output_content = handler(output_content, template_name=template_name, config=config)
    return output_content


def on_post_build(*, config):
    for handler in _each("on_post_build"):
        handler(config=config)
