"""Which of our packages each module of widgets_py ships in: what the first widget waits for, and what can come later.

The worker installs the code's package while Pyodide boots, and no widget answers before it
is in; on a phone, its bytes are on the path to the first answer (issue 44). So it holds the
worker's entry, what that imports at once, and what more than one side needs. The rest waits
for what needs it:
- each calculator (a widget that reads no model data) has a package of what it alone
  imports: a page boots with its first calculator's, and asks for its others' once that one
  is live; each widget is interactive as soon as its own is in (worker.js, host.js);
- the model widgets' code (the mini-GPT, its training, the WebAssembly kernel's driver) comes
  with the model data, in its package: those widgets are not interactive before it anyway;
- the code that reads or checks a reader's code (the «Codi» panel's edits, the exercises and
  their checker) comes with the modules' source, in its package, which those calls fetch first;
  so do the modules the worker never imports (their source is all there is of them), but
  those that import the model side (a command's, `./dev train`), which go with it.
Every `__init__.py` is in the code's too: the registry refuses a chapter's folder without one,
and a later package may add modules to it.

Read from the source (build_hooks/imports.py): an import at a module's top runs with it; one
inside a function runs in a call. Both are followed, but for the calls of DEFERRING's modules,
which import on purpose what only the model data's or the reader's calls reach.
tests/test_placement.py runs each calculator at its defaults with nothing but the code's
package and its own importable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from widgets_py.engine import registry

from .. import imports

# The modules whose functions import what only later calls need: the worker's entry (the
# model data's warm-up, the code panel's edits, a training run) and the session (a model's
# weights and kernel, on its first use).
DEFERRING = ("widgets_py/engine/browser.py", "widgets_py/engine/session.py")
ENTRY = "widgets_py/engine/browser.py"  # bundle.ENTRY, as a path
READER = ("widgets_py/engine/edits.py", "widgets_py/engine/exercise.py")  # what reads or checks a reader's code
MODELS, READER_SIDE = "models", "reader"  # the two later sides, beside each calculator's name


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


@dataclass(frozen=True)
class Placement:
    """The archive names of the code's modules, by the package each ships in."""
    code: frozenset[str]  # the code's: what the entry needs, and what more than one side needs
    widgets: dict[str, frozenset[str]]  # a calculator's own: what it alone needs (none: all in the code's)
    models: frozenset[str]  # the model data's: what only the model widgets need
    reader: frozenset[str]  # the sources': what only a reader's code needs, and what no call imports


def place(code: dict[str, Path]) -> Placement:
    """Each module of `code` (bundle.split's code) in one package: the module's doc says which."""
    sites = imports.import_sites({name: path.read_text(encoding="utf-8") for name, path in code.items()})
    widgets = _modules(registry.names(), code)
    entry = _reach({ENTRY}, sites, DEFERRING) | {path for path in code if path.endswith("/__init__.py")}
    calculators = {name: _reach({path}, sites, DEFERRING) - entry for name, path in widgets.items()
                   if not registry.get(name).models}
    deferred = {target for path in DEFERRING for target, when in sites.get(path, {}).items() if when == imports.CALL}
    reader = _reach(set(READER) | set(_modules(registry.exercise_names(), code).values()), sites, DEFERRING)
    models = _reach({path for name, path in widgets.items() if name not in calculators} | (deferred - reader), sites)
    sides = {path: {name for name, reach in calculators.items() if path in reach}
             | ({MODELS} if path in models else set()) | ({READER_SIDE} if path in reader else set())
             for path in set(code) - entry}
    shared = entry | {path for path, who in sides.items() if len(who) > 1}
    with_models = {path for path, who in sides.items() if who == {MODELS}}
    rest = {path for path, who in sides.items() if not who}  # never imported by the worker (a command's module)
    with_models |= {path for path in rest if _reach({path}, sites, DEFERRING) & with_models}  # what imports the model side
    own = {name: frozenset(path for path, who in sides.items() if who == {name}) for name in calculators}
    own = {name: found for name, found in own.items() if found}
    return Placement(frozenset(shared), own, frozenset(with_models),
                     frozenset(set(code) - shared - with_models - set().union(*own.values())))


def needing_models() -> list[str]:
    """The widgets and exercises whose calls need the model data's package: the widgets that
    read it (Widget.models), and the exercises that drive one (a pass answers with its module)."""
    widgets = [name for name in registry.names() if registry.get(name).models]
    return sorted([*widgets, *(name for name in registry.exercise_names()
                               if (e := registry.exercise(name)).drives is not None and e.drives.widget in widgets)])


def driving(widgets: dict[str, str]) -> dict[str, str]:
    """`widgets` (calculator widget -> its own package) with each exercise that drives one of
    them: a check that passes answers with that widget's module, so it needs the package too."""
    return widgets | {name: widgets[e.drives.widget] for name in registry.exercise_names()
                      if (e := registry.exercise(name)).drives is not None and e.drives.widget in widgets}
