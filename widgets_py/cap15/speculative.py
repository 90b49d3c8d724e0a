"""§5 Speculative decoding: a small draft proposes k tokens, the target checks them at once.

Two couplings of draft and target:
- exact: both read the same uniform number u_i at output position i and turn it into a
  token by inverse CDF; a draft token is kept only if it is the target's own choice for
  u_i, so the output is token for token what the target alone samples with that seed;
- rejection (Leviathan et al. 2023): keep draft token x with probability min(1, p/q),
  otherwise sample from (p - q)+ normalised; the output *distribution* is the target's.
A verification is one forward of the target over the k proposed tokens (`gpt.extend`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..engine import fmt
from ..models import corpus, gpt, pretrained
from ..engine.params import Output, Param
from ..engine.widget import Widget
from ..engine.svg import Plot

PROMPT_CHARS = 40


def probs(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits.astype(np.float64) / temperature
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def inverse_cdf(p: np.ndarray, u: float) -> int:
    return int(min(np.searchsorted(np.cumsum(p), u * p.sum(), side="right"), len(p) - 1))


def trim(kv, n: int):
    return [(k[..., :n, :], v[..., :n, :]) for k, v in kv]


def target_alone(prompt, n: int, temperature: float, seed: int) -> list[int]:
    cfg, p, _ = pretrained.load("target")
    u = np.random.default_rng(seed).random(n)  # [n] one uniform per output position
    logits, kv = gpt.extend(p, cfg, prompt)
    out = []
    for i in range(n):
        out.append(inverse_cdf(probs(logits[-1], temperature), u[i]))
        logits, kv = gpt.extend(p, cfg, [out[-1]], kv)
    return out


def speculate(prompt, n: int, k: int, coupling: str, draft: str, temperature: float, seed: int) -> dict:
    """Generate n tokens; `shown` lists (token, mark) including the rejected proposals."""
    tcfg, tp, _ = pretrained.load("target")
    dcfg, dp, _ = pretrained.load(draft)
    u = np.random.default_rng(seed).random(n)  # the target-alone stream, one per position
    rng = np.random.default_rng(seed + 1)  # the rejection coupling's own randomness
    t_last, t_kv = gpt.extend(tp, tcfg, prompt)  # prefill both models on the prompt
    d_last, d_kv = gpt.extend(dp, dcfg, prompt)
    out, shown, pending = [], [], []  # pending: emitted, not yet in the caches
    passes = proposed = accepted = 0
    while len(out) < n:
        m = min(k, n - len(out))
        xs, qs = [], []
        d_logits, d_kv = gpt.extend(dp, dcfg, pending, d_kv) if pending else (d_last, d_kv)
        for j in range(m):  # the draft proposes m tokens, one cheap step each
            q = probs(d_logits[-1], temperature)
            x = inverse_cdf(q, u[len(out) + j]) if coupling == "exact" else int(rng.choice(len(q), p=q))
            xs.append(x)
            qs.append(q)
            d_logits, d_kv = gpt.extend(dp, dcfg, [x], d_kv)
        proposed += m
        rows, t_kv = gpt.extend(tp, tcfg, pending + xs, t_kv)  # one target pass verifies all m
        passes += 1
        ps = [probs(r, temperature) for r in (rows[len(pending) - 1:] if pending else np.vstack([t_last[-1:], rows]))]
        base, n_ok = len(out), 0
        for j, x in enumerate(xs):
            p, pos = ps[j], base + j
            if coupling == "exact":  # the target's own choice for this position's u
                choice = inverse_cdf(p, u[pos])
                ok = choice == x
            else:  # keep with probability min(1, p/q), else sample the residual (p - q)+
                ok = rng.random() < min(1.0, p[x] / qs[j][x])
                residual = np.maximum(p - qs[j], 0.0)
                choice = x if ok else int(rng.choice(len(p), p=residual / residual.sum()))
            if not ok:
                out.append(choice)
                shown += [(x, "rejected"), (choice, "resampled")]
                break
            out.append(x)
            shown.append((x, "accepted"))
            n_ok += 1
        accepted += n_ok
        if n_ok == m and len(out) < n:  # every proposal kept: one more token comes free
            p = ps[m]
            out.append(inverse_cdf(p, u[len(out)]) if coupling == "exact" else int(rng.choice(len(p), p=p)))
            shown.append((out[-1], "bonus"))
        valid = len(prompt) + base + n_ok  # cache rows that hold kept tokens
        t_kv, d_kv = trim(t_kv, valid), trim(d_kv, valid)
        pending = out[base + n_ok:]
        t_last = rows[-1:]
    return {"tokens": out[:n], "shown": shown, "passes": passes, "proposed": proposed, "accepted": accepted}


def prompt_tokens() -> np.ndarray:
    return corpus.data()[1][:PROMPT_CHARS]


@lru_cache(maxsize=8)
def speculated(tokens: int, k: int, coupling: str, draft_every: str, temperature: float, seed: int,
               generation: int) -> dict:
    """One speculative run, shared by the values and the figure (keyed by the weights' generation)."""
    return speculate(list(prompt_tokens()), tokens, k, coupling, f"draft-{draft_every}", temperature, seed)


def speculative(k: int, coupling: str, draft_every: str, temperature: float, tokens: int, seed: int) -> dict:
    prompt = list(prompt_tokens())
    run = speculated(tokens, k, coupling, draft_every, temperature, seed, pretrained.generation())
    alone = target_alone(prompt, tokens, temperature, seed)
    return {
        "target_passes": run["passes"], "draft_steps": run["proposed"],
        "acceptance": run["accepted"] / run["proposed"],
        "tokens_per_pass": tokens / run["passes"],
        "identical": run["tokens"] == alone, "passes_alone": tokens,
        "text": corpus.decode(run["tokens"]), "text_alone": corpus.decode(alone),
    }


MARKS = {"accepted": ("tw-s3", "acceptat"), "rejected": ("tw-cut", "rebutjat"),
         "resampled": ("tw-s1", "remostrejat pel gran"), "bonus": ("tw-s2", "de regal, de la passada")}


def _figure(p: dict, v: dict) -> tuple[str, str]:
    run = speculated(p["tokens"], p["k"], p["coupling"], p["draft_every"], p["temperature"], p["seed"],
                     pretrained.generation())
    per_row, size = 24, 24
    rows = -(-len(run["shown"]) // per_row)
    plot = Plot(height=40 + rows * (size + 8) + 28, left=10, right=10, top=10, bottom=10).scales((0, 1), (0, 1))
    for i, (tok, mark) in enumerate(run["shown"]):
        x, y = 10 + (i % per_row) * (size + 2), 10 + (i // per_row) * (size + 8)
        cls = MARKS[mark][0]
        plot.parts.append(f'<rect class="tw-tok {cls}" x="{x}" y="{y}" width="{size}" height="{size}" rx="3"/>')
        char = {" ": "␣", "\n": "↵"}.get(corpus.vocab()[tok], corpus.vocab()[tok])
        plot.text(x + size / 2, y + size / 2 + 5, char, "middle", "tw-tok-text" + (" tw-struck" if mark == "rejected" else ""))
    y = 20 + rows * (size + 8)
    for j, (mark, (cls, label)) in enumerate(MARKS.items()):
        x = 10 + j * 150
        plot.parts.append(f'<rect class="tw-tok {cls}" x="{x}" y="{y}" width="14" height="14" rx="2"/>')
        plot.text(x + 20, y + 12, label, "start", "tw-note")
    alt = (f"{fmt.number(v['target_passes'])} passades del model gran per a {p['tokens']} tokens "
           f"({fmt.number(v['tokens_per_pass'], 2)} per passada); taxa d'acceptació {fmt.percent(v['acceptance'])}; "
           f"seqüència {'idèntica' if v['identical'] else 'diferent'} de la del gran sol.")
    return plot.render("Els tokens de cada ronda: acceptats, rebutjats i remostrejats", alt), alt


def _tables(p: dict, v: dict) -> str:
    from html import escape

    return (f'<p class="tw-sample"><span class="tw-prompt">{escape(corpus.decode(prompt_tokens()))}</span>'
            f'<mark>{escape(v["text"])}</mark></p>'
            f'<p class="tw-sample"><span class="tw-prompt">el gran sol: </span>{escape(v["text_alone"])}</p>')


PARAMS = (
    Param("k", "int", 4, "Tokens proposats per ronda (k)", min=1, max=8, step=1,
          help="Més propostes: més potencial, i més feina llençada quan se'n rebutja una."),
    Param("coupling", "choice", "exact", "Acoblament",
          choices=(("exact", "exacte: la mateixa seqüència"), ("rejection", "mostreig de rebuig")),
          help="El primer dona la seqüència idèntica; el segon accepta més sovint."),
    Param("draft_every", "choice", "1", "Entrenament del draft",
          choices=tuple((str(n), f"1 pas de cada {n}") for n in pretrained.DRAFT_FRACTIONS),
          help="Com d'alineat està el draft amb el model gran."),
    Param("temperature", "float", 1.0, "Temperatura", min=0.1, max=2.0, step=0.1),
    Param("tokens", "int", 32, "Tokens a generar", min=8, max=96, ticks=(8, 16, 32, 48, 64, 96)),
    Param("seed", "int", 11, "Llavor", min=0, max=999),
)

OUTPUTS = (
    Output("target_passes", "passades del gran"),
    Output("draft_steps", "passos del draft"),
    Output("acceptance", "taxa d'acceptació", style="pct"),
    Output("tokens_per_pass", "tokens per passada del gran", decimals=2),
    Output("identical", "seqüència idèntica al gran sol", style="bool"),
    Output("passes_alone", "passades del gran sol", panel=False),
    Output("text", "text generat", style="text", panel=False),
    Output("text_alone", "text del gran sol", style="text", panel=False),
)

WIDGET = Widget(
    name="speculative",
    title="Speculative decoding: el petit proposa, el gran verifica",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=speculative,
    figure=_figure,
    tables=_tables,
    summary="Dos mini-GPT entrenats: el draft proposa k tokens i el gran els verifica d'una passada.",
)
