"""The widgets built on the trained mini-GPT: the corpus and training (sampling: test_sampling.py; speculative decoding: test_speculative.py)."""

import math
from collections import Counter

import numpy as np
import pytest

from widgets_py import run

from widgets_py.engine import browser, session
from widgets_py.maths import corpus, gpt, pretrained, train
from widgets_py.cap15.clock import LENGTHS, counts


def test_corpus_split_and_bigram_baseline():
    train_text, heldout = corpus.split()
    assert len(corpus.text().encode()) >= 200_000
    assert 0.05 < len(heldout) / (len(train_text) + len(heldout)) < 0.15
    assert 2.0 < corpus.bigram_baseline(train.EVAL_TOKENS) < 2.6


def add_alpha_loss(fit: str, test: str, vocab_size: int, alpha: float) -> float:
    """Nats per character on `test`'s pairs of the add-alpha bigram counted on `fit`: plain Python, float64."""
    pairs, rows = Counter(zip(fit, fit[1:])), Counter(fit[:-1])
    nats = math.fsum(-math.log((pairs[a, b] + alpha) / (rows[a] + alpha * vocab_size)) for a, b in zip(test, test[1:]))
    return nats / (len(test) - 1)


def test_the_bigram_baseline_scores_the_span_the_model_is_scored_on():
    """The baseline is the bigram's cross-entropy on the very pairs train.evaluate scores (issue
    40, I15), counted here in plain Python from the training text's pairs, with the smoothing of
    the grid that does best on the training text's last tenth fitted on the rest: chosen on the
    training text alone."""
    ho = corpus.data()[1]
    n = train.EVAL_TOKENS
    inputs, targets = train.windows(session.load("mini")[0], ho, n)
    assert inputs.size == n and np.array_equal(inputs.ravel(), ho[:n]) and np.array_equal(targets.ravel(), ho[1:n + 1])
    train_text, heldout = corpus.split()
    v = len(set(corpus.text()))
    cut = len(train_text) * 9 // 10
    tried = {a: add_alpha_loss(train_text[:cut], train_text[cut:], v, a) for a in corpus.ALPHAS}
    alpha = min(tried, key=tried.get)
    assert alpha == 0.03 and sorted(tried.values())[1] - tried[alpha] > 1e-4  # a clear winner, not a tie
    for tokens in (n, 4096):  # the mini-GPT's span and the quantizer's
        by_hand = add_alpha_loss(train_text, heldout[:tokens + 1], v, alpha)
        assert corpus.bigram_baseline(tokens) == pytest.approx(by_hand, rel=1e-12), tokens
    assert corpus.bigram_baseline(4096) != corpus.bigram_baseline(n)  # another span, another number


def test_pretrained_models_beat_the_bigram_baseline():
    for name in ("mini", "target"):
        cfg, p, history = session.load(name)
        assert train.evaluate(p, cfg, corpus.data()[1]) < corpus.bigram_baseline(train.EVAL_TOKENS), name
    assert gpt.n_params(session.load("mini")[1]) == pytest.approx(28_800, rel=0.05)


def test_training_is_deterministic_and_reports_each_step():
    cfg = gpt.GPTConfig(vocab=len(corpus.vocab()), d=8, layers=1, heads=2, context=16)
    tc = train.TrainConfig(steps=5, batch=4)
    a, ha = train.train(cfg, tc, corpus.data()[0])
    b, hb = train.train(cfg, tc, corpus.data()[0])
    assert ha == hb and all(np.array_equal(a[k], b[k]) for k in a)
    seen = []
    _, h = train.train(cfg, tc, corpus.data()[0], progress=lambda s, l: seen.append((s, l)))
    assert seen == list(enumerate(h)) and h == ha


def test_counter_ratio_is_exactly_L():
    cfg, p, _ = session.load("mini")
    for L in LENGTHS:
        c = counts(cfg, gpt.n_params(p), L)
        assert c["bytes_decode"] / c["bytes_prefill"] == pytest.approx(L)
        assert c["flops_decode"] >= c["flops_prefill"]


def test_the_workers_warm_steps_leave_what_first_changes_need_in_place():
    """The preparations the worker runs one per turn while the reader reads (browser.WarmUp's,
    pretrained.preparations) leave the corpus's bigram baseline fitted and every model's weights
    loaded and checked, for the widgets' first changes to find."""
    from widgets_py.engine import session

    session.forget()
    corpus.bigram.cache_clear()
    for step in browser.preparations():
        step()
    assert session.current().models.keys() == pretrained.specs().keys()  # loaded, in this session
    assert corpus.bigram.cache_info().currsize == 1
