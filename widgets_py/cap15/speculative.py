"""§5 Speculative decoding: a small draft proposes k tokens, the target checks them at once.

The two couplings of draft and target, exact (the target's own sequence) and rejection
(Leviathan et al. 2023: the target's distribution), are maths.decoding's. A verification
is one `extend` of the target over the k proposed tokens. `speculate` takes the two models
as arguments (anything with `extend` and `trim`), so tests can plug in tiny random GPTs or
context-free unigram models; the widget uses the trained ones.
"""

from __future__ import annotations

import numpy as np

from ..engine import fmt
from ..engine import session
from ..maths import corpus, gpt, pretrained
from ..maths.decoding import coupled_draw, draw, judge, probs, tokens_per_pass
from ..engine.params import Output, Param
from ..engine.widget import Partial, Widget, finish
from ..engine.stages import stage
from ..engine.svg import Plot, current

PROMPT_CHARS = 32  # + at most 96 generated tokens: every position stays < 128, the trained window


class GPTModel:
    """A mini-GPT as `speculate` sees it: extend a KV cache, trim it back after a rejection."""

    def __init__(self, cfg: gpt.GPTConfig, params: dict):
        self.cfg, self.params = cfg, params

    @property
    def context(self) -> int:
        return self.cfg.context  # positions it was trained on: 0 .. context - 1

    def extend(self, tokens, kv=None):
        """Logits [T, V] after each new token, and the grown cache; refuses untrained positions."""
        past = 0 if kv is None else kv[0][0].shape[-2]
        if past + len(tokens) > self.cfg.context:
            raise ValueError(f"positions {past}..{past + len(tokens) - 1} lie beyond the model's "
                             f"trained context of {self.cfg.context} tokens")
        return gpt.extend(self.params, self.cfg, tokens, kv)

    @staticmethod
    def trim(kv, n: int):
        """Keep the cache rows of the first n tokens."""
        return [(k[..., :n, :], v[..., :n, :]) for k, v in kv]


def models(draft_every: str) -> tuple[GPTModel, GPTModel]:
    """(target, draft): the trained pair of the widget."""
    return GPTModel(*session.load("target")[:2]), GPTModel(*session.load(f"draft-{draft_every}")[:2])


def check_context(pair, prompt, n: int) -> None:
    """The last position evaluated is len(prompt) + n - 1: it must lie inside every model's window."""
    for model in pair:
        if len(prompt) + n > model.context:
            raise ValueError(f"a prompt of {len(prompt)} tokens + {n} generated exceeds the "
                             f"model's trained context of {model.context} tokens")


def target_alone(target, prompt, n: int, temperature: float, seed: int) -> list[int]:
    """What the target samples by itself: u_i -> token by inverse CDF, one pass per token."""
    check_context((target,), prompt, n)
    u = np.random.default_rng(seed).random(n)  # [n] one uniform per output position
    logits, kv = target.extend(prompt)
    out = []
    for i in range(n):
        out.append(draw(probs(logits[-1], temperature), u[i]))
        if i + 1 < n:
            logits, kv = target.extend([out[-1]], kv)
    return out


def speculate(target, draft, prompt, n: int, k: int, coupling: str, temperature: float, seed: int) -> dict:
    """Generate n tokens, k proposals per target pass.

    `shown` lists (token, mark) including the rejected proposals, each followed by the
    target's own token there ("corrected"); `rounds` has one record
    per target pass: tokens proposed, accepted, and emitted (accepted + the target's own).
    """
    return finish(speculating(target, draft, prompt, n, k, coupling, temperature, seed))


def summary(out: list, shown: list, rounds: list) -> dict:
    return {"tokens": out, "shown": shown, "rounds": rounds, "passes": len(rounds),
            "proposed": sum(r["proposed"] for r in rounds), "accepted": sum(r["accepted"] for r in rounds)}


def speculating(target, draft, prompt, n: int, k: int, coupling: str, temperature: float, seed: int):
    """speculate(), a target pass at a time: yields the run so far after each pass (its lists
    grow afterwards: read them at once), returns the whole run."""
    check_context((target, draft), prompt, n)
    u = np.random.default_rng(seed).random(n)  # the target-alone stream, one per position
    rng = np.random.default_rng(seed + 1)  # the rejection coupling's own randomness
    t_first, t_kv = target.extend(prompt)  # prefill both models on the prompt
    d_logits, d_kv = draft.extend(prompt)
    out, shown, rounds, pending = [], [], [], []  # pending: emitted, not yet in the caches
    while len(out) < n:
        base, m = len(out), min(k, n - len(out))
        if pending:
            d_logits, d_kv = draft.extend(pending, d_kv)
        xs, qs = [], []
        for j in range(m):  # the draft proposes m tokens, one cheap step each
            qs.append(probs(d_logits[-1], temperature))
            xs.append(coupled_draw(qs[-1], coupling, u[base + j], rng))
            d_logits, d_kv = draft.extend([xs[-1]], d_kv)
        rows, t_kv = target.extend(pending + xs, t_kv)  # one target pass verifies all m
        # [m + 1, V]: the target's law at each proposal, and one more after the last
        ps = probs(np.vstack([t_first[-1:], rows])[len(pending):], temperature)
        n_ok = 0
        for j, x in enumerate(xs):
            kept, token = judge(ps[j], qs[j], x, coupling, u[base + j], rng)
            out.append(token)
            if not kept:
                shown += [(x, "rejected"), (token, "corrected")]
                break
            shown.append((x, "accepted"))
            n_ok += 1
        if n_ok == m and len(out) < n:  # every proposal kept: one more token comes free
            out.append(coupled_draw(ps[m], coupling, u[len(out)], rng))
            shown.append((out[-1], "bonus"))
        rounds.append({"proposed": m, "accepted": n_ok, "emitted": len(out) - base})
        valid = len(prompt) + base + n_ok  # cache rows that hold kept tokens
        t_kv, d_kv = target.trim(t_kv, valid), draft.trim(d_kv, valid)
        pending = out[base + n_ok:]
        yield summary(out, shown, rounds)
    return summary(out, shown, rounds)


def law(alpha: float, gamma: int) -> float:
    """Tokens per target pass that Leviathan et al.'s law expects (maths.decoding), called through
    this module so that a passing answer to the exercise on it can stand in (ex_spec_tokens.DRIVES)."""
    return tokens_per_pass(alpha, gamma)


def judged_acceptance(rounds: list) -> float:
    """The law's alpha as the run measures it: of the proposals the target judged (up to and
    including the first it rejects in each round; those after it are never judged), the share
    it kept. A round kept whole judged all its proposals."""
    accepted = sum(r["accepted"] for r in rounds)
    rejected = sum(r["accepted"] < r["proposed"] for r in rounds)  # one rejection ends a round
    return accepted / (accepted + rejected)


def prompt_tokens() -> list[int]:
    return corpus.data()[1][:PROMPT_CHARS].tolist()


def speculative(k: int, coupling: str, draft_every: str, temperature: float, tokens: int, seed: int):
    """A staged compute (engine.widget.Partial): the rounds appear as the target verifies them
    (a quarter of the tokens at a time), then the target alone is run for the comparison
    (kept per tokens, temperature and seed: k, the coupling and the draft do not alter it)."""
    target, draft = models(draft_every)
    prompt = prompt_tokens()
    passes = speculating(target, draft, prompt, tokens, k, coupling, temperature, seed)
    mark = 0
    while True:
        try:
            run = next(passes)
        except StopIteration as end:
            run = end.value
            break
        if len(run["tokens"]) >= mark:  # the first round, then every quarter
            yield Partial(shown(run), 0.7 * len(run["tokens"]) / tokens, "rondes de proposta i verificació")
            mark += tokens / 4
    key = ("speculative.alone", tokens, temperature, seed)  # k, coupling and the draft do not alter it
    alone = yield from stage(key, lambda: target_alone(target, prompt, tokens, temperature, seed),
                             Partial(shown(run), 0.7, "el model gran sol, per comparar"))
    return shown(run) | {
        "target_passes": run["passes"], "draft_steps": run["proposed"],
        "acceptance": run["accepted"] / run["proposed"],
        "tokens_per_pass": tokens / run["passes"],
        "alpha_judged": (alpha := judged_acceptance(run["rounds"])), "tokens_per_pass_law": law(alpha, k),
        "identical": run["tokens"] == alone, "passes_alone": tokens,
        "text_alone": corpus.decode(alone),
    }


def shown(run: dict) -> dict:
    """What the figure draws of a run (whole or so far): its tokens, marked, and its text."""
    return {"text": corpus.decode(run["tokens"]),
            "shown": [[corpus.vocab()[t], mark] for t, mark in run["shown"]]}  # the figure's rounds, plain JSON


# "corrected": the target's token where it rejected a proposal; with the exact coupling its own
# inverse-CDF choice for the same u, with rejection sampling a draw from the residual (p - q)+
MARKS = {"accepted": ("tw-s3", "acceptat"), "rejected": ("tw-cut", "rebutjat"),
         "corrected": ("tw-s1", "posat pel gran"), "bonus": ("tw-s2", "de regal, del gran")}


def _figure(p: dict, v: dict) -> tuple[str, str]:
    shown = v["shown"]
    size, compact = 24, current().compact
    per_row = (current().width - 20) // (size + 2) if compact else 24  # as many boxes as the width holds
    rows = -(-len(shown) // per_row)
    legend_h = 20 * len(MARKS) + 4 if compact else 24  # a phone stacks the legend
    plot = Plot(height=20 + rows * (size + 8) + legend_h)  # token rows, then the legend's row
    for i, (char, mark) in enumerate(shown):
        x, y = 10 + (i % per_row) * (size + 2), 10 + (i // per_row) * (size + 8)
        cls = MARKS[mark][0]
        plot.parts.append(f'<rect class="tw-tok {cls}" x="{x}" y="{y}" width="{size}" height="{size}" rx="3"/>')
        char = {" ": "␣", "\n": "↵"}.get(char, char)
        plot.text(x + size / 2, y + size / 2 + 5, char, "middle", "tw-tok-text" + (" tw-struck" if mark == "rejected" else ""))
    y = 20 + rows * (size + 8)
    for j, (mark, (cls, label)) in enumerate(MARKS.items()):
        x, y = (10, 20 + rows * (size + 8) + 20 * j) if compact else (10 + j * 150, y)
        plot.parts.append(f'<rect class="tw-tok {cls}" x="{x}" y="{y}" width="14" height="14" rx="2"/>')
        plot.text(x + 20, y + 12, label, "start", "tw-note")
    if "identical" not in v:  # a staged run, still going
        alt = f"{len(v['shown'])} tokens mostrats de moment, dels {p['tokens']} que es generen."
    else:
        alt = (f"{fmt.number(v['target_passes'])} passades del model gran per a {p['tokens']} tokens "
               f"({fmt.number(v['tokens_per_pass'], 2)} per passada); taxa d'acceptació {fmt.percent(v['acceptance'])}; "
               f"seqüència {'idèntica a' if v['identical'] else 'diferent de'} la del gran sol.")
    return plot.render("Cada ronda: les propostes acceptades i rebutjades, i el token que hi posa el gran", alt), alt


def _tables(p: dict, v: dict) -> str:
    from html import escape

    return (f'<p class="tw-sample"><span class="tw-prompt">{escape(corpus.decode(prompt_tokens()))}</span>'
            f'<mark>{escape(v["text"])}</mark></p>'
            f'<p class="tw-sample"><span class="tw-prompt">el gran sol: </span>'
            f'{escape(v["text_alone"]) if "text_alone" in v else "es genera…"}</p>')


PARAMS = (
    Param("k", "int", 4, "Tokens proposats per ronda (γ)", min=1, max=8, step=1,
          help="Si les encerta totes, una ronda llarga dona més tokens; un rebuig a la primera, però, en fa llençar més."),
    Param("coupling", "choice", "exact", "Acoblament",
          choices=(("exact", "exacte: la mateixa seqüència"), ("rejection", "mostreig de rebuig")),
          help="Exacte: surt el mateix text que el gran sol. Rebuig: la mateixa distribució, amb més propostes acceptades."),
    Param("draft_every", "choice", "1", "Entrenament del draft",
          choices=tuple((str(n), f"1 pas de cada {n}") for n in pretrained.DRAFT_FRACTIONS),
          help="Menys entrenament: el draft s'assembla menys al gran i se li accepten menys propostes."),
    Param("temperature", "float", 1.0, "Temperatura", min=0.1, max=2.0, step=0.1),
    Param("tokens", "int", 32, "Tokens a generar", min=8, max=96, ticks=(8, 16, 32, 48, 64, 96)),
    Param("seed", "int", 11, "Llavor", min=0, max=999),
)

OUTPUTS = (
    Output("target_passes", "passades del gran"),
    Output("draft_steps", "passos del draft"),
    Output("acceptance", "taxa d'acceptació", style="pct"),
    Output("tokens_per_pass", "tokens per passada del gran", decimals=2),
    Output("alpha_judged", "acceptació de les propostes jutjades (α)", style="pct"),
    Output("tokens_per_pass_law", "tokens per passada segons la fórmula", decimals=2),
    Output("identical", "seqüència idèntica al gran sol", style="bool"),
    Output("passes_alone", "passades del gran sol", panel=False),
    Output("text", "text generat", style="text", panel=False),
    Output("text_alone", "text del gran sol", style="text", panel=False),
)

WIDGET = Widget(
    name="speculative",
    models=True,  # the mini-GPTs: weights, corpus, kernel
    title="Decodificació especulativa: el petit proposa, el gran verifica",
    params=PARAMS,
    outputs=OUTPUTS,
    compute=speculative,
    figure=_figure,
    tables=_tables,
    summary="Dos mini-GPT entrenats: el draft proposa γ tokens i el gran els verifica d'una passada.",
)
