"""A reader's edit of a widget's module, run in the worker in place of the shipped one.

The page's "Codi" panel (assets/tw/codepanel.js) asks for `source(name)`: the text of the
widget's module as installed from the site's wheel, found by the widget's module, never
by a path. "Executa" sends the edited text back with a key naming the widget on its page;
`render(name, key, code, params_json)` compiles it as a fresh module of the same package
(so its relative imports resolve to the shipped engine and models), takes its `WIDGET`
and answers exactly like registry.reply (a run's last reply), with the edited widget
standing in for the shipped one during that call only; other widgets, and other instances of the same widget,
keep the shipped module. What the edited code keeps for the weights (session.cached:
prefills, held-out losses, drawn figures) is its own, apart from the shipped code's: an
edit that changes how one is computed is never answered with the shipped result.

What this cannot do is isolate the edit: it is Python in the same interpreter, and may
change any module's state (patch `fmt.number`, replace a GPU's datasheet). So the page
treats the whole worker as edited while an edit is applied (every widget says so), gives
the page a fresh worker when the edit is restored, and never runs a stored edit by itself
(assets/tw/codepanel.js, host.js). What the browser lets any Python in the worker reach is
narrowed by assets/tw/lockdown.js; what its output may draw, by engine/markup.py.

A failure (syntax error, exception, `SystemExit`, a module without a matching WIDGET) is an
answer, not a crash: {"error": {"kind", "message", "line"}}, the line being in the edited text.
"""

from __future__ import annotations

import hashlib
import json
import sys
import types
from pathlib import Path

from . import reader_code, registry, session
from .widget import Widget


def module_of(name: str) -> types.ModuleType:
    """The module that declares widget `name` (the one whose WIDGET it is)."""
    widget = registry.get(name)
    for module in list(sys.modules.values()):
        if getattr(module, "WIDGET", None) is widget:
            return module
    raise LookupError(f"no module declares the widget '{name}'")


def source(name: str) -> str:
    """JSON {module, file, source}: the module's text as installed (from the wheel, in Pyodide;
    beside its bytecode, where the code's wheel ships that alone: bundle.py's sources)."""
    module = module_of(name)
    path = Path(module.__file__)
    if path.suffix == ".pyc":  # loaded from bytecode alone: its source is installed beside it (worker.js)
        path = path.with_suffix(".py")
    return json.dumps({"module": module.__name__, "file": path.name,
                       "source": path.read_text(encoding="utf-8")}, ensure_ascii=False)


def _filename(module: types.ModuleType) -> str:
    return f"<codi editat: {module.__name__}>"


def load(name: str, key: str, code: str) -> Widget:
    """The WIDGET of `code` run as widget `name`'s module; compiled once per key and text."""
    digest = hashlib.sha256(code.encode()).hexdigest()
    hit = session.current().edits.get(key)
    if hit and hit[0] == digest:
        return hit[1]
    shipped = module_of(name)
    module = reader_code.run_module(code, shipped.__name__, shipped.__package__, _filename(shipped), shipped.__doc__)
    widget = module.__dict__.get("WIDGET")
    if not isinstance(widget, Widget):
        raise TypeError("el codi ha de definir WIDGET = Widget(...)")
    if widget.name != name:
        raise ValueError(f"WIDGET ha de conservar el nom '{name}' (té '{widget.name}')")
    session.current().edits[key] = (digest, widget)
    return widget


def render(name: str, key: str, code: str, params_json: str, layout: str = "wide") -> str:
    """registry.reply with the edited module (its figure drawn for `layout`, engine.svg); or
    {"error": {kind, message, line}}."""
    filename = _filename(module_of(name))
    try:
        widget = load(name, key, code)
        digest = session.current().edits[key][0]  # results kept for the weights are this text's own (session.scoped)
        with registry.substituted(name, widget), session.scoped(("edit", digest)):
            return json.dumps(registry.reply(name, json.loads(params_json), layout), ensure_ascii=False)
    except BaseException as exc:  # noqa: BLE001 - the reader's code may raise anything (SystemExit too): report it, keep the worker
        session.current().edits.pop(key, None)
        return json.dumps({"error": reader_code.failure(exc, filename)}, ensure_ascii=False)

