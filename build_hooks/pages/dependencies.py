"""What a page is made from, read from the files: their hashes, and which widgets_py modules a
module imports. authoring/preview.py decides with it what a dirty serve renders again, and
prerender.py keys a widget's runs by the code they come from (`code_key`), so that a serve
computes a run again only when that code changed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import cache
from ..imports import closure, imports  # noqa: F401 - with snapshot and changed, what preview.py reads here

INPUTS = ("docs", "includes", "overrides", "widgets_py", "build_hooks", "mkdocs.yml")  # as mkdocs.yml's watch:
PACKAGE = "widgets_py/"
HOOKS = "build_hooks/"


def snapshot(root: Path) -> dict[str, str]:
    """Path from the root -> sha256, of every file the serve watches (no caches)."""
    found = {}
    for name in INPUTS:
        top = root / name
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
        for path in paths:
            if "__pycache__" not in path.parts and not path.name.endswith((".pyc", ".pyo")):
                found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """Paths added, removed or edited."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def code_key(module: str | None, inputs: dict[str, str], graph: dict[str, set[str]]) -> str:
    """A hash of everything a widget's run is computed from: its module (from the root; None: a
    module outside the project, then every module) and what it imports, the package's data files
    (weights, corpus, the kernel) and the build hooks (the pinned measurements)."""
    code = closure(module, graph) if module else {p for p in inputs if p.startswith(PACKAGE)}
    paths = code | {p for p in inputs if p.startswith(HOOKS) or (p.startswith(PACKAGE) and not p.endswith(".py"))}
    return cache.key(*(f"{p}\0{inputs.get(p, '')}\n".encode() for p in sorted(paths)))
