"""§1 Prefill contra decode: the roofline calculator.

Every time here is the roofline bound: a step takes the longer of its FLOPs at the GPU's
peak and its bytes at the GPU's bandwidth (Williams, Waterman & Patterson, "Roofline",
CACM 2009). FLOPs per token are 2·N for N active parameters (Kaplan et al. 2020, §2.1),
attention FLOPs left out. Bytes per decode step are the active weights, read once for
the whole batch, plus the KV cache of every sequence.
"""

from __future__ import annotations

import math

from . import fmt
from .hardware import FORMATS, GPUS, MODELS, param_counts
from .params import Output, Param
from .registry import Widget, register
from .svg import Plot, log_ticks

KV_BYTES = 2.0  # the cache stays in bf16 here; the cost calculator lets it change


def step_time(flops: float, nbytes: float, peak: float, bandwidth: float) -> float:
    """Roofline time of one step: compute-bound or memory-bound, whichever is slower."""
    return max(flops / peak, nbytes / bandwidth)


def roofline(model: str, gpu: str, prompt_tokens: int, batch: int, weight_format: str) -> dict:
    m, g = MODELS[model], GPUS[gpu]
    total, active = param_counts(m)
    bpp = FORMATS[weight_format][1]
    weights = active * bpp  # bytes read per forward pass
    kv = m.kv_scalars() * m.n_layers * KV_BYTES * prompt_tokens  # cache of one sequence, bytes
    flops = 2.0 * active  # per token
    peak, bw = g.flops_bf16, g.bandwidth

    tpot = step_time(flops, weights + kv, peak, bw)  # one sequence, cache included
    t_batch = step_time(batch * flops, weights + batch * kv, peak, bw)  # weights once per batch
    ttft = step_time(prompt_tokens * flops, weights + kv, peak, bw)  # prefill writes the cache
    decode_intensity = flops / (weights + kv)
    return {
        "params_total": total,
        "params_active": active,
        "weight_gb": weights / 1e9,
        "kv_prompt_gb": kv / 1e9,
        "decode_tps_weights": bw / weights,
        "decode_tps": 1.0 / tpot,
        "kv_share_of_ceiling": 1.0 - (bw / (weights + kv)) / (bw / weights),
        "tpot_ms": 1e3 * tpot,
        "ttft_s": ttft,
        "batch_tps": batch / t_batch,
        "batch_gain": (batch / t_batch) * tpot,
        "gpu_intensity": peak / bw,
        "decode_intensity": decode_intensity,
        "batch_intensity": batch * flops / (weights + batch * kv),
        "prefill_intensity": prompt_tokens * flops / (weights + kv),
        "decode_idle": max(0.0, 1.0 - decode_intensity / (peak / bw)),
        "gpus_for_weights": math.ceil(total * bpp / g.memory),
    }


def _figure(p: dict, v: dict) -> tuple[str, str]:
    g = GPUS[p["gpu"]]
    peak, bw = g.flops_bf16 / 1e12, g.bandwidth / 1e12  # TFLOP/s, TB/s
    xs = (0.1, 1e5)
    plot = Plot().scales(xs, (0.1, 5000), xlog=True, ylog=True)
    plot.axes(log_ticks(*xs), log_ticks(0.1, 5000), "intensitat aritmètica (FLOP/byte, escala log)",
              "TFLOP/s assolibles (log)", fmt=lambda t: fmt.number(t, 1 if t < 1 else 0))
    ridge = peak / bw
    plot.line([xs[0], ridge, xs[1]], [bw * xs[0], peak, peak], "tw-roof")
    plot.text(plot.x(ridge) + 6, plot.y(peak) - 6, f"pic {fmt.number(peak)} TFLOP/s", "start", "tw-note")
    plot.text(plot.x(0.12) - 4, plot.y(bw * 0.5) - 4, f"{fmt.number(bw * 1e3)} GB/s", "start", "tw-note")
    points = (
        ("decode, 1 seq.", v["decode_intensity"], "tw-s1"),
        (f"decode, lot de {p['batch']}", v["batch_intensity"], "tw-s2"),
        (f"prefill, {fmt.tokens(p['prompt_tokens'])} tokens", v["prefill_intensity"], "tw-s3"),
    )
    for i, (label, x, cls) in enumerate(points):
        y = min(peak, bw * x)
        plot.dot(x, y, cls)
        anchor = "end" if x > 3000 else "start"
        dx = -8 if anchor == "end" else 8
        plot.text(plot.x(x) + dx, plot.y(y) + 18 + 14 * (i == 1), f"{label}: {fmt.percent(y / peak, 1)} del pic",
                  anchor, f"tw-note {cls}")
    alt = (
        f"Roofline de la {g.label}: el sostre inclinat és l'ample de banda ({fmt.number(g.bandwidth / 1e9)} GB/s) "
        f"i el pla, el pic ({fmt.number(peak)} TFLOP/s); es troben a {fmt.number(ridge)} FLOP/byte. "
        f"El decode d'una seqüència fa {fmt.number(v['decode_intensity'], 2)} FLOP/byte i aprofita el "
        f"{fmt.percent(min(1, v['decode_intensity'] / ridge), 1)} del pic; el prefill en fa "
        f"{fmt.number(v['prefill_intensity'])} i va limitat per càlcul."
    )
    return plot.render("Roofline: on cau cada fase", alt), alt


def _tables(p: dict, v: dict) -> str:
    rows = (
        ("Prefill", v["prefill_intensity"], fmt.with_unit(v["ttft_s"], 2, "s") + " (TTFT)"),
        ("Decode, 1 seqüència", v["decode_intensity"], fmt.with_unit(v["tpot_ms"], 1, "ms") + " per token"),
        (f"Decode, lot de {p['batch']}", v["batch_intensity"], fmt.with_unit(v["batch_tps"], 0, "tok/s")),
    )
    body = "".join(
        f"<tr><td>{name}</td><td>{fmt.number(x, 2 if x < 10 else 0)}</td>"
        f"<td>{'càlcul' if x >= v['gpu_intensity'] else 'memòria'}</td><td>{t}</td></tr>"
        for name, x, t in rows
    )
    return (
        "<table><thead><tr><th>Fase</th><th>FLOP/byte</th><th>limitada per</th><th>temps</th></tr>"
        f"</thead><tbody>{body}</tbody></table>"
    )


PARAMS = (
    Param("model", "choice", "llama-3-70b", "Model",
          choices=tuple((k, m.label) for k, m in MODELS.items()),
          help="Paràmetres comptats a partir de les formes del model card."),
    Param("gpu", "choice", "h100-80gb", "GPU", choices=tuple((k, g.label) for k, g in GPUS.items()),
          help="Pic bf16 dens i ample de banda del full de dades."),
    Param("prompt_tokens", "int", 8192, "Tokens de prompt", min=16, max=131072,
          ticks=tuple(2**k for k in range(4, 18)), unit="tokens"),
    Param("batch", "int", 32, "Seqüències al lot", min=1, max=256, ticks=tuple(2**k for k in range(9)),
          help="Els pesos es llegeixen una vegada per a tot el lot."),
    Param("weight_format", "choice", "bf16", "Bytes per paràmetre",
          choices=tuple((k, lab) for k, (lab, _) in FORMATS.items())),
)

OUTPUTS = (
    Output("params_active", "paràmetres actius", decimals=2, style="si", panel=False),
    Output("params_total", "paràmetres totals", decimals=2, style="si", panel=False),
    Output("weight_gb", "bytes de pesos per token", "GB", 1, panel=False),
    Output("kv_prompt_gb", "KV-cache del prompt", "GB", 2, panel=False),
    Output("decode_tps_weights", "sostre en decode, només pesos", "tok/s", 1),
    Output("decode_tps", "sostre en decode, amb el cache", "tok/s", 1),
    Output("kv_share_of_ceiling", "part del sostre que es menja el cache", decimals=0, style="pct", panel=False),
    Output("tpot_ms", "TPOT", "ms", 1),
    Output("ttft_s", "TTFT", "s", 2),
    Output("batch_tps", "throughput del lot", "tok/s", 0),
    Output("batch_gain", "guany del lot", "×", 1),
    Output("gpu_intensity", "intensitat aritmètica de la GPU", "FLOP/byte", 0),
    Output("decode_intensity", "intensitat d'un pas de decode", "FLOP/byte", 2, panel=False),
    Output("batch_intensity", "intensitat del decode en lot", "FLOP/byte", 1, panel=False),
    Output("prefill_intensity", "intensitat del prefill", "FLOP/byte", 0, panel=False),
    Output("decode_idle", "temps del decode esperant memòria", decimals=1, style="pct", panel=False),
    Output("gpus_for_weights", "GPUs per als pesos", decimals=0, panel=False),
)

WIDGET = register(Widget(
    name="roofline",
    title="Prefill contra decode: la calculadora del sostre",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=roofline,
    figure=_figure,
    tables=_tables,
    summary="Sostres de decode i prefill d'un model en una GPU, amb el model del roofline.",
))
