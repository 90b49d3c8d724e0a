"""The one hook module named in mkdocs.yml: one object holds the build, the concerns do the work.

MkDocs loads a hook file once per process and treats it as a plugin. Like Material's
plugins, the state lives on one object (`TEXTBOOK`): `on_startup` records whether this is
`mkdocs serve`, and every `on_config` starts a fresh `context.Build` that each concern's
handlers receive as `build=`, and a fresh widgets_py session (engine.session: the widgets'
memo and models, shared by every page of the build), active until the build ends. On every `on_config` the concern modules and `widgets_py`
are also imported afresh, so a `mkdocs serve` rebuild prerenders with the edited widgets
and bundles the edited package. Under `./dev serve` (dirty builds: authoring/preview.py) they
are imported afresh only when a file of widgets_py or build_hooks changed; until then the
session and the results in `Build.warm` are kept, so an edit of prose computes no widget again.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

CONCERNS = ("build_hooks.runtime.assemble", "build_hooks.pages.exercises", "build_hooks.pages.quiz",
            "build_hooks.pages.prerender", "build_hooks.authoring.preview", "build_hooks.pages.codepanel",
            "build_hooks.pages.glossary", "build_hooks.pages.mathml", "build_hooks.pages.narrow", "build_hooks.hosting.csp",
            "build_hooks.export.downloads", "build_hooks.hosting.headers", "build_hooks.hosting.offline",
            "build_hooks.hosting.preload", "build_hooks.hosting.compress", "build_hooks.hosting.size")
# exercises first among the pages (its proof stops a build before any page is rendered);
# quiz before prerender (it expands its own md: directives), codepanel after it (it reads its widgets);
# preview after prerender (it reads what each page uses; only under ./dev serve); narrow after mathml
# (it wraps long formulas); csp after every <script> is in;
# downloads reads the written pages; headers reads every page's CSP, the downloads' too; offline after them
# (sw.js lists every file); preload after offline (it asks for every script of <head>, offline.js too);
# compress after them (it compresses sw.js too); size last (it counts every file)


def _within(package, root: str) -> bool:
    """Whether a package module was imported from under `root`."""
    return all(os.path.abspath(p).startswith(root + os.sep) for p in getattr(package, "__path__", []))


def _code(root: str) -> list[tuple[str, int, int]]:
    """(path, mtime, size) of every file of widgets_py and build_hooks: a dirty serve imports
    them afresh, and computes again what they compute, only when this changes."""
    found = []
    for top in ("widgets_py", "build_hooks"):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                stat = os.stat(os.path.join(folder, name))
                found.append((os.path.join(folder, name), stat.st_mtime_ns, stat.st_size))
    return found


class Textbook:
    """The hooks' plugin object: the serve flag, this build's context, the concern modules."""

    def __init__(self):
        self.is_serve = False  # `load_config` + `build` without on_startup (tests) is a build
        self.dirty = False  # `serve --dirty`: authoring/preview.py decides what a rebuild renders
        self.kept = None  # preview.State of the last build that ended well (a dirty serve's baseline)
        self.code = None  # _code() of the code this process imported (a dirty serve's)
        self.session = None  # widgets_py's session (engine.session), new with the code
        self.warm = {}  # results that hold while the code is unchanged (context.Build.warm)
        self.ended_well = False  # the last build did (else a dirty serve starts afresh: no failure is kept)
        self.build = None  # context.Build, new on every on_config
        self.concerns: list = []
        self.running = contextlib.ExitStack()  # the build's widgets_py session, active from on_config to its end

    def on_startup(self, *, command, dirty):
        self.is_serve = command == "serve"
        self.dirty = self.is_serve and dirty

    def on_config(self, config):
        # this project's widgets_py and build_hooks, before any other on the path: an editable
        # install of another checkout (a virtual environment shared between copies) would
        # otherwise be the one imported, prerendered and bundled, without a word
        root = os.path.dirname(os.path.abspath(config.config_file_path))
        if root in sys.path:
            sys.path.remove(root)
        sys.path.insert(0, root)
        code = _code(root) if self.dirty else None
        self.running.close()  # a build that ended in an error left its session active
        if code is None or code != self.code or not self.ended_well:
            self._import_afresh(root)
            self.session = importlib.import_module("widgets_py.engine.session").Session()
            # the widgets' runs, keyed by the code they come from (prerender.warm_run), outlive an edit
            self.warm = {k: self.warm[k] for k in ("runs", "fixed") if k in self.warm} if code else {}
        self.code, self.ended_well = code, False  # a dirty serve whose code is unchanged keeps its modules, session and results
        self.running.enter_context(self.session.active())
        self.build = importlib.import_module("build_hooks.context").Build(is_serve=self.is_serve, dirty=self.dirty,
                                                                      previous=self.kept, warm=self.warm)
        for handler in self._each("on_config"):
            config = handler(config, build=self.build) or config
        return config

    def _import_afresh(self, root: str) -> None:
        for name in list(sys.modules):
            if name.split(".")[0] in ("widgets_py", "build_hooks") and (name != "build_hooks" or not _within(sys.modules[name], root)):
                gone = sys.modules.pop(name)
                parent, _, child = name.rpartition(".")
                if getattr(sys.modules.get(parent), child, None) is gone:  # the kept build_hooks package
                    delattr(sys.modules[parent], child)  # else `from . import reference` gives the old module
        importlib.invalidate_caches()
        self.concerns = [importlib.import_module(name) for name in CONCERNS]

    def _each(self, event: str):
        return [getattr(m, event) for m in self.concerns if hasattr(m, event)]

    def on_files(self, files, *, config):
        for handler in self._each("on_files"):
            files = handler(files, config=config, build=self.build) or files
        return files

    def on_env(self, env, *, config, files):
        for handler in self._each("on_env"):
            env = handler(env, config=config, files=files, build=self.build) or env
        return env

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
        self.kept = self.build.preview  # this build ended well: the next dirty one starts from it
        self.ended_well = True
        self.running.close()

    def on_build_error(self, *, error):
        self.running.close()


TEXTBOOK = Textbook()
on_startup = TEXTBOOK.on_startup
on_config = TEXTBOOK.on_config
on_files = TEXTBOOK.on_files
on_env = TEXTBOOK.on_env
on_page_markdown = TEXTBOOK.on_page_markdown
on_page_content = TEXTBOOK.on_page_content
on_post_page = TEXTBOOK.on_post_page
on_post_template = TEXTBOOK.on_post_template
on_post_build = TEXTBOOK.on_post_build
on_build_error = TEXTBOOK.on_build_error
