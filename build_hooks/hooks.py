"""The one hook module named in mkdocs.yml: one object holds the build, the concerns do the work.

MkDocs loads a hook file once per process and treats it as a plugin. Like Material's
plugins, the state lives on one object (`TEXTBOOK`): `on_startup` records whether this is
`mkdocs serve`, and every `on_config` starts a fresh `context.Build` that each concern's
handlers receive as `build=`, and a fresh widgets_py session (engine.session: the widgets'
memo and models, shared by every page of the build), active until the build ends. On every `on_config` the concern modules and `widgets_py`
are also imported afresh, so a `mkdocs serve` rebuild prerenders with the edited widgets
and bundles the edited package.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

CONCERNS = ("build_hooks.runtime.assemble", "build_hooks.pages.exercises", "build_hooks.pages.quiz",
            "build_hooks.pages.prerender", "build_hooks.pages.codepanel", "build_hooks.pages.glossary",
            "build_hooks.pages.mathml", "build_hooks.pages.narrow", "build_hooks.hosting.csp",
            "build_hooks.export.downloads", "build_hooks.hosting.headers", "build_hooks.hosting.offline",
            "build_hooks.hosting.compress", "build_hooks.hosting.size")
# exercises first among the pages (its proof stops a build before any page is rendered);
# quiz before prerender (it expands its own md: directives), codepanel after it (it reads its widgets); narrow after mathml
# (it wraps long formulas); csp after every <script> is in;
# downloads reads the written pages; headers reads every page's CSP, the downloads' too; offline after them
# (sw.js lists every file); compress after them (it compresses sw.js too); size last (it counts every file)


def _within(package, root: str) -> bool:
    """Whether a package module was imported from under `root`."""
    return all(os.path.abspath(p).startswith(root + os.sep) for p in getattr(package, "__path__", []))


class Textbook:
    """The hooks' plugin object: the serve flag, this build's context, the concern modules."""

    def __init__(self):
        self.is_serve = False  # `load_config` + `build` without on_startup (tests) is a build
        self.build = None  # context.Build, new on every on_config
        self.concerns: list = []
        self.running = contextlib.ExitStack()  # the build's widgets_py session, active from on_config to its end

    def on_startup(self, *, command, dirty):
        self.is_serve = command == "serve"

    def on_config(self, config):
        # this project's widgets_py and build_hooks, before any other on the path: an editable
        # install of another checkout (a virtual environment shared between copies) would
        # otherwise be the one imported, prerendered and bundled, without a word
        root = os.path.dirname(os.path.abspath(config.config_file_path))
        if root in sys.path:
            sys.path.remove(root)
        sys.path.insert(0, root)
        for name in list(sys.modules):
            if name.split(".")[0] in ("widgets_py", "build_hooks") and (name != "build_hooks" or not _within(sys.modules[name], root)):
                gone = sys.modules.pop(name)
                parent, _, child = name.rpartition(".")
                if getattr(sys.modules.get(parent), child, None) is gone:  # the kept build_hooks package
                    delattr(sys.modules[parent], child)  # else `from . import reference` gives the old module
        importlib.invalidate_caches()
        self.running.close()  # a build that ended in an error left its session active
        self.running.enter_context(importlib.import_module("widgets_py.engine.session").Session().active())
        self.concerns = [importlib.import_module(name) for name in CONCERNS]
        self.build = importlib.import_module("build_hooks.context").Build(is_serve=self.is_serve)
        for handler in self._each("on_config"):
            config = handler(config, build=self.build) or config
        return config

    def _each(self, event: str):
        return [getattr(m, event) for m in self.concerns if hasattr(m, event)]

    def on_files(self, files, *, config):
        for handler in self._each("on_files"):
            files = handler(files, config=config, build=self.build) or files
        return files

    def on_page_markdown(self, markdown, *, page, config, files):
        for handler in self._each("on_page_markdown"):
            markdown = handler(markdown, page=page, config=config, files=files, build=self.build)
        return markdown

    def on_page_content(self, html, *, page, config, files):
        for handler in self._each("on_page_content"):
            html = handler(html, page=page, config=config, files=files, build=self.build)
        return html

    def on_post_page(self, output, *, page, config):
        for handler in self._each("on_post_page"):
            output = handler(output, page=page, config=config, build=self.build)
        return output

    def on_post_template(self, output_content, *, template_name, config):
        for handler in self._each("on_post_template"):
            output_content = handler(output_content, template_name=template_name, config=config, build=self.build)
        return output_content

    def on_post_build(self, *, config):
        for handler in self._each("on_post_build"):
            handler(config=config, build=self.build)
        self.running.close()

    def on_build_error(self, *, error):
        self.running.close()


TEXTBOOK = Textbook()
on_startup = TEXTBOOK.on_startup
on_config = TEXTBOOK.on_config
on_files = TEXTBOOK.on_files
on_page_markdown = TEXTBOOK.on_page_markdown
on_page_content = TEXTBOOK.on_page_content
on_post_page = TEXTBOOK.on_post_page
on_post_template = TEXTBOOK.on_post_template
on_post_build = TEXTBOOK.on_post_build
on_build_error = TEXTBOOK.on_build_error
