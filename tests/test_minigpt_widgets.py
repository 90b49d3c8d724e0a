"""The widgets built on the trained mini-GPT: quantization, speculative decoding, sampling."""

import math

import numpy as np
import pytest

from widgets_py import corpus, gpt, pretrained, run, train
from widgets_py.clock import LENGTHS, counts
from widgets_py.quantize import bf16, e4m3, quantize
from widgets_py.sampling import shape
from widgets_py.speculative import prompt_tokens, speculate, target_alone


def test_corpus_split_and_bigram_bound():
    train_text, heldout = corpus.split()
    assert len(corpus.text().encode()) >= 200_000
    assert 0.05 < len(heldout) / (len(train_text) + len(heldout)) < 0.15
    assert 2.0 < corpus.bigram_bound() < 2.6


def test_pretrained_models_beat_the_bigram_bound():
    for name in ("mini", "target"):
        cfg, p, history = pretrained.load(name)
        assert train.evaluate(p, cfg, corpus.data()[1]) < corpus.bigram_bound(), name
    assert gpt.n_params(pretrained.load("mini")[1]) == pytest.approx(28_800, rel=0.05)


def test_training_is_deterministic_and_cancellable():
    cfg = gpt.GPTConfig(vocab=len(corpus.vocab()), d=8, layers=1, heads=2, context=16)
    tc = train.TrainConfig(steps=5, batch=4)
    a, ha = train.train(cfg, tc, corpus.data()[0])
    b, hb = train.train(cfg, tc, corpus.data()[0])
    assert ha == hb and all(np.array_equal(a[k], b[k]) for k in a)
    seen = []
    _, h = train.train(cfg, tc, corpus.data()[0], progress=lambda s, l: seen.append(s), should_stop=lambda: len(seen) >= 2)
    assert len(h) == 2 and seen == [0, 1]


def test_counter_ratio_is_exactly_L():
    cfg, p, _ = pretrained.load("mini")
    for L in LENGTHS:
        c = counts(cfg, gpt.n_params(p), L)
        assert c["bytes_decode"] / c["bytes_prefill"] == pytest.approx(L)
        assert c["flops_decode"] >= c["flops_prefill"]


def test_quantization_formats():
    x = np.array([1.0, 1.00390625, -3.14159, 1e-3], np.float32)
    assert bf16(x)[0] == 1.0 and bf16(x)[1] in (1.0, 1.0078125)
    grid = e4m3(np.linspace(-448, 448, 1001))
    assert np.abs(grid).max() == 448 and len(np.unique(grid)) <= 255
    w = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    for name, tol in (("int8", 0.01), ("int4", 0.2), ("nf4", 0.2), ("fp8", 0.05)):
        assert np.abs(quantize(w, name, 16) - w).max() < tol * np.abs(w).max() * 2, name


def test_degradation_is_ordered_and_groups_beat_tensors_under_outliers():
    v = run("quantize", {"granularity": "group"}).values
    assert abs(v["degradation_bf16"]) < 1e-3
    assert v["degradation_int4"] >= v["degradation_int8"] >= v["degradation_bf16"] - 1e-3
    t = run("quantize", {"granularity": "tensor"}).values
    assert t["loss_original"] == pytest.approx(v["loss_original"])  # outliers do not change the float model
    assert t["degradation_int4"] > 2 * v["degradation_int4"]
    assert t["degradation_int8"] > v["degradation_int8"]
    none = run("quantize", {"granularity": "tensor", "outliers": 1}).values
    assert none["outlier_ratio"] < 2 < v["outlier_ratio"]


@pytest.mark.parametrize("seed", [0, 11, 23, 57])
def test_exact_coupling_reproduces_the_target_alone(seed):
    prompt = list(prompt_tokens())
    for draft, k in (("draft-1", 4), ("draft-16", 2), ("draft-4", 7)):
        out = speculate(prompt, 24, k, "exact", draft, 1.0, seed)
        assert out["tokens"] == target_alone(prompt, 24, 1.0, seed)
        assert out["passes"] < 24 or draft == "draft-16"


def test_rejection_sampling_keeps_the_target_distribution():
    """Chi-square test, fixed seed, significance 0.001, on the first emitted token."""
    prompt = list(prompt_tokens())
    tcfg, tp, _ = pretrained.load("target")
    logits, _ = gpt.extend(tp, tcfg, prompt)
    p = np.exp(logits[-1] - logits[-1].max())
    p /= p.sum()
    n = 3000
    counts_ = np.zeros_like(p)
    for s in range(n):
        counts_[speculate(prompt, 1, 1, "rejection", "draft-16", 1.0, s)["tokens"][0]] += 1
    keep = n * p >= 5  # cells large enough for the chi-square approximation; pool the rest
    observed = np.append(counts_[keep], counts_[~keep].sum())
    expected = np.append(n * p[keep], n * p[~keep].sum())
    stat = float(((observed - expected) ** 2 / expected).sum())
    df = len(observed) - 1
    z = 3.090  # one-sided 0.001 quantile of N(0, 1); Wilson-Hilferty approximation of chi2
    critical = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
    assert stat < critical, (stat, critical, df)


def test_rejection_accepts_more_than_exact_on_average():
    acc = {c: np.mean([run("speculative", {"coupling": c, "seed": s, "tokens": 64}).values["acceptance"]
                       for s in range(6)]) for c in ("exact", "rejection")}
    assert acc["rejection"] > acc["exact"]


def test_a_worse_draft_is_accepted_less():
    good = run("speculative", {"draft_every": "1", "tokens": 64}).values["acceptance"]
    bad = run("speculative", {"draft_every": "16", "tokens": 64}).values["acceptance"]
    assert good > bad


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


def test_sampling_widget_outputs():
    v = run("sampling").values
    assert v["kept"] == len(corpus.vocab()) and v["mass_kept"] == pytest.approx(1.0)
    t = run("sampling", {"top_p": 0.5}).values
    assert t["kept"] < v["kept"] and 0.5 <= t["mass_kept"] < 1 and t["perplexity"] <= v["perplexity"]
    g = run("sampling", {"temperature": 0}).values
    assert g["kept"] == 1 and g["perplexity"] == pytest.approx(1.0)
