"""§6 Choosing the token: temperature, top-k, top-p, min-p and repetition penalty.

The distribution is the trained mini-GPT's own, at a chosen position of the held-out
text; each method keeps a subset of the vocabulary and renormalises over it.
"""

from __future__ import annotations

import numpy as np

from . import corpus, fmt, gpt, pretrained
from .params import Output, Param
from .registry import Widget, register
from .svg import Plot

SAMPLE_CHARS = 120  # characters generated with the current settings
SHOWN = 24  # bars in the figure


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def shape(logits: np.ndarray, seen: np.ndarray, temperature: float, top_k: int, top_p: float,
          min_p: float, penalty: float) -> tuple[np.ndarray, np.ndarray]:
    """(distribution after temperature, mask of the tokens kept): every method, in order."""
    z = logits.astype(np.float64).copy()  # [V]
    if penalty != 1.0:  # CTRL-style: shrink the logits of tokens already seen
        s = np.unique(seen)
        z[s] = np.where(z[s] > 0, z[s] / penalty, z[s] * penalty)
    if temperature == 0:  # greedy: all the mass on the most likely token
        p = np.zeros_like(z)
        p[np.argmax(z)] = 1.0
        return p, p > 0
    p = softmax(z / temperature)
    keep = np.ones_like(p, dtype=bool)
    order = np.argsort(-p, kind="stable")  # most likely first
    if top_k:
        keep[order[top_k:]] = False
    if top_p < 1.0:  # the smallest prefix whose mass reaches top_p
        cum = np.cumsum(p[order])
        keep[order[np.searchsorted(cum, top_p) + 1:]] = False
    if min_p:
        keep &= p >= min_p * p.max()
    return p, keep


def pick(p: np.ndarray, keep: np.ndarray, rng: np.random.Generator) -> int:
    q = np.where(keep, p, 0.0)
    return int(rng.choice(len(q), p=q / q.sum()))


def context_at(position: int) -> np.ndarray:
    return corpus.data()[1][:position]


def sampling(temperature: float, top_k: int, top_p: float, min_p: float, penalty: float,
             position: int, seed: int) -> dict:
    cfg, p, _ = pretrained.load("mini")
    ctx = context_at(position)[-cfg.context:]  # [T] the window the model sees
    logits, kv = gpt.extend(p, cfg, ctx)
    raw = softmax(logits[-1].astype(np.float64))
    probs, keep = shape(logits[-1], ctx, temperature, top_k, top_p, min_p, penalty)
    kept = np.where(keep, probs, 0.0) / probs[keep].sum()
    rng = np.random.default_rng(seed)  # the sample: same settings, token after token
    seen, out, last = list(ctx), [], logits[-1]
    for _ in range(SAMPLE_CHARS):
        dist, mask = shape(last, np.array(seen[-cfg.context:]), temperature, top_k, top_p, min_p, penalty)
        token = pick(dist, mask, rng)
        out.append(token)
        seen.append(token)
        if kv[0][0].shape[-2] >= cfg.context:  # crop the cache to the training window
            kv = [(k[..., -cfg.context + 1:, :], v[..., -cfg.context + 1:, :]) for k, v in kv]
        step, kv = gpt.extend(p, cfg, [token], kv)
        last = step[-1]
    top = int(np.argmax(probs))
    return {
        "kept": int(keep.sum()), "mass_kept": float(probs[keep].sum()),
        "entropy": entropy(kept), "perplexity": float(np.exp(entropy(kept))),
        "perplexity_untruncated": float(np.exp(entropy(probs))), "perplexity_raw": float(np.exp(entropy(raw))),
        "top_token": show(top), "top_prob": float(probs[top]),
        "context_tail": corpus.decode(ctx[-40:]), "sample": corpus.decode(out),
    }


def show(token: int) -> str:
    """A character as the figure and the panel show it: visible space and newline."""
    return {" ": "␣", "\n": "↵"}.get(corpus.vocab()[token], corpus.vocab()[token])


def _figure(p: dict, v: dict) -> tuple[str, str]:
    cfg, params, _ = pretrained.load("mini")
    ctx = context_at(p["position"])[-cfg.context:]
    logits = gpt.extend(params, cfg, ctx)[0][-1]
    probs, keep = shape(logits, ctx, p["temperature"], p["top_k"], p["top_p"], p["min_p"], p["penalty"])
    order = np.argsort(-probs, kind="stable")[:SHOWN]
    top = max(probs[order[0]], 1e-9)
    plot = Plot(height=260, left=56).scales((0, SHOWN), (0, top * 1.1))
    plot.axes([], [0, top / 2, top], "tokens, del més probable al menys", "probabilitat",
              fmt=lambda t: fmt.percent(t))
    for i, tok in enumerate(order):
        x0, x1 = plot.x(i + 0.1), plot.x(i + 0.9)
        y = plot.y(probs[tok])
        cls = "tw-bar tw-s2" if keep[tok] else "tw-bar tw-cut"
        plot.parts.append(f'<rect class="{cls}" x="{x0}" y="{y}" width="{x1 - x0:.2f}" height="{plot.y(0) - y:.2f}"/>')
        plot.text((x0 + x1) / 2, plot.y(0) + 16, show(tok), "middle", "tw-tick")
    n = int(keep[order].sum())
    if n < SHOWN:
        plot.parts.append(f'<line class="tw-limit" x1="{plot.x(n)}" y1="{plot.top}" x2="{plot.x(n)}" '
                          f'y2="{plot.y(0)}" stroke-dasharray="6 4"/>')
        plot.text(plot.x(n) + 4, plot.top + 14, "tall", "start", "tw-note")
    alt = (f"Distribució del següent caràcter: en queden {v['kept']} candidats amb el "
           f"{fmt.percent(v['mass_kept'])} de la massa; el més probable és «{v['top_token']}» "
           f"({fmt.percent(v['top_prob'])}).")
    return plot.render("La distribució ordenada i on la tallen els mètodes", alt), alt


def _tables(p: dict, v: dict) -> str:
    from html import escape

    return (f'<p class="tw-sample"><span class="tw-prompt">…{escape(v["context_tail"])}</span>'
            f'<mark>{escape(v["sample"])}</mark></p>')


PARAMS = (
    Param("temperature", "float", 1.0, "Temperatura", min=0.0, max=2.0, step=0.05,
          help="Divideix els logits abans de la softmax. A 0 és greedy."),
    Param("top_k", "int", 0, "Top-k", min=0, max=40, ticks=(0, 1, 2, 3, 5, 10, 20, 40), off=0),
    Param("top_p", "float", 1.0, "Top-p (nucleus)", min=0.05, max=1.0, step=0.05, off=1.0,
          help="El conjunt mínim amb massa acumulada ≥ p."),
    Param("min_p", "float", 0.0, "Min-p", min=0.0, max=0.5, step=0.01, off=0.0,
          help="Fora tot el que baixi de p · el màxim."),
    Param("penalty", "float", 1.0, "Penalització de repetició", min=1.0, max=2.0, step=0.05, off=1.0,
          help="Divideix els logits positius dels caràcters ja vistos i multiplica els negatius."),
    Param("position", "int", 20, "Posició del prompt", min=1, max=400,
          help="Quants caràcters del text reservat es donen de context."),
    Param("seed", "int", 6, "Llavor", min=0, max=999),
)

OUTPUTS = (
    Output("kept", "candidats vius"),
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

WIDGET = register(Widget(
    name="sampling",
    title="Com es tria el token",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=sampling,
    figure=_figure,
    tables=_tables,
    summary="La distribució del mini-GPT entrenat i el que en deixa viu cada mètode.",
))
