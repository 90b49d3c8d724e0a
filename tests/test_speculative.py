"""Speculative decoding: the output law, the exact coupling, the speed-up formula, the context.

Oracles:
- vllm `tests/v1/sample/test_rejection_sampler.py`: the greedy vectors (spec tokens against
  the target's argmax tokens, with the bonus token) and "draft equal to target";
- vllm `tests/samplers/test_rejection_sampler.py`: "the output approximates the target
  distribution", made here a chi-square test of the *joint* law of several output tokens,
  bonus included, against the target's own autoregressive law computed exactly;
- Leviathan et al. 2023, eq. (1): tokens per target pass = (1 - α^(γ+1)) / (1 - α) when
  the acceptance rate α is the same at every position.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from widgets_py import run

from widgets_py.engine import session
from widgets_py.maths import gpt, pretrained
from widgets_py.cap15.speculative import MARKS, PARAMS, PROMPT_CHARS, GPTModel, prompt_tokens, speculate, target_alone
from widgets_py.maths.decoding import draw, probs, tokens_per_pass

# ---- models to plug in -----------------------------------------------------------------


class Unigram:
    """A context-free "model": the same logits after every token, so α is the same everywhere."""

    context = 10**9

    def __init__(self, p):
        self.logits = np.log(np.asarray(p, np.float64))

    def extend(self, tokens, kv=None):  # kv: how many tokens the "cache" holds
        return np.tile(self.logits, (len(tokens), 1)), (kv or 0) + len(tokens)

    @staticmethod
    def trim(kv, n):
        return n


class Scripted(Unigram):
    """Logits ±100 that make output position j's token script[j] (vllm's create_logits_tensor)."""

    def __init__(self, script, prompt_len, vocab=100):
        self.table = np.full((prompt_len + len(script), vocab), -100.0)  # row r: after position r
        self.table[np.arange(len(script)) + prompt_len - 1, script] = 100.0

    def extend(self, tokens, kv=None):
        past = kv or 0
        return self.table[past:past + len(tokens)], past + len(tokens)


def random_gpt(vocab, seed, context=16, scale=0.8, like=None):
    """A tiny GPT, weights N(0, scale) at a trained model's scale (peaked, context-dependent
    laws); with `like`, that model's weights plus the noise: an aligned draft."""
    cfg = gpt.GPTConfig(vocab=vocab, d=8, layers=1, heads=2, context=context)
    rng = np.random.default_rng(seed)
    base = like.params if like else gpt.init(cfg, seed)
    return GPTModel(cfg, {k: (v + rng.normal(0, scale, v.shape)).astype(np.float32) for k, v in base.items()})


def chi_square_critical(df, z=3.090):
    """Upper 0.001 quantile of chi2(df), Wilson-Hilferty (z: the 0.999 quantile of N(0, 1))."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi_square(counts, expected_p):
    """Pearson's statistic and degrees of freedom; cells expecting < 5 are pooled into one."""
    n = counts.sum()
    keep = n * expected_p >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(n * expected_p[keep], n * expected_p[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return float(((observed - expected) ** 2 / expected).sum()), len(observed) - 1


# ---- vllm's greedy vectors: one-hot laws, so both couplings must give these tokens -----

GREEDY = [  # (spec tokens, target tokens incl. the bonus one, expected emitted): vllm v1 cases
    ([1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4]),  # test_perfect_match
    ([1, 2, 3], [1, 5, 3, 4], [1, 5]),  # test_early_mismatch
    ([1], [1, 2], [1, 2]),  # test_single_token_sequence
    ([1, 2, 3], [1, 2, 7, 6], [1, 2, 7]),  # test_multiple_mismatches, first sequence
    ([4, 5, 6], [4, 8, 6, 9], [4, 8]),  # test_multiple_mismatches, second sequence
    ([1, 2], [1, 2, 3], [1, 2, 3]),  # test_parametrized_cases
    ([1], [2, 3], [2]),
    ([3, 4], [3, 4, 7], [3, 4, 7]),
    ([1, 2], [1, 5, 6], [1, 5]),
]


@pytest.mark.parametrize("coupling", ["exact", "rejection"])
@pytest.mark.parametrize("spec,target_tokens,expected", GREEDY)
def test_vllm_greedy_vectors(spec, target_tokens, expected, coupling):
    prompt = [0, 9, 8]
    k = len(spec)
    draft = Scripted(spec + [0] * 8, len(prompt))
    target = Scripted(target_tokens + [0] * 8, len(prompt))
    out = speculate(target, draft, prompt, k + 1, k, coupling, 1.0, seed=3)
    kept = k if len(expected) == k + 1 else len(expected) - 1  # all k kept: the bonus follows
    assert out["rounds"][0] == {"proposed": k, "accepted": kept, "emitted": len(expected)}
    assert out["tokens"][:len(expected)] == expected
    marks = [m for _, m in out["shown"]][:kept + (1 if kept == k else 2)]
    assert marks == ["accepted"] * kept + (["bonus"] if kept == k else ["rejected", "corrected"])


def test_a_draft_equal_to_the_target_is_always_accepted():
    """vllm's draft_and_target_probs_equal: p = q, so no rejection, no NaN, k + 1 tokens a pass."""
    model = random_gpt(5, 0)
    with np.errstate(all="raise"):
        for coupling, k in itertools.product(("exact", "rejection"), (1, 3)):
            out = speculate(model, model, [1, 2], 11, k, coupling, 1.0, seed=4)
            assert out["accepted"] == out["proposed"], coupling
            assert out["passes"] == math.ceil(11 / (k + 1)) and len(out["tokens"]) == 11


@pytest.mark.parametrize("coupling", ["exact", "rejection"])
def test_deterministic_when_seeded(coupling):
    target, draft = random_gpt(6, 1), random_gpt(6, 2)
    runs = [speculate(target, draft, [3, 1], 12, 3, coupling, 1.0, seed=s) for s in (8, 8, 9)]
    assert runs[0] == runs[1]
    assert runs[0]["tokens"] != runs[2]["tokens"]


# ---- the exact coupling: token for token the target alone ------------------------------

@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_exact_coupling_reproduces_the_target_alone_on_tiny_gpts(k, temperature):
    """Real KV caches, trimmed after every rejection: any stale row would change a token."""
    target, draft = random_gpt(7, 3, context=40), random_gpt(7, 4, context=40)
    rejected = 0
    for seed in range(6):
        out = speculate(target, draft, [1, 5, 2], 30, k, "exact", temperature, seed)
        assert out["tokens"] == target_alone(target, [1, 5, 2], 30, temperature, seed)
        rejected += sum(m == "rejected" for _, m in out["shown"])
    assert rejected > 5  # the draft disagrees often enough for the test to mean something


@pytest.mark.parametrize("seed", [0, 11])
def test_exact_coupling_reproduces_the_target_alone_with_the_trained_pair(seed):
    prompt = prompt_tokens()
    target = GPTModel(*session.load("target")[:2])
    for draft_every, k in (("1", 4), ("16", 2), ("4", 7)):
        draft = GPTModel(*session.load(f"draft-{draft_every}")[:2])
        out = speculate(target, draft, prompt, 40, k, "exact", 1.0, seed)
        assert out["tokens"] == target_alone(target, prompt, 40, 1.0, seed)


# ---- the rejection coupling: the joint law of several tokens is the target's -----------

class Memo:
    """The wrapped model's law after each whole prefix, computed once: fast repeated runs.

    Its "cache" is the prefix itself, so trimming cannot go wrong here; the KV-cache path
    is what the exact-coupling tests above check.
    """

    def __init__(self, model):
        self.model, self.seen, self.context = model, {}, model.context

    def after(self, prefix):
        if prefix not in self.seen:
            self.seen[prefix] = self.model.extend(list(prefix))[0][-1]
        return self.seen[prefix]

    def extend(self, tokens, kv=None):
        prefix = (kv or ()) + tuple(int(t) for t in tokens)
        start = len(prefix) - len(tokens)
        return np.array([self.after(prefix[:start + i + 1]) for i in range(len(tokens))]), prefix

    @staticmethod
    def trim(kv, n):
        return kv[:n]


def autoregressive_joint(model, prompt, n, vocab, temperature):
    """P(t1..tn) = Π p(t_i | prompt, t_<i): the target's own law, exactly, over all V^n cells."""
    joint = np.zeros((vocab,) * n)
    for cell in itertools.product(range(vocab), repeat=n):
        prob = 1.0
        for i in range(n):
            prob *= probs(model.after(tuple(prompt) + cell[:i]), temperature)[cell[i]]
        joint[cell] = prob
    return joint


@pytest.mark.parametrize("vocab,n,k", [(4, 3, 2), (2, 5, 3)])
def test_rejection_sampling_keeps_the_joint_law_of_the_target(vocab, n, k):
    """Chi-square at α = 0.001, fixed seeds: (t1..tn) from speculate against the target's joint.

    The bonus token comes at position k + 1 whenever all k proposals pass; a rejection
    starts another round; so every path of the algorithm is in the law. Temperature 2
    flattens the laws so that most of the V^n cells expect 5 draws or more.
    The draft's own joint is checked to fail the same test: the test can tell them apart.
    """
    prompt, temperature, draws = [0, 1], 2.0, 5000
    big = random_gpt(vocab, 10 + vocab, scale=0.5)
    target, draft = Memo(big), Memo(random_gpt(vocab, 20 + vocab, scale=0.5, like=big))
    counts = np.zeros((vocab,) * n)
    bonus = 0
    for seed in range(draws):
        out = speculate(target, draft, prompt, n, k, "rejection", temperature, seed)
        counts[tuple(out["tokens"])] += 1
        bonus += any(mark == "bonus" for _, mark in out["shown"])
    assert bonus > draws / 10  # the bonus path is well represented
    p = autoregressive_joint(target, prompt, n, vocab, temperature)
    assert p.sum() == pytest.approx(1.0)
    stat, df = chi_square(counts.ravel(), p.ravel())
    assert stat < chi_square_critical(df), (stat, df)
    q = autoregressive_joint(draft, prompt, n, vocab, temperature)  # power: the draft's law is far
    stat_q, df_q = chi_square(counts.ravel(), q.ravel())
    assert stat_q > 10 * chi_square_critical(df_q)


# ---- speed: tokens per target pass (Leviathan et al. 2023, eq. 1) -----------------------

def overlap_of_cdf_intervals(p, q):
    """P(draw(p, u) == draw(q, u)) for u ~ U(0, 1): the exact coupling's α."""
    P, Q = np.concatenate([[0], np.cumsum(p)]), np.concatenate([[0], np.cumsum(q)])
    return float(np.maximum(0, np.minimum(P[1:], Q[1:]) - np.maximum(P[:-1], Q[:-1])).sum())


@pytest.mark.parametrize("gamma", [1, 3, 6])
@pytest.mark.parametrize("coupling", ["rejection", "exact"])
def test_tokens_per_target_pass_follow_leviathan(gamma, coupling):
    """E[tokens per pass] = (1 - α^(γ+1)) / (1 - α), α = Σ min(p, q) (rejection) or the
    overlap of the CDF intervals (exact); measured on full rounds, within 4 standard errors."""
    p, q = np.array([0.45, 0.25, 0.2, 0.1]), np.array([0.2, 0.3, 0.35, 0.15])
    alpha = float(np.minimum(p, q).sum()) if coupling == "rejection" else overlap_of_cdf_intervals(p, q)
    out = speculate(Unigram(p), Unigram(q), [0], 3000, gamma, coupling, 1.0, seed=gamma)
    emitted = np.array([r["emitted"] for r in out["rounds"][:-1]])  # the last round is cut short
    law = np.append(alpha ** np.arange(gamma) * (1 - alpha), alpha ** gamma)  # P(emitted = 1..γ+1)
    values = np.arange(1, gamma + 2)
    mean, var = (law * values).sum(), (law * values**2).sum() - (law * values).sum() ** 2
    assert mean == pytest.approx((1 - alpha ** (gamma + 1)) / (1 - alpha))
    assert tokens_per_pass(alpha, gamma) == pytest.approx(mean)  # the chapter's formula, which its exercise checks against
    assert abs(emitted.mean() - mean) < 4 * math.sqrt(var / len(emitted)), (emitted.mean(), mean)
    assert set(emitted) <= set(values.tolist())


def test_tokens_per_pass_at_the_ends():
    """No proposal kept: the target's own token alone; every one kept: γ and the bonus."""
    assert tokens_per_pass(0.0, 5) == 1.0 and tokens_per_pass(1.0, 5) == 6.0
    assert tokens_per_pass(1.0 - 1e-12, 5) == pytest.approx(6.0, rel=1e-6)  # the closed form's limit


def test_rejection_accepts_more_than_exact_on_unigrams():
    """Σ min(p, q) is the largest agreement any coupling reaches; inverse-CDF reaches less."""
    p, q = np.array([0.45, 0.25, 0.2, 0.1]), np.array([0.2, 0.3, 0.35, 0.15])
    assert overlap_of_cdf_intervals(p, q) < np.minimum(p, q).sum()
    acc = {c: speculate(Unigram(p), Unigram(q), [0], 2000, 1, c, 1.0, 5)["accepted"] / 2000 for c in ("exact", "rejection")}
    assert acc["exact"] < acc["rejection"]


# ---- the widget: trained models, within their context ----------------------------------

def test_every_position_the_widget_evaluates_lies_inside_the_trained_context(monkeypatch):
    seen = {}  # model id -> (context, positions evaluated)
    extend = GPTModel.extend

    def recording(self, tokens, kv=None):
        past = 0 if kv is None else kv[0][0].shape[-2]
        seen.setdefault(id(self.params), (self.context, set()))[1].update(range(past, past + len(tokens)))
        return extend(self, tokens, kv)

    monkeypatch.setattr(GPTModel, "extend", recording)
    longest = max(p.max for p in PARAMS if p.name == "tokens")
    for k, coupling, draft_every in (("1", "exact", "1"), ("8", "rejection", "16"), ("3", "exact", "4")):
        run("speculative", {"tokens": longest, "k": k, "coupling": coupling, "draft_every": draft_every})
    assert len(seen) == 4  # the target and three drafts
    for context, positions in seen.values():
        assert max(positions) >= PROMPT_CHARS + longest - 2  # the whole run was recorded (the last
        # emitted token needs no pass)
        assert max(positions) < context


def test_positions_beyond_the_context_are_refused():
    target, draft = random_gpt(5, 0, context=10), random_gpt(5, 1, context=10)
    speculate(target, draft, [1, 2, 3], 7, 3, "exact", 1.0, 0)  # positions 0..9: fine
    with pytest.raises(ValueError, match="context of 10"):
        speculate(target, draft, [1, 2, 3], 8, 3, "exact", 1.0, 0)
    with pytest.raises(ValueError, match="context of 10"):
        target_alone(target, [1, 2, 3], 8, 1.0, 0)
    with pytest.raises(ValueError, match="beyond"):
        target.extend([1] * 11)


def test_widget_outputs_agree_with_its_rounds():
    p = {"k": 3, "coupling": "rejection", "tokens": 48}
    v = run("speculative", p).values
    marks = [m for _, m in v["shown"]]
    assert "".join(c for c, m in v["shown"] if m != "rejected") == v["text"]  # emitted = the text
    assert len(v["text"]) == v["passes_alone"] == 48
    assert marks.count("rejected") == marks.count("corrected")
    assert v["target_passes"] == marks.count("rejected") + marks.count("bonus") + (marks[-1] == "accepted")
    assert v["acceptance"] == pytest.approx(marks.count("accepted") / v["draft_steps"])
    assert v["tokens_per_pass"] == pytest.approx(48 / v["target_passes"])
    assert v["target_passes"] * 1 <= v["draft_steps"] <= v["target_passes"] * 3
    svg = run("speculative", p).figure
    assert svg.count('class="tw-tok ') == len(marks) + 4  # one box per token, four in the legend


def test_rejection_accepts_more_than_exact_on_average():
    acc = {c: np.mean([run("speculative", {"coupling": c, "seed": s, "tokens": 64}).values["acceptance"]
                       for s in range(6)]) for c in ("exact", "rejection")}
    assert acc["rejection"] > acc["exact"]


def test_a_worse_draft_is_accepted_less():
    good = run("speculative", {"draft_every": "1", "tokens": 64}).values["acceptance"]
    bad = run("speculative", {"draft_every": "16", "tokens": 64}).values["acceptance"]
    assert good > bad


def test_exact_runs_are_identical_to_the_target_alone_and_say_so():
    for params in ({}, {"k": 7, "draft_every": "8", "temperature": 0.5, "seed": 3}):
        v = run("speculative", {"coupling": "exact", **params}).values
        assert v["identical"] and v["text"] == v["text_alone"]
        r = run("speculative", {"coupling": "rejection", **params}).values
        assert r["identical"] == (r["text"] == r["text_alone"])


@pytest.mark.parametrize("tokens,k", [(8, 1), (96, 8), (96, 1)])
def test_figure_boxes_fit_the_picture_and_do_not_overlap(tokens, k):
    import re

    result = run("speculative", {"tokens": tokens, "k": k})
    width, height = map(float, re.search(r'viewBox="0 0 (\S+) (\S+)"', result.figure).groups())
    boxes = [tuple(map(float, b)) for b in
             re.findall(r'<rect class="tw-tok [^"]*" x="(\S+)" y="(\S+)" width="(\S+)" height="(\S+)"', result.figure)]
    assert len(boxes) == len(result.values["shown"]) + 4
    for x, y, w, h in boxes:
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height, (x, y, w, h, width, height)
    for a, b in itertools.combinations(boxes, 2):
        assert a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1], (a, b)
    assert height <= boxes[-1][1] + boxes[-1][3] + 30  # no empty band below the legend


def test_figure_draws_each_token_in_its_box_with_its_mark():
    import re
    from html import unescape

    v = run("speculative", {"tokens": 96, "k": 4}).values
    figure = run("speculative", {"tokens": 96, "k": 4}).figure
    pairs = re.findall(r'<rect class="tw-tok ([^"]+)" x="(\S+)" y="(\S+)" width="(\S+)" height="(\S+)" rx="3"/>'
                       r'<text class="([^"]+)" x="(\S+)" y="(\S+)" text-anchor="middle">([^<]*)</text>', figure)
    assert len(pairs) == len(v["shown"]) and any(c == " " for c, _ in v["shown"])
    for (char, mark), (cls, x, y, w, h, text_cls, tx, ty, glyph) in zip(v["shown"], pairs):
        x, y, w, h, tx, ty = map(float, (x, y, w, h, tx, ty))
        assert cls == MARKS[mark][0] and ("tw-struck" in text_cls) == (mark == "rejected")
        assert tx == x + w / 2 and y + h / 2 < ty < y + h  # centred, baseline in the lower half
        assert unescape(glyph) == {" ": "␣", "\n": "↵"}.get(char, char)


# ---- the small pieces: inverse CDF, softmax, one pass per token -------------------------

def test_inverse_cdf_uses_half_open_intervals_and_unnormalised_weights():
    """Token i owns [P_(i-1), P_i): a zero-probability token is never drawn, even at u = 0."""
    assert draw(np.array([0.0, 1.0]), 0.0) == 1
    assert draw(np.array([0.5, 0.5]), 0.5) == 1 and draw(np.array([0.5, 0.5]), 0.4999) == 0
    assert draw(np.array([2.0, 2.0, 4.0]), 0.6) == 2  # weights need not sum to 1
    rng = np.random.default_rng(0)
    for _ in range(2000):  # u just below 1 never falls off the end through rounding
        p = rng.dirichlet(np.ones(7))
        assert draw(p, np.nextafter(1.0, 0.0)) < 7


def test_probs_is_a_stable_float64_softmax_per_row():
    p = probs(np.array([[1000.0, 0.0], [0.0, np.log(3.0)]], np.float32), 1.0)
    assert p.dtype == np.float64 and np.allclose(p, [[1, 0], [0.25, 0.75]])
    assert np.allclose(probs(np.array([0.0, np.log(3.0)]), 0.5), [0.1, 0.9])  # T = 0.5 squares the odds


def test_the_target_alone_makes_one_pass_per_token():
    calls = []

    class Counting(Unigram):
        def extend(self, tokens, kv=None):
            calls.append(len(tokens))
            return super().extend(tokens, kv)

    target_alone(Counting([0.5, 0.5]), [0, 1, 1], 6, 1.0, 0)
    assert calls == [3] + [1] * 5  # the prompt, then each token but the last one fed back


def test_the_context_guard_counts_the_cached_positions():
    model = random_gpt(5, 0, context=10)
    _, kv = model.extend([1] * 10)  # exactly the window: allowed
    with pytest.raises(ValueError, match=r"positions 10\.\.10 lie beyond"):
        model.extend([2], kv)
    _, kv = model.extend([1] * 8)
    with pytest.raises(ValueError, match=r"positions 8\.\.10 lie beyond"):
        model.extend([2, 3, 4], kv)


def test_the_laws_alpha_is_the_share_kept_of_the_proposals_judged():
    """Rounds of iid proposals, each kept with probability alpha until the first rejection
    (Leviathan et al. 2023, §3.5): judged_acceptance recovers alpha, the share of everything
    drafted (vLLM's acceptance rate, the widget's `acceptance`) does not."""
    from widgets_py.cap15.speculative import judged_acceptance
    assert judged_acceptance([{"proposed": 4, "accepted": 4}, {"proposed": 4, "accepted": 1}]) == 5 / 6
    rng = np.random.default_rng(15)
    for alpha, gamma in ((0.8, 4), (0.5, 6), (0.3, 2)):
        kept = rng.random((20_000, gamma)) < alpha  # [rounds, gamma]
        accepted = np.where(kept.all(axis=1), gamma, np.argmin(kept, axis=1))  # up to the first rejection
        rounds = [{"proposed": gamma, "accepted": int(a)} for a in accepted]
        assert judged_acceptance(rounds) == pytest.approx(alpha, abs=0.01)
        assert accepted.mean() / gamma < alpha - 0.05


def test_the_widget_sets_the_law_beside_what_it_counts():
    v = run("speculative", {}).values
    assert v["tokens_per_pass_law"] == tokens_per_pass(v["alpha_judged"], 4)
    assert v["alpha_judged"] > v["acceptance"]
    # over ten seeds the law, at each run's judged alpha, predicts what the runs count
    runs = [run("speculative", {"seed": s, "tokens": 64}).values for s in range(10)]
    law, counted = (np.mean([r[key] for r in runs]) for key in ("tokens_per_pass_law", "tokens_per_pass"))
    assert law == pytest.approx(counted, rel=0.06)
