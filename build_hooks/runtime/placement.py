"""Which of our packages each module of widgets_py ships in: what the first widget waits for, and what can come later.

The worker installs the code's package while Pyodide boots, and no widget answers before it
is in; on a phone, its bytes are on the path to the first answer (issue 44). So it holds only
what the widgets that read no model data (the calculators) import, and the entry module
with what it imports at once. The rest waits for the call that needs it:
- the model widgets' code (the mini-GPT, its training, the WebAssembly kernel's driver) comes
  with the model data, in its package: those widgets are not interactive before it anyway
  (host.js), and no other call reaches that code;
- the code that reads or checks a reader's code (the «Codi» panel's edits, the exercises and
  their checker) comes with the modules' source, in its package, which those calls fetch first;
  so do the modules the worker never imports (their source is all there is of them), but
  those that import the model side (a command's, `./dev train`), which go with it.
A module both other sides import stays in the code's, so that each later package needs only
the code's; so does every package's `__init__.py` (the registry refuses a chapter's folder
without one, and a later package may add modules to it).

Read from the source (build_hooks/imports.py): an import at a module's top runs with it; one
inside a function runs in a call. The calculators' code follows both, but for the functions of
DEFERRING, which import on purpose what only the model data's or the reader's calls reach.
tests/test_placement.py runs each calculator at its defaults with nothing but the code's package
importable.
"""

from __future__ import annotations

from pathlib import Path

from widgets_py.engine import registry

from .. import imports

# The modules whose functions import what only later calls need: the worker's entry (the
# model data's warm-up, the code panel's edits, a training run) and the session (a model's
# weights and kernel, on its first use).
DEFERRING = ("widgets_py/engine/browser.py", "widgets_py/engine/session.py")
ENTRY = "widgets_py/engine/browser.py"  # bundle.ENTRY, as a path
READER = ("widgets_py/engine/edits.py", "widgets_py/engine/exercise.py")  # what reads or checks a reader's code


def _reach(roots: set[str], sites: dict[str, dict[str, str]], deferring: tuple[str, ...] = ()) -> set[str]:
    """`roots` and what they import, at their top or in a call, but not in `deferring`'s calls."""
    seen, todo = set(), list(roots)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += [target for target, when in sites.get(path, {}).items()
                 if when == imports.TOP or (when == imports.CALL and path not in deferring)]
    return seen


def _modules(names: list[str], code: dict[str, Path]) -> dict[str, str]:
    """Widget or exercise name -> the archive name of its module, for those `code` ships (not
    a chapter from elsewhere: the test suite's, which extends the package's __path__)."""
    archive = {path.resolve(): name for name, path in code.items()}
    found = {name: archive.get(Path(registry.module_file(name)).resolve()) for name in names}
    return {name: module for name, module in found.items() if module is not None}


def packages(code: dict[str, Path]) -> tuple[set[str], set[str], set[str]]:
    """(the code's, the model data's, the reader's): the archive names of `code`'s modules
    (bundle.split's code), each in one of the three (the module's doc says which)."""
    sites = imports.import_sites({name: path.read_text(encoding="utf-8") for name, path in code.items()})
    widgets = _modules(registry.names(), code)
    calculators = {path for name, path in widgets.items() if not registry.get(name).models}
    first = _reach({ENTRY} | calculators, sites, DEFERRING)
    deferred = {target for path in DEFERRING for target, when in sites.get(path, {}).items() if when == imports.CALL}
    exercises = set(_modules(registry.exercise_names(), code).values())
    reader = _reach(set(READER) | exercises, sites, DEFERRING)
    models = _reach({path for path in widgets.values() if path not in calculators} | (deferred - reader), sites)
    inits = {path for path in code if path.endswith("/__init__.py")}
    boot = first | (models & reader) | inits  # what both later sides import: each needs the code's alone
    models -= boot
    rest = set(code) - boot - models - reader  # never imported by the worker (a command's module)
    models |= {path for path in rest if _reach({path}, sites, DEFERRING) & models}  # what imports the model side
    return boot, models, set(code) - boot - models


def needing_models() -> list[str]:
    """The widgets and exercises whose calls need the model data's package: the widgets that
    read it (Widget.models), and the exercises that drive one (a pass answers with its module)."""
    widgets = [name for name in registry.names() if registry.get(name).models]
    return sorted([*widgets, *(name for name in registry.exercise_names()
                               if (e := registry.exercise(name)).drives is not None and e.drives.widget in widgets)])
