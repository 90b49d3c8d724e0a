"""Entry point for the Pyodide worker: one JSON call per request. What worker.js calls here
(protocol.ENTRIES) and what each returns (protocol.py's TypedDicts) is the schema of
engine/protocol.py, which tests/test_protocol.py holds this module to; `rehearse` makes
those calls for the build, which compiles what they import."""

from __future__ import annotations

import importlib
import json
from functools import partial

from . import on_miss, registry, session, svg


def prepare(runtime_url: str | None = None) -> None:
    """What every widget needs before any can answer, imported before the page is told the
    widgets are ready (a widget that shows "ready" answers its first change without waiting
    for numpy's import); the rest follows, a task per turn (WarmUp).
    `runtime_url`, the site's Pyodide folder: where an import the trimmed runtime left out
    is fetched from (on_miss.py)."""
    if runtime_url:
        on_miss.install(runtime_url)
    import numpy  # noqa: F401

    session.start()  # the worker's one session: its memo, weights and kernel (engine.session)


class WarmUp:
    """What the worker does while the reader reads, once the page is interactive: a task per
    call (advance), calls from the page answered in between (worker.js pumps it a turn at a
    time). In order:
    - the widgets' modules, so that the reader's first change does not pay for them all;
    - the preparations (`preparations`: the corpus, the weights, the kernel's
      first calls), which a widget's first change would pay for (benchmarks/recompute.py
      times first changes among the others: the training widget's p95 is that first change);
    - each staged widget at its defaults, a stage per task (`staged`): their stages keep what
      they compute (session.cached: quantize's held-out losses, the batching sweep,
      sampling's prefill, speculative's target run). The page shows those defaults
      prerendered, so a reader's first change computes only what it alters (a new quantize
      group: four formats, not the original model and BF16 as well), and a return to the
      defaults answers at once. Not a widget that times the machine (`Output.timed`): its
      timings are taken when the reader asks.
    A task that fails is noted in `failed` and the rest go on: its widget says so when called.
    `models`: False, what needs no model data (the modules, the calculators' staged runs), which
    the worker does once the page is interactive; True, the rest (the preparations, the model
    widgets' staged runs), once the model data is in (worker.js); None, all of it."""

    def __init__(self, models: bool | None = None):
        self.failed: list[str] = []
        self.models = models
        self.tasks = self._tasks()

    def advance(self) -> str:
        """JSON of the next task run (protocol.WarmTask), or of the end (protocol.WarmDone:
        `failed`)."""
        if next(self.tasks, "done") == "done":
            return json.dumps({"done": True, "failed": self.failed})
        return json.dumps({"done": False})

    def _tasks(self):
        for module in registry.modules() if self.models is not True else ():
            self._try(module, importlib.import_module, module)
            yield None
        for i, step in enumerate(preparations() if self.models is not False else ()):
            self._try(f"pas {i}", step)
            yield None
        for name in self.staged(self.models):
            run = self._try(name, Run, name, "{}")
            while run is not None and (reply := self._try(name, run.advance)) is not None:
                if not json.loads(reply).get("partial"):
                    break
                yield None

    @staticmethod
    def staged(models: bool | None = None) -> list[str]:
        """The staged widgets it runs at their defaults (those that read the model data or not,
        or all: None)."""
        return [name for name in registry.names() if registry.is_staged(name) and not registry.get(name).timed
                and models in (None, registry.get(name).models)]

    def _try(self, what: str, f, *args):
        try:
            return f(*args)
        except Exception as e:  # said again when its widget is called
            self.failed.append(f"{what}: {f'{type(e).__name__}: {e}'.strip().splitlines()[-1]}")
            return None


def preparations() -> list:
    """What the widgets' first changes would otherwise pay, as steps the worker runs one per
    turn while the reader reads: the corpus and its bigram baseline, each model's weights (read
    and checked), and the kernel's first calls (accel.backend.warm). All of it is kept (cached)
    for the widgets' own calls."""
    from ..maths import corpus, pretrained

    return [corpus.data, corpus.bigram, *(partial(session.load, name) for name in pretrained.specs()), warm_kernel]


def warm_kernel() -> None:
    from ..accel import backend

    backend.warm(session.current().products())


def installed() -> None:
    """A package came in after the boot (the model data's, the sources'), with chapter modules
    in it (build_hooks/runtime/placement.py): the registry finds its widgets and exercises again."""
    importlib.invalidate_caches()  # folders Python listed before the package's files arrived
    registry.refresh()


class Run:
    """One widget run, a stage per call: the worker posts each partial and, between stages,
    lets other calls in (a long compute yields Partials; any other compute is one stage)."""

    def __init__(self, name: str, params_json: str, layout: str = svg.WIDE.name):
        self.stages = registry.replies(name, json.loads(params_json), layout)  # figures for the layout shown

    def advance(self) -> str:
        """JSON of the next stage: a partial reply (`partial: true`), or the final reply."""
        return json.dumps(next(self.stages), ensure_ascii=False)


def fixed(name: str, params_json: str) -> str:
    """The values alone (no figure), for numbers that the prose shows at fixed parameters."""
    _, values = registry.compute(name, json.loads(params_json))
    return json.dumps({"values": values, "text": registry.formatted(name, values)}, ensure_ascii=False)


def source(name: str) -> str:
    """The widget's module as shipped, for the page's code panel (see edits.py)."""
    from . import edits  # edits builds on registry.reply: imported when first asked
    return edits.source(name)


def render_edited(name: str, key: str, code: str, params_json: str, layout: str = svg.WIDE.name) -> str:
    """registry.reply with the reader's edit of the widget's module, or the edit's error (edits.py)."""
    from . import edits
    return edits.render(name, key, code, params_json, layout)


def exercise(name: str, attempted: bool = False) -> str:
    """JSON of what the page shows of exercise `name` beyond its HTML (protocol.ExerciseReply):
    its hints and, once the reader has `attempted` an answer, its solution."""
    e = registry.exercise(name)
    data = {"name": e.name, "title": e.title, "function": e.function, "starter": e.starter, "hints": list(e.hints)}
    if attempted:
        data["solution"] = e.solution
    return json.dumps(data, ensure_ascii=False)


def check_exercise(name: str, code: str) -> str:
    """JSON of the grade of the reader's `code` for exercise `name` (protocol.VerdictReply); a
    pass of an exercise that drives a widget carries that widget's module with the reader's
    function behind its seam (`figure`: the edit the page may apply). A run that never ends is
    the page's to stop (exercise.js: the worker is restarted)."""
    e = registry.exercise(name)
    data = e.check(code).to_dict()
    if data["verdict"] == "pass" and e.drives is not None:
        shipped = json.loads(source(e.drives.widget))["source"]
        data["figure"] = {"widget": e.drives.widget, "code": e.driven(code, shipped), "exercise": e.title,
                          "title": registry.get(e.drives.widget).title}
    return json.dumps(data, ensure_ascii=False)


class Trainer:
    """The training run of a trainable widget, advanced a few steps per call by the worker."""

    def __init__(self, name: str, params_json: str, layout: str = svg.WIDE.name):
        widget = registry.get(name)
        self.layout = svg.layout(layout)  # the curve is drawn for the layout the page shows
        if widget.trainable is None:
            raise ValueError(f"el widget '{name}' no és entrenable")
        self.trainable = widget.trainable
        p = registry.validate_params(name, json.loads(params_json))
        from ..engine import trainer  # the training code loads with the first run, not at boot
        self.run = trainer.Run(self.trainable.model, p[self.trainable.steps], p[self.trainable.seed])

    def advance(self, n: int, draw: bool = True) -> str:
        """JSON of the progress after up to n more steps, with the curve so far if `draw` or
        at the end (the worker draws only the updates it shows)."""
        data = self.run.advance(n)
        if draw or data["done"]:
            with svg.drawing(self.layout):
                data["figure"] = self.trainable.curve(self.run.history, self.run.tc.steps)
            data["layout"] = self.layout.name
        return json.dumps(data)


def rehearse() -> None:
    """The worker's calls (protocol.ENTRIES) as worker.js makes them, each widget at its
    defaults: the build runs this under Pyodide to list and compile every module the browser
    imports, those imported inside functions too (build_hooks/runtime/bytecode.py). The warm-up,
    its two parts;
    an edit that runs, one that does not compile and one that raises (the
    traceback's path); a training run's first step; each exercise, its hints and solution, and
    a check of its solution, its starter and an answer that raises."""
    prepare()
    for part in (False, True):  # as the worker does: without the model data, then with it
        warm = WarmUp(part)
        while not (task := json.loads(warm.advance()))["done"]:
            pass
        if task["failed"]:
            raise RuntimeError("the warm-up failed: " + "; ".join(task["failed"]))
    installed()
    for name in registry.names():
        fixed(name, "{}")
        run = Run(name, "{}")
        while json.loads(run.advance()).get("partial"):
            pass
        code = json.loads(source(name))["source"]
        for edit in ("", "\ndef (\n", "\nraise ValueError('x')\n"):
            render_edited(name, "build", code + edit, "{}")
        if registry.get(name).trainable is not None:
            Trainer(name, "{}").advance(1)
    for name in registry.exercise_names():
        data = json.loads(exercise(name, True))
        for code in (data["solution"], data["starter"], "def (\n", "raise ValueError('x')\n"):
            check_exercise(name, code)
