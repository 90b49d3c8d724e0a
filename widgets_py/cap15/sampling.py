"""§6 Choosing the token: temperature, top-k, top-p, min-p and repetition penalty.

The distribution is the trained mini-GPT's own, at a chosen position of the held-out
text; the chain that shapes it (Hugging Face transformers' order) and the draw are
maths.decoding's.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from ..engine import fmt
from ..engine import session
from ..maths import corpus, gpt
from ..maths.decoding import draw, restricted, shape, softmax
from ..engine.params import Output, Param
from ..engine.widget import Partial, Widget
from ..engine.svg import Plot, current

SAMPLE_CHARS = 120  # characters generated with the current settings
SAMPLE_STAGE = 30  # characters per stage of the sample shown while it is generated
SHOWN = 24  # bars in the figure


def entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


class Step(NamedTuple):
    window: np.ndarray  # [<= cfg.context] the tokens the model saw for this step
    dist: np.ndarray  # [V] the distribution the token is drawn from
    token: int


def generate(params: dict, cfg: gpt.GPTConfig, prompt: np.ndarray, n: int, settings: dict,
             rng: np.random.Generator, start=None) -> Iterator[Step]:
    """n tokens after `prompt`, each drawn from the model's output on the last cfg.context tokens.

    The model was trained on windows of cfg.context tokens at positions 0..context-1, so each
    step's logits are those of a fresh forward over the last cfg.context tokens. While the
    sequence fits in the window that is one cached decode step; once it no longer fits every
    token's position shifts by one, the cached keys and values are stale, and the window is
    recomputed (a forward of cfg.context tokens per step, whose last block runs for the last
    position only: gpt.next_logits). `start` = (last logits, cache) of
    the prompt's window, if the caller already has them. The penalty sees the whole sequence
    (prompt included), as HF's does.
    """
    window = np.asarray(prompt)[-cfg.context:]  # [T]
    if start is None:
        logits, kv = gpt.extend(params, cfg, window)  # prefill: [T, V]
        start = (logits[-1], kv)
    last, kv = start
    seen = np.zeros(cfg.vocab, dtype=bool)  # [V] tokens present in the sequence so far
    seen[np.asarray(prompt)] = True
    for _ in range(n):
        p, keep = filtered(last, seen.nonzero()[0], **settings)  # temperature, top-k, top-p, min-p, penalty
        dist = restricted(p, keep)
        token = draw(dist, rng.random())  # sample
        yield Step(window, dist, token)
        seen[token] = True
        if len(window) < cfg.context:  # still fits: extend the cache by one token
            window = np.append(window, token)
            step, kv = gpt.extend(params, cfg, [token], kv)
            last = step[-1]
        else:  # slide: drop the oldest token and recompute the window from position 0
            window = np.append(window[1:], token)
            last = gpt.next_logits(params, cfg, window)  # no cache: the next step slides again


def filtered(logits: np.ndarray, seen: np.ndarray, temperature: float, top_k: int, top_p: float,
             min_p: float, penalty: float) -> tuple[np.ndarray, np.ndarray]:
    """([V] tempered distribution, [V] mask of the tokens that can be drawn): maths.decoding's
    chain, called through this module so that a passing answer to the exercise on the chain
    can stand in for it (ex_sampling_chain.DRIVES)."""
    return shape(logits, seen, temperature, top_k, top_p, min_p, penalty)


def context_at(position: int) -> np.ndarray:
    return corpus.data()[1][:position]


def prefill(position: int) -> tuple[np.ndarray, np.ndarray, list]:
    """(prompt, logits after its last cfg.context tokens, KV cache): one forward per position
    and weights, shared across control changes (session.cached)."""
    def make():
        cfg, params, _ = session.load("mini")
        prompt = context_at(position)  # [position]
        logits, kv = gpt.extend(params, cfg, prompt[-cfg.context:])
        return prompt, logits[-1], kv
    return session.cached(("sampling.prefill", position), make)


def sampling(temperature: float, top_k: int, top_p: float, min_p: float, penalty: float,
             position: int, seed: int):
    """A staged compute (engine.widget.Partial): the next character's distribution needs one
    forward (kept per position), so it is shown first; the sample, a forward per character, after."""
    cfg, params, _ = session.load("mini")
    prompt, logits, kv = prefill(position)
    settings = dict(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, penalty=penalty)
    raw = softmax(logits.astype(np.float64))
    probs, keep = filtered(logits, prompt, **settings)
    kept = restricted(probs, keep)
    top = int(np.argmax(probs))
    out = {
        "kept": int(keep.sum()), "mass_kept": float(probs[keep].sum()),
        "entropy": entropy(kept), "perplexity": float(np.exp(entropy(kept))),
        "perplexity_untruncated": float(np.exp(entropy(probs))), "perplexity_raw": float(np.exp(entropy(raw))),
        "top_token": show(top), "top_prob": float(probs[top]), "context_tail": corpus.decode(prompt[-40:]),
    }
    yield Partial(dict(out), 0.1, "una mostra de text, caràcter a caràcter")
    rng = np.random.default_rng(seed)  # the sample: same settings, token after token
    sample = []
    for step in generate(params, cfg, prompt, SAMPLE_CHARS, settings, rng, (logits, kv)):
        sample.append(step.token)
        if len(sample) % SAMPLE_STAGE == 0 and len(sample) < SAMPLE_CHARS:  # the text so far, as it grows
            yield Partial(out | {"sample_so_far": corpus.decode(sample)}, 0.1 + 0.9 * len(sample) / SAMPLE_CHARS,
                          "una mostra de text, caràcter a caràcter")
    return out | {"sample": corpus.decode(sample)}


def show(token: int) -> str:
    """A character as the figure and the panel show it: visible space and newline."""
    return {" ": "␣", "\n": "↵"}.get(corpus.vocab()[token], corpus.vocab()[token])


DRAWN = ("position", "temperature", "top_k", "top_p", "min_p", "penalty")  # what the figure depends on


def _drawing(position: int, temperature: float, top_k: int, top_p: float, min_p: float, penalty: float) -> Plot:
    """The figure's plot: the same for every stage of a change (the sample and its seed do
    not enter it), so drawn once per change (session.cached), not once per stage."""
    prompt, logits, _ = prefill(position)  # no second forward
    probs, keep = filtered(logits, prompt, temperature, top_k, top_p, min_p, penalty)
    order = np.argsort(-probs, kind="stable")[:SHOWN]
    top = max(probs[order[0]], 1e-9)
    plot = Plot(height=260, left=56).scales((0, SHOWN), (0, top * 1.1))
    plot.axes([], [0, top / 2, top], "tokens, del més probable al menys", "probabilitat",
              fmt=lambda t: fmt.percent(t))
    for i, tok in enumerate(order):
        plot.bar(i + 0.1, i + 0.9, 0, probs[tok], "tw-s2" if keep[tok] else "tw-cut")
        plot.text(plot.x(i + 0.5), plot.y(0) + 16, show(tok), "middle", "tw-tick")
    n = int(keep[order].sum())
    if n < SHOWN:
        plot.parts.append(f'<line class="tw-limit" x1="{plot.x(n)}" y1="{plot.top}" x2="{plot.x(n)}" '
                          f'y2="{plot.y(0)}" stroke-dasharray="6 4"/>')
        plot.text(plot.x(n) + 4, plot.top + 14, "tall", "start", "tw-note")
    return plot


def _figure(p: dict, v: dict) -> tuple[str, str]:
    key = tuple(p[k] for k in DRAWN)
    plot = session.cached(("sampling.figure", current().name) + key, lambda: _drawing(*key))  # one per layout
    alt = (f"Distribució del següent caràcter: en queden {v['kept']} candidates amb el "
           f"{fmt.percent(v['mass_kept'])} de la massa; el més probable és «{v['top_token']}» "
           f"({fmt.percent(v['top_prob'])}).")
    return plot.render("La distribució ordenada i on la tallen els mètodes", alt), alt


def _tables(p: dict, v: dict) -> str:
    from html import escape

    so_far = v.get("sample_so_far")  # while it is generated
    text = escape(v["sample"]) if "sample" in v else escape(so_far) + "…" if so_far else "es genera…"
    return f'<p class="tw-sample"><span class="tw-prompt">…{escape(v["context_tail"])}</span><mark>{text}</mark></p>'


PARAMS = (
    Param("temperature", "float", 1.0, "Temperatura", min=0.0, max=2.0, step=0.05,
          help="Per sota d'1 concentra la probabilitat a la favorita; per sobre d'1 l'escampa (divideix els logits abans de la softmax). "
               "A 0 es tria sempre el màxim (greedy); a prop de 0 gairebé sempre."),
    Param("top_k", "int", 0, "Top-k", min=0, max=40, ticks=(0, 1, 2, 3, 5, 10, 20, 40), off=0,
          help="Els k caràcters de logit més alt; els empatats amb el k-èsim també hi entren."),
    Param("top_p", "float", 1.0, "Top-p (nucleus)", min=0.05, max=1.0, step=0.05, off=1.0,
          help="Dels caràcters que queden (després del top-k, si n'hi ha), tornats a normalitzar, es queden els més probables fins "
               "que sumen p o més; com a mínim, un."),
    Param("min_p", "float", 0.0, "Min-p", min=0.0, max=0.5, step=0.01, off=0.0,
          help="Després del top-p, només resten els caràcters amb una probabilitat d'almenys min-p vegades "
               "la del més probable que hagi quedat."),
    Param("penalty", "float", 1.0, "Penalització de repetició", min=1.0, max=2.0, step=0.05, off=1.0,
          help="Abans de la temperatura, divideix els logits positius dels caràcters ja presents (prompt "
               "inclòs) i multiplica els negatius."),
    Param("position", "int", 20, "Posició del prompt", min=1, max=400,
          help="Quants caràcters d'un text que el model no ha vist mai se li donen de context."),
    Param("seed", "int", 6, "Llavor", min=0, max=999),
)

OUTPUTS = (
    Output("kept", "candidates vives"),
    Output("mass_kept", "massa conservada", decimals=1, style="pct"),
    Output("entropy", "entropia", "nats", 2),
    Output("perplexity", "perplexitat", decimals=2),
    Output("perplexity_untruncated", "perplexitat sense truncar", decimals=2),
    Output("top_token", "token més probable", style="text"),
    Output("top_prob", "probabilitat del més probable", decimals=1, style="pct", panel=False),
    Output("perplexity_raw", "perplexitat a temperatura 1", decimals=2, panel=False),
    Output("sample", "text generat", style="text", panel=False),
    Output("context_tail", "context", style="text", panel=False),
)

WIDGET = Widget(
    name="sampling",
    models=True,  # the mini-GPTs: weights, corpus, kernel
    title="Com es tria el token",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=sampling,
    figure=_figure,
    tables=_tables,
    summary="La distribució del mini-GPT entrenat i el que en deixa viu cada mètode.",
)
