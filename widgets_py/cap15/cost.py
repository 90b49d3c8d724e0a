"""§7 What it costs: memory needed, throughput, and dollars per million input and output tokens.

Two formulas: memory ≈ (weights + KV cache + activations) / the engine's share, and the §1 roofline
step of `serving` on a tensor-parallel group: the GPUs' FLOPs and bandwidths added up, plus
two all-reduces per block over the GPUs' link (NVLink, PCIe, or the network past one node). A mixture-of-experts model stores all
its experts; a decode step reads those its batch uses.

The dollars (`request_cost`, with maths.pricing's accounting) charge each phase of a request the
group-seconds it uses: the prefill of its prompt (`serving.ttft`) and its share of the decode
steps (`serving.decode_step`).
`context` stays what the server is sized for: every one of the `concurrency` sequences holds
that many tokens of cache, in memory and in the decode step. The request the reader sets
(`prompt` + `answer`) is one of those conversations, so it should fit in `context`; when it
does not, a note says so.

Memory follows the one rule of `frontier.cache_memory` (vLLM's): the engine takes a share of
each GPU's memory, 1 − the reserve the reader sets (10 %: vLLM's `gpu_memory_utilization` of
0.9), and fits in it the weights, the peak activations of one profiling pass and the caches.
So the memory needed is (weights + caches + activations) / share, and the reserve is the rest.
The caches count every copy the group keeps (`serving` assumption 7: past n_kv GPUs each KV head
is copied, and MLA's latent sits whole on every GPU): `kv_copies`.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import fmt
from ..maths import pricing
from ..maths.frontier import activation_bytes, batch_in_memory, profile_tokens
from ..maths.hardware import GPUS, MODELS, counts
from ..engine.params import Output, Param
from ..engine.widget import Widget
from ..maths.serving import (CACHE_FORMATS, FORMATS, WEIGHT_FORMATS, Setup, decode_parts, decode_step, kv_bytes_per_token,
                              params_read, prefill_parts, ttft)
from ..engine.svg import Plot, log_ticks

PRESET_CONTEXT, PRESET_GPUS = 8192, 8  # the side-by-side table: 8.192 tokens (or the model's limit) on 8 GPUs
PRESETS = ("gpt2-xl", "llama-3-70b", "mixtral-8x7b", "deepseek-v3")


def request_cost(s: Setup, context: int, concurrency: int, prompt: int, answer: int, dollars_per_hour: float) -> dict:
    """Group-seconds and dollars of one request: `prompt` tokens in, `answer` tokens out.

    The accounting. What is paid is the group's time, n GPUs × the price per GPU and hour,
    and each phase of the request is charged the seconds of the group it takes:
    - Prefill: one pass of the whole prompt, with the group to itself (`serving.ttft`). Past a
      few hundred tokens that pass is compute-bound: two prompts in one pass take twice the
      FLOPs and twice the time, so batching prompts does not cheapen an input token the way
      the batch cheapens an output token. The request pays the whole pass. (A prompt short
      enough to be memory-bound would share its weight reads with others: this errs dearer.)
    - Decode: `answer` steps of the widget's batch, `concurrency` sequences each holding
      `context` tokens of cache (`serving.decode_step`); a step serves them all, so the
      request pays 1/concurrency of each. A request shorter than `context` holds less cache
      than that: this errs dearer, by under 3 % for 7.000 + 1.000 tokens in 8.192.
    - Price per million input tokens: the prefill's dollars over its tokens (it depends on the
      prompt's length: attention's pairs grow as its square); per million output tokens: the
      decode's over its tokens (the throughput's price, independent of the request).
    The phases take turns on the group, as in `batching_sim`: a chunk of prefill riding along
    a decode step (SARATHI) would hide part of its cost in the step's weight reads.
    """
    per_second = pricing.dollars(1.0, dollars_per_hour)
    parts = prefill_parts(s, prompt)  # the request's pass alone: its weight matmuls, attention, all-reduces
    prefill = parts.total  # s of the group (serving.ttft)
    step = decode_step(s, concurrency, context)  # s of the group per step, shared by `concurrency`
    charged = pricing.group_seconds(prefill, step, answer, concurrency)
    decode = charged - prefill
    return {
        "prefill_s": prefill, "decode_s": decode, "prefill_share": prefill / charged,
        "prefill_comm_share": parts.collectives / prefill,
        "prefill_dollars": prefill * per_second, "decode_dollars": decode * per_second,
        "dollars_per_m_input": prefill * per_second / prompt * 1e6,
        "dollars_per_m": step / concurrency * per_second * 1e6,  # per million output tokens
        "request_dollars": pricing.dollars(charged, dollars_per_hour),
        "thousand_requests_dollars": 1e3 * pricing.dollars(charged, dollars_per_hour),  # the panel's readable size
        "dollars_per_m_all_in": pricing.dollars(charged, dollars_per_hour) / answer * 1e6,
    }


def request_note(prompt: int, answer: int, context: int) -> str:
    """Whether the request fits in the context every sequence is sized for (Catalan)."""
    total = f"{fmt.number(prompt)} + {fmt.number(answer)} tokens"
    if prompt + answer <= context:
        return f"{total}: hi cap en el context de {fmt.number(context)}"
    return (f"{total}: passa del context de {fmt.number(context)}; es cobra igualment, però el seu cache "
            f"no s'ha reservat")


def serving(model: str, gpu: str, n_gpus: int, context: int, concurrency: int, weight_format: str,
            kv_format: str, reserve_pct: float, price: float, prompt: int, answer: int) -> dict:
    m, s = MODELS[model], Setup(model, gpu, weight_format, kv_format, n_gpus)
    context, note = fmt.within_context(m, context)
    c, bpp = counts(m), FORMATS[weight_format].nbytes
    copies = s.kv_copies  # copies of each sequence's cache over the group (serving assumption 7)
    kv_token = kv_bytes_per_token(m, kv_format) * copies  # the group's bytes per token of context
    weights = c.total * bpp  # all experts must be resident
    kv_seq = kv_token * context  # one sequence's cache over the group, all its copies
    act = activation_bytes(s)  # the profiling pass's peak, whatever the concurrency (frontier.activation_bytes)
    share = 1 - reserve_pct / 100  # of each GPU's memory, the engine's (vLLM gpu_memory_utilization)
    base = weights + concurrency * kv_seq + act
    needed = base / share
    fit = batch_in_memory(s, context, share)
    read_one, read_batch = params_read(m, 1) * bpp, params_read(m, concurrency) * bpp  # weight bytes per step
    t_one, t_batch = decode_step(s, 1, context), decode_step(s, concurrency, context)
    comm_one, comm_batch = decode_parts(s, 1, context).collectives, decode_parts(s, concurrency, context).collectives
    throughput = concurrency / t_batch
    tokens_per_hour = throughput * 3600
    request = request_cost(s, context, concurrency, prompt, answer, price * n_gpus)
    return {
        "params_total": c.total, "params_active": c.active,
        "memory_needed_gb": needed / 1e9, "memory_gb": s.memory / 1e9, "bandwidth_gbs": s.bandwidth / 1e9,
        "fits": concurrency <= fit, "sequences_fit": fit,
        "weights_gb": weights / 1e9, "kv_gb": concurrency * kv_seq / 1e9, "kv_seq_gb": kv_bytes_per_token(m, kv_format) * context / 1e9,
        "kv_copies": copies,
        "activations_gb": act / 1e9, "profile_tokens": profile_tokens(s)[0], "reserve_gb": (needed - base) / 1e9,
        "weights_share": weights / needed, "kv_share": concurrency * kv_seq / needed,
        "activations_share": act / needed, "reserve_share": (needed - base) / needed,
        "read_per_token_gb": (read_one + kv_seq) / 1e9, "weights_read_batch_gb": read_batch / 1e9,
        "tps_one": 1 / t_one, "throughput": throughput, "batch_gain": throughput * t_one,
        "ttft_s": ttft(s, context),
        "tpot_one_ms": 1e3 * t_one, "tpot_ms": 1e3 * t_batch,
        "tpot_one_no_comm_ms": 1e3 * (t_one - comm_one), "comm_share_one": comm_one / t_one,
        "comm_share_batch": comm_batch / t_batch, "link": s.link.label if n_gpus > 1 and s.link else "cap",
        "dollars_per_hour": price * n_gpus, "tokens_per_hour_m": tokens_per_hour / 1e6,
        "kv_to_weights": concurrency * kv_seq / weights,
        "crossover_one": weights / kv_token, "crossover_batch": weights / (kv_token * concurrency),
        "gpu_intensity": s.g.flops_bf16 / s.g.bandwidth,
        "context_used": context, "context_note": note,
        **request, "request_note": request_note(prompt, answer, context),
    }


def _presets(p: dict) -> list[tuple[str, dict]]:
    """Each preset at 8 k tokens, or at its own context limit when it has fewer positions."""
    return [(key, serving(key, p["gpu"], PRESET_GPUS, min(PRESET_CONTEXT, MODELS[key].max_context),
                          p["concurrency"], p["weight_format"], p["kv_format"], p["reserve_pct"], p["price"],
                          p["prompt"], p["answer"]))
            for key in PRESETS]


def _figure(p: dict, v: dict) -> tuple[str, str]:
    ctx = np.logspace(np.log10(256), np.log10(1 << 20), 60)  # [60] context lengths
    kv = v["kv_gb"] / v["context_used"] * ctx  # [60] GB, all copies
    total = (v["weights_gb"] + kv + v["activations_gb"]) / (1 - p["reserve_pct"] / 100)  # [60] GB
    lo = min(kv.min(), v["weights_gb"]) / 2
    hi = max(total.max(), v["memory_gb"]) * 2
    plot = Plot(height=300).scales((256, 1 << 20), (lo, hi), xlog=True, ylog=True)
    plot.axes([256, 1024, 4096, 16384, 65536, 262144, 1 << 20], log_ticks(lo, hi),
              "context per seqüència (tokens, escala logarítmica)", "GB (escala logarítmica)",
              fmt=lambda t: fmt.tokens(t) if t >= 256 else fmt.number(t, 2 if t < 1 else 0))
    plot.line([256, 1 << 20], [v["weights_gb"]] * 2, "tw-s2")
    plot.line(ctx, kv, "tw-s1")
    plot.line(ctx, total, "tw-s3")
    plot.line([256, 1 << 20], [v["memory_gb"]] * 2, "tw-limit", dash=True)
    plot.text(plot.x(300), plot.y(v["weights_gb"]) - 6, "pesos: no depenen del context", "start", "tw-note tw-s2")
    plot.text(plot.x(300), plot.y(v["memory_gb"]) - 6, f"el que tens: {fmt.number(v['memory_gb'])} GB", "start", "tw-note")
    plot.text(plot.x(ctx[-1]) - 4, plot.y(kv[-1]) + 16, f"cache de {p['concurrency']} seq.", "end", "tw-note tw-s1")
    plot.text(plot.x(ctx[40]), plot.y(total[40]) - 8, "total", "end", "tw-note tw-s3")
    limit = MODELS[p["model"]].max_context
    if limit < 1 << 20:  # beyond its positions the model cannot go: the curves are hypothetical there
        plot.parts.append(f'<line class="tw-limit" x1="{plot.x(limit)}" y1="{plot.top}" x2="{plot.x(limit)}" '
                          f'y2="{plot.height - plot.bottom}" stroke-dasharray="2 4"/>')
        plot.text(plot.x(limit) + 4, plot.top + 14, f"límit del model: {fmt.tokens(limit)}", "start", "tw-note")
    plot.dot(v["context_used"], v["memory_needed_gb"], "tw-s3")
    memory_svg = plot.render("La memòria que demana cada longitud de context",
                             f"Pesos {fmt.number(v['weights_gb'], 1)} GB; el cache de {p['concurrency']} seqüències "
                             f"els iguala a {fmt.tokens(v['crossover_batch'])} tokens de context; el model admet "
                             f"fins a {fmt.tokens(limit)} tokens.")
    return memory_svg + _presets_svg(p), _alt(v)


def _presets_svg(p: dict) -> str:
    """Memory needed by each preset at 8 k tokens on 8 GPUs, against the memory there is."""
    rows = _presets(p)
    have = rows[0][1]["memory_gb"]
    top = max(max(r["memory_needed_gb"] for _, r in rows), have) * 1.05
    plot = Plot(height=40 + 34 * len(rows), left=110, right=150, top=24, bottom=16).scales((0, top), (0, 1))
    x_have = plot.x(have)
    for i, (key, r) in enumerate(rows):
        y = 24 + 34 * i
        cls = "tw-s3" if r["fits"] else "tw-s1"
        plot.text(plot.left - 8, y + 16, MODELS[key].label, "end", "tw-note")
        plot.span(0, r["memory_needed_gb"], y, 22, cls)
        price = f"{fmt.with_unit(r['dollars_per_m'], 2, 'dòlars')}/M" if r["fits"] else "no hi cap"
        plot.text(plot.width - plot.right + 6, y + 16, f"{fmt.number(r['memory_needed_gb'])} GB · {price}", "start", "tw-note")
    plot.parts.append(f'<line class="tw-limit" x1="{x_have}" y1="16" x2="{x_have}" y2="{plot.height - 10}" stroke-dasharray="6 4"/>')
    plot.text(x_have, 14, f"{fmt.number(have)} GB", "middle", "tw-note")
    return plot.render(f"Els quatre models a {fmt.tokens(PRESET_CONTEXT)} tokens (o al seu límit) en {PRESET_GPUS} GPU",
                       "; ".join(f"{MODELS[k].label} a {fmt.number(r['context_used'])} tokens: "
                                 f"{fmt.number(r['memory_needed_gb'])} GB" for k, r in rows))


def _alt(v: dict) -> str:
    return (f"Calen {fmt.number(v['memory_needed_gb'])} GB de {fmt.number(v['memory_gb'])}; "
            f"{fmt.number(v['throughput'])} tok/s; {fmt.with_unit(v['dollars_per_m'], 2, 'dòlars')} per milió de tokens "
            f"de sortida. Context: {v['context_note']}.")


def _tables(p: dict, v: dict) -> str:
    parts = (("Pesos", "weights", f"{fmt.si(v['params_total'], 2)} × {fmt.number(FORMATS[p['weight_format']].nbytes, 1)} bytes"),
             ("KV-cache", "kv", f"{fmt.tokens(v['context_used'])} tokens × {p['concurrency']} seqüències"
                                + (f" × {fmt.number(v['kv_copies'])} còpies" if v["kv_copies"] > 1 else "")),
             ("Activacions", "activations", f"pic d'una passada de {fmt.tokens(v['profile_tokens'])} tokens"),
             (f"Reserva ({fmt.number(p['reserve_pct'])} %)", "reserve", "la memòria que el motor no pren"))
    rows = "".join(f"<tr><td>{name}</td><td>{fmt.with_unit(v[k + '_gb'], 2, 'GB')}</td>"
                   f"<td>{fmt.percent(v[k + '_share'], 1)}</td><td>{why}</td></tr>" for name, k, why in parts)
    presets = ""
    for key, r in _presets(p):
        presets += (f"<tr><td>{MODELS[key].label}</td><td>{fmt.number(r['context_used'])}</td>"
                    f"<td>{fmt.with_unit(r['weights_gb'], 0, 'GB')}</td>"
                    f"<td>{fmt.with_unit(r['kv_seq_gb'], 2, 'GB')}</td>"
                    f"<td>{fmt.number(r['sequences_fit']) if r['sequences_fit'] else 'no hi cap'}</td>"
                    f"<td>{fmt.number(r['tps_one'], 1)}</td><td>{fmt.number(r['throughput'])}</td>"
                    f"<td>{fmt.with_unit(r['ttft_s'], 2, 's')}</td>"
                    f"<td>{fmt.number(r['dollars_per_m'], 2) if r['fits'] else '—'}</td></tr>")
    whole = "el grup sencer" if p["n_gpus"] > 1 else "la GPU sencera"
    phases = (("Prefill", p["prompt"], "prefill", v["dollars_per_m_input"], f"{whole}, una passada"),
              ("Decode", p["answer"], "decode", v["dollars_per_m"], f"1/{p['concurrency']} de cada pas"))
    request = "".join(f"<tr><td>{name}</td><td>{fmt.number(n)}</td><td>{fmt.with_unit(v[k + '_s'], 3, 's')}</td>"
                      f"<td>{fmt.number(1e3 * v[k + '_dollars'], 2)}</td><td>{fmt.number(per_m, 2)}</td>"
                      f"<td>{why}</td></tr>" for name, n, k, per_m, why in phases)
    request += (f"<tr><td>Petició</td><td>{fmt.number(p['prompt'] + p['answer'])}</td>"
                f"<td>{fmt.with_unit(v['prefill_s'] + v['decode_s'], 3, 's')}</td>"
                f"<td>{fmt.number(v['thousand_requests_dollars'], 2)}</td><td>—</td>"
                f"<td>el prefill en fa el {fmt.percent(v['prefill_share'])}</td></tr>")
    group = f"de les {p['n_gpus']} GPU" if p["n_gpus"] > 1 else "de la GPU"
    g = GPUS[p["gpu"]]
    return (f"<p class=\"tw-note\">Context: {v['context_note']}.</p>"
            "<table><thead><tr><th>Component</th><th>bytes</th><th>del total</th><th>d'on surt</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            f"<table><caption>Una petició: {v['request_note']}</caption><thead><tr><th>Fase</th><th>tokens</th>"
            f"<th>temps {group}</th><th>dòlars per mil</th><th>dòlars/M</th><th>com es compta</th></tr></thead>"
            f"<tbody>{request}</tbody></table>"
            f"<table><caption>Els quatre models a {fmt.tokens(PRESET_CONTEXT)} tokens o al seu límit, "
            f"{PRESET_GPUS} × {g.label}, {p['concurrency']} seqüències</caption><thead><tr><th>Model</th>"
            "<th>context</th><th>pesos</th><th>cache/seq</th><th>seq. que hi caben</th><th>tok/s (1 seq)</th>"
            f"<th>tok/s ({p['concurrency']} seq)</th><th>TTFT</th><th>dòlars/M de sortida</th></tr></thead>"
            f"<tbody>{presets}</tbody></table>")


PARAMS = (
    Param("model", "choice", "llama-3-70b", "Model", choices=tuple((k, m.label) for k, m in MODELS.items())),
    Param("gpu", "choice", "h100-80gb", "GPU", choices=tuple((k, g.label) for k, g in GPUS.items())),
    Param("n_gpus", "int", 8, "Nombre de GPU", min=1, max=64, ticks=(1, 2, 4, 8, 16, 32, 64)),
    Param("context", "int", 8192, "Context per seqüència", min=256, max=1 << 20,
          ticks=tuple(1 << k for k in range(8, 21)), unit="tokens",
          help="Si passa del context màxim del model, es retalla i es diu."),
    Param("concurrency", "int", 32, "Seqüències al lot", min=1, max=1024, ticks=tuple(1 << k for k in range(11))),
    Param("weight_format", "choice", "bf16", "Format dels pesos", choices=fmt.format_choices(WEIGHT_FORMATS)),
    Param("kv_format", "choice", "bf16", "Format del cache", choices=fmt.format_choices(CACHE_FORMATS)),
    Param("reserve_pct", "int", 10, "Reserva de memòria", min=0, max=50, step=1, unit="%",
          help="La part de cada GPU que el motor deixa lliure; vLLM en pren el 90 % (gpu_memory_utilization)."),
    Param("price", "float", 3.0, "Preu per GPU i hora", min=0.25, max=12.0, step=0.25, unit="dòlars"),
    Param("prompt", "int", 7000, "Prompt d'una petició", min=100, max=100_000, unit="tokens",
          ticks=(100, 200, 300, 500, 700, 1000, 2000, 3000, 5000, 7000, 10_000, 20_000, 30_000, 50_000, 70_000, 100_000),
          help="Els tokens d'entrada: el prefill els processa d'una passada, amb les GPU per a ell sol."),
    Param("answer", "int", 1000, "Resposta d'una petició", min=10, max=30_000, unit="tokens",
          ticks=(10, 20, 30, 50, 70, 100, 200, 300, 500, 700, 1000, 2000, 3000, 5000, 7000, 10_000, 20_000, 30_000),
          help="Els tokens de sortida: un per pas de decode, i cada pas se'l reparteixen totes les seqüències."),
)

OUTPUTS = (
    Output("memory_needed_gb", "memòria necessària", "GB", 0),
    Output("fits", "hi cap?", style="bool"),
    Output("sequences_fit", "seqüències que hi caben"),
    Output("throughput", "throughput", "tok/s", 0),
    Output("ttft_s", "TTFT amb el context ple", "s", 2),
    Output("tpot_one_ms", "TPOT, una seqüència sola", "ms", 1),
    Output("tpot_ms", "TPOT amb aquesta concurrència", "ms", 1),
    Output("dollars_per_m", "per milió de tokens de sortida", "dòlars", 2),
    Output("dollars_per_m_input", "per milió de tokens d'entrada", "dòlars", 2),
    Output("thousand_requests_dollars", "mil peticions com aquesta", "dòlars", 2),
    Output("request_dollars", "una petició", "dòlars", 4, panel=False),
    Output("prefill_share", "part del prefill en el temps de la petició", style="pct"),
    Output("prefill_comm_share", "part del prefill que són comunicacions", style="pct", panel=False),
    Output("request_note", "petició", style="text", panel=False),
    Output("prefill_s", "prefill de la petició, temps de les GPU", "s", 3, panel=False),
    Output("decode_s", "decode de la petició, la seva part del temps de les GPU", "s", 3, panel=False),
    Output("prefill_dollars", "prefill de la petició", "dòlars", 4, panel=False),
    Output("decode_dollars", "decode de la petició", "dòlars", 4, panel=False),
    Output("dollars_per_m_all_in", "per milió de tokens de sortida, amb el prefill a dins", "dòlars", 2, panel=False),
    Output("memory_gb", "memòria disponible", "GB", 0, panel=False),
    Output("bandwidth_gbs", "ample de banda total", "GB/s", 0, panel=False),
    Output("weights_gb", "pesos", "GB", 1, panel=False),
    Output("kv_gb", "KV-cache", "GB", 1, panel=False),
    Output("kv_seq_gb", "cache per seqüència", "GB", 2, panel=False),
    Output("kv_copies", "còpies del cache al grup", "", 0, panel=False),
    Output("activations_gb", "activacions", "GB", 2, panel=False),
    Output("reserve_gb", "reserva de memòria", "GB", 1, panel=False),
    Output("profile_tokens", "tokens de la passada que fixa les activacions", "tokens", panel=False),
    Output("read_per_token_gb", "bytes llegits per token", "GB", 2, panel=False),
    Output("weights_read_batch_gb", "pesos llegits per pas, amb la concurrència", "GB", 1, panel=False),
    Output("context_used", "context calculat", "tokens", panel=False),
    Output("context_note", "context", style="text"),
    Output("tps_one", "tokens/s d'una seqüència", "tok/s", 1, panel=False),
    Output("batch_gain", "guany del lot", "×", 1, panel=False),
    Output("dollars_per_hour", "dòlars per hora", "dòlars", 2, panel=False),
    Output("tokens_per_hour_m", "milions de tokens per hora", "milions", 2, panel=False),
    Output("kv_to_weights", "cache respecte dels pesos", style="pct", panel=False),
    Output("crossover_one", "creuament, una seqüència", decimals=1, style="si", panel=False),
    Output("crossover_batch", "creuament, amb la concurrència", decimals=1, style="si", panel=False),
    Output("params_total", "paràmetres totals", decimals=2, style="si", panel=False),
    Output("params_active", "paràmetres actius", decimals=2, style="si", panel=False),
    Output("tpot_one_no_comm_ms", "TPOT d'una seqüència sense les comunicacions", "ms", 1, panel=False),
    Output("comm_share_one", "part del TPOT que són comunicacions, una seqüència", decimals=0, style="pct"),
    Output("comm_share_batch", "part del TPOT que són comunicacions, amb la concurrència", decimals=0, style="pct",
           panel=False),
    Output("link", "enllaç entre les GPU", style="text", panel=False),
)

WIDGET = Widget(
    name="cost",
    title="El que costa servir un model",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=serving,
    figure=_figure,
    tables=_tables,
    summary="Memòria, throughput i dòlars per milió de tokens d'un model servit en unes quantes GPU.",
)
