"""§3 Continuous batching: the same queue served by static and continuous batching.

Every iteration costs what `serving.step_time` gives for what it computes (Llama 3 8B in bf16
on one H100 SXM): the roofline of its weight matmuls (the weights read once, its tokens'
FLOPs) plus that of its attention (each sequence's cache read, the chunks' pairs). A decode
iteration is memory-bound, a prefill chunk compute-bound, and a mixed one costs about its
larger part, not their sum (SARATHI's piggybacking). The simulator is `batching_sim.simulate`.

Memory is a pool of KV blocks (`kv_blocks`, 16 tokens each, vLLM's default): by default the
H100's memory left beside the weights, which this queue never fills; a smaller pool bounds the
batch before the slots do, and the scheduler preempts (by recompute) when it runs out.

Chunked prefill is measured as Sarathi-Serve measures it: under sustained load (Poisson
arrivals), with a share of long prompts, the p99 of the time between two tokens of the
running answers; and its price, the long prompts' own time to first token.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..engine import fmt
from ..engine import session
from ..maths.batching_sim import Metrics, Pass, Request, Run, decode_pass, simulate
from ..maths.frontier import cache_memory
from ..maths.kv_blocks import BLOCK_TOKENS
from ..maths.hardware import MODELS
from ..maths.lengths import long_tail
from ..maths.quantiles import median
from ..engine.params import Output, Param
from ..engine.widget import Partial, Widget
from ..maths.serving import Setup, causal_pairs, decode_step, kv_bytes_per_token, step_time
from ..engine.svg import Plot, current

SETUP = Setup("llama-3-8b", "h100-80gb", "bf16", "bf16")  # the served model, GPU and formats
PROMPT = 256  # prompt tokens of an ordinary request
LONG_PROMPT = 4096  # prompt tokens of a long request (a document to summarise)
OUT_MEDIAN, OUT_SIGMA, OUT_MIN, OUT_MAX = 50, 1.4, 8, 390  # output law: many short, a long tail
SUSTAINED_GAP_MS = 40.0  # mean arrival gap of the chunked-prefill scenario: the batch stays busy
SLOT_SWEEP = (1, 2, 4, 8, 16, 32, 64)
assert LONG_PROMPT + OUT_MAX <= MODELS[SETUP.model].max_context  # every request fits the model
BLOCK_BYTES = BLOCK_TOKENS * kv_bytes_per_token(SETUP.m, SETUP.cache)  # one block of cache: 16 tokens
KV_MEMORY = (("all", "la que deixen els pesos"), ("8", "8 GB"), ("4", "4 GB"), ("2", "2 GB"),
             ("1", "1 GB"))  # GB of the H100 given to the cache; 1 GB still holds the longest request


def kv_blocks(kv_memory: str) -> int:
    """Blocks in the pool: a share of the GPU's memory, or all the engine leaves beside the weights."""
    nbytes = cache_memory(SETUP) if kv_memory == "all" else float(kv_memory) * 1e9
    return int(nbytes // BLOCK_BYTES)


assert kv_blocks("1") * BLOCK_TOKENS >= LONG_PROMPT + OUT_MAX  # the smallest pool holds any one request


def roofline_ms(p: Pass) -> float:
    """One iteration's time on the served GPU: the serving roofline of what it computes."""
    return 1e3 * step_time(SETUP, p.tokens, p.kv_tokens, p.pairs)


def decode_ms(slots: int) -> float:
    """A full batch's decode iteration at the typical context (prompt + median answer)."""
    return 1e3 * decode_step(SETUP, slots, PROMPT + OUT_MEDIAN)


def chunk_pass(chunk: int, decodes: int) -> Pass:
    """A prompt's first chunk of `chunk` tokens, with `decodes` sequences at the typical context riding along."""
    context = PROMPT + OUT_MEDIAN
    ride = decode_pass(decodes, decodes * context)
    return Pass(chunk, decodes, ride.kv_tokens + chunk, ride.pairs + causal_pairs(chunk, 0))


def workload(n: int, variability: float, gap_ms: float, seed: int, long_share: float = 0.0) -> list[Request]:
    """n requests: long-tailed answers, Poisson arrivals, a share of them with long prompts."""
    rng = np.random.default_rng(seed)
    outputs = long_tail(rng, n, OUT_MEDIAN, OUT_SIGMA, OUT_MIN, OUT_MAX, variability, constant=100)  # [n]
    gaps = rng.exponential(gap_ms, n) if gap_ms > 0 else np.zeros(n)  # [n] Poisson arrivals
    arrivals = np.cumsum(gaps) - gaps[0]  # [n] the first request arrives at 0
    long = rng.random(n) < long_share  # [n] which requests bring a long prompt
    return [Request(i, float(arrivals[i]), LONG_PROMPT if long[i] else PROMPT, int(outputs[i])) for i in range(n)]


def served(queue: list[Request], slots: int, continuous: bool, blocks: int | None = None) -> Run:
    """One run of the queue (simulate() copies it: one drawing serves every run of a change)."""
    return simulate(queue, slots, continuous, roofline_ms, kv_blocks=blocks, block_tokens=BLOCK_TOKENS)


def sustained(queue: list[Request], slots: int, chunk: int | None, blocks: int | None = None) -> Run:
    """The chunked-prefill scenario: continuous batching under load, long prompts mixed in."""
    return simulate(queue, slots, True, roofline_ms, chunk, kv_blocks=blocks, block_tokens=BLOCK_TOKENS)


def long_ttft_s(run: Run) -> float:
    """Median time to first token of the long-prompt requests (0 when there are none)."""
    ttfts = [r.first_token_ms - r.arrival_ms for r in run.requests if r.prompt == LONG_PROMPT]
    return float(median(np.array(ttfts))) / 1e3 if ttfts else 0.0


@dataclass(frozen=True)
class State:
    """What compute() built, for the values, the slot grid, the tables and the gain curve."""

    runs: dict  # continuous? -> Run of the queue at the chosen slots
    static: Metrics  # of runs[False]
    continuous: Metrics  # of runs[True]
    whole: Metrics  # the sustained load, long prompts prefilled whole
    chunked: Metrics  # and in chunks
    long_ttft_s: tuple[float, float]  # the long prompts' median time to first token: whole, chunked
    values: dict = field(default_factory=dict)  # the named outputs (named(), from the fields above)
    gains: list = field(default_factory=list)  # continuous over static throughput, for each of SLOT_SWEEP so far


def named(s: State, slots: int, requests: int, chunked: bool, chunk_tokens: int, blocks: int, load: list[Request]) -> dict:
    """The numbers under the names the pages read (`md:value batching.static_idle`)."""
    static, cont, outputs = s.static, s.continuous, [r.output for r in s.runs[True].requests]
    shown = s.chunked if chunked else s.whole
    return {
        "static_throughput": static.throughput, "continuous_throughput": cont.throughput,
        "gain": cont.throughput / static.throughput,
        "static_idle": static.idle, "continuous_idle": cont.idle, "continuous_drain_idle": cont.drain_idle,
        "static_iterations": static.iterations, "continuous_iterations": cont.iterations,
        "static_occupied": static.occupied, "continuous_occupied": cont.occupied,
        "static_ttft_p95_s": static.ttft_p95_s, "continuous_ttft_p95_s": cont.ttft_p95_s,
        "static_latency_p95_s": static.latency_p95_s, "continuous_latency_p95_s": cont.latency_p95_s,
        "static_preemptions": static.preemptions, "continuous_preemptions": cont.preemptions,
        "static_max_running": static.max_running, "continuous_max_running": cont.max_running,
        "static_recomputed_tokens": static.recomputed_tokens, "continuous_recomputed_tokens": cont.recomputed_tokens,
        "memory_bound": cont.max_running < min(slots, requests),
        "out_min": min(outputs), "out_max": max(outputs),
        "decode_ms": decode_ms(slots), "chunk_ms": roofline_ms(chunk_pass(chunk_tokens, 0)),
        "mixed_ms": roofline_ms(chunk_pass(chunk_tokens, slots - 1)),
        "gap_max_ms": shown.gap_max_ms, "gap_p99_ms": shown.gap_p99_ms,
        "gap_max_whole_ms": s.whole.gap_max_ms, "gap_max_chunked_ms": s.chunked.gap_max_ms,
        "gap_p99_whole_ms": s.whole.gap_p99_ms, "gap_p99_chunked_ms": s.chunked.gap_p99_ms,
        "gap_p50_whole_ms": s.whole.gap_p50_ms, "gap_p50_chunked_ms": s.chunked.gap_p50_ms,
        "throughput_whole": s.whole.throughput, "throughput_chunked": s.chunked.throughput,
        "long_ttft_whole_s": s.long_ttft_s[0], "long_ttft_chunked_s": s.long_ttft_s[1],
        "long_requests": sum(r.prompt == LONG_PROMPT for r in load),
        "long_prompt": LONG_PROMPT, "sustained_gap_ms": SUSTAINED_GAP_MS,
        "kv_blocks": blocks, "kv_tokens": blocks * BLOCK_TOKENS,
    }


def batching(slots: int, requests: int, variability: int, arrival_gap_ms: str, chunked: bool,
             chunk_tokens: int, long_pct: int, kv_memory: str, seed: int) -> State:
    blocks = kv_blocks(kv_memory)
    queue = workload(requests, variability / 100, float(arrival_gap_ms), seed)  # drawn once, run 14 times
    runs = {False: served(queue, slots, False, blocks), True: served(queue, slots, True, blocks)}
    load = workload(requests, variability / 100, SUSTAINED_GAP_MS, seed, long_pct / 100)
    whole, chunk = sustained(load, slots, None, blocks), sustained(load, slots, chunk_tokens, blocks)
    state = State(runs=runs, static=runs[False].metrics(), continuous=runs[True].metrics(), whole=whole.metrics(),
                  chunked=chunk.metrics(), long_ttft_s=(long_ttft_s(whole), long_ttft_s(chunk)))
    state = replace(state, values=named(state, slots, requests, chunked, chunk_tokens, blocks, load))
    # a staged compute (engine.widget.Partial): the sweep of slot counts, two runs each, comes
    # last; it depends on the queue alone, so moving the slots (or the chunked-prefill
    # controls) finds it kept (session.cached: a simulation, dropped with the weights
    # only to be run again)
    sweep = ("batching.sweep", requests, variability, arrival_gap_ms, kv_memory, seed)
    if session.has(sweep):
        return replace(state, gains=session.cached(sweep, None))
    gains: list[float] = []
    for s in SLOT_SWEEP:
        if s != slots and len(gains) % 3 == 0:
            yield Partial(replace(state, gains=list(gains)), 0.4 + 0.6 * len(gains) / len(SLOT_SWEEP),
                          "el guany per a cada nombre de ranures")
        gains.append(gain_at(queue, s, slots, runs, blocks))
    return replace(state, gains=session.cached(sweep, lambda: gains))


def gain_at(queue: list[Request], s: int, slots: int, runs: dict, blocks: int | None = None) -> float:
    """The gain at `s` slots of the sweep; the chosen count (`slots`) reuses `runs`."""
    pair = runs if s == slots else {c: served(queue, s, c, blocks) for c in (False, True)}
    return pair[True].throughput() / pair[False].throughput()


def _grid(p: dict, state: State) -> str:
    runs = [("Estàtic", False, state.static), ("Continu", True, state.continuous)]
    width = max(state.static.iterations, state.continuous.iterations)
    slots = p["slots"]
    row_h = max(2.0, min(10.0, 120 / slots))
    panel_h = slots * row_h + 34
    plot = Plot(height=int(2 * panel_h + 36), left=12, right=12, top=8, bottom=28)
    plot.scales((0, width), (0, 1))
    for k, (title, continuous, m) in enumerate(runs):
        top = 8 + k * panel_h
        occupied = (f"{fmt.number(m.occupied, 1)} de {slots} en ús" if plot.layout.compact else  # a phone's line
                    f"{fmt.number(m.occupied, 1)} de {slots} ranures ocupades de mitjana")
        plot.text(8, top + 14, f"{title} · {fmt.percent(m.idle)} ocioses · {occupied}", "start", "tw-note")
        y0 = top + 22
        plot.span(0, m.iterations, y0, slots * row_h, "tw-slot-empty")
        reqs = state.runs[continuous].requests  # up to 400 rectangles a run: their pixels in one pass
        starts = plot.x.many(np.array([r.start_iter for r in reqs], float))
        ends = plot.x.many(np.array([r.finish_iter for r in reqs], float))
        for r, x0, x1 in zip(reqs, starts, ends):
            cls = "tw-slot-used" if r.id % 2 else "tw-slot-used2"
            plot.parts.append(f'<rect class="{cls}" x="{x0}" y="{y0 + r.slot * row_h:.2f}" '
                              f'width="{max(x1 - x0, 0.5):.2f}" height="{max(row_h - 0.6, 1):.2f}"/>')
        for slot, first, last in state.runs[continuous].evicted:  # stays cut short by a preemption
            plot.span(first, last, y0 + slot * row_h, max(row_h - 0.6, 1), "tw-s1")
    plot.text((plot.left + plot.width - plot.right) / 2, plot.height - 8, "iteracions", "middle", "tw-label")
    evicted = (f" En continu, {fmt.number(state.continuous.preemptions)} peticions han perdut el seu cache per falta "
               "de pàgines (en vermell, l'estada interrompuda)." if state.continuous.preemptions else "")
    return plot.render("Qui ocupa cada ranura a cada iteració",
                       f"Ranures ocupades (ple) i ocioses (buit): estàtic {fmt.percent(state.static.idle)} "
                       f"ocioses, continu {fmt.percent(state.continuous.idle)}." + evicted)


def _figure(p: dict, state: State) -> tuple[str, str]:
    v, gains = state.values, state.gains  # a staged run's sweep may be partial: its first counts
    # the slot grid is the same at every stage of a change (the runs at the chosen slots):
    # drawn once (kept as the sweep is)
    grid = session.cached(("batching.grid", current().name, p["slots"], p["requests"], p["variability"], p["arrival_gap_ms"],
                               p["kv_memory"], p["seed"]), lambda: _grid(p, state))
    top = max(4.5, max(gains, default=0) * 1.1)
    plot = Plot(height=240).scales((1, 64), (0, top), xlog=True)
    plot.axes(SLOT_SWEEP, [t for t in range(0, int(top) + 1)], "ranures del lot (escala logarítmica)", "guany (×)",
              fmt=lambda t: fmt.number(t))
    if len(gains) > 1:
        plot.line(SLOT_SWEEP[:len(gains)], gains, "tw-s1")
    for s, g in zip(SLOT_SWEEP, gains):
        plot.dot(s, g, "tw-s1", 6 if s == p["slots"] else 3.5)
    plot.text(plot.x(p["slots"]), plot.y(v["gain"]) - 10, f"{fmt.with_unit(v['gain'], 2, '×')}", "middle", "tw-note tw-s1")
    curve = plot.render("Guany del batching continu segons les ranures",
                        "Guany per a " + ", ".join(f"{s}: {fmt.with_unit(g, 2, '×')}" for s, g in zip(SLOT_SWEEP, gains)))
    alt = (f"Guany de {fmt.with_unit(v['gain'], 2, '×')} amb {p['slots']} ranures: ranures ocioses "
           f"{fmt.percent(state.static.idle)} en estàtic i {fmt.percent(state.continuous.idle)} en continu.")
    if v["memory_bound"]:
        alt += (f" La memòria del cache ({fmt.number(v['kv_blocks'])} pàgines) limita el lot continu a "
                f"{state.continuous.max_running} peticions alhora, i n'ha expulsat "
                f"{fmt.number(state.continuous.preemptions)}.")
    return grid + curve, alt


def _tables(p: dict, state: State) -> str:
    v = state.values
    policies = (("Estàtic", state.static), ("Continu", state.continuous))
    rows = "".join(
        f"<tr><td>{name}</td><td>{fmt.number(m.throughput)}</td><td>{fmt.number(m.iterations)}</td>"
        f"<td>{fmt.number(m.occupied, 1)} de {p['slots']}</td>"
        f"<td>{fmt.with_unit(m.ttft_p95_s, 2, 's')}</td><td>{fmt.with_unit(m.latency_p95_s, 2, 's')}</td></tr>"
        for name, m in policies)
    prefills = (("prompt sencer", state.whole, state.long_ttft_s[0]),
                (f"trossos de {fmt.number(p['chunk_tokens'])}", state.chunked, state.long_ttft_s[1]))
    chunks = "".join(
        f"<tr><td>{name}</td><td>{fmt.with_unit(m.gap_p50_ms, 1, 'ms')}</td>"
        f"<td>{fmt.with_unit(m.gap_p99_ms, 1, 'ms')}</td><td>{fmt.with_unit(m.gap_max_ms, 1, 'ms')}</td>"
        f"<td>{fmt.with_unit(ttft, 2, 's')}</td><td>{fmt.number(m.throughput)}</td></tr>"
        for name, m, ttft in prefills)
    memory = "".join(
        f"<tr><td>{name}</td><td>{m.max_running}</td><td>{fmt.number(m.preemptions)}</td>"
        f"<td>{fmt.number(m.recomputed_tokens)}</td></tr>" for name, m in policies)
    return ("<table><thead><tr><th>Batching</th><th>tok/s</th><th>iteracions</th><th>ranures ocupades</th>"
            f"<th>TTFT p95</th><th>latència p95</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<table><caption>KV-cache: {fmt.number(v['kv_blocks'])} pàgines de {BLOCK_TOKENS} tokens "
            f"({fmt.number(v['kv_tokens'])} tokens)</caption><thead><tr><th>Batching</th><th>lot màxim</th>"
            f"<th>expulsions</th><th>tokens recalculats</th></tr></thead><tbody>{memory}</tbody></table>"
            f"<table><caption>Amb càrrega sostinguda ({fmt.number(SUSTAINED_GAP_MS)} ms entre arribades de mitjana) "
            f"i {v['long_requests']} prompts de {fmt.tokens(LONG_PROMPT)} tokens: interval entre tokens</caption>"
            "<thead><tr><th>Prefill</th><th>mediana</th><th>p99</th><th>pitjor</th>"
            f"<th>TTFT dels prompts llargs</th><th>tok/s</th></tr></thead><tbody>{chunks}</tbody></table>")


PARAMS = (
    Param("slots", "int", 8, "Ranures del lot", min=1, max=64, ticks=SLOT_SWEEP),
    Param("requests", "int", 80, "Peticions", min=8, max=400, ticks=(8, 20, 40, 80, 160, 240, 400)),
    Param("variability", "int", 100, "Variabilitat de les longituds", min=0, max=100, step=5, unit="%",
          help="A 0 no hi ha dispersió: cada resposta té tants tokens com les altres."),
    Param("arrival_gap_ms", "choice", "0", "Temps entre arribades",
          choices=(("0", "totes alhora"), ("2", "2 ms de mitjana"), ("5", "5 ms de mitjana"),
                   ("10", "10 ms de mitjana"), ("20", "20 ms de mitjana"))),
    Param("chunked", "bool", True, "Prefill a trossos",
          help="Trosseja els prefills llargs perquè no aturin els decodes en curs."),
    Param("chunk_tokens", "int", 512, "Tokens de prefill per iteració", min=64, max=4096,
          ticks=(64, 128, 256, 512, 1024, 2048, 4096)),
    Param("long_pct", "int", 20, "Peticions amb prompt llarg", min=0, max=50, step=5, unit="%",
          help="Només a l'experiment del chunked prefill, amb arribades seguides."),
    Param("kv_memory", "choice", "all", "Memòria per al cache", choices=KV_MEMORY,
          help="Es reparteix en pàgines de 16 tokens; si el lot en demana més, el planificador n'expulsa una petició."),
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
    Output("gap_p99_ms", "p99 de l'interval entre tokens, amb càrrega", "ms", 1),
    Output("gap_max_ms", "pitjor interval entre tokens, amb càrrega", "ms", 1),
    Output("continuous_drain_idle", "ocioses en el buidatge final, continu", style="pct", panel=False),
    Output("static_iterations", "iteracions, estàtic", panel=False),
    Output("continuous_iterations", "iteracions, continu", panel=False),
    Output("static_occupied", "ranures ocupades, estàtic", decimals=1, panel=False),
    Output("continuous_occupied", "ranures ocupades, continu", decimals=1, panel=False),
    Output("static_ttft_p95_s", "TTFT p95, estàtic", "s", 2, panel=False),
    Output("continuous_ttft_p95_s", "TTFT p95, continu", "s", 2, panel=False),
    Output("out_min", "resposta més curta", "tokens", panel=False),
    Output("out_max", "resposta més llarga", "tokens", panel=False),
    Output("decode_ms", "una iteració de decode", "ms", 1, panel=False),
    Output("chunk_ms", "un tros de prefill sol", "ms", 1, panel=False),
    Output("mixed_ms", "un tros de prefill amb els decodes del lot", "ms", 1, panel=False),
    Output("gap_max_whole_ms", "pitjor interval, prompt sencer", "ms", 1, panel=False),
    Output("gap_max_chunked_ms", "pitjor interval, trossejat", "ms", 1, panel=False),
    Output("throughput_whole", "throughput, prompt sencer", "tok/s", 0, panel=False),
    Output("throughput_chunked", "throughput, trossejat", "tok/s", 0, panel=False),
    Output("gap_p99_whole_ms", "p99 de l'interval, prompt sencer", "ms", 1, panel=False),
    Output("gap_p99_chunked_ms", "p99 de l'interval, trossejat", "ms", 1, panel=False),
    Output("gap_p50_whole_ms", "mediana de l'interval, prompt sencer", "ms", 1, panel=False),
    Output("gap_p50_chunked_ms", "mediana de l'interval, trossejat", "ms", 1, panel=False),
    Output("long_ttft_whole_s", "TTFT dels prompts llargs, sencer", "s", 2, panel=False),
    Output("long_ttft_chunked_s", "TTFT dels prompts llargs, trossejat", "s", 2, panel=False),
    Output("long_requests", "peticions amb prompt llarg", panel=False),
    Output("long_prompt", "prompt llarg", "tokens", panel=False),
    Output("sustained_gap_ms", "temps entre arribades amb càrrega", "ms", 0, panel=False),
    Output("continuous_preemptions", "expulsions per falta de pàgines, continu"),
    Output("continuous_max_running", "lot més gran, continu"),
    Output("continuous_recomputed_tokens", "tokens recalculats, continu", panel=False),
    Output("static_preemptions", "expulsions, estàtic", panel=False),
    Output("static_max_running", "lot més gran, estàtic", panel=False),
    Output("static_recomputed_tokens", "tokens recalculats, estàtic", panel=False),
    Output("memory_bound", "la memòria limita el lot?", style="bool", panel=False),
    Output("kv_blocks", "pàgines de KV-cache", panel=False),
    Output("kv_tokens", "tokens que hi caben", "tokens", panel=False),
)

WIDGET = Widget(
    name="batching",
    title="Batching continu: la cua simulada",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=batching,
    values=lambda state: state.values,
    figure=_figure,
    tables=_tables,
    summary="Simula la mateixa cua amb batching estàtic i continu, iteració a iteració.",
)
