"""The sampling widget: HF/vLLM's warper chain, its edges, and the model's trained window.

Oracles: the input vectors and expected outputs of huggingface/transformers
`tests/generation/test_logits_process.py` (torch float32 there, float64 here), and two
independent numpy ports, of HF's `src/transformers/generation/logits_process.py` chain
(RepetitionPenalty -> Temperature -> TopK -> TopP -> MinP, the order of
`GenerationMixin._get_logits_processor`) and of vLLM's
`vllm/v1/sample/ops/topk_topp_sampler.py::apply_top_k_top_p_pytorch`.
"""

from __future__ import annotations

import numpy as np
import pytest

from widgets_py import run

from widgets_py.engine import session
from widgets_py.maths import corpus, gpt
from widgets_py.cap15.sampling import SAMPLE_CHARS, context_at, generate
from widgets_py.maths.decoding import TOP_P_TOL, draw, penalised, restricted, shape

NONE = np.array([], dtype=np.int64)


def chain(logits, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, penalty=1.0, seen=NONE):
    """The widget's chain on plain arguments: (tempered distribution, kept mask)."""
    return shape(np.asarray(logits, dtype=np.float64), np.asarray(seen, dtype=np.int64),
                 temperature, top_k, top_p, min_p, penalty)


# ---- independent ports of the references ---------------------------------------------

def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def hf_warpers(logits, input_ids, temperature, top_k, top_p, min_p, penalty, tol=0.0):
    """HF transformers' processors, line by line in numpy (min_tokens_to_keep=1); returns the
    distribution that `torch.multinomial(softmax(scores))` draws from. torch.sort is taken
    stable (its CPU behaviour; the tie order is otherwise unspecified). `tol` is our one
    deliberate deviation: a nucleus mass within tol of top_p counts as reaching it."""
    scores = np.array(logits, dtype=np.float64)
    if penalty != 1.0:  # RepetitionPenaltyLogitsProcessor: gather, _apply_penalty, scatter
        score = scores[input_ids]
        score = np.where(score < 0, score * penalty, score / penalty)
        scores[input_ids] = score
    if temperature != 1.0:  # TemperatureLogitsWarper
        scores = scores / temperature
    if top_k != 0:  # TopKLogitsWarper: top_k = max(top_k, min_tokens_to_keep)
        k = min(max(top_k, 1), scores.size)
        scores = np.where(scores < np.sort(scores)[::-1][k - 1], -np.inf, scores)
    if top_p < 1.0:  # TopPLogitsWarper
        sorted_indices = np.argsort(scores, kind="stable")  # ascending
        cumulative_probs = np.cumsum(_softmax(scores[sorted_indices]))
        sorted_indices_to_remove = cumulative_probs <= (1 - top_p) + tol
        sorted_indices_to_remove[-1:] = False  # keep at least min_tokens_to_keep
        scores = scores.copy()
        scores[sorted_indices[sorted_indices_to_remove]] = -np.inf
    # MinPLogitsWarper (HF adds it whenever min_p is set; 0 removes nothing)
    probs = _softmax(scores)
    tokens_to_remove = probs < min_p * probs.max()
    tokens_to_remove[np.argmax(probs)] = False  # topk(probs, min_tokens_to_keep)
    scores = np.where(tokens_to_remove, -np.inf, scores)
    return _softmax(scores)


def vllm_top_k_top_p(logits, k, p, tol=0.0):
    """vLLM's apply_top_k_top_p_pytorch for one row (k=None or p=None: off); returns the
    filtered logits (-inf where masked). `tol` as in hf_warpers."""
    logits_sort_idx = np.argsort(logits, kind="stable")  # logits.sort(descending=False)
    logits_sort = np.asarray(logits, dtype=np.float64)[logits_sort_idx]
    if k is not None:
        top_k_value = logits_sort[logits_sort.size - k]  # gather(size - k)
        logits_sort = np.where(logits_sort < top_k_value, -np.inf, logits_sort)
    if p is not None:
        probs_sum = np.cumsum(_softmax(logits_sort))
        top_p_mask = probs_sum <= 1 - p + tol
        top_p_mask[-1] = False  # at least one
        logits_sort = np.where(top_p_mask, -np.inf, logits_sort)
    out = np.empty_like(logits_sort)
    out[logits_sort_idx] = logits_sort  # scatter back
    return out


# ---- HF's own test vectors (tests/generation/test_logits_process.py) -------------------

def test_hf_repetition_penalty_dist_process():
    # test_repetition_penalty_dist_process: uniform 1/10 scores, two specials, penalty 2
    vocab = 10
    rows = [np.full(vocab, 1 / vocab), np.full(vocab, 1 / vocab)]
    rows[0][0], rows[1][5] = -(1 / vocab), 4 / vocab
    out0, out1 = penalised(rows[0], np.array([0, 1]), 2.0), penalised(rows[1], np.array([5, 0]), 2.0)
    assert out0[0] == pytest.approx(-(1 / vocab) * 2) and out0[1] == pytest.approx((1 / vocab) / 2)
    assert out1[0] == pytest.approx((1 / vocab) / 2) and out1[5] == pytest.approx((4 / vocab) / 2)
    assert np.array_equal(out0[2:], rows[0][2:])  # unseen tokens untouched
    assert rows[0][0] == -(1 / vocab)  # not in place


def test_hf_temperature_dist_warper():
    # test_temperature_dist_warper: uniform stays uniform; T<1 sharpens, T>1 smooths
    length = 20
    scores = np.full(length, 1 / length)
    peaked = scores.copy()
    peaked[5], peaked[10] = 1 / length + 0.1, 1 / length - 0.4
    base = _softmax(peaked)
    for t in (0.5, 1.3):
        np.testing.assert_allclose(chain(scores, temperature=t)[0], _softmax(scores), atol=1e-12)
    sharp, smooth = chain(peaked, temperature=0.5)[0], chain(peaked, temperature=1.3)[0]
    assert base.max() < sharp.max() and base.min() > sharp.min()
    assert base.max() > smooth.max() and base.min() < smooth.min()


def test_hf_top_k_dist_warper():
    # test_top_k_dist_warper: ramps, k=3
    ramp = np.arange(10.0)
    ramp2 = ramp.copy()
    ramp2[:5] += 10
    assert chain(ramp, top_k=3)[1].tolist() == 7 * [False] + 3 * [True]
    assert chain(ramp2, top_k=3)[1].tolist() == 2 * [False] + 3 * [True] + 5 * [False]
    # its special case: a uniform row is not changed (HF with min_tokens_to_keep=3; here by the
    # tie rule: every token ties with the k-th)
    assert chain(np.full(5, 0.2), top_k=1)[1].all()
    # ramp of 5 with k = 3: two tokens nullified
    assert (~chain(np.arange(5.0), top_k=3)[1]).sum() == 2


def test_hf_top_p_dist_warper():
    # test_top_p_dist_warper: log-probabilities, top_p = 0.8
    for dist, expected in (([0.3, 0.1, 0.1, 0.5], [0.3, 0.0, 0.0, 0.5]),
                           ([0.15, 0.3, 0.3, 0.25], [0.0, 0.3, 0.3, 0.25])):
        p, keep = chain(np.log(dist), top_p=0.8)
        np.testing.assert_allclose(np.where(keep, p, 0.0), expected, atol=1e-12)
    # extreme ramps, top_p = 0.9: 3 tokens; x100 would keep 1 (HF's min_tokens_to_keep=2 makes it 2;
    # ours is 1, HF's default)
    ramp = np.arange(10.0) - 5
    assert chain(ramp, top_p=0.9)[1].sum() == 3
    assert chain(ramp * 100.0, top_p=0.9)[1].sum() == 1


def test_hf_min_p_dist_warper():
    # test_min_p_dist_warper: min_p = 0.05
    cases = (([0.9, 0.0274, 0.047, 0.0274], [0.9, 0.0, 0.047, 0.0]),
             ([0.15, 0.3, 0.3, 0.25], [0.15, 0.3, 0.3, 0.25]),
             ([0.97, 0.01, 0.01, 0.01], [0.97, 0.0, 0.0, 0.0]))
    for dist, expected in cases:  # HF compares exp(scores); its first row sums to 1.0018
        p, keep = chain(np.log(dist), min_p=0.05)
        np.testing.assert_allclose(np.where(keep, p, 0.0), np.divide(expected, sum(dist)), atol=1e-12)
    # extreme ramps, min_p = 0.9: one token each (HF's test keeps 2 through min_tokens_to_keep=2)
    ramp = np.arange(10.0) - 5
    assert chain(ramp, min_p=0.9)[1].sum() == 1 and chain(ramp * 100, min_p=0.9)[1].sum() == 1


# moved from test_minigpt_widgets.py
def test_truncation_methods():
    logits = np.log(np.array([0.5, 0.2, 0.15, 0.1, 0.05]))
    seen = np.array([], dtype=int)
    p, keep = shape(logits, seen, 1.0, 2, 1.0, 0.0, 1.0)
    assert keep.tolist() == [True, True, False, False, False]
    p, keep = shape(logits, seen, 1.0, 0, 0.8, 0.0, 1.0)  # 0.5 + 0.2 < 0.8 <= 0.85
    assert keep.sum() == 3
    p, keep = shape(logits, seen, 1.0, 0, 1.0, 0.25, 1.0)  # keep p >= 0.125
    assert keep.tolist() == [True, True, True, False, False]
    p, keep = shape(logits, seen, 0.0, 0, 1.0, 0.0, 1.0)  # greedy
    assert p.tolist() == [1.0, 0, 0, 0, 0]
    p, _ = shape(logits, np.array([0]), 1.0, 0, 1.0, 0.0, 2.0)  # penalise the most likely
    assert p[0] < 0.5


# ---- the chain's order ------------------------------------------------------------------

def test_top_p_applies_to_the_renormalised_top_k_survivors():
    # the example: top-k 2 leaves [.4, .3] -> [.571, .429]; 0.571 alone reaches 0.5
    logits = np.log([0.4, 0.3, 0.2, 0.1])
    assert chain(logits, top_k=2, top_p=0.5)[1].tolist() == [True, False, False, False]
    assert chain(logits, top_p=0.5)[1].tolist() == [True, True, False, False]  # alone: two


def test_min_p_comes_after_top_p_and_uses_the_survivors_max():
    # HF order: top-p 0.75 keeps [.4, .3, .2] (0.7 < 0.75); min-p 0.3 against 0.4 keeps them all.
    # vLLM v1 runs min-p first (drops 0.1), and top-p then stops at two: [.444, .333] = .78.
    logits = np.log([0.4, 0.3, 0.2, 0.1])
    assert chain(logits, top_p=0.75, min_p=0.3)[1].tolist() == [True, True, True, False]
    # min-p against the survivors' max: after top-k 2, 0.3 / 0.4 = 0.75 passes min_p 0.7, and 0.2 is gone
    assert chain(logits, top_k=2, min_p=0.7)[1].tolist() == [True, True, False, False]
    # min-p sees the tempered distribution: at T=0.5, 0.2 becomes 0.04/0.16 = 0.25 of the max
    assert chain(logits, temperature=0.5, min_p=0.3)[1].tolist() == [True, True, False, False]
    assert chain(logits, min_p=0.3)[1].tolist() == [True, True, True, False]


def test_penalty_comes_before_temperature_on_raw_logits():
    # penalty 2 on a seen token with logit 2 and one with logit -1; the tempered result is
    # softmax(penalised / T), which only holds if the penalty acts on the raw logits
    logits = np.array([2.0, 1.5, -1.0, -0.5])
    seen = np.array([0, 2])
    p, _ = chain(logits, temperature=0.5, penalty=2.0, seen=seen)
    np.testing.assert_allclose(p, _softmax(np.array([1.0, 1.5, -2.0, -0.5]) / 0.5), atol=1e-12)


# ---- edges ----------------------------------------------------------------------------------

def test_top_p_boundary_is_reached_within_the_tolerance():
    # 0.5 + 0.3 reaches 0.8 although the float sum is 0.7999999999999999
    p, keep = chain(np.log([0.3, 0.1, 0.1, 0.5]), top_p=0.8)
    assert np.cumsum(np.sort(p)[::-1])[1] < 0.8  # the float trap is really there
    assert keep.tolist() == [True, False, False, True]
    # exact sums on the boundary: 0.25 + 0.25 reaches 0.5
    assert chain(np.zeros(4), top_p=0.5)[1].sum() == 2
    # a real shortfall, far above the tolerance, still needs one more token
    short = np.log([0.3 - 1e-6, 0.1, 0.1 + 1e-6, 0.5])
    assert chain(short, top_p=0.8)[1].sum() == 3
    assert TOP_P_TOL <= 1e-9


@pytest.mark.parametrize("temperature", [1e-310, 3e-308, 1e-6])
def test_tiny_temperatures_tend_to_greedy(temperature):
    logits = np.array([0.3, 2.0, 1.9999, -5.0, 2.0 - 1e-3])
    with np.errstate(invalid="raise"):  # no inf - inf, no 0 / 0: never a NaN
        p, keep = chain(logits, temperature=temperature, top_k=3, top_p=0.9, min_p=0.1)
    assert np.isfinite(p).all()
    greedy, gkeep = chain(logits, temperature=0.0)
    np.testing.assert_array_equal(restricted(p, keep), greedy)
    assert keep.tolist() == gkeep.tolist() == [False, True, False, False, False]
    tied = chain([1.0, 3.0, 3.0, 0.0], temperature=temperature)  # exact ties: uniform over them
    np.testing.assert_array_equal(tied[0], [0.0, 0.5, 0.5, 0.0])


def test_greedy_at_temperature_zero():
    logits = np.array([0.1, 2.0, 0.5, 2.0])
    p, keep = chain(logits, temperature=0.0, top_k=3, top_p=0.5, min_p=0.2)
    assert p.tolist() == [0.0, 1.0, 0.0, 0.0] and keep.tolist() == [False, True, False, False]  # first max
    p, _ = chain(logits, temperature=0.0, penalty=2.0, seen=[1])  # the penalty still acts
    assert p.tolist() == [0.0, 0.0, 0.0, 1.0]


def test_ties_at_the_kth_logit_are_kept():
    logits = np.array([3.0, 2.0, 2.0, 2.0, 1.0])
    assert chain(logits, top_k=2)[1].tolist() == [True, True, True, True, False]
    assert chain(logits, top_k=1)[1].tolist() == [True, False, False, False, False]
    assert chain(logits, top_k=100)[1].all()  # k beyond the vocabulary: everything


def test_at_least_one_token_is_always_kept():
    rng = np.random.default_rng(0)
    for _ in range(200):
        logits = rng.normal(size=12) * rng.uniform(0.1, 50)
        for kwargs in ({"top_p": 0.0}, {"top_p": 1e-12}, {"min_p": 1.0}, {"top_k": 1, "top_p": 0.0, "min_p": 1.0},
                       {"temperature": 1e-300, "top_p": 0.0}):
            p, keep = chain(logits, **kwargs)
            assert keep.sum() == 1 and keep[np.argmax(logits)], kwargs
    assert chain([1.0, 1.0, 0.0], min_p=1.0)[1].tolist() == [True, True, False]  # tied maxima both pass


def test_negative_controls_keep_everything():
    rng = np.random.default_rng(1)
    for _ in range(100):
        logits = rng.normal(size=30) * 3
        seen = rng.integers(0, 30, 10)
        t = rng.uniform(0.2, 2.0)
        p, keep = chain(logits, temperature=t, top_k=0, top_p=1.0, min_p=0.0, penalty=1.0, seen=seen)
        assert keep.all()
        np.testing.assert_allclose(p, _softmax(logits / t), rtol=1e-12)
        np.testing.assert_allclose(restricted(p, keep), p, rtol=1e-12)


# ---- property test against the ports ----------------------------------------------------

def random_case(rng):
    v = int(rng.integers(2, 40))
    kind = rng.integers(3)
    if kind == 0:  # continuous
        logits = rng.normal(size=v) * rng.uniform(0.1, 6)
    elif kind == 1:  # on a coarse grid: many ties
        logits = rng.integers(-4, 5, size=v) * rng.choice([0.5, 1.0])
    else:  # a few distinct values repeated
        logits = rng.choice(rng.normal(size=3) * 2, size=v)
    seen = rng.integers(0, v, size=int(rng.integers(0, v + 1)))
    return dict(
        logits=logits, seen=seen,
        temperature=float(rng.choice([1.0, rng.uniform(0.05, 2.0)])),
        top_k=int(rng.choice([0, rng.integers(1, v + 3)])),
        top_p=float(rng.choice([1.0, rng.uniform(0.05, 1.0), rng.choice([0.25, 0.5, 0.75, 0.9])])),
        min_p=float(rng.choice([0.0, rng.uniform(0.0, 0.5)])),
        penalty=float(rng.choice([1.0, rng.uniform(1.0, 2.0), 2.0])),
    )


def test_chain_equals_hf_port_on_3000_random_vectors_with_ties():
    rng = np.random.default_rng(2024)
    mismatches, tied_cut, on_boundary = [], 0, 0
    for i in range(3000):
        c = random_case(rng)
        args = (c["temperature"], c["top_k"], c["top_p"], c["min_p"], c["penalty"])
        p, keep = chain(c["logits"], *args, c["seen"])
        ours = restricted(p, keep)
        ref = hf_warpers(c["logits"], c["seen"], *args, tol=TOP_P_TOL)
        if not (np.array_equal(keep, ref > 0) and np.allclose(ours, ref, rtol=1e-9, atol=1e-12)):
            mismatches.append(i)
        on_boundary += not np.array_equal(ref > 0, hf_warpers(c["logits"], c["seen"], *args) > 0)
        z = penalised(c["logits"], c["seen"], c["penalty"])
        tied_cut += bool(c["top_k"] and keep.sum() > c["top_k"]) or np.isin(z[~keep], z[keep]).any()
    assert mismatches == []
    assert tied_cut > 300  # the sweep really cuts through ties
    assert on_boundary < 30  # the tolerance decides only exact-boundary cases (sums of equal probabilities)


def test_top_k_top_p_equals_vllm_port():
    rng = np.random.default_rng(7)
    for _ in range(3000):
        c = random_case(rng)
        v = len(c["logits"])
        k = min(c["top_k"], v) or None
        top_p = c["top_p"] if c["top_p"] < 1.0 else None
        ref = vllm_top_k_top_p(c["logits"] / c["temperature"], k, top_p, tol=TOP_P_TOL)
        _, keep = chain(c["logits"], c["temperature"], k or 0, top_p or 1.0)
        assert np.array_equal(keep, np.isfinite(ref)), c


# ---- the model's window -------------------------------------------------------------------

def tv(a, b) -> float:
    return 0.5 * float(np.abs(a - b).sum())


@pytest.mark.parametrize("position, settings", [
    (5, dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, penalty=1.0)),
    (20, dict(temperature=0.8, top_k=10, top_p=0.9, min_p=0.05, penalty=1.2)),
    (300, dict(temperature=1.3, top_k=0, top_p=0.95, min_p=0.0, penalty=1.3)),  # penalty: the whole prompt
])
def test_every_step_samples_from_a_fresh_forward_over_the_window(position, settings):
    cfg, params, _ = session.load("mini")
    prompt = context_at(position)
    seq, worst = list(prompt), 0.0
    steps = list(generate(params, cfg, prompt, 60, settings, np.random.default_rng(3)))
    assert len(steps) == 60
    for step in steps:
        assert np.array_equal(step.window, seq[-cfg.context:])  # the last context tokens, never more
        fresh = gpt.forward(params, cfg, np.asarray(step.window)[None])[0, -1]  # [V] a fresh window
        p, keep = shape(fresh, np.array(seq), **settings)
        worst = max(worst, tv(step.dist, restricted(p, keep)))
        seq.append(step.token)
    assert len(seq) > cfg.context + 10  # the run went well past the window
    assert worst < 1e-5, worst


def test_the_widget_sample_is_the_generator_output():
    settings = dict(temperature=0.9, top_k=20, top_p=0.9, min_p=0.02, penalty=1.1)
    v = run("sampling", {**settings, "position": 50, "seed": 4}).values
    cfg, params, _ = session.load("mini")
    tokens = [s.token for s in generate(params, cfg, context_at(50), SAMPLE_CHARS, settings,
                                        np.random.default_rng(4))]
    assert v["sample"] == corpus.decode(tokens)


# ---- the widget ------------------------------------------------------------------------------

def test_sampling_widget_outputs():
    v = run("sampling").values
    assert v["kept"] == len(corpus.vocab()) and v["mass_kept"] == pytest.approx(1.0)
    t = run("sampling", {"top_p": 0.5}).values
    assert t["kept"] < v["kept"] and 0.5 <= t["mass_kept"] < 1 and t["perplexity"] <= v["perplexity"]
    g = run("sampling", {"temperature": 0}).values
    assert g["kept"] == 1 and g["perplexity"] == pytest.approx(1.0)


@pytest.mark.parametrize("temperature", [1e-310, 3e-308, 1e-6])
def test_widget_at_tiny_temperature_is_greedy(temperature):
    g = run("sampling", {"temperature": 0}).values
    t = run("sampling", {"temperature": temperature}).values
    assert t["kept"] == 1 and t["top_prob"] == 1.0 and t["sample"] == g["sample"]


def test_figure_reuses_the_computed_forward(monkeypatch):
    from widgets_py.engine.registry import get

    widget = get("sampling")
    params = {"temperature": 0.7, "top_k": 5, "top_p": 0.9, "min_p": 0.0, "penalty": 1.0, "position": 77, "seed": 1}
    values = run("sampling", params).values
    calls = []
    monkeypatch.setattr(gpt, "extend", lambda *a, **k: calls.append(1))
    svg, alt = widget.figure(params, values)
    assert calls == [] and svg.startswith("<svg") and f"en queden {values['kept']} candidates" in alt


# ---- what the panel reports, recomputed independently (added after the mutation run) ---------

def test_entropy_and_perplexities_of_the_panel():
    from widgets_py.cap15.sampling import entropy

    assert entropy(np.full(8, 1 / 8)) == pytest.approx(np.log(8))  # uniform over 8: ln 8 nats
    assert entropy(np.array([1.0, 0.0, 0.0])) == 0.0  # zeros contribute nothing, not NaN
    settings = dict(temperature=0.7, top_k=5, top_p=1.0, min_p=0.0, penalty=1.0)
    v = run("sampling", {**settings, "position": 120}).values
    cfg, params, _ = session.load("mini")
    logits = gpt.forward(params, cfg, context_at(120)[-cfg.context:][None])[0, -1].astype(np.float64)
    raw = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()  # [V] T = 1, nothing cut
    tempered = np.exp((logits - logits.max()) / 0.7)
    tempered /= tempered.sum()
    top5 = np.sort(tempered)[::-1][:5] / np.sort(tempered)[::-1][:5].sum()  # the 5 kept, renormalised
    h = lambda p: float(-(p[p > 0] * np.log(p[p > 0])).sum())  # noqa: E731
    assert v["perplexity_raw"] == pytest.approx(np.exp(h(raw)), rel=1e-5)
    assert v["perplexity_untruncated"] == pytest.approx(np.exp(h(tempered)), rel=1e-5)
    assert v["entropy"] == pytest.approx(h(top5), rel=1e-5) and v["kept"] == 5
    assert v["mass_kept"] == pytest.approx(np.sort(tempered)[::-1][:5].sum(), rel=1e-6)


def test_the_generator_draws_from_its_distribution():
    """The first token of 4,000 seeded runs against the step's own distribution: each of the
    top candidates within 4.5 standard errors of its probability (a uniform draw, or a draw
    from the untruncated distribution, lands tens of errors away)."""
    cfg, params, _ = session.load("mini")
    settings = dict(temperature=1.0, top_k=4, top_p=1.0, min_p=0.0, penalty=1.0)
    prompt = context_at(200)
    dist = next(generate(params, cfg, prompt, 1, settings, np.random.default_rng(0))).dist
    n = 4000
    counts = np.bincount([next(generate(params, cfg, prompt, 1, settings, np.random.default_rng(s))).token
                          for s in range(n)], minlength=len(dist))
    assert set(np.flatnonzero(counts)) <= set(np.flatnonzero(dist))  # never a cut token
    se = np.sqrt(dist * (1 - dist) / n)
    kept = dist > 0
    assert np.all(np.abs(counts[kept] / n - dist[kept]) < 4.5 * se[kept] + 1e-12), (counts[kept] / n, dist[kept])


def test_the_draw_is_numpys_choice_token_for_token():
    """draw(p, rng.random()) against numpy's Generator.choice(len(p), p=p), the reference: 3,000 random
    distributions (zeros, near-ties, 1 to 99 tokens), five draws each from identically seeded
    generators, then one more uniform: the same tokens, and the streams still in step."""
    src = np.random.default_rng(123)
    for _ in range(3000):
        n = int(src.integers(1, 100))
        p = src.random(n) ** int(src.integers(1, 8))
        p[src.random(n) < 0.3] = 0
        p[0] += p.sum() == 0
        p /= p.sum()
        seed = int(src.integers(0, 2**32))
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        assert [draw(p, ours.random()) for _ in range(5)] == [int(numpys.choice(n, p=p)) for _ in range(5)]
        assert ours.random() == numpys.random()
