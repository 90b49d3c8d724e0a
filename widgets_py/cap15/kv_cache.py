"""§2 The KV cache in serving: contiguous reservation vs pages, prefix caching, formats.

A stream of sequences fills the cache memory in order. Contiguous allocation must
reserve the maximum context for each sequence up front (it cannot grow in place);
paging (PagedAttention, Kwon et al. 2023) allocates fixed-size pages as tokens arrive,
so only the last page of each sequence is partly empty. Prefix caching shares only
whole, identical pages counted from the first token.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import fmt
from ..maths.hardware import MODELS, ModelCard
from ..maths.lengths import long_tail
from ..engine.params import Output, Param
from ..engine.widget import Widget
from ..maths.serving import CACHE_FORMATS, FORMATS, Setup, kv_bytes_per_token, ttft
from ..engine.svg import Plot

N_SEQUENCES = 300  # simulated sequences in the stream
DRAWN = 14  # sequences in the figure
TTFT_GPU, TTFT_WEIGHTS = "h100-80gb", "bf16"  # prefill times: this GPU, weights in this format


def bytes_per_token(m: ModelCard, cache_format: str) -> float:
    """Bytes of cache per token of model `m` in `cache_format`: maths.serving's one formula,
    called through this module so that a passing answer to the exercise on KV bytes can stand in
    for it (ex_kv_bytes.DRIVES)."""
    return kv_bytes_per_token(m, cache_format)


def sequence_lengths(max_context: int, variability: float, seed: int) -> np.ndarray:
    """Final lengths of the simulated sequences: at 0 variability all reach the maximum."""
    rng = np.random.default_rng(seed)
    return long_tail(rng, N_SEQUENCES, median=0.16 * max_context, sigma=1.1,
                     lo=1, hi=max_context, variability=variability, constant=max_context)


def fill(lengths: np.ndarray, reserve: np.ndarray, capacity_tokens: float) -> dict:
    """Admit sequences in order while their reservations fit; what is used and wasted."""
    cum = np.cumsum(reserve)  # [n] tokens reserved after admitting each sequence
    fit = int(np.searchsorted(cum, capacity_tokens, side="right"))
    reserved, used = int(cum[fit - 1]) if fit else 0, int(lengths[:fit].sum())
    return {"fit": fit, "reserved": reserved, "used": used, "waste": 1 - used / reserved if reserved else 0.0}


def prefix_caching(prefix: int, suffix: int, requests: int, page: int, variable_head: bool) -> dict:
    """Prefill tokens with and without reusing a shared prefix's cache pages."""
    shared = 0 if variable_head else (prefix // page) * page  # whole identical pages only
    without = requests * (prefix + suffix)
    with_cache = (prefix + suffix) + (requests - 1) * (prefix + suffix - shared)
    return {"shared_tokens": shared, "shared_pages": shared // page, "without": without, "with": with_cache,
            "first": prefix + suffix, "later": prefix + suffix - shared}


def kv_cache(model: str, max_context: int, variability: float, page_tokens: int, memory_gb: float,
             cache_format: str, prefix_tokens: int, suffix_tokens: int, prefix_requests: int,
             variable_head: bool, seed: int) -> dict:
    m = MODELS[model]
    context, note = fmt.within_context(m, max_context)
    prefix = min(prefix_tokens, m.max_context - suffix_tokens)  # a prompt fits the model's positions
    if prefix < prefix_tokens:
        note += f"; el prefix compartit es retalla a {fmt.number(prefix)} tokens"
    per_token = bytes_per_token(m, cache_format)
    capacity = memory_gb * 1e9 / per_token  # tokens the memory holds
    lengths = sequence_lengths(context, variability / 100, seed)  # [n]
    pages = -(-lengths // page_tokens)  # [n] ceil
    contiguous = fill(lengths, np.full_like(lengths, context), capacity)
    paged = fill(lengths, pages * page_tokens, capacity)
    pc = prefix_caching(prefix, suffix_tokens, prefix_requests, page_tokens, variable_head)
    s = Setup(model, TTFT_GPU, TTFT_WEIGHTS, cache_format)
    return {
        "len_min": int(lengths.min()), "len_max": int(lengths.max()), "len_mean": float(lengths.mean()),
        "waste_contiguous": contiguous["waste"], "waste_paged": paged["waste"],
        "fit_contiguous": contiguous["fit"], "fit_paged": paged["fit"],
        "reserved_contiguous": contiguous["reserved"], "used_contiguous": contiguous["used"],
        "reserved_paged": paged["reserved"], "used_paged": paged["used"],
        "blocks_contiguous": contiguous["fit"], "blocks_paged": int(pages[:paged["fit"]].sum()),
        "bytes_per_token": per_token, "cache_per_seq_gb": per_token * max_context / 1e9,
        "prefill_without": pc["without"], "prefill_with": pc["with"],
        "prefill_saved": 1 - pc["with"] / pc["without"],
        "shared_pages": pc["shared_pages"], "shared_tokens": pc["shared_tokens"],
        "recomputed_prefix": prefix - pc["shared_tokens"],
        "ttft_without_ms": 1e3 * ttft(s, pc["first"]),
        "ttft_with_ms": 1e3 * ttft(s, pc["later"], cached=pc["shared_tokens"]),
        "context_used": context, "prefix_used": prefix, "context_note": note,
    }


def _figure(p: dict, v: dict) -> tuple[str, str]:
    context = v["context_used"]
    lengths = sequence_lengths(context, p["variability"] / 100, p["seed"])[:DRAWN]
    page = p["page_tokens"]
    total = DRAWN * context
    plot = Plot(height=170, left=12, right=12, top=30, bottom=12).scales((0, total), (0, 1))
    rows = (("Contigu: el context màxim per a cada seqüència", [context] * DRAWN, 40),
            (f"Paginat: pàgines de {page} tokens, a mesura que calen", list(-(-lengths // page) * page), 115))
    for title, reserve, y in rows:
        used_sum, res_sum = int(lengths.sum()), int(sum(reserve))
        counts = "" if plot.layout.compact else f" · {fmt.tokens(used_sum)} de {fmt.tokens(res_sum)} tokens"  # a phone: the panel has them
        plot.text(12, y - 8, f"{title.split(':')[0] if plot.layout.compact else title}{counts} · "
                  f"{fmt.percent(1 - used_sum / res_sum, 1)} malbaratat", "start", "tw-note")
        x = 0
        for n, r in zip(lengths, reserve):  # each sequence: what it reserved, and over it what it used
            plot.span(x, x + r, y, 26, "tw-slot-empty", inset=1).span(x, x + n, y, 26, "tw-slot-used", inset=1)
            x += r
    alt = (f"{DRAWN} seqüències a la mateixa escala. Amb reserves contigües se'n malbarata el "
           f"{fmt.percent(v['waste_contiguous'])} en tot el flux; amb pàgines de {page} tokens, el "
           f"{fmt.percent(v['waste_paged'], 1)}. Hi caben {v['fit_contiguous']} i {v['fit_paged']} seqüències."
           + (f" Atenció: {v['context_note']}." if v["context_used"] < p["max_context"] else ""))
    return plot.render("La memòria del cache amb cada mètode", alt), alt


def _tables(p: dict, v: dict) -> str:
    methods = (
        ("Contigu (reserva el màxim)", "contiguous"),
        (f"Paginat ({p['page_tokens']} tokens per pàgina)", "paged"),
    )
    rows = "".join(
        f"<tr><td>{name}</td><td>{fmt.tokens(v['reserved_' + k])}</td><td>{fmt.tokens(v['used_' + k])}</td>"
        f"<td>{fmt.percent(v['waste_' + k], 0 if k == 'contiguous' else 1)}</td>"
        f"<td>{fmt.number(v['blocks_' + k])}</td><td>{v['fit_' + k]}</td></tr>"
        for name, k in methods
    )
    m = MODELS[p["model"]]
    fmts = ""
    for key in CACHE_FORMATS:
        per_seq = bytes_per_token(m, key) * v["context_used"]
        fmts += (f"<tr><td>{FORMATS[key].label}</td><td>{fmt.number(FORMATS[key].nbytes)}</td>"
                 f"<td>{fmt.with_unit(per_seq / 1e9, 2, 'GB')}</td>"
                 f"<td>{math.floor(p['memory_gb'] * 1e9 / per_seq)}</td></tr>")
    return (
        f"<p class=\"tw-note\">Context: {v['context_note']}.</p><table><thead><tr><th>Mètode</th><th>reservat</th><th>fet servir</th><th>malbaratat</th>"
        f"<th>blocs</th><th>hi caben</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<table><thead><tr><th>Format</th><th>bytes/escalar</th><th>cache a {fmt.tokens(v['context_used'])}</th>"
        f"<th>seqüències a {fmt.number(p['memory_gb'])} GB</th></tr></thead><tbody>{fmts}</tbody></table>"
    )


PARAMS = (
    Param("model", "choice", "llama-3-70b", "Model", choices=tuple((k, m.label) for k, m in MODELS.items()),
          help="Fixa els escalars de cache per token i capa, i les capes."),
    Param("max_context", "int", 4096, "Context màxim reservat", min=256, max=32768,
          ticks=(256, 512, 1024, 2048, 4096, 8192, 16384, 32768), unit="tokens",
          help="La longitud més gran que pot assolir una seqüència: la reserva contigua l'aparta tota "
               "des del primer token. No passa del context que admet el model."),
    Param("variability", "int", 100, "Variabilitat de les longituds", min=0, max=100, step=5, unit="%",
          help="A 0, totes les seqüències arriben al context màxim."),
    Param("page_tokens", "int", 16, "Tokens per pàgina", min=1, max=256, ticks=(1, 2, 4, 8, 16, 32, 64, 128, 256)),
    Param("memory_gb", "int", 80, "Memòria per al cache", min=10, max=640, step=10, unit="GB"),
    Param("cache_format", "choice", "bf16", "Format del cache", choices=fmt.format_choices(CACHE_FORMATS)),
    Param("prefix_tokens", "int", 2000, "Prefix compartit", min=0, max=8000, step=100, unit="tokens",
          help="Unes instruccions de sistema (system prompt), un document o l'historial d'una conversa."),
    Param("suffix_tokens", "int", 40, "Tokens propis de cada petició", min=1, max=1000,
          ticks=(1, 10, 20, 40, 100, 200, 500, 1000)),
    Param("prefix_requests", "int", 50, "Peticions sobre aquell prefix", min=1, max=500,
          ticks=(1, 2, 5, 10, 20, 50, 100, 200, 500)),
    Param("variable_head", "bool", False, "Data i hora al principi del prompt",
          help="Si el primer token canvia, cap pàgina no coincideix."),
    Param("seed", "int", 1, "Llavor", min=0, max=999),
)

OUTPUTS = (
    Output("waste_contiguous", "malbaratat, contigu", decimals=0, style="pct"),
    Output("waste_paged", "malbaratat, paginat", decimals=1, style="pct"),
    Output("fit_contiguous", "seqüències, contigu"),
    Output("fit_paged", "seqüències, paginat"),
    Output("blocks_paged", "pàgines en ús"),
    Output("prefill_saved", "prefill estalviat", decimals=0, style="pct"),
    Output("ttft_without_ms", "TTFT sense prefix", "ms", 0),
    Output("ttft_with_ms", "TTFT amb prefix", "ms", 0),
    Output("len_min", "seqüència més curta", "tokens", panel=False),
    Output("len_max", "seqüència més llarga", "tokens", panel=False),
    Output("len_mean", "longitud mitjana", "tokens", panel=False),
    Output("cache_per_seq_gb", "cache per seqüència al màxim", "GB", 2, panel=False),
    Output("prefill_without", "tokens de prefill sense prefix", panel=False),
    Output("prefill_with", "tokens de prefill amb prefix", panel=False),
    Output("shared_pages", "pàgines compartides", panel=False),
    Output("shared_tokens", "tokens compartits", panel=False),
    Output("recomputed_prefix", "tokens del prefix recalculats", panel=False),
    Output("bytes_per_token", "cache per token", "bytes", panel=False),
    Output("context_used", "context màxim calculat", "tokens", panel=False),
    Output("prefix_used", "prefix calculat", "tokens", panel=False),
    Output("context_note", "context", style="text"),
)

WIDGET = Widget(
    name="kv_cache",
    title="La memòria del KV-cache: reserves, pàgines i prefixos compartits",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=kv_cache,
    figure=_figure,
    tables=_tables,
    summary="Simula com s'omple la memòria del cache amb blocs contigus i amb pàgines.",
)
