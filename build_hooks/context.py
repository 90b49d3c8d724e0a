"""The state of one build, on one object that `hooks.py` creates in `on_config`.

Material's plugins keep per-build state on the plugin (`is_serve` set in `on_startup`,
caches reset in `on_config`); our hooks are modules, so the state lives here instead, and
every concern handler receives it as `build=`. Nothing about a build is kept in module
globals or environment variables.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from widgets_py.engine.protocol import SiteConfig

from .runtime.bundle import Archive, site_config


@dataclass
class Build:
    is_serve: bool  # `mkdocs serve`: no CSP meta (live reload injects a script), no service worker
    wheel: Archive | None = None  # this build's widgets_py code package (assemble.on_files)
    models: Archive | None = None  # and its model data's (bundle.MODEL_DATA)
    sources: Archive | None = None  # and its compiled modules' source (assemble.sourceless), if apart
    widgets: dict[str, Archive] = field(default_factory=dict)  # and each calculator's own (runtime/placement.py)
    core: dict[str, str] = field(default_factory=dict)  # Pyodide's files as served -> sha256 (assemble)
    slots: dict[str, list[str]] = field(default_factory=dict)  # page src_uri -> widget HTML by slot
    fixed: dict[str, Any] = field(default_factory=dict)  # fixed-parameter runs, computed once per build
    glossary: Any = None  # glossary.Glossary, loaded in glossary.on_config
    quizzes: dict[str, str] = field(default_factory=dict)  # quiz key -> the page that has it (keys are unique)
    editor: str | None = None  # the code panel's editor bundle in the site (codepanel.on_files), if built
    versions: dict[str, str] = field(default_factory=dict)  # site path -> hash, of files scripts load by URL (offline.on_files)
    dirty: bool = False  # `serve --dirty` (./dev serve): only what an edit changed is rebuilt (authoring/preview.py)
    previous: Any = None  # preview.State of the last build that ended well, in this serve (kept by hooks.py)
    preview: Any = None  # preview.State of this build, kept once it ends well
    uses: dict[str, set[str]] = field(default_factory=dict)  # page src_uri -> widgets and exercises it places or quotes (prerender)
    warm: dict[str, Any] = field(default_factory=dict)  # a dirty serve's results kept while the code is unchanged (hooks.py)
    code_key: Any = None  # widget name -> hash of the code its runs come from (a dirty serve's: preview.on_files)
    rendered: set[str] = field(default_factory=set)  # src_uri of the pages this build renders (preview)

    runtime: Future | None = None  # (core files, numpy, code, model data, sources, widgets) being assembled (assemble.on_config)
    editor_bundle: Future | None = None  # the editor bundle's path being made (codepanel.on_config)

    @staticmethod
    def later(fn, *args) -> Future:
        """fn(*args) begun now in a thread of its own: slow steps that wait on a subprocess
        (node compiling bytecode, rollup bundling the editor) overlap each other and the
        rest of the build; whoever needs the result asks the Future."""
        future: Future = Future()

        def run():
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # re-raised where .result() is asked
                future.set_exception(exc)

        threading.Thread(target=run, daemon=True).start()
        return future

    def site_config(self) -> SiteConfig:
        """What the browser needs to boot (carried by every widget page)."""
        assert self.wheel is not None, "on_files (assemble) makes the wheel before pages render"
        return site_config(self.wheel, self.core, self.versions, self.models, self.sources, self.widgets)
