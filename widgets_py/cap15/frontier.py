"""§7 The latency–throughput frontier: the batch a TPOT target allows, and what formats change.

As the batch grows, a decode step (`serving.decode_step`, collectives included) gets slower and
the group's tokens per second per GPU grow, until the step turns compute-bound at the critical
batch (`frontier.critical_batch`) or the caches fill the memory (`frontier.batch_in_memory`).
The curve without the cache's traffic shows the weights alone; the format table shows which
formats speed up what: weight-only INT4 (W4A16) the memory-bound decode only, W8A8 the prefill too.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..engine import fmt
from ..engine.params import Output, Param
from ..engine.svg import Plot, log_ticks
from ..engine.widget import Widget
from ..maths.frontier import batch_in_memory, best_under, critical_batch, frontier
from . import critical_sentence, critical_text, critical_values
from ..maths.hardware import GPUS, MODELS
from ..maths.serving import CACHE_FORMATS, SCHEMES, WEIGHT_FORMATS, Setup, ttft

BATCHES = np.unique(np.round(np.logspace(0, np.log10(2048), 56)).astype(int))  # [k] batch sizes drawn
TABLE_FORMATS = ("bf16", "fp8", "int8", "int4")


def batches_for(fit: int) -> np.ndarray:
    """[k] the drawn batches, and the largest one whose caches fit (the memory's own point)."""
    return np.union1d(BATCHES, [fit]) if 1 <= fit <= BATCHES[-1] else BATCHES


def format_row(s: Setup, context: int, target_s: float) -> dict:
    """One weight format at this setup: decode at one sequence, the prompt's TTFT, the critical batch, the best batch."""
    fit = batch_in_memory(s, context)
    batches = batches_for(fit)
    tpot, per_gpu = frontier(s, context, batches)
    best = best_under(tpot, per_gpu, target_s, batches <= fit)
    return {"tpot_1_ms": 1e3 * tpot[0], "ttft_s": ttft(s, context), "critical": critical_batch(s),
            "best_per_gpu": per_gpu[best] if best >= 0 else 0.0}


def frontier_widget(model: str, gpu: str, n_gpus: int, context: int, weight_format: str, kv_format: str,
                    tpot_target_ms: float) -> dict:
    context, note = fmt.within_context(MODELS[model], context)
    s = Setup(model, gpu, weight_format, kv_format, n_gpus)
    with_cache = critical_batch(s, context)  # a bisection: once per run
    fit = batch_in_memory(s, context)
    batches = batches_for(fit)  # [k]
    tpot, per_gpu = frontier(s, context, batches)  # [k] each
    tpot0, per_gpu0 = frontier(s, 0, batches)  # [k] the weights alone: no cache to read
    best = best_under(tpot, per_gpu, tpot_target_ms / 1e3, batches <= fit)
    rows = {f: format_row(dataclasses.replace(s, weights=f), context, tpot_target_ms / 1e3) for f in TABLE_FORMATS}
    return {
        "curve": (batches, tpot, per_gpu, tpot0, per_gpu0), "rows": rows,
        "tpot_1_ms": 1e3 * tpot[0], "per_gpu_1": per_gpu[0],
        "fit_batch": fit,
        "best_batch": int(batches[best]) if best >= 0 else 0, "meets_target": best >= 0,
        "best_per_gpu": per_gpu[best] if best >= 0 else 0.0, "best_tpot_ms": 1e3 * tpot[best] if best >= 0 else 0.0,
        "best_gain": per_gpu[best] / per_gpu[0] if best >= 0 else 0.0,
        **critical_values(critical_batch(s), "critical_batch"),
        "critical_batch_cache_text": critical_text(with_cache),
        "critical_batch_cache_sentence": critical_sentence(with_cache),
        "int4_decode_gain": rows["bf16"]["tpot_1_ms"] / rows["int4"]["tpot_1_ms"],
        "int4_prefill_gain": rows["bf16"]["ttft_s"] / rows["int4"]["ttft_s"],
        "fp8_decode_gain": rows["bf16"]["tpot_1_ms"] / rows["fp8"]["tpot_1_ms"],
        "fp8_prefill_gain": rows["bf16"]["ttft_s"] / rows["fp8"]["ttft_s"],
        "context_used": context, "context_note": note,
    }


def _values(state: dict) -> dict:
    return {k: v for k, v in state.items() if k not in ("curve", "rows")}


def _figure(p: dict, state: dict) -> tuple[str, str]:
    batches, tpot, per_gpu, tpot0, per_gpu0 = state["curve"]
    tpot, tpot0 = 1e3 * tpot, 1e3 * tpot0  # [k] ms
    v = _values(state)
    xs = (min(tpot0.min(), tpot.min()) * 0.8, max(tpot.max(), p["tpot_target_ms"]) * 1.25)
    ys = (min(per_gpu.min(), per_gpu0.min()) * 0.7, max(per_gpu.max(), per_gpu0.max()) * 1.6)
    plot = Plot(height=340).scales(xs, ys, xlog=True, ylog=True)
    plot.axes(log_ticks(*xs), log_ticks(*ys), "TPOT, ms (escala logarítmica)", "tok/s per GPU (escala logarítmica)",
              fmt=lambda t: fmt.number(t, 1 if t < 1 else 0))
    inside = batches <= max(v["fit_batch"], 1)  # [k] the batches whose caches fit
    plot.line(tpot0, per_gpu0, "tw-s2", dash=True)
    plot.line(tpot[inside], per_gpu[inside], "tw-s1")
    if (~inside).any():
        plot.line(tpot[~inside], per_gpu[~inside], "tw-s1", dash=True)
        plot.dot(tpot[inside][-1], per_gpu[inside][-1], "tw-s1", 4)
        plot.text(plot.x(tpot[inside][-1]) + 6, plot.y(per_gpu[inside][-1]) + 16,
                  f"la memòria s'acaba: {fmt.number(v['fit_batch'])} seq.", "start", "tw-note tw-s1")
    plot.text(plot.x(tpot0[-1]) - 4, plot.y(per_gpu0[-1]) - 8, "sense llegir el cache", "end", "tw-note tw-s2")
    if v["critical_batch_exists"] and v["critical_batch"] <= batches[-1]:
        i = int(np.searchsorted(batches, v["critical_batch"]))
        plot.dot(tpot0[i], per_gpu0[i], "tw-s2", 5)
        plot.text(plot.x(tpot0[i]) - 6, plot.y(per_gpu0[i]) - 8, f"lot crític {v['critical_batch_text']}", "end",
                  "tw-note tw-s2")
    target = plot.x(p["tpot_target_ms"])
    plot.parts.append(f'<line class="tw-limit" x1="{target}" y1="{plot.top}" x2="{target}" '
                      f'y2="{plot.height - plot.bottom}" stroke-dasharray="6 4"/>')
    plot.text(target + 4, plot.height - plot.bottom - 8, f"objectiu {fmt.with_unit(p['tpot_target_ms'], 0, 'ms')}", "start", "tw-note")
    if v["meets_target"]:
        plot.dot(v["best_tpot_ms"], v["best_per_gpu"], "tw-s3", 6)
        plot.text(plot.x(v["best_tpot_ms"]) - 8, plot.y(v["best_per_gpu"]) - 10,
                  f"lot de {v['best_batch']}: {fmt.number(v['best_per_gpu'])} tok/s per GPU", "end", "tw-note tw-s3")
    alt = (f"Amb una seqüència, {fmt.with_unit(v['tpot_1_ms'], 1, 'ms')} per token i {fmt.number(v['per_gpu_1'], 1)} tok/s "
           f"per GPU. Sense el cache, {critical_sentence(v['critical_batch'] if v['critical_batch_exists'] else math.inf)}; "
           f"amb el cache de "
           f"{fmt.tokens(v['context_used'])} tokens, {v['critical_batch_cache_sentence']}. Hi caben "
           f"{fmt.number(v['fit_batch'])} seqüències. ")
    alt += (f"Amb l'objectiu de {fmt.with_unit(p['tpot_target_ms'], 0, 'ms')}, el millor lot és {v['best_batch']}, amb "
            f"{fmt.number(v['best_per_gpu'])} tok/s per GPU." if v["meets_target"] else
            f"Cap lot no arriba a l'objectiu de {fmt.with_unit(p['tpot_target_ms'], 0, 'ms')}.")
    return plot.render("Latència contra throughput a mesura que creix el lot", alt), alt


def _tables(p: dict, state: dict) -> str:
    body = "".join(
        f"<tr><td>{SCHEMES[f][1]} ({f.upper()})</td><td>{'només pesos' if SCHEMES[f][0] == 'bf16' and f != 'bf16' else 'pesos i activacions'}</td>"
        f"<td>{fmt.with_unit(r['tpot_1_ms'], 1, 'ms')}</td><td>{fmt.with_unit(r['ttft_s'], 2, 's')}</td>"
        f"<td>{critical_text(r['critical'])}</td><td>{fmt.number(r['best_per_gpu'])}</td></tr>"
        for f, r in state["rows"].items())
    return (f"<p class=\"tw-note\">Context: {state['context_note']}.</p>"
            f"<table><caption>Formats dels pesos a {fmt.tokens(state['context_used'])} tokens de context</caption>"
            "<thead><tr><th>Format</th><th>redueix</th><th>TPOT (1 seq.)</th><th>TTFT</th><th>lot crític</th>"
            f"<th>tok/s per GPU amb l'objectiu</th></tr></thead><tbody>{body}</tbody></table>")


PARAMS = (
    Param("model", "choice", "llama-3-70b", "Model", choices=tuple((k, m.label) for k, m in MODELS.items())),
    Param("gpu", "choice", "h100-80gb", "GPU", choices=tuple((k, g.label) for k, g in GPUS.items())),
    Param("n_gpus", "int", 8, "GPU del grup", min=1, max=16, ticks=(1, 2, 4, 8, 16)),
    Param("context", "int", 8192, "Context per seqüència", min=256, max=131072,
          ticks=tuple(2**k for k in range(8, 18)), unit="tokens"),
    Param("weight_format", "choice", "bf16", "Format dels pesos", choices=fmt.format_choices(WEIGHT_FORMATS)),
    Param("kv_format", "choice", "bf16", "Format del cache", choices=fmt.format_choices(CACHE_FORMATS)),
    Param("tpot_target_ms", "int", 30, "Objectiu de TPOT", min=5, max=200, ticks=(5, 10, 20, 30, 50, 75, 100, 150, 200),
          unit="ms", help="El temps màxim entre dos tokens d'una mateixa resposta que s'accepta."),
)

OUTPUTS = (
    Output("tpot_1_ms", "TPOT amb una seqüència", "ms", 1),
    Output("per_gpu_1", "tok/s per GPU amb una seqüència", "tok/s", 1, panel=False),
    Output("best_batch", "millor lot dins l'objectiu"),
    Output("best_per_gpu", "tok/s per GPU amb aquest lot", "tok/s", 0),
    Output("best_tpot_ms", "TPOT amb aquest lot", "ms", 1),
    Output("best_gain", "guany respecte d'una seqüència", "×", 1, panel=False),
    Output("meets_target", "s'arriba a l'objectiu?", style="bool", panel=False),
    Output("fit_batch", "seqüències que hi caben"),
    Output("critical_batch", "lot crític sense cache (0: cap)", panel=False),
    Output("critical_batch_exists", "hi ha lot crític sense cache?", style="bool", panel=False),
    Output("critical_batch_text", "lot crític, sense el cache", style="text"),
    Output("critical_batch_cache_text", "lot crític, amb el cache", style="text"),
    Output("critical_batch_cache_sentence", "lot crític amb el cache, en una frase", style="text", panel=False),
    Output("int4_decode_gain", "INT4 (W4A16): guany en decode", "×", 2, panel=False),
    Output("int4_prefill_gain", "INT4 (W4A16): guany en prefill", "×", 2, panel=False),
    Output("fp8_decode_gain", "FP8 (W8A8): guany en decode", "×", 2, panel=False),
    Output("fp8_prefill_gain", "FP8 (W8A8): guany en prefill", "×", 2, panel=False),
    Output("context_used", "context calculat", "tokens", panel=False),
    Output("context_note", "context", style="text", panel=False),
)

WIDGET = Widget(
    name="frontier",
    title="La frontera entre latència i throughput",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=frontier_widget,
    values=_values,
    figure=_figure,
    tables=_tables,
    summary="Throughput per GPU contra TPOT a mesura que creix el lot, amb el lot crític i un objectiu de TPOT.",
)
