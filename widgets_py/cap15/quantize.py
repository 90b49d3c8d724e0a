"""§4 Quantization: round the trained weights to each format for real, measure the loss.

Every matrix of the mini-GPT is stored in the format (numformats: codes, bf16 scales)
and read back, and the held-out loss is recomputed with those weights. Scales are
symmetric (absmax), one per tensor or one per group of `group` inputs of an output
column, as AWQ, GPTQ and bitsandbytes group.

The outlier control multiplies three input channels' weight rows of qkv and fc by a
factor and divides the matching layer-norm outputs by it: in float the model is the
same function, but every group along the input axis holds one of those rows, so the
outliers stretch group scales too. Two known remedies can be switched on:
LLM.int8() (Dettmers et al. 2022) keeps outlier input channels in 16 bits, and
SmoothQuant (Xiao et al. 2023) moves scale between activations and weights with
activation maxima measured on held-out text.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..engine import fmt, session
from ..maths import corpus, gpt
from ..maths.quantiles import median
from ..maths.numformats import decode, encode_many, quantize
from ..engine.params import Output, Param
from ..engine.widget import Widget
from ..engine.stages import Evaluation, evaluate_many
from ..engine.svg import Plot, current
from ..maths.train import evaluate

OUTLIER_CHANNELS = (3, 11, 27)
COLUMN = 0  # the output column of h0.qkv.w drawn in the figure
EVAL_TOKENS = 4096  # held-out characters scored per format (the first ones)
CALIB_TOKENS = 2048  # held-out characters whose activations SmoothQuant measures (the last ones)
INT8_THRESHOLD = 6.0  # LLM.int8 flags an input channel whose activation magnitude reaches 6.0, an
# absolute threshold (Dettmers et al. 2022, §3.2); our adaptation to weight rows: absmax 6× the median row's
ALPHA = 0.5  # SmoothQuant migration strength (the paper's default)
LABELS = {"bf16": "BF16", "fp8": "FP8 (e4m3)", "int8": "INT8", "int4": "INT4", "nf4": "NF4"}
HANDLING = {"none": "cap", "llmint8": "canals en 16 bits (LLM.int8)", "smoothquant": "migració (SmoothQuant)"}


def memo(key: tuple, make):
    """Results of the current weights, kept with them (session.cached)."""
    return session.cached(("quantize",) + key, make)


def with_outliers(p: dict, layers: int, factor: float) -> dict:
    """Same function in float: channel rows of qkv/fc times `factor`, their inputs divided."""
    p = {k: v.copy() for k, v in p.items()}
    c = list(OUTLIER_CHANNELS)
    for i in range(layers):
        for ln, lin in (("ln1", "qkv"), ("ln2", "fc")):
            p[f"h{i}.{ln}.w"][c] /= factor
            p[f"h{i}.{ln}.b"][c] /= factor
            p[f"h{i}.{lin}.w"][c, :] *= factor
    return p


def input_major(name: str, w: np.ndarray) -> np.ndarray:
    """The matrix as [in, out]; the tied head computes x @ wte.T, so wte's inputs are its columns."""
    return w.T if name == "wte" else w


def outlier_rows(w: np.ndarray) -> np.ndarray:
    """[in, out] -> [in] bool: input channels whose row absmax is INT8_THRESHOLD× the median row's."""
    row = np.abs(w).max(1)  # [in]
    return row > INT8_THRESHOLD * median(row)


def activation_maxima(p: dict, cfg: gpt.GPTConfig) -> dict[str, np.ndarray]:
    """max |x_j| of the inputs of qkv and fc, per channel, on held-out text the loss never scores."""
    data = corpus.data()[1]
    n = CALIB_TOKENS // cfg.context * cfg.context
    x = data[-n - 1:-1].reshape(-1, cfg.context)  # [N, T]
    caches = gpt.forward(p, cfg, x, data[-n:].reshape(-1, cfg.context))[2].caches  # each layer's, by name
    return {f"h{i}.{lin}.w": np.abs(caches[f"h{i}.{lin}"][0]).reshape(-1, cfg.d).max(0)  # [N, T, C] -> [C]
            for i in range(cfg.layers) for lin in ("qkv", "fc")}


def smoothing(w: np.ndarray, act_max: np.ndarray) -> np.ndarray:
    """SmoothQuant's per-input-channel factor s_j = max|X_j|^α / max|W_j|^(1-α): [C]."""
    s = act_max ** ALPHA / np.maximum(np.abs(w).max(1), 1e-12) ** (1 - ALPHA)  # [C]
    return np.where(s > 0, s, 1.0).astype(np.float32)


def smooth(p: dict, act_max: dict[str, np.ndarray], layers: int) -> dict:
    """Same function in float: X/s folds into the layer norm before qkv and fc, W's rows × s."""
    p = dict(p)
    for i in range(layers):
        for ln, lin in (("ln1", "qkv"), ("ln2", "fc")):
            s = smoothing(p[f"h{i}.{lin}.w"], act_max[f"h{i}.{lin}.w"])  # [C]
            p[f"h{i}.{ln}.w"], p[f"h{i}.{ln}.b"] = p[f"h{i}.{ln}.w"] / s, p[f"h{i}.{ln}.b"] / s
            p[f"h{i}.{lin}.w"] = p[f"h{i}.{lin}.w"] * s[:, None]  # [C, out]
    return p


def quantize_model(p: dict, name: str, group: int | None, int8_rows: bool) -> tuple[dict, int, int, int]:
    """(quantized params, stored bits, weights, 16-bit channels) over every matrix."""
    names = [k for k, v in p.items() if v.ndim == 2]
    ws = [input_major(k, p[k]) for k in names]  # each [in, out]
    stored = encode_many(ws, name, group, [outlier_rows(w) for w in ws] if int8_rows and name != "bf16" else None)
    out = dict(p) | {k: input_major(k, decode(s)) for k, s in zip(names, stored)}
    return (out, sum(s.bits() for s in stored), sum(w.size for w in ws), sum(int(s.kept.sum()) for s in stored))


def model(outliers: float) -> tuple[gpt.GPTConfig, dict]:
    cfg, p, _ = session.load("mini")
    return cfg, memo(("model", outliers), lambda: with_outliers(p, cfg.layers, outliers))


def maxima(outliers: float) -> dict[str, np.ndarray]:
    cfg, base = model(outliers)
    return memo(("maxima", outliers), lambda: activation_maxima(base, cfg))


def prepared(outliers: float, handling: str) -> dict:
    """The float model each format starts from: SmoothQuant rescales it (same function)."""
    cfg, base = model(outliers)
    if handling != "smoothquant":
        return base
    return memo(("smooth", outliers), lambda: smooth(base, maxima(outliers), cfg.layers))


def format_key(outliers: float, name: str, group: int | None, handling: str) -> tuple:
    if name == "bf16":  # no scale: grouping and outlier handling cannot change it
        group, handling = None, "none"
    return ("format", outliers, name, group, handling)


def measured(outliers: float, name: str, group: int | None, handling: str) -> tuple[float, float, int]:
    """(held-out loss, bits per weight, 16-bit channels) of one format, with group and handling
    as format_key keeps them."""
    _, _, group, handling = format_key(outliers, name, group, handling)[1:]
    q, bits, n, kept = quantize_model(prepared(outliers, handling), name, group, handling == "llmint8")
    return evaluate(q, model(outliers)[0], corpus.data()[1], EVAL_TOKENS), bits / n, kept


def original_loss(outliers: float) -> float:
    """The held-out loss of the float model."""
    cfg, base = model(outliers)
    return evaluate(base, cfg, corpus.data()[1], EVAL_TOKENS)


ORDER = ("int4", "int8", "nf4", "fp8", "bf16")  # the panel's format first: the order results arrive in
MESSAGES = {"original": "pèrdua del model original"} | {name: f"pèrdua a {label}" for name, label in LABELS.items()}


def quantization(granularity: str, group: int, outliers: float, outlier_handling: str):
    """A staged compute (engine.stages): the figure needs only the weights, so it comes first;
    then the held-out loss of the original model and of each format, INT4 first, each an
    evaluation the engine schedules (kept per weights)."""
    cfg, base = model(outliers)
    g = group if granularity == "group" else None
    w = base["h0.qkv.w"]
    normal = np.delete(w, OUTLIER_CHANNELS, axis=0)
    first = {"bigram": corpus.bigram_baseline(EVAL_TOKENS), "outlier_ratio": float(np.abs(w).max() / np.abs(normal).max())}
    original = ("quantize", "original", outliers)
    formats = {name: ("quantize",) + format_key(outliers, name, g, outlier_handling) for name in ORDER}
    evaluations = [Evaluation(original, MESSAGES["original"], partial(original_loss, outliers))]
    evaluations += [Evaluation(key, MESSAGES[name], partial(measured, outliers, name, g, outlier_handling))
                    for name, key in formats.items()]

    def shown(scores: dict) -> dict:
        out = dict(first)
        if original not in scores:
            return out
        out["loss_original"] = scores[original]
        for name, key in formats.items():
            if key in scores:
                loss, bits, kept = scores[key]
                out |= {f"loss_{name}": loss, f"degradation_{name}": loss - scores[original],
                        f"bits_{name}": bits, f"memory_{name}": bits / 16}
                if name == "int4":
                    out["kept_channels"] = kept  # 16-bit input channels, all matrices
        return out

    return shown((yield from evaluate_many(evaluations, shown)))


def _effective(outliers: float, handling: str, group: int | None) -> np.ndarray:
    """h0.qkv.w as the INT4 model computes with it, in the original coordinates: [in, out]."""
    w = model(outliers)[1]["h0.qkv.w"]  # [in, out]
    if handling == "smoothquant":
        s = smoothing(w, maxima(outliers)["h0.qkv.w"])[:, None]  # [in, 1]
        return quantize(w * s, "int4", group) / s  # the layer norm's 1/s, moved back onto the weights
    return quantize(w, "int4", group, outlier_rows(w) if handling == "llmint8" else None)


def _drawing(outliers: float, group: int, handling: str) -> tuple[Plot, list[float], int]:
    """The figure's plot, what share of the normal weights each line rounds to zero, and how
    many inputs it shows: the same for every stage of a change, so drawn once (memo)."""
    w = model(outliers)[1]["h0.qkv.w"]  # [in, out]
    rows = np.arange(min(group, w.shape[0]))  # the first group of inputs of one column
    normal = ~np.isin(rows, OUTLIER_CHANNELS) | (outliers == 1)  # at factor 1 no channel stands out
    span = np.abs(w[rows[normal], COLUMN]).max() * 1.15
    lines = [("pesos originals", w, None),
             ("INT4, escala per tensor", quantize(w, "int4", None), np.abs(w).max() / 7),
             (f"INT4, grup de {group} entrades", quantize(w, "int4", group), np.abs(w[rows, COLUMN]).max() / 7)]
    if handling != "none":
        rest = rows[~outlier_rows(w)[rows]]  # the group's inputs still on the INT4 grid
        step = np.abs(w[rest, COLUMN]).max() / 7 if handling == "llmint8" else None
        lines.append((f"+ {HANDLING[handling]}", _effective(outliers, handling, group), step))
    top = len(lines) - 0.5
    compact = current().compact  # a phone: each row's label above it, the whole width for the weights
    plot = Plot(height=70 + 50 * len(lines), left=16 if compact else 250, right=16, top=20, bottom=40).scales((-span, span), (0, len(lines)))
    plot.axes([-span / 1.15, 0, span / 1.15], [], "valor del pes", "", fmt=lambda t: fmt.number(t, 3))
    zeroed = []
    for k, (label, m, step) in enumerate(lines):
        y, values = plot.y(top - k), m[rows, COLUMN]
        if compact:
            plot.text(plot.left, y - 16, label, "start", "tw-note")
        else:
            plot.text(plot.left - 8, y + 4, label, "end", "tw-note")
        if step is not None:  # the grid this scale allows, as far as the view reaches
            for level in np.arange(-7, 8) * step:
                if abs(level) <= span:
                    plot.parts.append(f'<line class="tw-grid-q" x1="{plot.x(level)}" y1="{y - 12}" x2="{plot.x(level)}" y2="{y + 12}"/>')
        shown = "tw-s2" if k == 0 else "tw-s1"  # outlier channels sit beyond the view: drawn at its edge
        plot.dots(np.clip(values, -span, span).astype(float), np.full(len(rows), top - k, float),
                  [shown if ok else "tw-s3" for ok in normal], 2.5)
        zeroed.append(float(np.mean(values[normal] == 0)))
    return plot, zeroed, len(rows)


def _figure(p: dict, v: dict) -> tuple[str, str]:
    plot, zeroed, shown = memo(("figure", current().name, p["outliers"], p["group"], p["outlier_handling"]),
                               lambda: _drawing(p["outliers"], p["group"], p["outlier_handling"]))
    alt = (f"Una columna de pesos de la primera capa, {shown} entrades seguides, amb valors atípics de "
           f"{fmt.number(p['outliers'])}× (en un altre color, a la vora). A INT4 arrodoneixen a zero "
           + (f"el {fmt.percent(zeroed[1])} dels pesos normals tant amb una escala per tensor com amb una per grup"
              if fmt.percent(zeroed[1]) == fmt.percent(zeroed[2]) else
              f"el {fmt.percent(zeroed[1])} dels pesos normals amb una escala per tensor i el {fmt.percent(zeroed[2])} "
              f"amb una per grup") + (f", i el {fmt.percent(zeroed[3])} amb {HANDLING[p['outlier_handling']]}" if len(zeroed) > 3 else "")
           + (f". Pèrdua a INT4: {fmt.number(v['loss_int4'], 3)} nats, davant dels {fmt.number(v['loss_original'], 3)} de l'original."
              if "loss_int4" in v else ". La pèrdua a INT4 encara s'està mesurant."))
    return plot.render("Un valor atípic estira la graella del seu grup", alt), alt


def _row(label: str, v: dict, k: str) -> str:
    if f"loss_{k}" not in v:  # a staged run's format still being measured
        return f'<tr class="tw-pending"><td>{label}</td><td colspan="4">es mesura…</td></tr>'
    return (f"<tr><td>{label}</td><td>{fmt.number(v['loss_' + k], 3)}</td><td>{fmt.number(v['degradation_' + k], 3)}</td>"
            f"<td>{fmt.number(v['bits_' + k], 2)}</td><td>{fmt.percent(v['memory_' + k])}</td></tr>")


def _tables(p: dict, v: dict) -> str:
    rows = "".join(_row(label, v, k) for k, label in LABELS.items())
    original = fmt.number(v["loss_original"], 3) if "loss_original" in v else "es mesura…"
    return ("<table><thead><tr><th>Format</th><th>pèrdua (nats)</th><th>degradació</th><th>bits per pes</th>"
            f"<th>memòria respecte de BF16</th></tr></thead><tbody><tr><td>original (float32)</td>"
            f"<td>{original}</td><td>—</td><td>32</td><td>200 %</td></tr>{rows}</tbody></table>")


PARAMS = (
    Param("granularity", "choice", "group", "Granularitat de l'escala",
          choices=(("tensor", "una escala per a tota la matriu (per tensor)"), ("group", "una escala per grup")),
          help="Només importa amb formats amb escala (FP8, INT8, INT4, NF4)."),
    Param("group", "int", 64, "Mida del grup", min=8, max=128, ticks=(8, 16, 32, 64, 128), unit="pesos",
          help="Pesos seguits d'una mateixa sortida, al llarg de l'entrada, que comparteixen escala."),
    Param("outliers", "float", 40.0, "Magnitud dels valors atípics", min=1.0, max=100.0,
          ticks=(1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 100.0), unit="×",
          help="Per quant es multipliquen tres canals d'entrada; el model calcula el mateix. Amb 1, cap canal no destaca."),
    Param("outlier_handling", "choice", "none", "Tractament dels valors atípics", choices=tuple(HANDLING.items()),
          help="LLM.int8 guarda en 16 bits els canals atípics; SmoothQuant els reescala abans d'arrodonir."),
)

OUTPUTS = (
    Output("loss_original", "pèrdua original", "nats", 3),
    Output("loss_int4", "pèrdua a INT4", "nats", 3),
    Output("degradation_int4", "degradació a INT4", "nats", 3),
    Output("memory_int4", "memòria a INT4, respecte de BF16", decimals=1, style="pct"),
    Output("bits_int4", "bits per pes a INT4", "bits", 2),
    Output("kept_channels", "canals en 16 bits", decimals=0),
    Output("outlier_ratio", "pes més gran, respecte del més gran dels normals", "×", 1),
    Output("loss_int8", "pèrdua a INT8", "nats", 3, panel=False),
    Output("degradation_int8", "degradació a INT8", "nats", 3, panel=False),
    Output("degradation_bf16", "degradació a BF16", "nats", 4, panel=False),
    Output("degradation_fp8", "degradació a FP8", "nats", 3, panel=False),
    Output("degradation_nf4", "degradació a NF4", "nats", 3, panel=False),
    Output("bigram", "bigrama, el model de referència", "nats", 2, panel=False),
)

WIDGET = Widget(
    name="quantize",
    models=True,  # the mini-GPTs: weights, corpus, kernel
    title="Els pesos del mini-GPT, arrodonits: què s'hi perd",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=quantization,
    figure=_figure,
    tables=_tables,
    summary="Quantitza de debò els pesos del mini-GPT entrenat i en torna a mesurar la pèrdua.",
)
