"""The browser's protocol, written once: the messages between the page (kernel.js) and the
Pyodide worker (worker.js), the calls' payloads and replies, the worker's entries into this
package (browser.py).

After Pyodide's docs/usage/webworker.md (one id per call, resolved by the reply with that
id) and stlite's kernel (typed message unions, namespaced events, one reply type per
request). The page and the worker load the constants from docs/assets/tw/protocol.js; tsc
reads the types from types/protocol.d.ts (tests/test_types.py). Both files are generated
from this module (`python -m widgets_py.engine.protocol --write`) and tests/test_protocol.py
checks that they are, that every widget's reply and step is what the types say, and that
worker.js calls only the entries listed here.

    page -> worker  Init, Call (a widget's run, its source and edits; an exercise and a
                    check of the reader's answer), Cancel, Ping (each second
                    once booted: is the worker answering?), LoadModels (fetch the model
                    data now: a model widget is near the viewport, or the page is idle),
                    LoadWidgets (these calculators' own packages now: the page's others,
                    once its first is live)
    worker -> page  Progress | Loaded | Error (the boot), WidgetsLoaded (these calculators'
                    own packages are in, or why not), Warm (after Loaded: the widgets'
                    modules and the first changes' preparations are in; `failed`: what did
                    not load), ModelsLoaded (the model data is in, or why not), Step (a long
                    call's progress), Reply (the call's end), Pong

Loaded comes once the code's package and numpy are in, with the page's first calculator's
own package (build_hooks/runtime/placement.py: what that widget alone imports), which
WidgetsLoaded says just before; the page asks for its other calculators' once its first is
live (LoadWidgets), each widget answering once its own is in (WidgetsLoaded; a calculator
without one answers from Loaded on).
The model data (bundle.MODEL_DATA: weights, corpus, kernel) is a package apart, with the code
that only its widgets run (build_hooks/runtime/placement.py), fetched when the page sends
LoadModels or a call that needs it (Init's `needsModels`: a model widget's, or a check of an
exercise that drives one) comes first; that call waits for it.
The source of the modules shipped as bytecode (bundle.py: `sources`) is a package apart too,
with the code that reads or checks a reader's code, fetched before the first Call that needs
it (a module's source, an edit, an exercise's hints or a check of the reader's answer).

Every script URL carries its build's version (`?v=HASH` of its bytes, from the site config's
`versions`): worker.js is started as worker.js?v=…&protocol=…&lockdown=…, the versions of the
scripts it imports. Python never posts to the page: worker.js alone does (lockdown.js).

A figure is drawn for one layout (engine/svg.py: "wide", "compact" for a phone's column). The
page holds a drawing of each and shows the one its box fits (tw.css); RUN, EDITED and TRAIN
take the `layout` shown (figures.js), LAYOUT if absent, and the figure of their steps and
reply is drawn for it (echoed as `layout`).

The page's side has its contract too: the warm-up's reply (WarmTask, WarmDone), the site
config the build writes into a widget page (SiteConfig), and `DOM`, the classes, `data-*`
names and ids that the build's HTML carries and the page's scripts look up (engine/dom.py).
"""


import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, Union

from . import dom, svg

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "docs" / "assets" / "tw" / "protocol.js"
DTS = ROOT / "types" / "protocol.d.ts"

SCRIPTS = {"WORKER": "worker.js"}  # beside protocol.js and kernel.js
TYPES = {
    "INIT": "init", "CANCEL": "cancel", "PING": "ping", "PONG": "pong",
    "PROGRESS": "event:progress", "LOADED": "event:loaded", "ERROR": "event:error", "WARM": "event:warm",
    "STEP": "step", "REPLY": "reply", "LOAD_MODELS": "models:load", "MODELS": "event:models",
    "LOAD_WIDGETS": "widgets:load", "WIDGETS": "event:widgets",
}
CALLS = {"RUN": "run", "FIXED": "fixed", "TRAIN": "train", "SOURCE": "source", "EDITED": "edited",
         "EXERCISE": "exercise", "CHECK": "check"}
LAYOUT = svg.WIDE.name  # a call's layout when it names none
# How often the worker shows and yields (worker.js reads them from protocol.js): each update
# re-renders a widget on the page, whose main thread competes with the worker for the
# reader's cores; benchmarks/training.py and recompute.py time them.
SCHEDULE = {
    "PARTIAL_MS": 80,  # a staged run shows its first partial, then at most one per this many ms
    "SHOW_MS": 200,  # at most one training update shown per this many ms
    "STEPS_PER_TURN": 5,  # training steps between two turns (calls and cancels get in between)
}

# What worker.js calls in browser.py (the package's browser entry), and on the objects two of
# them return (Pyodide's proxies add destroy()).
ENTRIES = ("prepare", "WarmUp", "Run", "fixed", "source", "render_edited", "Trainer", "exercise", "check_exercise",
           "installed")
METHODS = {"WarmUp": ("advance",), "Run": ("advance",), "Trainer": ("advance",)}

# ---- the calls: payload (page -> worker) and what the reply's `data` is ------------------

class RunPayload(TypedDict):
    widget: str
    params: dict[str, Any]
    layout: NotRequired[str]


class FixedPayload(TypedDict):
    widget: str
    params: dict[str, Any]


class SourcePayload(TypedDict):
    widget: str


class EditedPayload(TypedDict):
    widget: str
    key: str  # the edit's storage key (codepanel.js): its module is kept under it
    code: str
    params: dict[str, Any]
    layout: NotRequired[str]


class ExercisePayload(TypedDict):
    exercise: str  # its name (data-exercise)
    attempted: bool  # the reader has checked an answer: the reply carries the solution


class CheckPayload(TypedDict):
    exercise: str
    code: str  # the reader's answer, run as a module (reader_code.py)


class ExerciseReply(TypedDict):
    """What the page asks of an exercise beyond its HTML (exercises.py writes the statement
    and the starter): the hints, and the solution once the reader has tried."""
    name: str
    title: str
    function: str  # the function the reader writes
    starter: str
    hints: list[str]  # Catalan Markdown (inline: `code`, **bold**), revealed one by one
    solution: NotRequired[str]  # only when `attempted`


class CheckStarted(TypedDict):
    """A check's one step: the worker starts running the reader's code now (the page's time
    limit counts from here, not from a queue behind other calls)."""
    started: Literal[True]


class DrivenFigure(TypedDict):
    """A widget's module with the reader's passing function behind its seam (exercise.Drives):
    the page applies it as the widget's «Codi» edit."""
    widget: str
    code: str
    exercise: str  # the exercise's title
    title: str  # the widget's title


class VerdictReply(TypedDict):
    """exercise.Verdict.to_dict(): a check's grade ("timeout": the reader's lines ran out of time;
    the page says "timeout" too when no reply came in time)."""
    verdict: Literal["pass", "fail", "error", "timeout"]
    message: str  # Catalan, for the reader
    passed: int
    total: int
    call: str  # the failing call as Python
    hidden: bool
    expected: str
    got: str
    line: int | None  # the reader's line where an exception arose
    figure: NotRequired[DrivenFigure]  # on a pass of an exercise that drives a widget


class WidgetReply(TypedDict):
    """A run as the page shows it: values, their Catalan text, the figure drawn for `layout`."""
    values: dict[str, Any]
    text: dict[str, str]
    figure: str
    layout: str
    alt: str
    tables: str


class RunStep(WidgetReply):
    """A staged run's partial (values may lack outputs still to come: shown as pending)."""
    partial: Literal[True]
    done: float  # fraction of the work done
    message: str  # Catalan: what it computes now


class Cancelled(TypedDict):
    cancelled: Literal[True]


class FixedReply(TypedDict):
    values: dict[str, Any]
    text: dict[str, str]


class SourceReply(TypedDict):
    module: str
    file: str
    source: str


class EditFailure(TypedDict):
    kind: str  # the exception's class
    message: str
    line: int | None  # in the edited text


class EditError(TypedDict):
    error: EditFailure


class TrainProgress(TypedDict):
    """A training run after some steps; the curve (`figure`, for `layout`) when it is shown."""
    step: int
    steps: int
    loss: float
    done: bool
    status: str
    elapsed_s: float
    ms_per_step: float
    matmul: str
    figure: NotRequired[str]
    layout: NotRequired[str]


# call -> (payload, step, reply data)
SIGNATURES: dict[str, tuple[type, Any, Any]] = {
    "RUN": (RunPayload, RunStep, Union[WidgetReply, Cancelled]),
    "FIXED": (FixedPayload, None, FixedReply),
    "TRAIN": (RunPayload, TrainProgress, Union[TrainProgress, Cancelled]),
    "SOURCE": (SourcePayload, None, SourceReply),
    "EDITED": (EditedPayload, None, Union[WidgetReply, EditError]),
    "EXERCISE": (ExercisePayload, None, ExerciseReply),
    "CHECK": (CheckPayload, CheckStarted, VerdictReply),
}


# ---- the worker's warm-up (browser.WarmUp.advance), and the page's site config ------------

class WarmTask(TypedDict):
    """A warm-up task done, more to come."""
    done: Literal[False]


class WarmDone(TypedDict):
    """The warm-up's end: what did not load (said again when its widget is called)."""
    done: Literal[True]
    failed: list[str]


class MarkupAllowList(TypedDict):
    """What a widget's figure may contain (engine/markup.py), for the page's sanitiser."""
    tags: list[str]
    attributes: list[str]
    classes: list[str]


class ModelData(TypedDict):
    """The model data's package (bundle.MODEL_DATA, and the code only its widgets run), fetched
    apart from the code's."""
    package: str  # as the lock names it
    sha256: str
    needs: list[str]  # the widgets and exercises whose calls need it (placement.needing_models)


class SiteConfig(TypedDict):
    """What the page needs to boot the worker (build_hooks/bundle.site_config, kernel.js)."""
    runtime: str  # the site's Pyodide folder, from the site's root
    lock: str  # its pyodide-lock.json, in that folder
    package: str  # the widgets' code package, as the lock names it
    entry: str  # its browser entry module (browser.py)
    sha256: str  # the package's: one build's kernel is not another's (nor are the model data's, below)
    models: ModelData | None  # None: the site has no model data
    sources: str | None  # the compiled modules' source, as the lock names it (None: in the code's package)
    worker: str  # worker.js from the site's root, with the versions of it and its imports (`?v=…`)
    core: dict[str, str]  # Pyodide's files as served -> sha256 (export.py copies them)
    versions: dict[str, str]  # site path -> hash of the bytes of each file a script loads by URL (`?v=`)
    markup: MarkupAllowList
    widgets: dict[str, str]  # a calculator with a package of its own, or an exercise that drives one -> it
    page: list[str]  # the widgets of the page that carries this config, in its order


# ---- page <-> worker ------------------------------------------------------------------

class Init(TypedDict):
    type: Literal["init"]
    indexURL: str  # the site's Pyodide folder
    lockFileURL: str
    package: str  # the widgets' code package, as the lock names it
    entry: str  # its browser entry module (browser.py)
    models: str | None  # the model data's package, as the lock names it (None: none)
    needsModels: list[str]  # the widgets and exercises whose calls wait for it (ModelData.needs)
    sources: str | None  # the compiled modules' source, fetched when read (None: in the code's package)
    widgets: dict[str, str]  # SiteConfig.widgets: a call naming one waits for that package
    page: list[str]  # the page's widgets: the first calculator's own package comes with the boot


class LoadModels(TypedDict):
    type: Literal["models:load"]


class LoadWidgets(TypedDict):
    """Calculators whose own packages (SiteConfig.widgets) the worker installs now: the page's
    others, once its first is live; a page reached by instant navigation, all of its own. Sent
    by every page that goes live, for none too: the worker's warm-up waits for it."""
    type: Literal["widgets:load"]
    widgets: list[str]


class Call(TypedDict):
    type: Literal["run", "fixed", "train", "source", "edited", "exercise", "check"]
    id: int
    payload: Union[RunPayload, FixedPayload, SourcePayload, EditedPayload, ExercisePayload, CheckPayload]


class Cancel(TypedDict):
    type: Literal["cancel"]
    id: int


class Ping(TypedDict):
    type: Literal["ping"]


class Progress(TypedDict):
    type: Literal["event:progress"]
    message: str
    fraction: float


class Loaded(TypedDict):
    type: Literal["event:loaded"]


class Error(TypedDict):
    type: Literal["event:error"]
    message: str


class Warm(TypedDict):
    type: Literal["event:warm"]
    failed: list[str]


class ModelsLoaded(TypedDict):
    type: Literal["event:models"]
    failed: str | None  # None: the model data is in; else why it is not


class WidgetsLoaded(TypedDict):
    """These widgets' own packages are in: each answers from now on (or why they are not)."""
    type: Literal["event:widgets"]
    widgets: list[str]
    failed: str | None


class Step(TypedDict):
    type: Literal["step"]
    id: int
    data: Union[RunStep, TrainProgress, CheckStarted]


class Replied(TypedDict):
    type: Literal["reply"]
    id: int
    ok: Literal[True]
    data: Any  # the call's reply (SIGNATURES)


class Failed(TypedDict):
    type: Literal["reply"]
    id: int
    ok: Literal[False]
    error: str  # the exception's last line


class Pong(TypedDict):
    type: Literal["pong"]


TO_WORKER = Union[Init, Call, Cancel, Ping, LoadModels, LoadWidgets]
FROM_WORKER = Union[Progress, Loaded, Error, Warm, ModelsLoaded, WidgetsLoaded, Step, Replied, Failed, Pong]


UNIONS = {"TWToWorker": TO_WORKER, "TWFromWorker": FROM_WORKER}


# ---- the generated files ----------------------------------------------------------------

def _comment(prefix: str = "// ") -> str:
    return "\n".join((prefix + line).rstrip() for line in __doc__.strip().splitlines())


def _constants() -> dict[str, Any]:
    return {**SCRIPTS, **TYPES, "LAYOUT": LAYOUT, **SCHEDULE, "CALLS": CALLS, "DOM": dom.constants()}


def javascript() -> str:
    """protocol.js: the constants, frozen, on `tw.protocol` of the page and of the worker."""
    def value(v, indent):
        if isinstance(v, dict):
            inner = "".join(f"{indent}  {k}: {value(x, indent + '  ')},\n" for k, x in v.items())
            return f"Object.freeze({{\n{inner}{indent}}})"
        return json.dumps(v)

    return (f"// @ts-check\n// Generated by widgets_py/engine/protocol.py (--write): edit that, not this.\n//\n"
            f"{_comment()}\n(function (scope) {{\n  \"use strict\";\n"
            f"  const tw = (scope.tw ||= /** @type {{TW}} */ ({{}}));\n"
            f"  tw.protocol = {value(_constants(), '  ')};\n}})(self);\n")


def _ts(t) -> str:
    """The TypeScript of a Python annotation of this module."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if t is Any:
        return "any"
    if t in (str, int, float, bool):
        return {str: "string", int: "number", float: "number", bool: "boolean"}[t]
    if t is type(None):
        return "null"
    if typing.is_typeddict(t):
        return "TW" + t.__name__
    if origin is Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else str(a).lower() for a in args)
    if origin in (Union, types.UnionType):
        return " | ".join(_ts(a) for a in args)
    if origin is list:
        inner = _ts(args[0])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {_ts(args[1])}>"
    raise TypeError(f"protocol: no TypeScript for {t!r}")


def _interface(td) -> str:
    hints = typing.get_type_hints(td, include_extras=True)
    fields = "".join(f"  {name}{'' if name in td.__required_keys__ else '?'}: "
                     f"{_ts(_unwrapped(hints[name]))};\n" for name in hints)
    return f"interface TW{td.__name__} {{\n{fields}}}\n"


def _unwrapped(t):
    return typing.get_args(t)[0] if typing.get_origin(t) is NotRequired else t


def _typeddicts() -> list:
    return [v for v in vars(sys.modules[__name__]).values() if typing.is_typeddict(v) and v.__module__ == __name__]


def typescript() -> str:
    """protocol.d.ts: the constants as literal types (tw.protocol), every message, the calls'
    payloads, steps and replies (TWCalls, for kernel.js's call())."""
    def literal(v, indent):
        if isinstance(v, dict):
            inner = "".join(f"{indent}  readonly {k}: {literal(x, indent + '  ')};\n" for k, x in v.items())
            return f"{{\n{inner}{indent}}}"
        return json.dumps(v)

    calls = "".join(f'  {CALLS[name]}: {{ payload: {_ts(payload)}; partial: {"never" if step is None else _ts(step)}; '
                    f"data: {_ts(reply)} }};\n" for name, (payload, step, reply) in SIGNATURES.items())
    return ("// Generated by widgets_py/engine/protocol.py (--write): edit that, not this.\n\n"
            f"interface TWProtocol {literal(_constants(), '')}\n\n"
            + "\n".join(_interface(td) for td in _typeddicts()) + "\n"
            + "".join(f"type {name} = {_ts(t)};\n" for name, t in UNIONS.items())
            + f"\n/** call -> its payload, its steps' data (partial), its reply's data */\ninterface TWCalls {{\n{calls}}}\n")


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {JS.relative_to(ROOT)} and {DTS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    stale = [path for path, text in ((JS, javascript()), (DTS, typescript())) if not path.exists() or path.read_text() != text]
    if args.write:
        JS.write_text(javascript())
        DTS.write_text(typescript())
        return 0
    for path in stale:
        print(f"{path.relative_to(ROOT)} differs from widgets_py/engine/protocol.py: run with --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
