"""Mini-GPT: every layer's backward against finite differences; KV-cache inference."""

import math

import numpy as np
import pytest

from widgets_py.engine.session import Session
from widgets_py.maths import gpt, layers
from widgets_py.accel.backend import Backend

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


MATMULS = ["blas", "einsum", "wasm"]  # einsum and the wasm kernel (in wasmtime): Pyodide's paths


@pytest.fixture(params=MATMULS)
def matmul(request, monkeypatch):
    """Every way gpt.py multiplies matrices must give the reference's numbers: a session on
    each backend (accel.backend)."""
    if request.param == "wasm":
        from wasm_host import kernel
        k = kernel()
        # kernel_macs 0: every product outside a pass too (a head's logits)
        with Session(backend=Backend(kernel=k, einsum=True, kernel_macs=0)).active():
            yield request.param
        assert k.host.calls, "the kernel was never called"
    else:
        with Session(backend=Backend(einsum=request.param != "blas")).active():
            yield request.param


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
    out, _ = layers.layernorm(x, w, b)
    assert np.allclose(((out - b) / w).mean(-1), 0, atol=1e-7)
    check(layers.layernorm, layers.layernorm_backward, (x, w, b), rng)


def test_linear(rng):
    check(layers.linear, layers.linear_backward, (rng.standard_normal((2, 3, 5)), rng.standard_normal((5, 4)),
                                            rng.standard_normal(4)), rng)


def test_relu(rng):
    x = rng.standard_normal((3, 7))
    x[np.abs(x) < 1e-3] = 0.5  # keep away from the kink, where the derivative is undefined
    check(layers.relu, layers.relu_backward, (x,), rng)


def test_gelu(rng):
    x = 2 * rng.standard_normal((3, 7))
    out, _ = layers.gelu(x)
    want = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))  # Hendrycks & Gimpel, eq. 2
    np.testing.assert_allclose(out, want, rtol=1e-12)
    check(layers.gelu, layers.gelu_backward, (x,), rng)


def test_rmsnorm(rng):
    x, w = rng.standard_normal((2, 3, 8)), rng.standard_normal(8)
    out, _ = layers.rmsnorm(x, w)
    np.testing.assert_allclose(out, w * x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5), rtol=1e-12)
    check(lambda x, w: layers.rmsnorm(x, w), lambda d, c: layers.rmsnorm_backward(d, c)[:2], (x, w), rng)


def test_attention(rng):
    q, k, v = (rng.standard_normal((1, 2, 5, 4)) for _ in range(3))
    out, (_, _, _, att) = layers.attention(q, k, v)
    assert np.allclose(np.triu(att[0, 0], 1), 0)  # causal: no weight on future keys
    check(layers.attention, layers.attention_backward, (q, k, v), rng)


VARIANTS = {"relu-layernorm": {}, "gelu": {"activation": "gelu"}, "rmsnorm": {"norm": "rmsnorm"},
            "gelu-rmsnorm": {"activation": "gelu", "norm": "rmsnorm"}}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("matmul", ["blas", "einsum"], indirect=True)  # float64: the kernel is float32
def test_whole_model_gradients(rng, matmul, variant):
    cfg = gpt.GPTConfig(vocab=11, d=8, layers=2, heads=2, context=6, **VARIANTS[variant])
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


def test_float32_gradients_are_float64s_within_rounding(rng, matmul):
    """The float32 backward (the browser's: einsum, or the kernel's products summed over rows
    without a transpose) against the float64 BLAS one the finite differences check above."""
    cfg = gpt.GPTConfig(vocab=11, d=8, layers=2, heads=2, context=6)
    p = {k: v + np.float32(0.1) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, 1).items()}
    idx, targets = rng.integers(0, 11, (5, 6)), rng.integers(0, 11, (5, 6))  # 30 rows: past FEW_ROWS
    grads = gpt.backward(p, cfg, gpt.forward(p, cfg, idx, targets)[2])
    with Session(backend=Backend()).active():  # float64, BLAS
        p64 = {k: v.astype(np.float64) for k, v in p.items()}
        ref = gpt.backward(p64, cfg, gpt.forward(p64, cfg, idx, targets)[2])
    for name in p:
        assert grads[name].dtype == np.float32
        assert rel_err(grads[name], ref[name]) < 1e-5, name


def test_the_kernels_training_forward_keeps_numpys_caches(rng):
    """In the browser gpt.forward runs a training forward in one kernel call and leaves what
    each backward reads in the kernel's memory; read out as the layers' caches (by layer
    name, as eager.py keeps them), every one (norms, rstds, each product's input, attention
    weights, the activations, the head's input) is the float64 numpy forward's within rounding."""
    from wasm_host import kernel

    cfg = gpt.GPTConfig(vocab=11, d=12, layers=2, heads=3, context=7, mlp=2)  # odd widths: SIMD tails
    p = {k: v + np.float32(0.3) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, 2).items()}
    idx, targets = rng.integers(0, 11, (3, 7)), rng.integers(0, 11, (3, 7))
    ref = gpt.forward({k: v.astype(np.float64) for k, v in p.items()}, cfg, idx, targets)
    with Session(backend=Backend(kernel=kernel(), einsum=True)).active():
        got = gpt.forward(p, cfg, idx, targets)
        caches = dict(got[2].caches)  # copied out while the kernel holds them
    assert caches.keys() == ref[2].caches.keys() - {"loss"}  # the loss's: a softmax, kept differently

    def same(a, b, where):
        if isinstance(a, tuple):
            assert isinstance(b, tuple) and len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b)):
                same(x, y, f"{where}[{i}]")
        else:
            assert np.shape(a) == np.shape(b), where
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=where)

    assert got[1] == pytest.approx(ref[1], rel=1e-5)
    for name in caches:
        same(caches[name], ref[2].caches[name], name)


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


# ---- oracle: an independent float64 forward in picoGPT's style ------------------------
# After jaymody/picoGPT gpt2.py: plain functions, no caches, its own layer norm, attention
# and MLP, written from the maths rather than from widgets_py/maths/gpt.py. Same parameter dict
# and config semantics as our model: pre-norm blocks, ReLU MLP (not GELU), tied output head,
# fixed sinusoidal positions (Vaswani et al. 2017, §3.5) scaled by 0.02 as gpt.py documents.

def ref_positions(n_ctx, d):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    pe = np.zeros((n_ctx, d))
    for pos in range(n_ctx):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return 0.02 * pe


def ref_layer_norm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(variance + eps) + b


def ref_softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def ref_attention(q, k, v, mask):  # [n_q, d_k], [n_k, d_k], [n_k, d_v], [n_q, n_k] -> [n_q, d_v]
    return ref_softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def ref_mha(x, w_qkv, b_qkv, w_proj, b_proj, n_head):  # [n_seq, n_embd] -> [n_seq, n_embd]
    qkv = x @ w_qkv + b_qkv  # [n_seq, 3 * n_embd]
    q, k, v = np.split(qkv, 3, axis=-1)
    heads = zip(np.split(q, n_head, axis=-1), np.split(k, n_head, axis=-1), np.split(v, n_head, axis=-1))
    causal_mask = (1 - np.tri(x.shape[0])) * -1e10  # [n_seq, n_seq]: hide the future
    out = np.hstack([ref_attention(qh, kh, vh, causal_mask) for qh, kh, vh in heads])
    return out @ w_proj + b_proj


def ref_gelu(x):  # picoGPT's, GPT-2's tanh approximation
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def ref_rms_norm(x, g, eps=1e-5):  # Zhang & Sennrich 2019, eq. 4: no mean, no bias
    return g * x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)


def ref_ffn(x, w_fc, b_fc, w_out, b_out, act=lambda h: np.maximum(h, 0)):  # [n_seq, n_embd] -> [n_seq, n_embd]
    return act(x @ w_fc + b_fc) @ w_out + b_out


def ref_gpt(inputs, params, n_head, n_layer, activation="relu", norm="layernorm"):  # [n_seq] -> [n_seq, n_vocab]
    P = {name: value.astype(np.float64) for name, value in params.items()}
    act = {"relu": lambda h: np.maximum(h, 0), "gelu": ref_gelu}[activation]
    ln = (lambda x, name: ref_layer_norm(x, P[name + ".w"], P[name + ".b"])) if norm == "layernorm" \
        else (lambda x, name: ref_rms_norm(x, P[name + ".w"]))
    x = P["wte"][inputs] + ref_positions(len(inputs), P["wte"].shape[1])
    for i in range(n_layer):
        h = lambda name: P[f"h{i}.{name}"]  # noqa: E731
        x = x + ref_mha(ln(x, f"h{i}.ln1"), h("qkv.w"), h("qkv.b"), h("proj.w"), h("proj.b"), n_head)
        x = x + ref_ffn(ln(x, f"h{i}.ln2"), h("fc.w"), h("fc.b"), h("out.w"), h("out.b"), act)
    return ln(x, "lnf") @ P["wte"].T


def trained_like(cfg, seed):
    """float32 params at the scale of a trained model: attention far from uniform, so a wrong
    score scale or mask shows (gpt.init's N(0, 0.02) would make every score nearly 0)."""
    rng = np.random.default_rng(seed)
    p = gpt.init(cfg, seed)
    return {name: (v + rng.normal(0, 0.1 if name.endswith((".ln1.w", ".ln2.w", "lnf.w")) else 0.4, v.shape))
            .astype(np.float32) for name, v in p.items()}


# float32 against float64: ~1e-7 relative per operation, grown through a few layers
ORACLE_RTOL, ORACLE_ATOL = 2e-4, 2e-4


def oracle_case(cfg, seed):
    p = trained_like(cfg, seed)
    tokens = np.random.default_rng(seed).integers(0, cfg.vocab, cfg.context)
    ref = ref_gpt(tokens, p, cfg.heads, cfg.layers, cfg.activation, cfg.norm)  # [T, V] float64
    assert np.abs(ref).max() > 1 and ref.std(-1).mean() > 0.3  # logits far from flat: the test has teeth
    return p, tokens, ref


ORACLE_CONFIGS = [
    gpt.GPTConfig(vocab=13, d=16, layers=2, heads=4, context=24),
    gpt.GPTConfig(vocab=40, d=32, layers=3, heads=4, context=128),  # the target's shape, full window
    gpt.GPTConfig(vocab=7, d=12, layers=1, heads=3, context=9, mlp=2),  # odd head size, narrow MLP
]


@pytest.mark.parametrize("cfg", ORACLE_CONFIGS, ids=lambda c: f"d{c.d}L{c.layers}H{c.heads}T{c.context}")
def test_forward_matches_the_float64_reference(cfg, matmul):
    p, tokens, ref = oracle_case(cfg, 5)
    ours = gpt.forward(p, cfg, tokens[None])[0]
    np.testing.assert_allclose(ours, ref, rtol=ORACLE_RTOL, atol=ORACLE_ATOL * np.abs(ref).max())
    batch = np.stack([tokens, tokens[::-1]])  # rows of a batch do not mix
    np.testing.assert_allclose(gpt.forward(p, cfg, batch)[1], ref_gpt(tokens[::-1], p, cfg.heads, cfg.layers),
                               rtol=ORACLE_RTOL, atol=ORACLE_ATOL * np.abs(ref).max())


@pytest.mark.parametrize("cfg", ORACLE_CONFIGS, ids=lambda c: f"d{c.d}L{c.layers}H{c.heads}T{c.context}")
def test_kv_cache_decoding_matches_the_reference_at_every_position(cfg, matmul):
    p, tokens, ref = oracle_case(cfg, 6)
    logits, kv = gpt.extend(p, cfg, tokens[:1])  # prefill of one token, then one at a time
    rows = [logits]
    for t in tokens[1:]:
        logits, kv = gpt.extend(p, cfg, [t], kv)
        rows.append(logits)
    assert all(k.shape[-2] == cfg.context for k, _ in kv)  # the cache grew one row per token
    np.testing.assert_allclose(np.concatenate(rows), ref, rtol=ORACLE_RTOL, atol=ORACLE_ATOL * np.abs(ref).max())
    cut = cfg.context // 3  # prefill a chunk, verify the rest at once (speculative decoding's pass)
    chunk, _ = gpt.extend(p, cfg, tokens[cut:], gpt.extend(p, cfg, tokens[:cut])[1])
    np.testing.assert_allclose(chunk, ref[cut:], rtol=ORACLE_RTOL, atol=ORACLE_ATOL * np.abs(ref).max())


@pytest.mark.parametrize("cfg", ORACLE_CONFIGS, ids=lambda c: f"d{c.d}L{c.layers}H{c.heads}T{c.context}")
def test_next_logits_is_the_references_last_row_for_every_window_length(cfg, matmul):
    """A sliding window's next-token logits (the last block for the last position only)."""
    p, tokens, _ = oracle_case(cfg, 7)
    for n in sorted({1, 2, cfg.context // 2, cfg.context}):
        ref = ref_gpt(tokens[:n], p, cfg.heads, cfg.layers)[-1]  # [V]
        np.testing.assert_allclose(gpt.next_logits(p, cfg, tokens[:n]), ref, rtol=ORACLE_RTOL,
                                   atol=ORACLE_ATOL * np.abs(ref).max())


@pytest.mark.parametrize("cfg", ORACLE_CONFIGS, ids=lambda c: f"d{c.d}L{c.layers}H{c.heads}T{c.context}")
def test_the_loss_without_caches_is_the_references(cfg, matmul):
    """gpt.loss, evaluation's forward (in the browser every block in one kernel call), on a
    batch of different sequences: the float64 reference's mean cross-entropy, and forward's."""
    p, tokens, _ = oracle_case(cfg, 8)
    batch = np.stack([tokens, tokens[::-1], np.roll(tokens, 3)])  # [3, T]: sequences must not mix
    targets = np.roll(batch, -1, axis=1)
    ref = np.stack([ref_gpt(row, p, cfg.heads, cfg.layers) for row in batch])  # [3, T, V]
    logp = ref - ref.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    want = -np.take_along_axis(logp, targets[..., None], -1).mean()
    got = gpt.loss(p, cfg, batch, targets)
    assert abs(got - want) < 1e-4 * want
    assert got == pytest.approx(gpt.forward(p, cfg, batch, targets)[1], rel=1e-6)


def test_positions_are_the_sinusoids():
    np.testing.assert_allclose(gpt.positions(0, 128, 32), ref_positions(128, 32), atol=1e-6)
    np.testing.assert_allclose(gpt.positions(37, 5, 12), ref_positions(42, 12)[37:], atol=1e-7)


# ---- properties the mutation run asked for ----------------------------------------------

def test_init_is_gpt2_style_float32_and_seeded():
    """N(0, 0.02) weights, residual projections N(0, 0.02/sqrt(2·layers)), zero biases, unit
    LN gains; float32 (Pyodide has no BLAS: float64 would double the browser's cost)."""
    cfg = gpt.GPTConfig(vocab=50, d=64, layers=3, heads=4)
    p = gpt.init(cfg, 7)
    assert all(v.dtype == np.float32 for v in p.values())
    proj = 0.02 / math.sqrt(2 * cfg.layers)
    for name, v in p.items():
        if name.endswith((".b",)):
            assert not v.any(), name
        elif name.endswith(("ln1.w", "ln2.w")) or name == "lnf.w":
            assert (v == 1).all(), name
        else:
            std = proj if name.endswith(("proj.w", "out.w")) else 0.02
            assert abs(v.mean()) < 0.1 * std and v.std() == pytest.approx(std, rel=0.1), name
    again, other = gpt.init(cfg, 7), gpt.init(cfg, 8)
    assert all(np.array_equal(p[k], again[k]) for k in p) and not np.array_equal(p["wte"], other["wte"])


def test_parameter_and_mac_counts():
    """n_params by the layer-by-layer formula; one MAC per token per entry of a weight matrix
    (qkv, proj, fc, out, and the tied head)."""
    cfg = gpt.GPTConfig(vocab=50, d=16, layers=3, heads=4, mlp=3)
    p = gpt.init(cfg, 0)
    d, h = cfg.d, cfg.mlp * cfg.d
    per_layer = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * h + h) + (h * d + d)
    assert gpt.n_params(p) == cfg.vocab * d + cfg.layers * per_layer + 2 * d
    assert gpt.macs_per_token(cfg) == sum(v.size for v in p.values() if v.ndim == 2)


def test_attention_macs_count_a_causal_pass_by_hand():
    """A causal pass over T tokens, per layer and head: q·k for the T(T+1)/2 pairs (t, s <= t),
    d/heads MACs each, and as many for the weighted sum of the values; the decode step of a
    token after T - 1 others sees T keys, the last row of that triangle."""
    cfg = gpt.GPTConfig(vocab=50, d=16, layers=3, heads=4)
    T, hd = 10, cfg.d // cfg.heads
    pass_macs = cfg.layers * cfg.heads * 2 * hd * T * (T + 1) // 2
    assert T * gpt.attention_macs_per_token(cfg, (T + 1) / 2) == pass_macs
    assert gpt.attention_macs_per_token(cfg, T) == cfg.layers * cfg.heads * 2 * hd * T


def test_float32_in_float32_out():
    cfg = gpt.GPTConfig(vocab=9, d=8, layers=1, heads=2, context=6)
    p = trained_like(cfg, 0)
    idx = np.random.default_rng(0).integers(0, 9, (2, 6))
    assert gpt.positions(0, 6, 8).dtype == np.float32
    logits, _, cache = gpt.forward(p, cfg, idx, idx)
    assert logits.dtype == np.float32 and gpt.extend(p, cfg, idx[0])[0].dtype == np.float32
    assert all(g.dtype == np.float32 for g in gpt.backward(p, cfg, cache).values())


def test_relu_gradient_is_zero_at_zero():
    out, on = layers.relu(np.array([-1.0, 0.0, 2.0]))
    assert out.tolist() == [0, 0, 2] and layers.relu_backward(np.ones(3), on).tolist() == [0, 0, 1]


def test_softmaxes_are_stable_row_by_row():
    """Each row subtracts its own max: a row of huge scores must not underflow the others."""
    q = np.zeros((1, 1, 2, 4))
    q[0, 0, 0] = 400.0  # query 0: scores ~ 10^5; query 1: scores 0
    k = np.ones((1, 1, 2, 4))
    out, _ = layers.attention(q, k, np.ones((1, 1, 2, 4)))
    assert np.isfinite(out).all() and np.allclose(out, 1)
    cfg = gpt.GPTConfig(vocab=6, d=8, layers=1, heads=2, context=5)
    p = trained_like(cfg, 1)
    p["wte"][0] *= 3000  # token 0's logit is ~±10^4 at some positions, ~1 elsewhere
    idx = np.array([[0, 1, 2, 3, 4]])
    targets = np.array([[1, 2, 3, 4, 5]])
    ref = ref_gpt(idx[0], p, cfg.heads, cfg.layers)
    m = ref.max(-1, keepdims=True)
    ref_loss = -(ref - m - np.log(np.exp(ref - m).sum(-1, keepdims=True)))[np.arange(5), targets[0]].mean()
    _, loss, cache = gpt.forward(p, cfg, idx, targets)
    assert np.isfinite(loss) and loss == pytest.approx(ref_loss, rel=1e-3)
    assert all(np.isfinite(g).all() for g in gpt.backward(p, cfg, cache).values())


def test_only_read_only_parameters_are_packed_once(rng):
    """The kernel's packed weights are kept for a dict of read-only arrays (session.load's,
    shared by every widget) and rebuilt for writable ones: training updates them in place,
    and a held-out loss during training must see the new values."""
    from widgets_py.accel.compiled import packed

    cfg = gpt.GPTConfig(vocab=11, d=8, layers=2, heads=2, context=6)
    p, be = gpt.init(cfg, 3), Backend()
    before = packed(be, p, gpt.shapes(cfg))
    p["h1.fc.w"] += 1.0  # an optimizer step, in place
    after = packed(be, p, gpt.shapes(cfg))
    assert not np.array_equal(before, after)
    np.testing.assert_array_equal(after, np.concatenate([p[k].ravel() for k in gpt.shapes(cfg)]))
    for v in p.values():
        v.flags.writeable = False
    assert packed(be, p, gpt.shapes(cfg)) is packed(be, p, gpt.shapes(cfg))


def test_pretrained_weights_cannot_be_changed_in_place():
    """Every widget shares session.load's arrays, and packed() keeps their vector: writing
    into them is refused rather than silently stale."""
    from widgets_py.engine import session

    _, p, _ = session.load("mini")
    with pytest.raises(ValueError, match="read-only"):
        p["h0.qkv.w"][0, 0] = 1.0


# ---- the model once: variants in Python, on every backend --------------------------------
# A config's choices (GELU, RMSNorm) and even a new block, written in Python against ops, run
# on numpy (eager.py) and, compiled by tape.py, on the browser's kernel: the kernel knows
# primitives, not the model. A config the kernel cannot compute is refused, never ignored.

def kernel_session(**kw):
    from wasm_host import kernel

    return Session(backend=Backend(kernel=kernel(), einsum=True, **kw)).active()


def passes_ran(session) -> set[str]:
    """The primitives the session's kernel ran (wasm_host records each op's code)."""
    from widgets_py.accel import primitives

    codes = {code: op for op, code in primitives.CODES.items()}
    return {codes[c] for c in session.backend.kernel.host.calls}


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "relu-layernorm"])
@pytest.mark.parametrize("cfg", ORACLE_CONFIGS[:2], ids=lambda c: f"d{c.d}L{c.layers}")
def test_a_variant_runs_on_every_backend_and_matches_the_float64_reference(cfg, variant, matmul):
    """GELU, RMSNorm, both: a config's two fields. On the kernel ("wasm"), its own programs
    run them (its GELU's tanh from its exponential: float32 rounding apart)."""
    import dataclasses

    cfg = dataclasses.replace(cfg, **VARIANTS[variant])
    p, tokens, ref = oracle_case(cfg, 5)
    atol = ORACLE_ATOL * np.abs(ref).max()
    np.testing.assert_allclose(gpt.forward(p, cfg, tokens[None])[0], ref, rtol=ORACLE_RTOL, atol=atol)
    np.testing.assert_allclose(gpt.hidden_states(p, cfg, tokens[None])[0] @ p["wte"].T, ref, rtol=ORACLE_RTOL, atol=atol)
    logits, kv = gpt.extend(p, cfg, tokens[:-1])
    np.testing.assert_allclose(np.concatenate([logits, gpt.extend(p, cfg, tokens[-1:], kv)[0]]), ref,
                               rtol=ORACLE_RTOL, atol=atol)
    np.testing.assert_allclose(gpt.next_logits(p, cfg, tokens), ref[-1], rtol=ORACLE_RTOL, atol=atol)
    assert ("ln1.b" in "".join(p)) == (cfg.norm == "layernorm")  # RMSNorm has no bias to train
    if matmul == "wasm":
        from widgets_py.engine import session

        ran = passes_ran(session.current())
        assert {"attention", "norm"} <= ran and ("gelu" in ran) == (cfg.activation == "gelu")


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "relu-layernorm"])
def test_a_variants_gradients_on_the_kernel_are_float64s(rng, variant):
    """Training a GELU or RMSNorm model in the browser: its kernel programs' gradients are the
    float64 numpy backward's (which the finite differences above check) within rounding."""
    cfg = gpt.GPTConfig(vocab=11, d=12, layers=2, heads=3, context=7, mlp=2, **VARIANTS[variant])
    p = {k: v + np.float32(0.2) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, 4).items()}
    idx, targets = rng.integers(0, 11, (3, 7)), rng.integers(0, 11, (3, 7))
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    ref = gpt.backward(p64, cfg, gpt.forward(p64, cfg, idx, targets)[2])
    with kernel_session() as run:
        got = gpt.backward(p, cfg, gpt.forward(p, cfg, idx, targets)[2])
        assert {"norm_backward", "attention_backward"} <= passes_ran(run)
    assert got.keys() == ref.keys()
    scale = max(np.abs(g).max() for g in ref.values())
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-5 * scale, err_msg=name)


# A block the model does not have, written here only: GPT-J's and PaLM's parallel block, where
# attention and the MLP read the same norm of x and both add to it (Wang & Komatsuzaki 2021).
# Its backward, llm.c-style: both branches' input gradients add at the shared norm.

def parallel_block(ops, i, x, past=None, new=None, last=False):
    a = ops.norm(f"h{i}.ln1", x)
    attn = ops.linear(f"h{i}.proj", ops.attention(f"h{i}.att", ops.linear(f"h{i}.qkv", a), past, new, last))
    if last:  # the last position only, from here on
        x, a = ops.last(x), ops.last(a)
    mlp = ops.linear(f"h{i}.out", ops.act(f"h{i}.act", ops.linear(f"h{i}.fc", a)))
    return ops.add(ops.add(x, attn), mlp)


def parallel_block_backward(ops, i, dx):
    dfc = ops.linear_backward(f"h{i}.fc", ops.act_backward(f"h{i}.act", ops.linear_backward(f"h{i}.out", dx)))
    dqkv = ops.attention_backward(f"h{i}.att", ops.linear_backward(f"h{i}.proj", dx))
    return ops.add(dx, ops.norm_backward(f"h{i}.ln1", ops.add(dfc, ops.linear_backward(f"h{i}.qkv", dqkv))))


def ref_parallel_gpt(inputs, params, n_head, n_layer):  # the float64 oracle's blocks, side by side
    P = {name: value.astype(np.float64) for name, value in params.items()}
    x = P["wte"][inputs] + ref_positions(len(inputs), P["wte"].shape[1])
    for i in range(n_layer):
        h = lambda name: P[f"h{i}.{name}"]  # noqa: E731
        a = ref_layer_norm(x, h("ln1.w"), h("ln1.b"))
        x = x + ref_mha(a, h("qkv.w"), h("qkv.b"), h("proj.w"), h("proj.b"), n_head) + \
            ref_ffn(a, h("fc.w"), h("fc.b"), h("out.w"), h("out.b"))
    return ref_layer_norm(x, P["lnf.w"], P["lnf.b"]) @ P["wte"].T


@pytest.fixture
def parallel(monkeypatch):
    """gpt.py's block swapped for the parallel one: every backend and pass picks it up."""
    monkeypatch.setattr(gpt, "block", parallel_block)
    monkeypatch.setattr(gpt, "block_backward", parallel_block_backward)


def test_a_block_written_in_python_only_runs_on_the_kernel_and_matches_the_float64_reference(parallel, rng):
    """The kernel runs a block it was never told about: forward, a KV cache's decode and a
    held-out loss, against the parallel block's own float64 reference; its gradients against
    finite differences (float64, numpy) and the kernel's against those."""
    cfg = gpt.GPTConfig(vocab=13, d=16, layers=2, heads=4, context=24)
    p = trained_like(cfg, 5)
    tokens = np.random.default_rng(5).integers(0, cfg.vocab, cfg.context)
    ref = ref_parallel_gpt(tokens, p, cfg.heads, cfg.layers)
    assert np.abs(ref - ref_gpt(tokens, p, cfg.heads, cfg.layers)).max() > 0.1  # another model indeed
    atol = ORACLE_ATOL * np.abs(ref).max()
    with kernel_session() as run:
        np.testing.assert_allclose(gpt.forward(p, cfg, tokens[None])[0], ref, rtol=ORACLE_RTOL, atol=atol)
        logits, kv = gpt.extend(p, cfg, tokens[:-3])
        for t in tokens[-3:]:
            step, kv = gpt.extend(p, cfg, [t], kv)
            logits = np.concatenate([logits, step])
        np.testing.assert_allclose(logits, ref, rtol=ORACLE_RTOL, atol=atol)
        np.testing.assert_allclose(gpt.next_logits(p, cfg, tokens), ref[-1], rtol=ORACLE_RTOL, atol=atol)
        assert "attention" in passes_ran(run)
    np.testing.assert_allclose(gpt.next_logits(p, cfg, tokens), ref[-1], rtol=ORACLE_RTOL, atol=atol)  # numpy's
    small = gpt.GPTConfig(vocab=7, d=8, layers=2, heads=2, context=5)
    p64 = {k: v.astype(np.float64) + 0.1 * rng.standard_normal(v.shape) for k, v in gpt.init(small, 1).items()}
    idx, targets = rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))
    grads = gpt.backward(p64, small, gpt.forward(p64, small, idx, targets)[2])
    for name in ("h0.ln1.w", "h0.qkv.w", "h1.fc.b", "wte"):
        num = numeric_grad(lambda: gpt.forward(p64, small, idx, targets)[1], p64[name])
        assert rel_err(grads[name], num) < RTOL, name
    p32 = {k: v.astype(np.float32) for k, v in p64.items()}
    with kernel_session():
        got = gpt.backward(p32, small, gpt.forward(p32, small, idx, targets)[2])
    scale = max(np.abs(g).max() for g in grads.values())
    for name in grads:
        np.testing.assert_allclose(got[name], grads[name], rtol=1e-4, atol=1e-5 * scale, err_msg=name)


FIELD_VALUES = {"vocab": 17, "d": 24, "layers": 3, "heads": 2, "context": 9, "mlp": 2,
                "activation": "gelu", "norm": "rmsnorm"}  # per field, a value off the base below


@pytest.mark.parametrize("field", FIELD_VALUES)
def test_every_config_field_varied_runs_on_the_kernel_as_in_float64(field):
    """Each field of GPTConfig away from its default: the kernel's programs agree with the
    independent float64 GPT (forward) and with numpy's float64 backward. A field added to
    GPTConfig fails here until it has a value, and until the kernel computes it (or refuses)."""
    import dataclasses

    from widgets_py.accel import backend

    assert set(FIELD_VALUES) == {f.name for f in dataclasses.fields(gpt.GPTConfig)}
    base = gpt.GPTConfig(vocab=11, d=12, layers=2, heads=3, context=7, mlp=3)
    cfg = dataclasses.replace(base, **{field: FIELD_VALUES[field]})
    assert getattr(cfg, field) != getattr(base, field) and backend.refusal(cfg) is None
    p, tokens, ref = oracle_case(cfg, 7)
    with kernel_session(kernel_macs=0):
        np.testing.assert_allclose(gpt.forward(p, cfg, tokens[None])[0], ref, rtol=ORACLE_RTOL,
                                   atol=ORACLE_ATOL * np.abs(ref).max())
        idx = np.stack([tokens, tokens[::-1]])
        got = gpt.backward(p, cfg, gpt.forward(p, cfg, idx, np.roll(idx, 1))[2])
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    want = gpt.backward(p64, cfg, gpt.forward(p64, cfg, idx, np.roll(idx, 1))[2])
    scale = max(np.abs(g).max() for g in want.values())
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=2e-5 * scale, err_msg=name)


def test_the_kernel_refuses_a_config_it_does_not_compute(monkeypatch):
    """The kernel's programs say which configs they run; any other is refused, with why, and
    runs numpy's layers: never a choice it lacks computed as another, nor a new field ignored."""
    import dataclasses

    from widgets_py.accel import backend

    base = gpt.GPTConfig(vocab=9)
    for choice in ({}, {"activation": "gelu"}, {"norm": "rmsnorm"}):
        assert backend.refusal(dataclasses.replace(base, **choice)) is None

    @dataclasses.dataclass(frozen=True)
    class WithRope(gpt.GPTConfig):
        rope: bool = True  # a field added to the model, not to the kernel

    assert backend.refusal(WithRope(vocab=9)) == "GPTConfig.rope: a field the kernel does not know"
    monkeypatch.setitem(layers.ACTIVATIONS, "swish", (lambda x: (x, x), lambda d, c: d))  # numpy's alone
    assert backend.refusal(gpt.GPTConfig(vocab=9, activation="swish")) == \
        "GPTConfig.activation='swish': the kernel computes 'relu', 'gelu'"
    with pytest.raises(ValueError, match="allowed relu, gelu"):
        gpt.GPTConfig(vocab=9, activation="tanh")
    with pytest.raises(ValueError, match="3 heads do not divide d=8"):
        gpt.GPTConfig(vocab=9, d=8, heads=3)


def test_a_refused_config_never_reaches_the_kernels_passes(rng):
    """On the browser's backend (wasmtime), a config the kernel refuses runs numpy's layers:
    no program but a product alone reaches the kernel."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class WithRope(gpt.GPTConfig):
        rope: bool = True

    cfg = WithRope(vocab=11, d=8, layers=1, heads=2, context=6)
    p = trained_like(gpt.GPTConfig(vocab=11, d=8, layers=1, heads=2, context=6), 3)
    idx = rng.integers(0, 11, (4, 6))
    with kernel_session(kernel_macs=0) as run:  # every product to the kernel
        gpt.backward(p, cfg, gpt.forward(p, cfg, idx, idx)[2])
        gpt.loss(p, cfg, idx, idx)
        gpt.extend(p, cfg, [1, 2, 3])
        assert passes_ran(run) == {"product"}
