"""The state of one build, on one object that `hooks.py` creates in `on_config`.

Material's plugins keep per-build state on the plugin (`is_serve` set in `on_startup`,
caches reset in `on_config`); our hooks are modules, so the state lives here instead, and
every concern handler receives it as `build=`. Nothing about a build is kept in module
globals or environment variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bundle import Wheel, site_config


@dataclass
class Build:
    is_serve: bool  # `mkdocs serve`: no CSP meta (live reload injects a script), no service worker
    wheel: Wheel | None = None  # this build's widgets_py wheel (pyodide_bundle.on_files)
    slots: dict[str, list[str]] = field(default_factory=dict)  # page src_uri -> widget HTML by slot
    fixed: dict[str, Any] = field(default_factory=dict)  # fixed-parameter runs, computed once per build
    glossary: Any = None  # glossary.Glossary, loaded in glossary.on_config
    quizzes: dict[str, str] = field(default_factory=dict)  # quiz key -> the page that has it (keys are unique)
    editor: str | None = None  # the code panel's editor bundle in the site (codepanel.on_files), if built

    def site_config(self) -> dict:
        """What the browser needs to boot (carried by every widget page)."""
        assert self.wheel is not None, "on_files (pyodide_bundle) makes the wheel before pages render"
        return site_config(self.wheel)
