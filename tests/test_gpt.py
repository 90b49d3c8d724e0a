"""Mini-GPT: every layer's backward against finite differences; KV-cache inference."""

import numpy as np
import pytest

from widgets_py.models import gpt

RTOL = 1e-5  # relative error allowed between analytic and numeric gradients (float64)


def numeric_grad(f, x, eps=1e-6):
    """Central differences of scalar f() with respect to every entry of x (in place)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


def rel_err(a, b):
    return np.abs(a - b).max() / max(np.abs(a).max(), np.abs(b).max(), 1e-12)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def check(forward, backward, inputs, rng):
    """Forward asserted separately (shape, finiteness); then each input's gradient."""
    out, cache = forward(*inputs)
    assert np.all(np.isfinite(out))
    dout = rng.standard_normal(out.shape)
    grads = backward(dout, cache)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for x, g in zip(inputs, grads):
        num = numeric_grad(lambda: float((forward(*inputs)[0] * dout).sum()), x)
        assert rel_err(g, num) < RTOL


def test_layernorm(rng):
    x, w, b = rng.standard_normal((2, 3, 8)), rng.standard_normal(8), rng.standard_normal(8)
    out, _ = gpt.layernorm(x, w, b)
    assert np.allclose(((out - b) / w).mean(-1), 0, atol=1e-7)
    check(gpt.layernorm, gpt.layernorm_backward, (x, w, b), rng)


def test_linear(rng):
    check(gpt.linear, gpt.linear_backward, (rng.standard_normal((2, 3, 5)), rng.standard_normal((5, 4)),
                                            rng.standard_normal(4)), rng)


def test_relu(rng):
    x = rng.standard_normal((3, 7))
    x[np.abs(x) < 1e-3] = 0.5  # keep away from the kink, where the derivative is undefined
    check(gpt.relu, gpt.relu_backward, (x,), rng)


def test_attention(rng):
    q, k, v = (rng.standard_normal((1, 2, 5, 4)) for _ in range(3))
    out, (_, _, _, att) = gpt.attention(q, k, v)
    assert np.allclose(np.triu(att[0, 0], 1), 0)  # causal: no weight on future keys
    check(gpt.attention, gpt.attention_backward, (q, k, v), rng)


def test_whole_model_gradients(rng):
    cfg = gpt.GPTConfig(vocab=11, d=8, layers=2, heads=2, context=6)
    p = {k: v.astype(np.float64) + 0.1 * rng.standard_normal(v.shape) for k, v in gpt.init(cfg, 1).items()}
    idx = rng.integers(0, 11, (2, 6))
    targets = rng.integers(0, 11, (2, 6))
    _, loss, cache = gpt.forward(p, cfg, idx, targets)
    assert np.isfinite(loss)
    grads = gpt.backward(p, cfg, cache)
    assert grads.keys() == p.keys()
    for name, value in p.items():
        num = numeric_grad(lambda: gpt.forward(p, cfg, idx, targets)[1], value)
        assert rel_err(grads[name], num) < RTOL, name


def test_prefill_plus_decode_equals_full_forward(rng):
    cfg = gpt.GPTConfig(vocab=20, d=16, layers=2, heads=4)
    p = gpt.init(cfg, 3)
    tokens = rng.integers(0, 20, 40)
    full = gpt.forward(p, cfg, tokens[None])[0]  # [T, V]
    logits, kv = gpt.extend(p, cfg, tokens[:25])  # prefill
    steps = [logits]
    for t in tokens[25:]:  # decode one token at a time
        logits, kv = gpt.extend(p, cfg, [t], kv)
        steps.append(logits)
    assert np.allclose(np.concatenate(steps), full, atol=1e-5)
    chunk, _ = gpt.extend(p, cfg, tokens[30:], gpt.extend(p, cfg, tokens[:30])[1])  # verify k at once
    assert np.allclose(chunk, full[30:], atol=1e-5)
