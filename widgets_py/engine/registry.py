"""The widget registry: every chapter's widgets, found by name.

`run(name, raw)` is the single entry point used by the CLI, the build-time prerender
and the browser worker, so the static page and the live page come from the same call.
Chapters are found, not listed: every `capNN` package of widgets_py is a chapter, and
every module in it that declares `WIDGET` is a widget, every one that declares `EXERCISE` an
exercise (engine.exercise). The registry imports those modules; they import only the
contracts (`widget.py`, `exercise.py`), never the registry.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import pkgutil
import re
import sys
import types
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import session, svg
from .params import ParamError, validate
from .widget import Partial, Result, Widget, finish, mapped

if TYPE_CHECKING:  # types only: the browser does not import the schema (tests hold the replies to it,
    # test_protocol.py), and exercise.py imports numpy, whose import the worker times (browser.prepare)
    from .exercise import Exercise
    from .protocol import WidgetReply

__all__ = ["Partial", "Result", "Widget", "compute", "exercise", "exercise_names", "formatted", "get",
           "is_measured", "module_file", "names", "replies", "run", "validate_params"]


ROOT = __name__.split(".")[0]  # widgets_py
CHAPTER = re.compile(r"^cap\d+$")


def chapters() -> list[str]:
    """The chapter packages, by name (cap15, …): folders of the package, also those that
    extend its __path__ (the test suite's fixture chapter)."""
    roots = sys.modules[ROOT].__path__
    for root in roots:  # a chapter folder without __init__.py would be invisible: say so
        for folder in sorted(Path(root).glob("cap*")):  # (the browser's has it as bytecode alone: __init__.pyc)
            if CHAPTER.match(folder.name) and folder.is_dir() and not any(
                    (folder / init).is_file() for init in ("__init__.py", "__init__.pyc")):
                raise ParamError(f"{shown(folder)}/ no té __init__.py, i sense ell el registre no hi troba cap "
                                 f"widget; crea'l (pot ser buit): {shown(folder / '__init__.py')}")
    return sorted(m.name for m in pkgutil.iter_modules(roots) if m.ispkg and CHAPTER.match(m.name))


def shown(path: Path | str) -> str:
    """A path as an error shows it: from the repository's root when it is inside it."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def modules() -> list[str]:
    """The chapters' modules, by name, without importing them (the worker imports them one at
    a time after the page is interactive, letting the reader's first changes in between)."""
    out = []
    for chapter in chapters():
        package = importlib.import_module(f"{ROOT}.{chapter}")
        out += [f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)]
    return out


def _declared(attribute: str, what: str) -> dict[str, tuple[Any, types.ModuleType]]:
    """name -> (object, module) of every chapter module declaring `attribute` (WIDGET, EXERCISE);
    a name declared twice in the book is refused, naming both files."""
    found: dict[str, tuple[Any, types.ModuleType]] = {}
    for chapter in chapters():
        package = importlib.import_module(f"{ROOT}.{chapter}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            declared = getattr(module, attribute, None)
            if declared is None:
                continue  # a helper module of the chapter, or one of the other kind
            if declared.name in found:
                raise ParamError(f"{what} '{declared.name}' està declarat dues vegades, a "
                                 f"{shown(found[declared.name][1].__file__)} i a {shown(module.__file__)}; canvia el "
                                 "name= d'un dels dos (els noms són únics a tot el llibre)")
            found[declared.name] = (declared, module)
    return found


@cache
def _widgets() -> dict[str, tuple[Widget, types.ModuleType]]:
    return _declared("WIDGET", "el widget")


def _all() -> dict[str, Widget]:
    return {name: widget for name, (widget, _) in _widgets().items()}


@cache
def _exercises() -> dict[str, tuple[Exercise, types.ModuleType]]:
    return _declared("EXERCISE", "l'exercici")


def refresh() -> None:
    """Find the widgets and exercises again (a module added since they were found: ./dev new widget)."""
    _widgets.cache_clear()
    _exercises.cache_clear()


def exercise_names() -> list[str]:
    return sorted(_exercises())


def exercise(name: str) -> Exercise:
    """The exercise `name` (engine.exercise), found as widgets are: `EXERCISE` in a chapter module."""
    found = _exercises()
    if name not in found:
        raise ParamError(f"exercici desconegut '{name}'; disponibles: {', '.join(sorted(found)) or 'cap'}")
    return found[name][0]


def declared_at(name: str) -> tuple[str, int]:
    """(file, line) of exercise `name`'s `EXERCISE =`: where a build error sends its author."""
    exercise(name)
    module = _exercises()[name][1]
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    line = next((node.lineno for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 and "EXERCISE" in ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)), 1)
    return shown(module.__file__), line


def module_file(name: str) -> str:
    """The file of the chapter module that declares widget or exercise `name` (a preview
    rebuilds the pages that place it when that module, or one it imports, changes)."""
    found = {**_widgets(), **_exercises()}
    if name not in found:
        raise ParamError(f"widget o exercici desconegut '{name}'; disponibles: {', '.join(sorted(found))}")
    return found[name][1].__file__


def get(name: str) -> Widget:
    running = session.active()
    if running is not None and name in running.substitutes:
        return running.substitutes[name]  # a reader's edited module, within its run (substituted())
    widgets = _all()
    if name not in widgets:
        raise ParamError(f"widget desconegut '{name}'; disponibles: {', '.join(sorted(widgets))}")
    return widgets[name]


@contextmanager
def substituted(name: str, widget: Widget):
    """Within the block, `name` is `widget` in this session (a reader's edited module, see edits.py)."""
    substitutes = session.current().substitutes
    before = substitutes.get(name)
    substitutes[name] = widget
    try:
        yield
    finally:
        if before is None:
            del substitutes[name]
        else:
            substitutes[name] = before


def names() -> list[str]:
    return sorted(_all())


def is_staged(name: str) -> bool:
    """Whether the widget's compute runs in stages (a generator of Partials)."""
    return inspect.isgeneratorfunction(get(name).compute)


def _stages(widget: Widget, params: dict):
    """compute() at `params` (without the parameters of a training run), as a generator:
    the Partials of a long compute, then its final state (returned, as StopIteration.value)."""
    skip = widget.trainable.run_params if widget.trainable else ()
    out = widget.compute(**{k: v for k, v in params.items() if k not in skip})
    if not inspect.isgenerator(out):
        return out

    def checked(part):
        assert isinstance(part, Partial), f"{widget.name}: compute yielded {type(part).__name__}, not Partial"
        return part
    return (yield from mapped(out, checked))


def _state(widget: Widget, params: dict) -> Any:
    """The final state: a long compute's partials are not wanted here."""
    return finish(_stages(widget, params))


def _values(widget: Widget, state: Any, partial: bool = False) -> dict:
    raw = widget.values(state) if widget.values else state
    values = {k: _plain(v) for k, v in raw.items()}
    missing = [o.name for o in widget.outputs if o.name not in values]
    assert partial or not missing, f"{widget.name}: outputs not computed: {missing}"
    for key, value in values.items():
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"{widget.name}: la sortida '{key}' no és un nombre finit ({value}); "
                                 "cada sortida ha de ser un nombre real")
    return values


def compute(name: str, raw: dict[str, Any] | None = None) -> tuple[dict, dict]:
    """(validated params, named values): the numbers alone, without drawing the figure. In
    the current session, or one of its own (engine.session)."""
    with session.ensured():
        widget = get(name)
        params = validate(widget.params, raw or {})
        return params, _values(widget, _state(widget, params))


def _drawn(widget: Widget, params: dict, state: Any, partial: bool = False,
           layouts: tuple[svg.Layout, ...] = (svg.WIDE,)) -> Result:
    """The figure in each of `layouts` (engine.svg.drawing), the values and the tables."""
    figures, alt = [], ""
    for lay in layouts:
        with svg.drawing(lay):
            drawn, said = widget.figure(params, state)
        figures.append((lay.name, drawn))
        alt = alt or said  # the first layout's: the numbers a figure states do not depend on its width
    tables = widget.tables(params, state) if widget.tables else ""
    return Result(values=_values(widget, state, partial), figure=figures[0][1], alt=alt, tables=tables,
                  figures=tuple(figures))


def draw(name: str, params: dict, state: Any, layouts: tuple[svg.Layout, ...] = svg.LAYOUTS) -> Result:
    """The figures (in each of `layouts`), values and tables of `state`, a state computed
    elsewhere (build_hooks.pages.reference: the clock's pinned timings)."""
    return _drawn(get(name), params, state, layouts=layouts)


def _as_reply(name: str, result: Result) -> WidgetReply:
    return {"values": result.values, "text": formatted(name, result.values), "figure": result.figure,
            "layout": result.figures[0][0], "alt": result.alt, "tables": result.tables}


def run(name: str, raw: dict[str, Any] | None = None, layouts: tuple[svg.Layout, ...] = (svg.WIDE,)) -> Result:
    """Validate `raw` against the widget's declared parameters, compute once, and draw (in
    each of `layouts`: the build asks for all of them, the browser for the one it shows). In
    the current session, or one of its own (engine.session)."""
    with session.ensured():
        widget = get(name)
        params = validate(widget.params, raw or {})
        return _drawn(widget, params, _state(widget, params), layouts=layouts)


def reply(name: str, raw: dict[str, Any] | None = None, layout: str = svg.WIDE.name) -> WidgetReply:
    """One run as the browser gets it: values, their Catalan text, the figure drawn for
    `layout` (and its name) and tables."""
    return _as_reply(name, run(name, raw, (svg.layout(layout),)))


def replies(name: str, raw: dict[str, Any] | None = None, layout: str = svg.WIDE.name):
    """reply(), stage by stage: a long compute's partials first (each with `partial`, `done`
    and `message`; its values may lack outputs still to come), then the final reply."""
    widget = get(name)
    params = validate(widget.params, raw or {})
    layouts = (svg.layout(layout),)

    def shown(part: Partial) -> dict:
        progress = {"partial": True, "done": part.done, "message": part.message}
        return progress | _as_reply(name, _drawn(widget, params, part.state, partial=True, layouts=layouts))
    state = yield from mapped(_stages(widget, params), shown)
    yield _as_reply(name, _drawn(widget, params, state, layouts=layouts))


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars, so values serialise as plain JSON numbers."""
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict)) else value


def formatted(name: str, values: dict[str, Any]) -> dict[str, str]:
    """Catalan text of every declared output present in `values`, for the panel and for live numbers."""
    widget = get(name)
    return {o.name: o.format(values[o.name]) for o in widget.outputs if o.name in values}


def is_measured(name: str, key: str) -> bool:
    """Values that are timings of the machine running the widget: never compared in tests."""
    return key in get(name).timed


def validate_params(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The full, validated parameter dict of a widget call (defaults filled in)."""
    return validate(get(name).params, raw)
