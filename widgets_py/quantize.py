"""§4 Quantization: round the trained weights to each format for real, measure the loss.

Every matrix of the mini-GPT is quantized and dequantized, and the held-out loss is
recomputed with the rounded weights. Integer formats use a symmetric scale (absmax):
one per tensor, or one per group of `group` consecutive weights of a row. The outlier
control multiplies three input channels of the first linear layer of each block by a
factor and divides the matching layer-norm outputs by it: in float the model is the
same function, but those weight rows now stretch any scale they share.
"""

from __future__ import annotations

import numpy as np

from . import corpus, fmt, pretrained
from .params import Output, Param
from .registry import Widget, register
from .svg import Plot
from .train import evaluate

OUTLIER_CHANNELS = (3, 11, 27)
NORMAL_ROW = 0  # a row of h0.qkv.w with no outlier, drawn in the figure
EVAL_TOKENS = 4096  # held-out characters scored per format
NF4 = np.array([-1.0, -0.6961928, -0.5250731, -0.3949175, -0.2844414, -0.1848074, -0.0910500, 0.0,
                0.0795803, 0.1609302, 0.2461123, 0.3379152, 0.4407098, 0.5626170, 0.7229568, 1.0])  # QLoRA
FORMATS = {  # name: (label, bits per weight before scales)
    "bf16": ("BF16", 16), "fp8": ("FP8 (e4m3)", 8), "int8": ("INT8", 8), "int4": ("INT4", 4), "nf4": ("NF4", 4),
}


def bf16(w: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even on the dropped 16 bits)."""
    bits = w.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.view(np.float32)


def e4m3(x: np.ndarray) -> np.ndarray:
    """Round to FP8 e4m3 values (3 mantissa bits, max 448, subnormals below 2^-6)."""
    mag = np.abs(x)
    exp = np.floor(np.log2(np.maximum(mag, 2.0**-9)))
    step = 2.0 ** (np.maximum(exp, -6) - 3)  # spacing of representable values
    return np.clip(np.sign(x) * np.round(mag / step) * step, -448, 448)


def grouped(w: np.ndarray, group: int | None) -> np.ndarray:
    """View w as [groups, size]: the whole tensor, or runs of `group` along each row."""
    if group is None:
        return w.reshape(1, -1)
    rows, cols = w.shape
    pad = (-cols) % group
    return np.pad(w, ((0, 0), (0, pad))).reshape(rows, -1, group).reshape(-1, group)


def ungrouped(g: np.ndarray, shape: tuple[int, int], group: int | None) -> np.ndarray:
    if group is None:
        return g.reshape(shape)
    rows, cols = shape
    return g.reshape(rows, -1)[:, :cols]


def quantize(w: np.ndarray, name: str, group: int | None) -> np.ndarray:
    """Quantize then dequantize one matrix: what the forward pass will compute with."""
    if name == "bf16":
        return bf16(w)
    g = grouped(w.astype(np.float64), group)  # [groups, size]
    absmax = np.abs(g).max(1, keepdims=True)
    absmax[absmax == 0] = 1.0
    if name == "fp8":
        q = e4m3(g / absmax * 448) * absmax / 448
    elif name == "nf4":
        idx = np.abs((g / absmax)[..., None] - NF4).argmin(-1)
        q = NF4[idx] * absmax
    else:
        top = {"int8": 127, "int4": 7}[name]
        q = np.clip(np.round(g / absmax * top), -top, top) * absmax / top
    return ungrouped(q, w.shape, group).astype(np.float32)


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


def bits_per_weight(name: str, group: int | None, n: int) -> float:
    scales = 0 if name == "bf16" else (16 / group if group else 16 / n)  # one bf16 scale per group
    return FORMATS[name][1] + scales


def quantize_model(p: dict, name: str, group: int | None) -> dict:
    return {k: quantize(v, name, group) if v.ndim == 2 else v for k, v in p.items()}


def quantization(granularity: str, group: int, outliers: float) -> dict:
    cfg, p, _ = pretrained.load("mini")
    heldout = corpus.data()[1]
    base = with_outliers(p, cfg.layers, outliers)
    n = sum(v.size for v in base.values() if v.ndim == 2)
    g = group if granularity == "group" else None
    out = {"loss_original": evaluate(base, cfg, heldout, EVAL_TOKENS), "bigram": corpus.bigram_bound()}
    for name in FORMATS:
        out[f"loss_{name}"] = evaluate(quantize_model(base, name, g), cfg, heldout, EVAL_TOKENS)
        out[f"degradation_{name}"] = out[f"loss_{name}"] - out["loss_original"]
        out[f"memory_{name}"] = bits_per_weight(name, g, n) / 16
    w = base["h0.qkv.w"]
    normal = np.delete(w, OUTLIER_CHANNELS, axis=0)
    out["outlier_ratio"] = float(np.abs(w).max() / np.abs(normal).max())
    return out


def _figure(p: dict, v: dict) -> tuple[str, str]:
    cfg, params, _ = pretrained.load("mini")
    w = with_outliers(params, cfg.layers, p["outliers"])["h0.qkv.w"]
    row = w[NORMAL_ROW]  # one ordinary row of weights
    span = np.abs(row).max() * 1.15
    plot = Plot(height=230, left=190, right=16, top=20, bottom=40).scales((-span, span), (0, 3))
    plot.axes([-span / 1.15, 0, span / 1.15], [], "valor del pes", "", fmt=lambda t: fmt.number(t, 3))
    rows = (("pesos originals", row, None),
            ("INT4, escala per tensor", quantize(w, "int4", None)[NORMAL_ROW], np.abs(w).max() / 7),
            (f"INT4, escala per grup de {p['group']}", quantize(w, "int4", p["group"])[NORMAL_ROW],
             np.abs(grouped(w, p["group"])[0]).max() / 7))
    for k, (label, values, step) in enumerate(rows):
        y = plot.y(2.5 - k)
        plot.text(plot.left - 8, y + 4, label, "end", "tw-note")
        if step is not None:  # the grid this scale allows, as far as the view reaches
            for level in np.arange(-7, 8) * step:
                if abs(level) <= span:
                    plot.parts.append(f'<line class="tw-grid-q" x1="{plot.x(level)}" y1="{y - 12}" x2="{plot.x(level)}" y2="{y + 12}"/>')
        for x in values:
            plot.dot(float(np.clip(x, -span, span)), 2.5 - k, "tw-s2" if k == 0 else "tw-s1", 2.5)
    zeroed = float(np.mean(quantize(w, "int4", None)[NORMAL_ROW] == 0))
    alt = (f"Amb outliers de {fmt.number(p['outliers'])}×, l'escala per tensor d'INT4 té un pas de "
           f"{fmt.number(np.abs(w).max() / 7, 3)} i arrodoneix a zero el {fmt.percent(zeroed)} d'una fila normal; "
           f"pèrdua a INT4: {fmt.number(v['loss_int4'], 3)} nats contra {fmt.number(v['loss_original'], 3)}.")
    return plot.render("Com un outlier estira la graella", alt), alt


def _tables(p: dict, v: dict) -> str:
    rows = "".join(
        f"<tr><td>{label}</td><td>{fmt.number(v['loss_' + k], 3)}</td><td>{fmt.number(v['degradation_' + k], 3)}</td>"
        f"<td>{fmt.percent(v['memory_' + k])}</td></tr>" for k, (label, _) in FORMATS.items())
    return ("<table><thead><tr><th>Format</th><th>pèrdua (nats)</th><th>degradació</th><th>memòria contra BF16</th>"
            f"</tr></thead><tbody><tr><td>original (float32)</td><td>{fmt.number(v['loss_original'], 3)}</td>"
            f"<td>—</td><td>200 %</td></tr>{rows}</tbody></table>")


PARAMS = (
    Param("granularity", "choice", "group", "Gra de l'escala",
          choices=(("tensor", "una escala per tensor"), ("group", "una escala per grup")),
          help="Només importa amb formats amb escala (FP8, INT8, INT4, NF4)."),
    Param("group", "int", 64, "Mida del grup", min=8, max=128, ticks=(8, 16, 32, 64, 128), unit="pesos"),
    Param("outliers", "float", 40.0, "Magnitud dels outliers", min=1.0, max=100.0,
          ticks=(1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 100.0), unit="×",
          help="Factor de tres canals. A 1 no n'hi ha cap."),
)

OUTPUTS = (
    Output("loss_original", "pèrdua original", "nats", 3),
    Output("loss_int4", "pèrdua a INT4", "nats", 3),
    Output("degradation_int4", "degradació a INT4", "nats", 3),
    Output("memory_int4", "memòria a INT4, contra BF16", decimals=1, style="pct"),
    Output("outlier_ratio", "ràtio d'outliers", "×", 1),
    Output("loss_int8", "pèrdua a INT8", "nats", 3, panel=False),
    Output("degradation_int8", "degradació a INT8", "nats", 3, panel=False),
    Output("degradation_bf16", "degradació a BF16", "nats", 4, panel=False),
    Output("degradation_fp8", "degradació a FP8", "nats", 3, panel=False),
    Output("degradation_nf4", "degradació a NF4", "nats", 3, panel=False),
    Output("bigram", "fita del bigrama", "nats", 2, panel=False),
)

WIDGET = register(Widget(
    name="quantize",
    title="Quantització: menys bits, i què costa",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=quantization,
    figure=_figure,
    tables=_tables,
    summary="Quantitza de debò els pesos del mini-GPT entrenat i en torna a mesurar la pèrdua.",
))
