"""The optimiser against the algorithm as PyTorch documents torch.optim.AdamW, written out
per tensor in float64: the flat, whole-model update must be the same update."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from widgets_py.engine import registry
from widgets_py.maths import corpus, gpt, pretrained, train


def reference_adamw(p, grads, state, lr, wd, b1=0.9, b2=0.99, eps=1e-8):
    """torch.optim.AdamW (amsgrad off), one tensor at a time; decay on matrices only, as ours."""
    state["t"] = t = state.get("t", 0) + 1
    for k, g in grads.items():
        g = g.astype(np.float64)
        m = state[("m", k)] = b1 * state.get(("m", k), 0.0) + (1 - b1) * g
        v = state[("v", k)] = b2 * state.get(("v", k), 0.0) + (1 - b2) * g * g
        if p[k].ndim == 2:
            p[k] = p[k] * (1 - lr * wd)
        p[k] = p[k] - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)


def test_flat_params_are_views_of_one_buffer():
    cfg, _ = pretrained.specs()["mini"]
    p = gpt.init(cfg, 0)
    buf, views = train.flat(p)
    assert buf.dtype == np.float32 and buf.size == gpt.n_params(p)
    assert list(views) == list(p) and all(np.array_equal(views[k], p[k]) for k in p)
    assert all(views[k].shape == p[k].shape and np.shares_memory(views[k], buf) for k in p)
    buf[:] = 0
    assert all(not views[k].any() for k in p)


@pytest.mark.parametrize("lr", [1.5e-2, 1e-3])
def test_adamw_is_torchs_algorithm(lr):
    cfg, tc = pretrained.specs()["mini"]
    rng = np.random.default_rng(1)
    p = gpt.init(cfg, 0)
    ref = {k: v.astype(np.float64) for k, v in p.items()}
    buf, views = train.flat(p)
    opt, state = train.AdamW(views, tc), {}
    for _ in range(6):  # the bias corrections change over the first steps
        grads = {k: rng.standard_normal(v.shape).astype(np.float32) * 0.1 for k, v in p.items()}
        opt.step(buf, grads, lr)
        reference_adamw(ref, grads, state, lr, tc.weight_decay)
    for k in p:
        np.testing.assert_allclose(views[k], ref[k], rtol=1e-5, atol=1e-7, err_msg=k)


def test_no_decay_on_vectors():
    """Layer-norm gains and biases keep their value under a zero gradient; matrices shrink."""
    cfg, tc = pretrained.specs()["mini"]
    p = gpt.init(cfg, 0)
    before = {k: v.copy() for k, v in p.items()}
    buf, views = train.flat(p)
    train.AdamW(views, tc).step(buf, {k: np.zeros_like(v) for k, v in p.items()}, 0.1)
    for k in p:
        if p[k].ndim == 1:
            assert np.array_equal(views[k], before[k]), k
        else:
            np.testing.assert_allclose(views[k], before[k] * (1 - 0.1 * tc.weight_decay), rtol=1e-6, err_msg=k)


def test_training_steps_lower_the_loss_and_share_one_buffer():
    cfg, tc = pretrained.specs()["mini"]
    losses, p = [], None
    for _, loss, p in train.steps(cfg, replace(tc, steps=30), corpus.data()[0]):
        losses.append(loss)
    assert np.mean(losses[-5:]) < losses[0] - 0.5
    bases = {id(v.base) for v in p.values()}
    assert len(bases) == 1  # one buffer, updated in place


def test_a_short_training_is_sensitive_to_the_last_bit_and_ends_near_the_bigram_baseline():
    """What chapter 15 tells a reader who retrains in the browser: a run of the widget's default
    length ends near the bigram baseline, and one ulp on one initial weight changes its held-out
    loss visibly (at the third decimal the widget shows), so another machine's float sums give
    another result."""
    cfg, tc = pretrained.specs()["mini"]
    tc = replace(tc, steps=next(q.default for q in registry.get("training").params if q.name == "steps"))

    def heldout(nudge: bool) -> float:
        init = gpt.init(cfg, tc.seed)
        if nudge:
            init["wte"].flat[0] = np.nextafter(init["wte"].flat[0], np.float32(1))
        for *_, p in train.steps(cfg, tc, corpus.data()[0], init):
            pass
        return train.evaluate(p, cfg, corpus.data()[1])

    losses = heldout(False), heldout(True)
    assert abs(losses[0] - losses[1]) > 1e-3
    assert all(abs(loss - corpus.bigram_baseline(train.EVAL_TOKENS)) < 0.2 for loss in losses), losses
