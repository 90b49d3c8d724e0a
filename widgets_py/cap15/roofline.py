"""§1 Prefill contra decode: the roofline calculator.

Every time is the roofline bound of `serving.step_time` (assumptions stated there): a
pass takes the longer of its matmul FLOPs at the GPU's peak (in the products' format: bf16
for weight-only INT4, 8-bit for FP8 and INT8) and its weight bytes at the GPU's bandwidth,
plus attention's own roofline (its FLOPs in the prefill, its KV-cache traffic in decode). A decode step of a batch reads the weights
once for all its sequences; a mixture-of-experts model reads the experts its tokens use,
so the weights read per step grow with the batch (the second figure).
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import fmt
from ..maths.hardware import GPUS, MODELS, counts
from ..engine.params import Output, Param
from ..engine.widget import Widget
from ..maths.frontier import critical_batch
from . import critical_text
from ..maths.serving import (matrices_read, FORMATS, WEIGHT_FORMATS, Setup, decode_step, expected_experts,
                              flops_per_token, kv_bytes_per_token, matrices_read_share, params_read, prefill_parts,
                              step_time, ttft)
from ..engine.svg import Plot, log_ticks

KV_FORMAT = "bf16"  # the cache stays in bf16 here; the cost calculator lets it change
FIGURE_MODELS = ("llama-3-70b", "mixtral-8x7b", "deepseek-v3")  # dense beside two MoE
BATCHES = np.unique(np.round(np.logspace(0, np.log10(256), 40)).astype(int))  # [k] batch sizes drawn


def roofline(model: str, gpu: str, prompt_tokens: int, batch: int, weight_format: str) -> dict:
    m, s = MODELS[model], Setup(model, gpu, weight_format, KV_FORMAT)
    prompt, note = fmt.within_context(m, prompt_tokens)
    c, bpp = counts(m), FORMATS[weight_format].nbytes
    w1, wb, wp = (params_read(m, t) * bpp for t in (1, batch, prompt))  # weight bytes read by each pass
    kv = kv_bytes_per_token(m, KV_FORMAT) * prompt  # cache of one sequence, bytes
    flops, bw, ridge = flops_per_token(m), s.bandwidth, s.peak / s.bandwidth
    tpot, t_batch = decode_step(s, 1, prompt), decode_step(s, batch, prompt)
    decode_intensity = flops / (w1 + kv)
    prefill = prefill_parts(s, prompt)
    no_attention = step_time(s, prompt, prompt)  # the same pass without QKᵀ and AV
    return {
        "params_total": c.total,
        "params_active": c.active,
        "weight_gb": w1 / 1e9,
        "kv_prompt_gb": kv / 1e9,
        "decode_tps_weights": bw / w1,
        "decode_tps": 1.0 / tpot,
        "kv_share_of_ceiling": 1.0 - (1.0 / tpot) / (bw / w1),
        "tpot_ms": 1e3 * tpot,
        "ttft_s": ttft(s, prompt),
        "ttft_no_attention_s": no_attention,
        "attention_share_ttft": prefill.attention / prefill.total,
        "peak_tflops": s.peak / 1e12,
        "critical_batch_text": critical_text(critical_batch(s)),
        "critical_batch_cache_text": critical_text(critical_batch(s, prompt)),
        "batch_tps": batch / t_batch,
        "batch_gain": (batch / t_batch) * tpot,
        "experts_batch": expected_experts(m.n_experts, m.n_active_experts, batch) if m.n_experts else 0.0,
        "weights_batch_gb": wb / 1e9,
        "weights_batch_params": matrices_read(m, batch),
        "weights_batch_share": matrices_read_share(m, batch),
        "params_readable": c.total - c.lookup,
        "gpu_intensity": ridge,
        "decode_intensity": decode_intensity,
        "batch_intensity": batch * flops / (wb + batch * kv),
        "prefill_intensity": prompt * flops / (wp + kv),  # the prompt writes its cache once
        "decode_idle": max(0.0, 1.0 - decode_intensity / ridge),
        "gpus_for_weights": math.ceil(c.total * bpp / s.memory),
        "prompt_used": prompt,
        "context_note": note,
    }


def read_share(model: str, batches: np.ndarray) -> np.ndarray:
    """[k] share of a model's matrices (all but the input tables) one decode step of each batch reads."""
    m = MODELS[model]
    return np.array([matrices_read_share(m, int(b)) for b in batches])


def _figure(p: dict, v: dict) -> tuple[str, str]:
    g = GPUS[p["gpu"]]
    peak, bw = v["peak_tflops"], g.bandwidth / 1e12  # TFLOP/s in the products' format, TB/s
    xs = (0.1, 1e5)
    plot = Plot().scales(xs, (0.1, 5000), xlog=True, ylog=True)
    plot.axes(log_ticks(*xs), log_ticks(0.1, 5000), "intensitat aritmètica (FLOP/byte, escala logarítmica)",
              "TFLOP/s assolibles (escala logarítmica)", fmt=lambda t: fmt.number(t, 1 if t < 1 else 0))
    ridge = peak / bw
    plot.line([xs[0], ridge, xs[1]], [bw * xs[0], peak, peak], "tw-roof")
    plot.text(plot.x(ridge) + 6, plot.y(peak) - 6, f"pic {fmt.number(peak)} TFLOP/s", "start", "tw-note")
    plot.text(plot.x(0.12) - 4, plot.y(bw * 0.5) - 4, f"{fmt.number(bw * 1e3)} GB/s", "start", "tw-note")
    points = (
        ("decode, 1 seq.", v["decode_intensity"], "tw-s1"),
        (f"decode, lot de {p['batch']}", v["batch_intensity"], "tw-s2"),
        (f"prefill, {fmt.tokens(v['prompt_used'])} tokens", v["prefill_intensity"], "tw-s3"),
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
    if v["prompt_used"] < p["prompt_tokens"]:
        alt += f" Atenció: {v['context_note']}."
    roof = plot.render("El sostre (roofline): on cau cada fase", alt)
    reads, reads_alt = _reads_figure(p, v)
    return roof + reads, alt + " " + reads_alt


def _reads_figure(p: dict, v: dict) -> tuple[str, str]:
    """Share of the stored weights one decode step reads, as the batch grows: dense beside MoE."""
    plot = Plot(height=260).scales((1, 256), (0, 1.05), xlog=True)
    plot.axes([1, 2, 4, 8, 16, 32, 64, 128, 256], [0.0, 0.25, 0.5, 0.75, 1.0], "seqüències al lot (escala logarítmica)",
              "matrius llegides per pas", fmt=lambda t: fmt.percent(t) if t <= 1.0 and isinstance(t, float) else str(t))
    models = FIGURE_MODELS + ((p["model"],) if p["model"] not in FIGURE_MODELS else ())
    for i, key in enumerate(models):
        share = read_share(key, BATCHES)
        cls = f"tw-s{i + 1}"
        plot.line(BATCHES, share, cls, dash=key != p["model"])
        plot.text(plot.x(BATCHES[-1]) - 4, plot.y(share[-1]) + 16 + 14 * i * (share[-1] > 0.99),
                  MODELS[key].label, "end", f"tw-note {cls}")
        if key == p["model"]:
            plot.dot(p["batch"], v["weights_batch_share"], cls)
    desc = (f"Amb {MODELS[p['model']].label} i un lot de {p['batch']}, cada pas llegeix "
            f"{fmt.si(v['weights_batch_params'], 1)} paràmetres, el {fmt.percent(v['weights_batch_share'], 1)} dels "
            f"{fmt.si(v['params_readable'], 1)} que un pas pot llegir (la taula d'entrada només es consulta). "
            "Un model dens ho llegeix tot des d'una sola seqüència; "
            "un MoE, cada vegada més experts a mesura que creix el lot.")
    return plot.render("Pesos llegits per pas a mesura que creix el lot", desc), desc


def _tables(p: dict, v: dict) -> str:
    rows = (
        ("Prefill", v["prefill_intensity"], fmt.with_unit(v["ttft_s"], 2, "s") + " (TTFT)"),
        ("Decode, 1 seqüència", v["decode_intensity"], fmt.with_unit(v["tpot_ms"], 1, "ms") + " per token"),
        (f"Decode, lot de {p['batch']}", v["batch_intensity"], fmt.with_unit(v["batch_tps"], 0, "tok/s")),
    )
    body = "".join(
        f"<tr><td>{name}</td><td>{fmt.number(x, 2 if x < 10 else 1 if x < 100 else 0)}</td>"
        f"<td>{'càlcul' if x >= v['gpu_intensity'] else 'memòria'}</td><td>{t}</td></tr>"
        for name, x, t in rows
    )
    return (
        f"<p class=\"tw-note\">Context: {v['context_note']}.</p>"
        "<table><thead><tr><th>Fase</th><th>FLOP/byte</th><th>limitada per</th><th>temps</th></tr>"
        f"</thead><tbody>{body}</tbody></table>"
    )


PARAMS = (
    Param("model", "choice", "llama-3-70b", "Model",
          choices=tuple((k, m.label) for k, m in MODELS.items()),
          help="Paràmetres comptats a partir de les dimensions (capes, amplades, caps, experts) del fitxer config.json de cada model, no de la xifra del nom."),
    Param("gpu", "choice", "h100-80gb", "GPU", choices=tuple((k, g.label) for k, g in GPUS.items()),
          help="Pic de càlcul dens i ample de banda, del full de dades. El pic és el de BF16, o el de 8 bits "
               "amb pesos FP8 o INT8 si la GPU calcula en aquest format."),
    Param("prompt_tokens", "int", 8192, "Tokens de prompt", min=16, max=131072,
          ticks=tuple(2**k for k in range(4, 18)), unit="tokens",
          help="Si passa del context màxim del model, es retalla i es diu."),
    Param("batch", "int", 32, "Seqüències al lot", min=1, max=256, ticks=tuple(2**k for k in range(9)),
          help="Una sola lectura dels pesos serveix a totes les seqüències del lot; el cache, no."),
    Param("weight_format", "choice", "bf16", "Bytes per paràmetre", choices=fmt.format_choices(WEIGHT_FORMATS)),
)

OUTPUTS = (
    Output("params_active", "paràmetres actius", decimals=2, style="si", panel=False),
    Output("params_total", "paràmetres totals", decimals=2, style="si", panel=False),
    Output("weight_gb", "pesos llegits per token, una seqüència", "GB", 1, panel=False),
    Output("kv_prompt_gb", "KV-cache del prompt", "GB", 2, panel=False),
    Output("decode_tps_weights", "sostre en decode, només pesos", "tok/s", 1),
    Output("decode_tps", "sostre en decode, amb el cache", "tok/s", 1),
    Output("kv_share_of_ceiling", "part del sostre que es menja el cache", decimals=0, style="pct", panel=False),
    Output("tpot_ms", "TPOT", "ms", 1),
    Output("ttft_s", "TTFT", "s", 2),
    Output("batch_tps", "throughput del lot", "tok/s", 0),
    Output("batch_gain", "guany del lot", "×", 1),
    Output("weights_batch_gb", "pesos llegits per pas del lot", "GB", 1),
    Output("weights_batch_share", "part de les matrius llegida per pas (sense la taula d'entrada)", decimals=1,
           style="pct", panel=False),
    Output("params_readable", "paràmetres que un pas pot llegir (tots menys la taula d'entrada)", decimals=1,
           style="si", panel=False),
    Output("weights_batch_params", "paràmetres llegits per pas del lot", decimals=0, style="si", panel=False),
    Output("experts_batch", "experts per capa llegits en el lot", decimals=3, panel=False),
    Output("prompt_used", "tokens de prompt calculats", "tokens", panel=False),
    Output("context_note", "context", style="text"),
    Output("gpu_intensity", "intensitat aritmètica de la GPU", "FLOP/byte", 0),
    Output("decode_intensity", "intensitat d'un pas de decode", "FLOP/byte", 2, panel=False),
    Output("batch_intensity", "intensitat del decode en lot", "FLOP/byte", 1, panel=False),
    Output("prefill_intensity", "intensitat del prefill", "FLOP/byte", 0, panel=False),
    Output("decode_idle", "temps del decode esperant memòria", decimals=1, style="pct", panel=False),
    Output("gpus_for_weights", "GPU per als pesos", decimals=0, panel=False),
    Output("ttft_no_attention_s", "TTFT sense els productes de l'atenció", "s", 2, panel=False),
    Output("attention_share_ttft", "part del TTFT que és atenció", decimals=0, style="pct", panel=False),
    Output("peak_tflops", "pic de càlcul en aquest format", "TFLOP/s", 0, panel=False),
    Output("critical_batch_text", "lot crític, sense cache", style="text", panel=False),
    Output("critical_batch_cache_text", "lot crític, amb el cache del prompt", style="text"),
)

WIDGET = Widget(
    name="roofline",
    title="Prefill contra decode: el sostre de velocitat",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=roofline,
    figure=_figure,
    tables=_tables,
    summary="Sostres de decode i prefill d'un model en una GPU, amb el model del roofline.",
)
