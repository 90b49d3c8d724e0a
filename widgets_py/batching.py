"""§3 Continuous batching: the same queue served by static and continuous batching.

Costs come from the §1 roofline of Llama 3 8B on one H100 80 GB: a decode iteration
reads the weights once (bytes / bandwidth), and each prefill token costs 2·N FLOPs at
the peak. The simulator itself is `batching_sim.simulate`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import fmt
from .batching_sim import Request, Run, simulate
from .hardware import GPUS, MODELS, param_counts
from .lengths import long_tail
from .params import Output, Param
from .registry import Widget, register
from .svg import Plot

COST_MODEL, COST_GPU = "llama-3-8b", "h100-80gb"
PROMPT = 256  # prompt tokens of an ordinary request
LONG_PROMPT = 8192  # the long prompt that enters mid-run in the chunked-prefill experiment
OUT_MEDIAN, OUT_SIGMA, OUT_MIN, OUT_MAX = 50, 1.4, 8, 390  # output law: many short, a long tail
SLOT_SWEEP = (1, 2, 4, 8, 16, 32, 64)


def costs() -> tuple[float, float]:
    """(ms per decode iteration, ms per prefill token) from the roofline of the cost model."""
    n, g = param_counts(MODELS[COST_MODEL])[1], GPUS[COST_GPU]
    return 1e3 * 2.0 * n / g.bandwidth, 1e3 * 2.0 * n / g.flops_bf16


def workload(n: int, variability: float, gap_ms: float, seed: int) -> list[Request]:
    rng = np.random.default_rng(seed)
    outputs = long_tail(rng, n, OUT_MEDIAN, OUT_SIGMA, OUT_MIN, OUT_MAX, variability, constant=100)  # [n]
    gaps = rng.exponential(gap_ms, n) if gap_ms > 0 else np.zeros(n)  # [n] Poisson arrivals
    arrivals = np.cumsum(gaps) - gaps[0]  # [n] the first request arrives at 0
    return [Request(i, float(arrivals[i]), PROMPT, int(outputs[i])) for i in range(n)]


def with_long_prompt(reqs: list[Request]) -> list[Request]:
    """The same queue with one request's prompt made long, a quarter of the way in."""
    i = len(reqs) // 4
    long = Request(reqs[i].id, reqs[i].arrival_ms, LONG_PROMPT, reqs[i].output)
    return reqs[:i] + [long] + reqs[i + 1:]


@lru_cache(maxsize=64)
def served(requests: int, variability: int, gap: str, seed: int, slots: int, continuous: bool,
           chunk: int | None = None, long_prompt: bool = False) -> Run:
    """One simulation, memoised: the values, the grid and the slot sweep share runs."""
    decode_ms, prefill_ms = costs()
    reqs = workload(requests, variability / 100, float(gap), seed)
    return simulate(with_long_prompt(reqs) if long_prompt else reqs, slots, continuous, decode_ms, prefill_ms, chunk)


def batching(slots: int, requests: int, variability: int, arrival_gap_ms: str, chunked: bool,
             chunk_tokens: int, seed: int) -> dict:
    decode_ms, prefill_ms = costs()
    queue = (requests, variability, arrival_gap_ms, seed, slots)
    static = served(*queue, False).metrics(slots)
    cont = served(*queue, True).metrics(slots)
    whole = served(*queue, True, None, True).metrics(slots)
    chunk = served(*queue, True, chunk_tokens, True).metrics(slots)
    current = chunk if chunked else whole
    outputs = [r.output for r in served(*queue, True).requests]
    values = {f"static_{k}": v for k, v in static.items()} | {f"continuous_{k}": v for k, v in cont.items()}
    return values | {
        "gain": cont["throughput"] / static["throughput"],
        "out_min": min(outputs), "out_max": max(outputs), "out_mean": float(np.mean(outputs)),
        "decode_ms": decode_ms, "prefill_ms_per_token": prefill_ms,
        "gap_max_ms": current["gap_max_ms"], "gap_p99_ms": current["gap_p99_ms"],
        "gap_max_whole_ms": whole["gap_max_ms"], "gap_max_chunked_ms": chunk["gap_max_ms"],
        "gap_p99_whole_ms": whole["gap_p99_ms"], "gap_p99_chunked_ms": chunk["gap_p99_ms"],
        "throughput_whole": whole["throughput"], "throughput_chunked": chunk["throughput"],
    }


def gain_by_slots(p: dict) -> list[float]:
    queue = (p["requests"], p["variability"], p["arrival_gap_ms"], p["seed"])
    return [served(*queue, s, True).metrics(s)["throughput"] / served(*queue, s, False).metrics(s)["throughput"]
            for s in SLOT_SWEEP]


def _grid(p: dict, v: dict) -> str:
    runs = [("Estàtic", False, "static"), ("Continu", True, "continuous")]
    width = max(v["static_iterations"], v["continuous_iterations"])
    slots = p["slots"]
    row_h = max(2.0, min(10.0, 120 / slots))
    panel_h = slots * row_h + 34
    plot = Plot(height=int(2 * panel_h + 36), left=12, right=12, top=8, bottom=28)
    plot.scales((0, width), (0, 1))
    for k, (title, continuous, key) in enumerate(runs):
        top = 8 + k * panel_h
        plot.text(8, top + 14, f"{title} · {fmt.percent(v[key + '_idle'])} ocioses · "
                  f"{fmt.number(v[key + '_occupied'], 1)} de {slots} ranures ocupades de mitjana", "start", "tw-note")
        y0 = top + 22
        plot.parts.append(f'<rect class="tw-slot-empty" x="{plot.x(0)}" y="{y0}" '
                          f'width="{plot.x(v[key + "_iterations"]) - plot.x(0):.2f}" height="{slots * row_h:.2f}"/>')
        for r in served(p["requests"], p["variability"], p["arrival_gap_ms"], p["seed"], slots, continuous).requests:
            x0, x1 = plot.x(r.start_iter), plot.x(r.finish_iter)
            cls = "tw-slot-used" if r.id % 2 else "tw-slot-used2"
            plot.parts.append(f'<rect class="{cls}" x="{x0}" y="{y0 + r.slot * row_h:.2f}" '
                              f'width="{max(x1 - x0, 0.5):.2f}" height="{max(row_h - 0.6, 1):.2f}"/>')
    plot.text((plot.left + plot.width - plot.right) / 2, plot.height - 8, "iteracions", "middle", "tw-label")
    return plot.render("Les ranures del lot, iteració a iteració",
                       f"Ranures ocupades (ple) i ocioses (buit): estàtic {fmt.percent(v['static_idle'])} "
                       f"ocioses, continu {fmt.percent(v['continuous_idle'])}.")


def _figure(p: dict, v: dict) -> tuple[str, str]:
    gains = gain_by_slots(p)
    top = max(4.5, max(gains) * 1.1)
    plot = Plot(height=240).scales((1, 64), (0, top), xlog=True)
    plot.axes(SLOT_SWEEP, [t for t in range(0, int(top) + 1)], "ranures del lot (escala log)", "guany (×)",
              fmt=lambda t: fmt.number(t))
    plot.parts.append(f'<rect class="tw-band" x="{plot.x(1)}" y="{plot.y(4)}" width="{plot.x(64) - plot.x(1)}" '
                      f'height="{plot.y(2) - plot.y(4)}"/>')
    plot.text(plot.x(1.1), plot.y(4) + 14, "la franja 2-4× del text", "start", "tw-note")
    plot.line(SLOT_SWEEP, gains, "tw-s1")
    for s, g in zip(SLOT_SWEEP, gains):
        plot.dot(s, g, "tw-s1", 6 if s == p["slots"] else 3.5)
    plot.text(plot.x(p["slots"]), plot.y(v["gain"]) - 10, f"{fmt.with_unit(v['gain'], 2, '×')}", "middle", "tw-note tw-s1")
    curve = plot.render("Guany del batching continu segons les ranures",
                        "Guany per a " + ", ".join(f"{s}: {fmt.with_unit(g, 2, '×')}" for s, g in zip(SLOT_SWEEP, gains)))
    alt = (f"Guany de {fmt.with_unit(v['gain'], 2, '×')} amb {p['slots']} ranures: ranures ocioses "
           f"{fmt.percent(v['static_idle'])} en estàtic i {fmt.percent(v['continuous_idle'])} en continu.")
    return _grid(p, v) + curve, alt


def _tables(p: dict, v: dict) -> str:
    rows = ""
    for name, k in (("Estàtic", "static"), ("Continu", "continuous")):
        rows += (f"<tr><td>{name}</td><td>{fmt.number(v[k + '_throughput'])}</td><td>{fmt.number(v[k + '_iterations'])}</td>"
                 f"<td>{fmt.number(v[k + '_occupied'], 1)} de {p['slots']}</td>"
                 f"<td>{fmt.with_unit(v[k + '_ttft_p95_s'], 2, 's')}</td><td>{fmt.with_unit(v[k + '_latency_p95_s'], 2, 's')}</td></tr>")
    chunks = (f"<tr><td>prompt sencer</td><td>{fmt.with_unit(v['gap_max_whole_ms'], 1, 'ms')}</td>"
              f"<td>{fmt.with_unit(v['gap_p99_whole_ms'], 1, 'ms')}</td><td>{fmt.number(v['throughput_whole'])}</td></tr>"
              f"<tr><td>trossos de {fmt.number(p['chunk_tokens'])}</td><td>{fmt.with_unit(v['gap_max_chunked_ms'], 1, 'ms')}</td>"
              f"<td>{fmt.with_unit(v['gap_p99_chunked_ms'], 1, 'ms')}</td><td>{fmt.number(v['throughput_chunked'])}</td></tr>")
    return ("<table><thead><tr><th></th><th>tok/s</th><th>iteracions</th><th>ranures ocupades</th>"
            f"<th>TTFT p95</th><th>latència p95</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<table><thead><tr><th>Prefill de {fmt.tokens(LONG_PROMPT)} tokens</th><th>pitjor interval</th>"
            f"<th>p99 de l'interval</th><th>tok/s</th></tr></thead><tbody>{chunks}</tbody></table>")


PARAMS = (
    Param("slots", "int", 8, "Ranures del lot", min=1, max=64, ticks=SLOT_SWEEP),
    Param("requests", "int", 80, "Peticions", min=8, max=400, ticks=(8, 20, 40, 80, 160, 240, 400)),
    Param("variability", "int", 100, "Variabilitat de les longituds", min=0, max=100, step=5, unit="%",
          help="A 0, totes les respostes fan la mateixa llargada."),
    Param("arrival_gap_ms", "choice", "0", "Temps entre arribades",
          choices=(("0", "totes alhora"), ("2", "2 ms de mitjana"), ("5", "5 ms de mitjana"),
                   ("10", "10 ms de mitjana"), ("20", "20 ms de mitjana"))),
    Param("chunked", "bool", True, "Chunked prefill",
          help="Trosseja els prefills llargs perquè no aturin els decodes en curs."),
    Param("chunk_tokens", "int", 512, "Tokens de prefill per iteració", min=64, max=4096,
          ticks=(64, 128, 256, 512, 1024, 2048, 4096)),
    Param("seed", "int", 10, "Llavor", min=0, max=999),
)

OUTPUTS = (
    Output("static_throughput", "throughput estàtic", "tok/s", 0),
    Output("continuous_throughput", "throughput continu", "tok/s", 0),
    Output("gain", "guany", "×", 2),
    Output("static_idle", "ranures ocioses, estàtic", style="pct"),
    Output("continuous_idle", "ranures ocioses, continu", style="pct"),
    Output("static_latency_p95_s", "latència p95, estàtic", "s", 2),
    Output("continuous_latency_p95_s", "latència p95, continu", "s", 2),
    Output("gap_max_ms", "pitjor interval entre tokens", "ms", 1),
    Output("gap_p99_ms", "p99 de l'interval", "ms", 1),
    Output("continuous_drain_idle", "ocioses en el buidatge final, continu", style="pct", panel=False),
    Output("static_drain_idle", "ocioses en l'últim lot, estàtic", style="pct", panel=False),
    Output("static_iterations", "iteracions, estàtic", panel=False),
    Output("continuous_iterations", "iteracions, continu", panel=False),
    Output("static_occupied", "ranures ocupades, estàtic", decimals=1, panel=False),
    Output("continuous_occupied", "ranures ocupades, continu", decimals=1, panel=False),
    Output("static_ttft_p95_s", "TTFT p95, estàtic", "s", 2, panel=False),
    Output("continuous_ttft_p95_s", "TTFT p95, continu", "s", 2, panel=False),
    Output("out_min", "resposta més curta", "tokens", panel=False),
    Output("out_max", "resposta més llarga", "tokens", panel=False),
    Output("decode_ms", "una iteració de decode", "ms", 1, panel=False),
    Output("gap_max_whole_ms", "pitjor interval, prompt sencer", "ms", 1, panel=False),
    Output("gap_max_chunked_ms", "pitjor interval, trossejat", "ms", 1, panel=False),
    Output("throughput_whole", "throughput, prompt sencer", "tok/s", 0, panel=False),
    Output("throughput_chunked", "throughput, trossejat", "tok/s", 0, panel=False),
)

WIDGET = register(Widget(
    name="batching",
    title="Continuous batching: la cua simulada",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=batching,
    figure=_figure,
    tables=_tables,
    summary="Simula la mateixa cua amb batching estàtic i continu, iteració a iteració.",
))
