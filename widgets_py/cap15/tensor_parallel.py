"""§1 Several GPUs: TPOT and throughput per GPU against the tensor-parallel degree.

Each degree is `serving.decode_step` on a group of n GPUs (assumption 7 there): the weights,
FLOPs split n ways, the cache by KV heads only (copied once n passes their number), and every block pays two all-reduces over the GPUs' link. Beside
it, the same step with a free link (the collectives left out), which is what adding up the GPUs'
bandwidths used to promise. Past one node (8 GPUs) the all-reduces cross the network.
"""

from __future__ import annotations

import math

from ..engine import fmt
from ..engine.params import Output, Param
from ..engine.svg import Plot
from ..engine.widget import Widget
from ..maths.frontier import batch_in_memory
from ..maths.hardware import GPUS, MODELS
from ..maths.serving import WEIGHT_FORMATS, Setup, decode_parts

DEGREES = (1, 2, 4, 8, 16)  # tensor-parallel degrees drawn: one node, and one step over the network


def degree(model: str, gpu: str, n: int, batch: int, context: int, weight_format: str) -> dict:
    """One degree's decode step: with the collectives, without them, and whether the batch fits."""
    s = Setup(model, gpu, weight_format, "bf16", n)
    parts = decode_parts(s, batch, context)
    free = parts.total - parts.collectives  # the ideal link
    return {"tpot_ms": 1e3 * parts.total, "free_ms": 1e3 * free, "comm_share": parts.collectives / parts.total,
            "per_gpu": batch / parts.total / n, "per_gpu_free": batch / free / n,
            "fits": batch_in_memory(s, context) >= batch}


def tensor_parallel(model: str, gpu: str, batch: int, context: int, weight_format: str) -> dict:
    context, note = fmt.within_context(MODELS[model], context)
    rows = {n: degree(model, gpu, n, batch, context, weight_format) for n in DEGREES}
    fitting = [n for n in DEGREES if rows[n]["fits"]]
    best = min(fitting, key=lambda n: rows[n]["tpot_ms"]) if fitting else 0
    values = {f"{k}_{n}": v for n, row in rows.items() for k, v in row.items()}
    return values | {
        "min_degree": fitting[0] if fitting else 0,
        "best_degree": best,
        "best_tpot_ms": rows[best]["tpot_ms"] if best else 0.0,
        "speedup_8": rows[4]["tpot_ms"] / rows[8]["tpot_ms"],  # what going from 4 to 8 GPUs buys
        "speedup_8_free": rows[4]["free_ms"] / rows[8]["free_ms"],  # what it would buy with a free link
        "link": Setup(model, gpu, n_gpus=2).link.label if GPUS[gpu].link else "cap",
        "context_used": context, "context_note": note,
    }


def _panel(p: dict, v: dict, key: str, free_key: str, ylabel: str, title: str) -> str:
    ys = [v[f"{key}_{n}"] for n in DEGREES] + [v[f"{free_key}_{n}"] for n in DEGREES]
    unit = 10 ** math.floor(math.log10(max(ys) / 4))
    step = math.ceil(max(ys) / 4 / unit) * unit  # a round tick step, about a quarter of the range
    top = step * 5
    plot = Plot(height=250).scales((1, 16), (0, top), xlog=True)
    plot.axes(DEGREES, [step * k for k in range(6)], "GPU del grup de paral·lelisme tensorial (escala logarítmica)", ylabel,
              fmt=lambda t: fmt.number(t, 0 if float(t).is_integer() else 1))
    node = plot.x(8)
    plot.parts.append(f'<line class="tw-limit" x1="{node}" y1="{plot.top}" x2="{node}" '
                      f'y2="{plot.height - plot.bottom}" stroke-dasharray="2 4"/>')
    plot.text(node + 4, plot.top + 14, "fi del node: després, la xarxa", "start", "tw-note")
    plot.line(DEGREES, [v[f"{free_key}_{n}"] for n in DEGREES], "tw-s2", dash=True)
    plot.line(DEGREES, [v[f"{key}_{n}"] for n in DEGREES], "tw-s1")
    for n in DEGREES:
        plot.dot(n, v[f"{key}_{n}"], "tw-s1" if v[f"fits_{n}"] else "tw-s3", 5 if v[f"fits_{n}"] else 3)
    above = v[f"{key}_16"] >= v[f"{free_key}_16"]  # the higher curve is labelled above its end, the other below
    plot.text(plot.x(16) - 8, plot.y(v[f"{key}_16"]) + (-10 if above else 18), "amb els all-reduce", "end", "tw-note tw-s1")
    plot.text(plot.x(16) - 8, plot.y(v[f"{free_key}_16"]) + (18 if above else -10), "enllaç ideal", "end",
              "tw-note tw-s2")
    return plot.render(title, title)


def _figure(p: dict, v: dict) -> tuple[str, str]:
    m = MODELS[p["model"]]
    tpot = _panel(p, v, "tpot_ms", "free_ms", "TPOT (ms)", f"TPOT de {m.label} segons les GPU")
    tput = _panel(p, v, "per_gpu", "per_gpu_free", "tok/s per GPU", "Throughput per GPU segons les GPU")
    fits = (f"els pesos i el cache hi caben a partir de {v['min_degree']} GPU" if v["min_degree"]
            else "no hi cap amb cap d'aquests graus")
    alt = (f"{m.label}, lot de {p['batch']}, {fmt.tokens(v['context_used'])} tokens de context: amb 8 GPU el TPOT és "
           f"{fmt.with_unit(v['tpot_ms_8'], 1, 'ms')}, del qual el {fmt.percent(v['comm_share_8'])} són "
           f"all-reduce ({v['link']}); amb un enllaç ideal seria {fmt.with_unit(v['free_ms_8'], 1, 'ms')}. "
           f"Passar de 4 a 8 GPU l'escurça {fmt.with_unit(v['speedup_8'], 2, '×')} (ideal: "
           f"{fmt.with_unit(v['speedup_8_free'], 2, '×')}), i el throughput per GPU baixa a cada pas; {fits}. "
           "Els punts petits no hi caben.")
    return tpot + tput, alt


def _tables(p: dict, v: dict) -> str:
    rows = "".join(
        f"<tr><td>{n}</td><td>{fmt.with_unit(v[f'tpot_ms_{n}'], 1, 'ms')}</td><td>{fmt.with_unit(v[f'free_ms_{n}'], 1, 'ms')}</td>"
        f"<td>{fmt.percent(v[f'comm_share_{n}'])}</td><td>{fmt.number(v[f'per_gpu_{n}'])}</td>"
        f"<td>{'sí' if v[f'fits_{n}'] else 'no'}</td></tr>" for n in DEGREES)
    return (f"<p class=\"tw-note\">Context: {v['context_note']}.</p>"
            "<table><thead><tr><th>GPU</th><th>TPOT</th><th>enllaç ideal</th><th>all-reduce</th>"
            f"<th>tok/s per GPU</th><th>hi cap?</th></tr></thead><tbody>{rows}</tbody></table>")


PARAMS = (
    Param("model", "choice", "llama-3-70b", "Model", choices=tuple((k, m.label) for k, m in MODELS.items())),
    Param("gpu", "choice", "h100-80gb", "GPU", choices=tuple((k, g.label) for k, g in GPUS.items()),
          help="Cada GPU porta el seu enllaç: NVLink a les SXM d'NVIDIA, Infinity Fabric a la MI300X i PCIe a "
               "les targetes PCIe (sense pont NVLink)."),
    Param("batch", "int", 1, "Seqüències al lot", min=1, max=256, ticks=tuple(2**k for k in range(9))),
    Param("context", "int", 8192, "Context per seqüència", min=256, max=131072,
          ticks=tuple(2**k for k in range(8, 18)), unit="tokens"),
    Param("weight_format", "choice", "bf16", "Format dels pesos", choices=fmt.format_choices(WEIGHT_FORMATS)),
)

OUTPUTS = tuple(
    Output(f"{k}_{n}", f"{label}, {n} GPU", unit, dec, style=style, panel=show and n == 8)
    for n in DEGREES
    for k, label, unit, dec, style, show in (
        ("tpot_ms", "TPOT", "ms", 1, "num", True), ("free_ms", "TPOT amb un enllaç ideal", "ms", 1, "num", True),
        ("comm_share", "part del TPOT en all-reduce", "", 0, "pct", True),
        ("per_gpu", "tok/s per GPU", "tok/s", 0, "num", False),
        ("per_gpu_free", "tok/s per GPU, enllaç ideal", "tok/s", 0, "num", False),
        ("fits", "hi cap", "", 0, "bool", False))
) + (
    Output("best_degree", "grau amb el TPOT més curt"),
    Output("best_tpot_ms", "TPOT més curt", "ms", 1),
    Output("min_degree", "GPU mínimes perquè hi càpiga", panel=False),
    Output("speedup_8", "guany de 4 a 8 GPU", "×", 2, panel=False),
    Output("speedup_8_free", "guany de 4 a 8 GPU, enllaç ideal", "×", 2, panel=False),
    Output("link", "enllaç", style="text", panel=False),
    Output("context_used", "context calculat", "tokens", panel=False),
    Output("context_note", "context", style="text", panel=False),
)

WIDGET = Widget(
    name="tensor_parallel",
    title="Diverses GPU: el preu dels all-reduce",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=tensor_parallel,
    figure=_figure,
    tables=_tables,
    summary="TPOT i throughput per GPU d'un model repartit amb paral·lelisme tensorial, amb i sense comunicacions.",
)
