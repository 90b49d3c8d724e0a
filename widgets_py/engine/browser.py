"""Entry point for the Pyodide worker: one JSON call per request. What worker.js calls here
(protocol.ENTRIES) and what each returns (protocol.py's TypedDicts) is the schema of
engine/protocol.py, which tests/test_protocol.py holds this module to; `rehearse` makes
those calls for the build, which compiles what they import."""

from __future__ import annotations

import importlib
import json

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

    session.start()  # the worker's one session: its memo, weights, kernel and helper (engine.session)


class WarmUp:
    """What the worker does while the reader reads, once the page is interactive: a task per
    call (advance), calls from the page answered in between (worker.js pumps it a turn at a
    time). In order:
    - the widgets' modules, so that the reader's first change does not pay for them all;
    - the kernel's helper, if the page gave one (`helper`: worker.js's client of it;
      models.offload), once the models are in (they load the kernel);
    - the preparations (models.pretrained.preparations: the corpus, the weights, the kernel's
      first calls), which a widget's first change would pay for (benchmarks/recompute.py
      times first changes among the others: the training widget's p95 is that first change);
    - each staged widget at its defaults, a stage per task (`staged`): their stages keep what
      they compute (pretrained.derived: quantize's held-out losses, the batching sweep,
      sampling's prefill, speculative's target run). The page shows those defaults
      prerendered, so a reader's first change computes only what it alters (a new quantize
      group: four formats, not the original model and BF16 as well), and a return to the
      defaults answers at once. Not a widget that times the machine (`Output.timed`): its
      timings are taken when the reader asks.
    A task that fails is noted in `failed` and the rest go on: its widget says so when called."""

    def __init__(self, helper=None):
        self.failed: list[str] = []
        self.tasks = self._tasks(helper)

    def advance(self) -> str:
        """JSON of the next task run (protocol.WarmTask: `waiting`, the helper's job the next
        one reads, worker.js waits for it), or of the end (protocol.WarmDone: `failed`)."""
        waiting = next(self.tasks, "done")
        if waiting == "done":
            return json.dumps({"done": True, "failed": self.failed})
        return json.dumps({"done": False, "waiting": waiting})

    def _tasks(self, helper):
        from ..models import pretrained

        for module in registry.modules():
            self._try(module, importlib.import_module, module)
            yield None
        if helper is not None:
            self._try("helper", connect, helper)
            yield None
        for i, step in enumerate(pretrained.preparations()):
            self._try(f"pas {i}", step)
            yield None
        for name in self.staged():
            run = self._try(name, Run, name, "{}")
            while run is not None and (reply := self._try(name, run.advance)) is not None:
                if not json.loads(reply).get("partial"):
                    break
                yield run.waiting()

    @staticmethod
    def staged() -> list[str]:
        return [name for name in registry.names() if registry.is_staged(name) and not registry.get(name).timed]

    def _try(self, what: str, f, *args):
        try:
            return f(*args)
        except Exception as e:  # said again when its widget is called
            self.failed.append(f"{what}: {f'{type(e).__name__}: {e}'.strip().splitlines()[-1]}")
            return None


class Run:
    """One widget run, a stage per call: the worker posts each partial and, between stages,
    lets other calls in (a long compute yields Partials; any other compute is one stage)."""

    def __init__(self, name: str, params_json: str, layout: str = svg.WIDE.name):
        self.stages = registry.replies(name, json.loads(params_json), layout)  # figures for the layout shown
        self.awaited = None  # the helper's job the next stage reads (models.offload.Job)

    def advance(self) -> str:
        """JSON of the next stage: a partial reply (`partial: true`), or the final reply. The
        worker waits for the helper's job the next stage reads (waiting()) before it."""
        from ..models import offload

        helper = session.current().helper
        if helper is not None:
            helper.awaited = None  # what another run's stage left there is not this run's
        with offload.waited():
            reply = next(self.stages)
        self.awaited = helper.awaited if helper is not None else None  # this stage's (engine.stages), kept: another run goes next turn
        return json.dumps(reply, ensure_ascii=False)

    def waiting(self) -> int | None:
        """The id of the helper's job whose reply the next stage reads, or None."""
        return self.awaited.id if self.awaited is not None and not self.awaited.taken else None


def connect(client) -> None:
    """The kernel's helper, once the page has given the worker one (models.offload)."""
    from ..models import offload

    offload.connect(client)


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


class Trainer:
    """The training run of a trainable widget, advanced a few steps per call by the worker."""

    def __init__(self, name: str, params_json: str, layout: str = svg.WIDE.name):
        widget = registry.get(name)
        self.layout = svg.layout(layout)  # the curve is drawn for the layout the page shows
        if widget.trainable is None:
            raise ValueError(f"el widget '{name}' no és entrenable")
        self.trainable = widget.trainable
        p = registry.validate_params(name, json.loads(params_json))
        from ..models import trainer  # the training code loads with the first run, not at boot
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
    imports, those imported inside functions too (build_hooks/bytecode.py). The warm-up
    without a helper; an edit that runs, one that does not compile and one that raises (the
    traceback's path); a training run's first step."""
    prepare()
    warm = WarmUp()
    while not (task := json.loads(warm.advance()))["done"]:
        pass
    if task["failed"]:
        raise RuntimeError("the warm-up failed: " + "; ".join(task["failed"]))
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
