"""The widget contract: what a chapter's widget module declares, and nothing else.

A widget module builds one `Widget` named `WIDGET`; the registry finds it (a widget
module never imports the registry, so there is no import cycle). The same three calls
prerender the page at build time (CPython) and recompute it in the reader's browser:

    state  = compute(**params)      # the work: plain values, or arrays, or a simulation run
    values = values(state)          # the named outputs (plain numbers, booleans, short strings)
    svg, alt = figure(params, state)  # the drawing, from the state: never computed again

`values` may be omitted when `compute` returns the values dict itself.

`figure` is called once per layout the page needs (engine.svg: WIDE, and COMPACT for a
phone's column), inside `svg.drawing(layout)`: a `Plot` takes the layout's width and type,
and a figure that places things by hand reads `svg.current()`. The build draws both (the
page shows the one its box fits before Python arrives); the browser redraws only the one
shown. A drawing kept between calls (a memo) is kept per layout.

A long `compute` (timing runs, several model evaluations) is a generator: it yields
`Partial(state so far, fraction done, message)` between its stages and returns the final
state; engine.stages builds such stages from what the widget computes (`stage`, kept in the
memo; `evaluate_many`, independent results, a stage each). Python callers get the final
state only; the browser worker shows each partial (its figure, the values it already has)
and, between stages, lets other widgets' runs in and drops a run that a newer control
change has made stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .params import Output, Param, ParamError


@dataclass(frozen=True)
class Result:
    values: dict[str, Any]  # named outputs: plain numbers, booleans or short strings
    figure: str  # SVG markup, styled by the site's CSS classes (the first layout drawn: WIDE unless asked)
    alt: str  # text alternative of the figure, stating its key numbers
    tables: str = ""  # optional HTML tables (already formatted in Catalan)
    figures: tuple[tuple[str, str], ...] = ()  # (layout name, SVG) of every layout drawn, `figure` first


@dataclass(frozen=True)
class Partial:
    """What a long compute yields between stages; `figure` and `values` must accept `state`
    (a values dict may lack outputs still to come: the page shows them as pending)."""

    state: Any
    done: float  # fraction of the work done, 0..1
    message: str = ""  # Catalan: what it is computing now, for the widget's status line


def finish(generator) -> Any:
    """Run a generator to its end and return what it returns (a staged compute's final state,
    when the stages on the way are not wanted)."""
    while True:
        try:
            next(generator)
        except StopIteration as end:
            return end.value


def mapped(generator, fn):
    """A generator yielding fn(item) for each item `generator` yields, returning what it returns."""
    while True:
        try:
            item = next(generator)
        except StopIteration as end:
            return end.value
        yield fn(item)


@dataclass(frozen=True)
class Trainable:
    """A widget whose model the reader can retrain from scratch in the browser."""

    model: str  # the trained model a run replaces (a name of pretrained.specs())
    curve: Callable[[list, int], str]  # (loss history so far, total steps) -> SVG of the run in progress
    steps: str = "steps"  # the widget parameter giving the run's number of steps
    seed: str = "seed"  # the widget parameter giving the run's seed

    @property
    def run_params(self) -> tuple[str, str]:
        """Parameters of the training run, not of `compute`."""
        return self.steps, self.seed


@dataclass(frozen=True)
class Widget:
    name: str  # registry key, used in Markdown and in data-widget
    title: str  # Catalan title shown above the widget
    params: tuple[Param, ...]
    outputs: tuple[Output, ...]
    compute: Callable[..., Any]  # (**params) -> state, or a generator of Partial returning the state
    figure: Callable[[dict, Any], tuple[str, str]]  # (params, state) -> (svg, alt), for svg.current()'s layout
    values: Callable[[Any], dict[str, Any]] | None = None  # state -> named values (None: state is them)
    tables: Callable[[dict, Any], str] | None = None  # (params, state) -> html
    summary: str = ""  # one Catalan sentence: what the widget computes
    trainable: Trainable | None = None  # the reader can retrain its model (a button and a live curve)
    models: bool = False  # reads the model data (trained weights, corpus, the WebAssembly kernel), which the
    # browser fetches apart from the code, after the calculators are interactive (build_hooks/runtime/bundle.py)

    def __post_init__(self) -> None:
        if self.trainable is not None and not self.models:
            raise ValueError(f"el widget '{self.name}' és entrenable (trainable): llegeix el model "
                             f"'{self.trainable.model}', i cal declarar-ho amb models=True")

    @property
    def timed(self) -> frozenset[str]:
        """The outputs that time the machine running it (`Output.timed`)."""
        return frozenset(o.name for o in self.outputs if o.timed)

    @property
    def autorun(self) -> bool:
        """Recomputed once Python is ready in the browser: what the prerender timed was the build machine."""
        return bool(self.timed)

    def output(self, name: str) -> Output:
        for out in self.outputs:
            if out.name == name:
                return out
        raise ParamError(
            f"valor desconegut '{name}' del widget '{self.name}'; "
            f"permesos: {', '.join(o.name for o in self.outputs)}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "summary": self.summary,
            "params": [p.describe() for p in self.params],
            "outputs": [{"name": o.name, "label": o.label, "unit": o.unit} for o in self.outputs],
        }
