"""Training the mini-GPT, shown: the loss curve against the bigram baseline.

At build time the curve is the pretrained model's. The widget is trainable: in the
browser a button retrains the model from scratch in the worker (`trainer.Run`, with this
widget's `steps` and `seed`), redrawing this curve as it goes, and the result replaces
the pretrained weights for every widget of the page.
"""

from __future__ import annotations


import numpy as np

from ..engine import fmt
from ..engine import session
from ..maths import corpus, gpt
from ..engine.params import Output, Param
from ..engine.svg import Plot
from ..maths.train import EVAL_TOKENS, evaluate
from ..engine.trainer import smooth
from ..engine.widget import Partial, Trainable, Widget
from ..engine.stages import stage

MODEL = "mini"


def curve(history: list[float], steps: int, title: str = "Entrenant al navegador") -> str:
    """The training loss so far (smoothed) against the bigram baseline's held-out loss (the line
    the held-out loss has to beat), on `steps` of x."""
    baseline = corpus.bigram_baseline(EVAL_TOKENS)
    top = max(4.6, float(np.max(history)) if history else 4.6)
    plot = Plot(height=240).scales((0, max(steps, 1)), (1.8, top))
    plot.axes([0, steps // 2, steps], [2.0, 2.5, 3.0, 3.5, 4.0, 4.5], "passos d'entrenament", "pèrdua (nats)",
              fmt=lambda t: fmt.number(t, 1 if t < 10 else 0))
    plot.line([0, steps], [baseline, baseline], "tw-limit", dash=True)
    plot.text(plot.x(steps) - 4, plot.y(baseline) - 6, f"bigrama (model de referència): {fmt.number(baseline, 2)}", "end", "tw-note")
    smoothed = smooth(history)
    if len(history) > 1:
        plot.line(np.arange(len(history)), smoothed, "tw-s2")
    return plot.render(title, f"Pèrdua d'entrenament després de {len(history)} passos: "
                              f"{fmt.number(float(smoothed[-1]) if history else float('nan'), 3)} nats; "
                              f"bigrama, el model de referència: {fmt.number(baseline, 2)} nats.")


HELDOUT = ("training.heldout", MODEL)  # its key among the results kept with the weights


def heldout_loss() -> float:
    """Held-out loss of the model in use (kept per weights: engine.stages.stage)."""
    cfg, p, _ = session.load(MODEL)
    return evaluate(p, cfg, corpus.data()[1])


def training():
    """The model the widgets use now (committed, or retrained in the browser): its losses.
    (`steps` and `seed` are the parameters of the next training run, not of this.) Staged
    (engine.stages): the curve is at hand; the held-out loss, once per weights, is not."""
    cfg, p, history = session.load(MODEL)
    out = {"params": gpt.n_params(p), "steps_trained": len(history), "bigram": corpus.bigram_baseline(EVAL_TOKENS),
           "history": history}
    heldout = yield from stage(HELDOUT, heldout_loss, Partial(dict(out), 0.1, "la pèrdua sobre el text reservat"))
    return out | {"heldout_loss": heldout, "beats_bigram": heldout < corpus.bigram_baseline(EVAL_TOKENS)}


def _values(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != "history"}


def _figure(p: dict, state: dict) -> tuple[str, str]:
    history, v = state["history"], state
    svg = curve(history, len(history), "La corba d'entrenament del mini-GPT")
    heldout = fmt.number(v["heldout_loss"], 3) + " nats" if "heldout_loss" in v else "encara per mesurar"
    alt = (f"{fmt.number(v['steps_trained'])} passos; pèrdua sobre el text reservat {heldout}, "
           f"bigrama, el model de referència: {fmt.number(v['bigram'], 2)} nats.")
    return svg, alt


PARAMS = (
    Param("steps", "int", 500, "Passos de l'entrenament al navegador", min=50, max=1500, step=50,
          help="Per al botó: quants passos farà l'entrenament des de zero."),
    Param("seed", "int", 1234, "Llavor de l'entrenament", min=0, max=9999),
)

OUTPUTS = (
    Output("params", "paràmetres"),
    Output("steps_trained", "passos entrenats"),
    Output("heldout_loss", "pèrdua, text reservat", "nats", 3),
    Output("bigram", "bigrama, el model de referència", "nats", 2),
    Output("beats_bigram", "supera el bigrama?", style="bool"),
)

WIDGET = Widget(
    name="training",
    models=True,  # the mini-GPTs: weights, corpus, kernel
    title="Entrenar el mini-GPT",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=training,
    values=_values,
    figure=_figure,
    summary="El mini-GPT que fan servir els widgets, i la seva corba d'entrenament.",
    trainable=Trainable(model=MODEL, curve=curve),
)
