"""§1 The clock and the counter: prefill vs decode of the mini-GPT, timed and counted.

The clock *measures*: it times, wherever it runs (CPython at build time, Pyodide in the
reader's browser), a whole prefill of L tokens and one decode step at context L. The
counter does not measure: it counts, from the shapes, the weight bytes each token reads
and the FLOPs it costs. Timings are declared `timed` on their outputs, so tests never compare them and the page
recomputes them once Python is ready (the prerender timed the build machine). A slow or
busy machine (a phone) gets fewer repeats, never a minute of spinner: every point is timed
once (the first full figure), further timings only begin within BUDGET_S, and the figure
says how many each point got.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from ..engine import fmt
from ..engine import session
from ..maths import gpt
from ..engine.params import Output, Param
from ..engine.widget import Partial, Widget
from ..engine.svg import Plot

LENGTHS = (16, 32, 64, 128, 256, 512)
BYTES = 4  # float32 weights


def runtime() -> str:
    """Where the clock ran: natively, or in the browser, where a pass is one call of the
    SIMD kernel (numpy alone where WebAssembly SIMD is missing: gpt.matmul_path)."""
    return {"blas": "CPython (numpy natiu)", "einsum": "Pyodide (numpy en WebAssembly)",
            "wasm-simd": "Pyodide (kernel SIMD en WebAssembly)"}[gpt.matmul_path()]


def counts(cfg: gpt.GPTConfig, n_params: int, L: int) -> dict:
    """Weight bytes, attention-score bytes and FLOPs per token, from the shapes.

    A pass over L tokens writes, in every layer and head, an [L, L] matrix of scores (numpy's
    path all heads at once, the kernel one head at a time): L float32 per token, head and
    layer, then gone over again by the softmax and the weighted sum. Those bytes
    grow with L where the weights' share per token falls as 1/L: the prefill's upturn."""
    matmul = gpt.macs_per_token(cfg)
    attn_decode = gpt.attention_macs_per_token(cfg, L)  # the new token sees L keys
    attn_prefill = gpt.attention_macs_per_token(cfg, (L + 1) / 2)  # token t sees t keys: mean (L+1)/2
    scores = BYTES * cfg.layers * cfg.heads * L  # one row of L scores per head and layer
    return {
        "bytes_decode": BYTES * n_params, "bytes_prefill": BYTES * n_params / L,
        "score_bytes": scores,
        "flops_decode": 2 * (matmul + attn_decode), "flops_prefill": 2 * (matmul + attn_prefill),
    }


def one_thread():
    """Time on one BLAS thread: threads fighting a busy machine for cores distort the
    prefill far more than the decode. Pyodide's numpy has no BLAS and no threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


STAGE_S = 0.05  # a stage of the timing runs lasts about this long at most
# Every point (a length's prefill, its decode step) is timed once, whatever it costs: the first
# full figure. Its further timings, up to the repeats asked, begin only while less than this
# has passed since the run began: a slow or busy machine (a phone, a loaded CPU) shows fewer
# repeats, and says so, rather than a minute of spinner
BUDGET_S = 5.0
PHASES = ("prefill", "decode")
# A timing lasts at least this long, and at least STEPS_PER_SAMPLE steps of the clock:
# browsers coarsen performance.now() (Pyodide's clock) to steps of 0.1 ms (Chromium) or 1 ms
# (Firefox, WebKit), and the kernel's decode step can take less, which one call at a time
# would read as 0. Each end of a timing may be off by up to a step (some browsers add
# jitter): a timing of 2 steps can read 50-100 % off, one of 20 steps 5-10 %. A clock
# coarser still (a browser resisting fingerprinting: 100 ms) gets no longer timings than a
# stage: its readings are that coarse whatever the clock does
MIN_SAMPLE_S = 0.002
STEPS_PER_SAMPLE = 20


def shortest_timing(step: float) -> float:
    """How long a timing must last on a clock of `step` seconds (see above)."""
    return min(max(MIN_SAMPLE_S, STEPS_PER_SAMPLE * step), STAGE_S)


def clock_step(reads: int = 3) -> float:
    """The smallest step time.perf_counter() takes here, in seconds, from a reading to the
    next that differs (a reading is a whole number of steps): nanoseconds natively, 0.1 ms or
    1 ms in a browser."""
    steps = []
    for _ in range(reads):
        t = time.perf_counter()
        while (later := time.perf_counter()) == t:
            pass
        steps.append(later - t)
    return min(steps)


def timing(fn, n: int, shortest: float) -> tuple[float, int]:
    """One timing of fn: (seconds per call, calls per timing). A call too short for the clock
    is timed n at a time, n doubling until a timing lasts `shortest` seconds
    (shortest_timing), as timeit's autorange does; a point's next timing starts from its n."""
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t
        if elapsed >= shortest:
            return elapsed / n, n
        n *= 2  # too short to read: not kept


def timings(best: dict) -> dict:
    """The timed outputs from the fastest timing of each point so far ({(L, phase): seconds
    per call}): the lengths whose prefill and decode both have one."""
    out = {}
    for L in LENGTHS:
        if (L, "decode") in best:
            prefill, decode = best[L, "prefill"], best[L, "decode"]
            out |= {f"prefill_ms_{L}": 1e3 * prefill, f"prefill_us_per_token_{L}": 1e6 * prefill / L,
                    f"decode_us_{L}": 1e6 * decode}
    if "decode_us_128" in out:
        out["ratio_128"] = out["decode_us_128"] / out["prefill_us_per_token_128"]
    return out


def clock(repeats: int, seed: int):
    """A staged compute (engine.widget.Partial): the counts come from the shapes at once; each
    point is timed once, a context length at a time, each shown as soon as it is measured (the
    first full figure); then round after round, each round refining the figure, up to
    `repeats` timings a point, none begun after BUDGET_S. `measures`, at the end: the fewest
    timings a point got (the points of an unfinished round got one more). The fastest of a point's
    timings is kept: the least disturbed by the machine."""
    start = time.perf_counter()
    cfg, p, _ = session.load("mini")
    tokens = np.random.default_rng(seed).integers(0, cfg.vocab, max(LENGTHS) + 1)  # [513]
    c, long = counts(cfg, gpt.n_params(p), 128), counts(cfg, gpt.n_params(p), max(LENGTHS))
    out = {"params": gpt.n_params(p), "runtime": runtime(),
           "bytes_decode": c["bytes_decode"], "bytes_prefill_128": c["bytes_prefill"],
           "score_bytes_128": c["score_bytes"], "score_bytes_512": long["score_bytes"],
           "flops_prefill_128": c["flops_prefill"], "flops_decode_128": c["flops_decode"],
           "flops_prefill_512": long["flops_prefill"]}
    shortest = shortest_timing(clock_step())
    schedule = [(k, L, phase) for k in range(repeats) for L in LENGTHS for phase in PHASES]
    calls, n, best, taken = {}, {}, {}, {}  # per point: the call, calls per timing, fastest, timings

    def note(message: str) -> Partial:  # `measures` is the end's: a partial's status line says the round
        return Partial(out | timings(best), sum(taken.values()) / len(schedule), message)

    with one_thread():
        since = start
        for k, L, phase in schedule:
            if k and time.perf_counter() - start > BUDGET_S:
                break
            new = (L, phase) == (LENGTHS[0], PHASES[0]) if k else phase == PHASES[0]  # a round, a length
            if new or time.perf_counter() - since > STAGE_S:
                yield note(f"afinant: mesura {k + 1} de {repeats} de cada punt" if k
                           else f"cronometrant el context de {L} tokens")
                since = time.perf_counter()
            if not k and phase == PHASES[0]:
                _, kv = gpt.extend(p, cfg, tokens[:L])  # untimed, as each call's first: it allocates, fills the caches
                calls[L, "prefill"] = lambda L=L: gpt.extend(p, cfg, tokens[:L])
                calls[L, "decode"] = lambda L=L, kv=kv: gpt.extend(p, cfg, tokens[L:L + 1], kv)
                calls[L, "decode"]()
            seconds, n[L, phase] = timing(calls[L, phase], n.get((L, phase), 1), shortest)
            best[L, phase] = min(seconds, best.get((L, phase), seconds))
            taken[L, phase] = taken.get((L, phase), 0) + 1
    return out | timings(best) | {"measures": min(taken.values())}


def timed(v: dict) -> list[int]:
    """The context lengths measured so far (all of them, once the run is over)."""
    return [L for L in LENGTHS if f"decode_us_{L}" in v]


def repeats(p: dict, v: dict) -> tuple[str, str]:
    """How many timings each point got, of those asked (fewer once BUDGET_S ran out): the
    figure's note, and the sentence of its text alternative."""
    got, asked, budget = v["measures"], p["repeats"], fmt.number(BUDGET_S)
    if got >= asked:
        return f"la més ràpida de {got} mesures per punt", f"Cada punt és la més ràpida de {got} mesures."
    return (f"almenys {got} de {asked} mesures per punt: límit de {budget} s",
            f"Cada punt és la més ràpida d'almenys {got} de les {asked} mesures demanades: "
            f"passats {budget} s, el rellotge no en comença cap més.")


def _figure(p: dict, v: dict) -> tuple[str, str]:
    lengths = timed(v)
    whole = [1e3 * v[f"prefill_ms_{L}"] for L in lengths]  # µs
    per_token = [v[f"prefill_us_per_token_{L}"] for L in lengths]
    decode = [v[f"decode_us_{L}"] for L in lengths]
    lo, hi = (min(per_token + decode) / 2, max(whole) * 2) if lengths else (1.0, 1e5)
    plot = Plot(height=300, right=120).scales((12, 700), (lo, hi), xlog=True, ylog=True)
    ticks = [10.0 ** k for k in range(int(np.floor(np.log10(lo))) + 1, int(np.ceil(np.log10(hi))))]
    plot.axes(LENGTHS, ticks, "context L (tokens, escala logarítmica)", "µs (escala logarítmica)", fmt=lambda t: fmt.number(t))
    for ys, cls, label, dash in ((whole, "tw-s1", "prefill sencer", False),
                                 (per_token, "tw-s2", "prefill, per token", False),
                                 (decode, "tw-s3", "un pas de decode", True)):
        if not lengths:
            break
        plot.line(lengths, ys, cls, dash)
        for x, y in zip(lengths, ys):
            plot.dot(x, y, cls, 3)
        plot.text(plot.x(lengths[-1]) + 6, plot.y(ys[-1]) + 4, label, "start", f"tw-note {cls}")
    plot.text(plot.left + 6, plot.top + 14, f"mesurat amb {v['runtime']}", "start", "tw-note")
    if "measures" in v and plot.layout.compact:  # a phone: under the axis' title, where the box grows for it
        plot.text(plot.width / 2, plot.height + 12, repeats(p, v)[0], "middle", "tw-note")
    elif "measures" in v:
        plot.text(plot.left + 6, plot.top + 30, repeats(p, v)[0], "start", "tw-note")
    if "ratio_128" in v:
        alt = (f"Temps mesurats amb {v['runtime']}: a 128 tokens, el prefill costa "
               f"{fmt.number(v['prefill_us_per_token_128'], 1)} µs per token; el decode, "
               f"{fmt.number(v['decode_us_128'], 1)} µs per pas ({fmt.with_unit(v['ratio_128'], 1, '×')} més car per token).")
        if "measures" in v:
            alt += " " + repeats(p, v)[1]
    else:
        alt = f"Temps que es mesuren ara amb {v['runtime']}: {len(lengths)} de {len(LENGTHS)} longituds de context."
    return plot.render("El rellotge: prefill i decode del mini-GPT", alt), alt


def _bytes(n: float) -> str:
    """A byte count as a whole number; a per-token share of one (4N/L) may end in a half."""
    return fmt.number(n, 0 if float(n).is_integer() else 1)


def _tables(p: dict, v: dict) -> str:
    cfg, params, _ = session.load("mini")
    n = gpt.n_params(params)
    rows = ""
    for L in LENGTHS:
        c = counts(cfg, n, L)
        rows += (f"<tr><td>{L}</td><td>{_bytes(c['bytes_prefill'])}</td><td>{_bytes(c['bytes_decode'])}</td>"
                 f"<td>{fmt.with_unit(c['bytes_decode'] / c['bytes_prefill'], 0, '×')}</td>"
                 f"<td>{_bytes(c['score_bytes'])}</td>"
                 f"<td>{fmt.si(c['flops_prefill'], 2)}</td><td>{fmt.si(c['flops_decode'], 2)}</td></tr>")
    return ("<table><caption>El comptador: bytes de pesos i FLOPs per token, comptats a partir de les formes"
            "</caption><thead><tr><th>L</th><th>bytes/token prefill</th><th>bytes/token decode</th><th>ràtio</th>"
            "<th>bytes/token de puntuacions</th>"
            f"<th>FLOPs/token prefill</th><th>FLOPs/token decode</th></tr></thead><tbody>{rows}</tbody></table>")


PARAMS = (
    Param("repeats", "int", 5, "Repeticions de cada mesura", min=1, max=15,
          help="Es queda la més ràpida: la que menys han destorbat les altres tasques de la màquina. Cada punt "
               f"es mesura primer una vegada; les repeticions següents, només fins que han passat {fmt.number(BUDGET_S)} s."),
    Param("seed", "int", 0, "Llavor dels tokens", min=0, max=999),
)

OUTPUTS = (
    Output("prefill_us_per_token_128", "prefill per token a 128", "µs", 1, timed=True),
    Output("decode_us_128", "un pas de decode a 128", "µs", 1, timed=True),
    Output("ratio_128", "decode / prefill per token", "×", 2, timed=True),
    Output("bytes_decode", "bytes de pesos per token, decode"),  # a byte count: an integer
    Output("bytes_prefill_128", "bytes de pesos per token, prefill a 128"),  # 4N/128, whole for this model
    Output("score_bytes_128", "bytes de puntuacions d'atenció per token a 128"),  # L × heads × layers × 4
    Output("score_bytes_512", "bytes de puntuacions d'atenció per token a 512", panel=False),
    Output("flops_prefill_128", "FLOPs per token, prefill a 128", decimals=2, style="si"),
    Output("flops_prefill_512", "FLOPs per token, prefill a 512", decimals=2, style="si", panel=False),
    Output("flops_decode_128", "FLOPs per token, decode a 128", decimals=2, style="si"),
    Output("measures", "mesures de cada punt, com a mínim", timed=True),  # fewer than asked once BUDGET_S ran out
    Output("params", "paràmetres del mini-GPT", decimals=0, panel=False),
    Output("runtime", "on s'ha mesurat", style="text", panel=False, timed=True),
    # every length's timings, for the figure and for live numbers in the prose
    *(Output(f"prefill_ms_{L}", f"prefill a {L}", "ms", 3, panel=False, timed=True) for L in LENGTHS),
    *(Output(f"prefill_us_per_token_{L}", f"prefill per token a {L}", "µs", 1, panel=False, timed=True)
      for L in LENGTHS if L != 128),
    *(Output(f"decode_us_{L}", f"un pas de decode a {L}", "µs", 1, panel=False, timed=True) for L in LENGTHS if L != 128),
)

WIDGET = Widget(
    name="clock",
    models=True,  # the mini-GPTs: weights, corpus, kernel
    title="El rellotge i el comptador",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=clock,
    figure=_figure,
    tables=_tables,
    summary="Cronometra el prefill i el decode del mini-GPT on s'executa, i en compta bytes i FLOPs.",
)
