"""The WebAssembly SIMD kernel the browser runs the mini-GPT with (widgets_py/models/sgemm):
the committed binary is its source assembled; its products are float64's within float32
rounding, at every shape (odd rows and columns, one of each) and in both layouts; its
exponential is within an ulp; and its whole passes (the forward, after a KV cache, for
training, and the backward) are numpy's layers in float64 within rounding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wasm_host import kernel, on_kernel, wasmtime  # noqa: F401  (skips the module without wasmtime)

from widgets_py.engine.session import Session
from widgets_py.models import backend, sgemm
from widgets_py.models.backend import Backend


def test_the_committed_binary_is_the_source_assembled():
    assert sgemm.WASM.read_bytes() == sgemm.assemble(), "re-assemble: python -m widgets_py.models.sgemm"


def assert_product(got, a, b):
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a).astype(np.float64) @ np.abs(b) * a.shape[1] * 2.0 ** -23  # float32 summation
    assert got.shape == ref.shape and got.dtype == np.float32
    assert np.all(np.abs(got - ref) <= bound + 1e-30)


dims = st.integers(1, 70)


@settings(max_examples=60, deadline=None)
@given(m=dims, k=dims, n=dims, seed=st.integers(0, 2**32 - 1))
def test_products_at_any_shape_in_both_layouts(m, k, n, seed):
    """Memory starts as NaN: a read of the slack past A, B or C that reached an output shows."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    kern = kernel()
    assert_product(kern.nn(a, b), a, b)
    assert_product(kern.tn(np.ascontiguousarray(a.T), b), a, b)


@settings(max_examples=30, deadline=None)
@given(batch=st.lists(st.integers(1, 5), min_size=1, max_size=2), m=st.integers(1, 20), k=st.integers(1, 20),
       n=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_batched_products_are_numpys_matmul_item_by_item(batch, m, k, n, seed):
    """Leading axes multiply pair by pair (attention's [B, H, T, hs] products): no item's
    spill past its last row or column reaches the next item's numbers."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((*batch, m, k)).astype(np.float32)
    b = rng.standard_normal((*batch, k, n)).astype(np.float32)
    kern = kernel()
    got, got_tn = kern.nn(a, b), kern.tn(np.ascontiguousarray(a.swapaxes(-1, -2)), b)
    assert got.shape == got_tn.shape == (*batch, m, n)
    for i in np.ndindex(*batch):
        assert_product(got[i], a[i], b[i])
        assert_product(got_tn[i], a[i], b[i])


def test_shapes_that_do_not_multiply_are_refused():
    a = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="do not multiply"):
        kernel().nn(a, np.zeros((2, 5, 6), np.float32))
    with pytest.raises(ValueError, match="do not multiply"):
        kernel().nn(a, np.zeros((3, 4, 6), np.float32))


def test_only_float32_is_multiplied():
    with pytest.raises(TypeError, match="float32"):
        kernel().nn(np.zeros((4, 4)), np.zeros((4, 4), np.float32))


def test_non_contiguous_operands_are_copied_in_order():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((12, 10)).astype(np.float32), rng.standard_normal((9, 14)).astype(np.float32)
    assert_product(kernel().nn(a[:, ::2], b[::2, 1:]), a[:, ::2], b[::2, 1:])  # strided views


def test_the_models_shapes_and_a_grown_memory():
    """The training step's shapes, one kernel for all (its memory grows, and is reused)."""
    rng = np.random.default_rng(0)
    kern = kernel()
    for m, k, n in [(512, 32, 96), (512, 128, 32), (32, 512, 90), (4096, 32, 128), (90, 512, 32), (5, 3, 2)]:
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        assert_product(kern.nn(a, b), a, b)
        assert_product(kern.tn(np.ascontiguousarray(a.T), b), a, b)


def test_exact_on_small_integers():
    """Integer-valued floats sum exactly in any order: every element, bit for bit."""
    rng = np.random.default_rng(1)
    a, b = rng.integers(-8, 8, (37, 19)).astype(np.float32), rng.integers(-8, 8, (19, 45)).astype(np.float32)
    np.testing.assert_array_equal(kernel().nn(a, b), a @ b)
    np.testing.assert_array_equal(kernel().tn(np.ascontiguousarray(a.T), b), a @ b)


def test_layout_leaves_slack_after_each_region():
    b, c, end = sgemm.layout(90, 512, 32)
    assert b >= 90 * 512 + 3 * 512 and c >= b + 512 * 32 + 7 and end >= c + 90 * 32 + 3 * 32 + 7


def test_natively_there_is_no_browser_kernel_and_nothing_was_tried():
    """CPython multiplies with BLAS: the browser's kernel is not even attempted (its loading,
    BrowserHost, is covered in Chromium: the training test requires the wasm-simd path)."""
    assert sgemm.browser_kernel() == (None, None)


def test_a_browser_without_webassembly_simd_keeps_einsum(monkeypatch):
    """Where the browser cannot compile the kernel (no SIMD: Safari before 16.4), loading
    gives None, and says why, so gpt.py keeps numpy's einsum."""
    import sys
    import types

    class CompileError(Exception):
        pass

    def refuse(_bytes):
        raise CompileError("invalid opcode 0xfd (SIMD)")

    js = types.ModuleType("js")
    js.Float32Array = object
    js.WebAssembly = types.SimpleNamespace(Module=types.SimpleNamespace(new=refuse), Instance=types.SimpleNamespace(new=None))
    ffi = types.ModuleType("pyodide.ffi")
    ffi.to_js = lambda x: x
    monkeypatch.setitem(sys.modules, "js", js)
    monkeypatch.setitem(sys.modules, "pyodide", types.ModuleType("pyodide"))
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)
    monkeypatch.setattr(sgemm.sys, "platform", "emscripten")
    assert sgemm.browser_kernel() == (None, "CompileError: invalid opcode 0xfd (SIMD)")
    fallback = backend.for_runtime()  # sgemm.sys is sys: the backend module sees emscripten too
    assert fallback.path == "einsum" and fallback.failure == "CompileError: invalid opcode 0xfd (SIMD)"


# ---- the softmax (attention's, inside the forward) and a loss's exponentials ---------------

def test_the_exponential_is_within_one_ulp_and_flushes_below_the_normal_range():
    """e^v for v from -90 to 0 (rows [v, 0]: the max is 0, so the first entry is e^v): within
    one float32 ulp of float64's wherever the result is a normal float, 0 below."""
    v = np.linspace(-90, 0, 100_001, dtype=np.float32)
    e, top, total = kernel().exp_rows(np.stack([v, np.zeros_like(v)], 1))
    ref = np.exp(v.astype(np.float64))
    normal = ref >= np.finfo(np.float32).tiny
    ulp = np.spacing(ref[normal].astype(np.float32)).astype(np.float64)
    assert np.abs(e[normal, 0] - ref[normal]).max() <= ulp.max() and np.all(np.abs(e[normal, 0] - ref[normal]) <= ulp)
    assert np.all(e[~normal, 0] == 0) and np.all(e[:, 1] == 1)
    np.testing.assert_array_equal(top[:, 0], 0)
    np.testing.assert_array_equal(total[:, 0], np.float32(1) + e[:, 0])


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 20), n=st.integers(1, 100), seed=st.integers(0, 2**32 - 1))
def test_exp_rows_gives_a_losss_softmax_parts(rows, n, seed):
    """(exp(x - max), max, sum) per row: the max exact; each exponential within an ulp of
    float64's e^(x - max), x - max rounded to float32 first (as numpy's float32 path rounds it)."""
    x = (4 * np.random.default_rng(seed).standard_normal((rows, n))).astype(np.float32)
    e, top, total = kernel().exp_rows(x)
    np.testing.assert_array_equal(top, x.max(-1, keepdims=True))
    ref = np.exp((x - top).astype(np.float64))
    np.testing.assert_allclose(e, ref, rtol=2.0 ** -23, atol=0)
    np.testing.assert_allclose(total, ref.sum(-1, keepdims=True), rtol=n * 2e-7)


# ---- the inference forward: every block in one call ------------------------------------

@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 3), t=st.integers(1, 11), heads=st.integers(1, 3), hs=st.integers(1, 9),
       layers=st.integers(1, 2), mlp=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_the_forward_is_numpys_in_float64_within_rounding(batch, t, heads, hs, layers, mlp, seed):
    """Any width (odd ones: the SIMD loops' tails), heads of any size, sequences of any
    length side by side: gpt.hidden_states' numpy layers in float64 agree within float32 rounding.
    Widths from 4: below, a layer norm's output (±1 at a width of 2) turns rounding in the
    inputs into errors past any float32 tolerance (see the backward's test)."""
    from widgets_py.models import gpt

    assume(heads * hs >= 4)

    cfg = gpt.GPTConfig(vocab=11, d=heads * hs, layers=layers, heads=heads, context=t, mlp=mlp)
    rng = np.random.default_rng(seed)
    p = {k: v + np.float32(0.3) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, seed % 97).items()}
    x = rng.standard_normal((batch, t, cfg.d)).astype(np.float32)
    got = kernel().forward(x, gpt.packed(p, cfg), heads, layers, mlp * cfg.d)
    ref = x.astype(np.float64)
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    for i in range(layers):
        ref, _, _ = gpt.block(p64, i, ref, cfg)
    ref = gpt.layernorm(ref, p64["lnf.w"], p64["lnf.b"])[0]
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_the_forward_refuses_what_it_cannot_compute():
    x, w = np.zeros((1, 4, 6), np.float32), np.zeros(500, np.float32)
    with pytest.raises(ValueError, match="4 heads do not divide a width of 6"):
        kernel().forward(x, w, 4, 1, 12)
    with pytest.raises(TypeError, match="float32"):
        kernel().forward(x.astype(np.float64), w, 2, 1, 12)


@settings(max_examples=25, deadline=None)
@given(past=st.integers(0, 9), t=st.integers(1, 9), heads=st.integers(1, 3), hs=st.integers(1, 9),
       layers=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_the_forward_after_a_kv_cache_is_numpys_in_float64(past, t, heads, hs, layers, seed):
    """New positions after `past` cached ones (gpt.extend's case: a decode step, a speculative
    verification): the output and the cache's new keys and values, against gpt.block in float64.
    Widths from 4, as above."""
    from widgets_py.models import gpt

    assume(heads * hs >= 4)

    cfg = gpt.GPTConfig(vocab=11, d=heads * hs, layers=layers, heads=heads, context=past + t)
    rng = np.random.default_rng(seed)
    p = {k: v + np.float32(0.3) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, seed % 89).items()}
    kv = None if past == 0 else [tuple(rng.standard_normal((1, heads, past, hs)).astype(np.float32) for _ in "kv")
                                 for _ in range(layers)]
    x = rng.standard_normal((1, t, cfg.d)).astype(np.float32)
    got, fresh = kernel().extend(x, gpt.packed(p, cfg), heads, layers, cfg.mlp * cfg.d, kv)
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    ref = x.astype(np.float64)
    for i in range(layers):
        ref, (k, v), _ = gpt.block(p64, i, ref, cfg, None if kv is None else kv[i])
        np.testing.assert_allclose(fresh[i, 0], k[..., past:, :], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(fresh[i, 1], v[..., past:, :], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, gpt.layernorm(ref, p64["lnf.w"], p64["lnf.b"])[0], rtol=1e-4, atol=1e-4)


def test_a_kv_cache_holds_one_sequence():
    with pytest.raises(ValueError, match="a KV cache holds one sequence, not 2"):
        kernel().extend(np.zeros((2, 3, 4), np.float32), np.zeros(400, np.float32), 2, 1, 8, None)


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 3), t=st.integers(1, 9), heads=st.integers(1, 3), hs=st.sampled_from([2, 4, 6, 8]),
       layers=st.integers(1, 2), mlp=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_the_backward_gives_numpys_gradients_in_float64(batch, t, heads, hs, layers, mlp, seed):
    """Training's backward in one call (every block, the final norm) at widths that are not
    multiples of 4 too (the positions need an even one), any head size and length: every
    parameter's gradient is gpt.backward's numpy in float64 within rounding. Not at a width
    of 2: a layer norm over two features outputs ±1 whatever its input, and its gradient is
    a difference of nearly equal terms (numpy's own float32 misses float64 by 2e-4 there)."""
    from widgets_py.models import gpt

    assume(heads * hs >= 4)

    cfg = gpt.GPTConfig(vocab=13, d=heads * hs, layers=layers, heads=heads, context=t, mlp=mlp)
    rng = np.random.default_rng(seed)
    p = {k: v + np.float32(0.2) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, seed % 83).items()}
    idx, targets = rng.integers(0, cfg.vocab, (batch, t)), rng.integers(0, cfg.vocab, (batch, t))
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    ref = gpt.backward(p64, cfg, gpt.forward(p64, cfg, idx, targets)[2])
    with on_kernel():
        got = gpt.backward(p, cfg, gpt.forward(p, cfg, idx, targets)[2])
    assert got.keys() == ref.keys()
    scale = max(np.abs(g).max() for g in ref.values())  # a tiny gradient is a difference of larger terms
    for name in ref:
        assert got[name].dtype == np.float32 and got[name].shape == ref[name].shape, name
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-5 * scale, err_msg=name)


def test_what_training_keeps_stays_put_under_the_loss_heads_products_and_goes_with_the_next_pass():
    """The training forward leaves the backward's inputs in the kernel's memory: products and
    exponentials run past them meanwhile (the loss head's), and any other pass makes them
    stale, which the backward refuses rather than read what another pass wrote there."""
    from widgets_py.models import gpt

    cfg = gpt.GPTConfig(vocab=11, d=8, layers=2, heads=2, context=5, mlp=2)
    rng = np.random.default_rng(3)
    p = gpt.init(cfg, 4)
    k = kernel()
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    flat = gpt.packed(p, cfg)
    _, kept = k.forward_kept(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    before = k.kept_arrays(kept)
    big = rng.standard_normal((96, 96)).astype(np.float32)  # its operands reach far past the forward's regions
    np.testing.assert_allclose(k.nn(big, big), big.astype(np.float64) @ big, rtol=1e-4, atol=1e-3)
    k.exp_rows(big)
    after = k.kept_arrays(kept)
    for layer_before, layer_after in zip(before[0], after[0]):
        for name in sgemm.TRAIN_KEPT:
            np.testing.assert_array_equal(layer_before[name], layer_after[name], err_msg=name)
    dxf = rng.standard_normal((2, 5, 8)).astype(np.float32)
    with pytest.raises(ValueError, match="positions"):
        k.backward(dxf[:1], flat, kept, cfg.heads, cfg.mlp * cfg.d)
    k.forward(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)  # another pass
    for stale in (lambda: k.kept_arrays(kept), lambda: k.backward(dxf, flat, kept, cfg.heads, cfg.mlp * cfg.d)):
        with pytest.raises(RuntimeError, match="another pass"):
            stale()
    _, kept = k.forward_kept(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    k.backward(dxf, flat, kept, cfg.heads, cfg.mlp * cfg.d)
    with pytest.raises(RuntimeError, match="another pass"):  # read once
        k.backward(dxf, flat, kept, cfg.heads, cfg.mlp * cfg.d)
    _, kept = k.forward_kept(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    n = np.zeros(5, np.float32)
    k.adamw(n, n.copy(), n.copy(), n.copy(), np.zeros(5, np.int32), 0.1, 0.01, 1.0, 0.1, 0.1, 0.01, 1e-8)  # from address 0 too
    with pytest.raises(RuntimeError, match="another pass"):
        k.head(kept, np.zeros((11, 8), np.float32), np.zeros((2, 5), int))


def test_the_backward_adds_the_embeddings_gradient_as_numpys_add_at_does():
    """With the token ids, the backward adds each row of its input's gradient to its token's
    row of the embedding's gradient, in row order: np.add.at's sums, bit for bit (repeated
    tokens included), and it refuses ids outside the embedding."""
    from widgets_py.models import gpt

    cfg = gpt.GPTConfig(vocab=7, d=8, layers=1, heads=2, context=6, mlp=2)
    rng = np.random.default_rng(5)
    k, flat = kernel(), gpt.packed(gpt.init(cfg, 6), cfg)
    x = rng.standard_normal((3, 6, 8)).astype(np.float32)
    dxf = rng.standard_normal((3, 6, 8)).astype(np.float32)
    idx = rng.integers(0, 7, (3, 6))  # 18 ids over 7 rows: repeats
    start = rng.standard_normal((7, 8)).astype(np.float32)
    _, kept = k.forward_kept(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    dx, _ = k.backward(dxf, flat, kept, cfg.heads, cfg.mlp * cfg.d)
    _, kept = k.forward_kept(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    got = start.copy()
    dx2, _ = k.backward(dxf, flat, kept, cfg.heads, cfg.mlp * cfg.d, idx, got)
    want = start.copy()
    np.add.at(want, idx, dx)
    np.testing.assert_array_equal(dx2, dx)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    _, kept = k.forward_kept(x, flat, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    with pytest.raises(ValueError, match="outside"):
        k.backward(dxf, flat, kept, cfg.heads, cfg.mlp * cfg.d, np.full((3, 6), 7), start.copy())


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 70), steps=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_adamw_in_the_kernel_is_numpys_to_the_bit(n, steps, seed):
    """train.AdamW's step through the kernel (the browser's) and through numpy (natively):
    the same parameters and moments, bit for bit, after each of several steps, with the
    decoupled decay on matrices only, at sizes that are not multiples of 4."""
    from widgets_py.models import gpt, train

    rng = np.random.default_rng(seed)
    shapes = {"w": (n, 3), "b": (n,), "e": (2, n)}
    p0 = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    tc = train.TrainConfig(weight_decay=0.1)
    runs = []
    for use in (None, kernel()):
        buf, p = train.flat({name: v.copy() for name, v in p0.items()})
        opt = train.AdamW(p, tc)
        with Session(backend=Backend(kernel=use, einsum=use is not None)).active():
            out = []
            for step in range(steps):
                draw = np.random.default_rng(seed + step)  # some gradients 0: v stays 0 there, where eps decides
                g = {name: (draw.standard_normal(shape) * (draw.random(shape) < 0.7)).astype(np.float32)
                     for name, shape in shapes.items()}
                opt.step(buf, g, train.lr_at(step, tc))
                out.append((buf.copy(), opt.m.copy(), opt.v.copy()))
        runs.append(out)
    for numpy_step, kernel_step in zip(*runs):
        for a, b in zip(numpy_step, kernel_step):
            np.testing.assert_array_equal(b.view(np.uint32), a.view(np.uint32))


def test_the_loss_head_in_one_call_is_the_kernels_pieces_to_the_bit():
    """The head (logits, softmax, dlogits, wte's and the final norm output's gradients) in one
    call gives the bits gpt.forward and gpt.backward got from the kernel's products and
    exponentials one at a time and numpy between them; it refuses foreign targets."""
    from widgets_py.models import gpt

    cfg = gpt.GPTConfig(vocab=13, d=12, layers=1, heads=3, context=7, mlp=2)
    rng = np.random.default_rng(8)
    k, p = kernel(), gpt.init(cfg, 9)
    wte = p["wte"] + np.float32(0.5) * rng.standard_normal(p["wte"].shape, np.float32)
    x = rng.standard_normal((4, 7, 12)).astype(np.float32)
    targets = rng.integers(0, 13, (4, 7))
    xf, kept = k.forward_kept(x, gpt.packed(p, cfg), cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    logits, top, total, dw, dx = k.head(kept, wte, targets)
    assert k.live is kept  # the backward still finds what the forward kept
    want = k.nn(xf.reshape(-1, 12), np.ascontiguousarray(wte.T)).reshape(4, 7, 13)
    e, want_top, want_total = k.exp_rows(want)
    dlogits = e / want_total
    np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1, -1)
    dlogits /= targets.size
    for got, ref in ((logits, want), (top, want_top), (total, want_total),
                     (dw, k.tn(dlogits.reshape(-1, 13), xf.reshape(-1, 12))), (dx, k.nn(dlogits.reshape(-1, 13), wte).reshape(4, 7, 12))):
        np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
    with pytest.raises(ValueError, match="vocabulary"):
        k.head(kept, wte, np.full((4, 7), 13))
    with pytest.raises(ValueError, match="targets"):
        k.head(kept, wte, targets[:2])


def test_a_held_out_loss_in_one_call_is_the_kernels_pieces_to_the_bit_and_float64s_within_rounding():
    """gpt.loss through the kernel (the forward, then the head's loss parts where its output
    lies) gives the bits of the forward, the head's product and exp_rows called one by one,
    and numpy's float64 loss within float32 rounding; it refuses foreign targets."""
    from widgets_py.models import gpt

    cfg = gpt.GPTConfig(vocab=13, d=12, layers=2, heads=3, context=7, mlp=2)
    rng = np.random.default_rng(5)
    k, p = kernel(), gpt.init(cfg, 3)
    p["wte"] = p["wte"] + np.float32(0.5) * rng.standard_normal(p["wte"].shape, np.float32)  # logits that differ
    idx, targets = rng.integers(0, 13, (5, 7)), rng.integers(0, 13, (5, 7))
    x, w = p["wte"][idx] + gpt.positions(0, 7, cfg.d), gpt.packed(p, cfg)
    picked, top, total = k.loss(x, w, cfg.heads, cfg.layers, cfg.mlp * cfg.d, p["wte"], targets)
    logits = k.nn(k.forward(x, w, cfg.heads, cfg.layers, cfg.mlp * cfg.d).reshape(-1, 12),
                  np.ascontiguousarray(p["wte"].T)).reshape(5, 7, 13)
    _, want_top, want_total = k.exp_rows(logits)
    for got, ref in ((picked, np.take_along_axis(logits, targets[..., None], -1)), (top, want_top), (total, want_total)):
        np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
    with on_kernel(k):
        got = gpt.loss(p, cfg, idx, targets)
    ref = gpt.loss({name: v.astype(np.float64) for name, v in p.items()}, cfg, idx, targets)
    assert abs(got - ref) < 1e-6 * abs(ref)  # float32 rounding: some 1e-7 here
    with pytest.raises(ValueError, match="vocabulary"):
        k.loss(x, w, cfg.heads, cfg.layers, cfg.mlp * cfg.d, p["wte"], np.full((5, 7), 13))
    with pytest.raises(ValueError, match="targets"):
        k.loss(x, w, cfg.heads, cfg.layers, cfg.mlp * cfg.d, p["wte"], targets[:2])


def test_warming_the_kernel_calls_every_pass_once(monkeypatch):
    """gpt.warm_kernel, which the worker runs when idle so that no widget's first change pays
    for the kernel's first calls, goes through every function the kernel exports (softmax
    runs inside every pass; its export is the tests' handle on it)."""
    from widgets_py.models import gpt

    k, called = kernel(), set()
    for name in sgemm.EXPORTS:
        export = getattr(k.host, name)
        setattr(k.host, name, lambda *args, _f=export, _n=name: (called.add(_n), _f(*args))[1])
    with on_kernel(k):
        gpt.warm_kernel()
    assert called == set(sgemm.EXPORTS) - {"softmax"}


def test_quantizes_activation_maxima_read_the_kernels_kept_caches():
    """SmoothQuant's activation maxima read block()'s caches after a training-style forward:
    through the kernel they come from its memory (gpt.Resident), numpy's within rounding."""
    from widgets_py.cap15 import quantize
    from widgets_py.models import gpt, pretrained

    cfg, p, _ = pretrained.load("mini")
    ref = quantize.activation_maxima(p, cfg)
    with on_kernel():
        got = quantize.activation_maxima(p, cfg)
    assert got.keys() == ref.keys()
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-5, atol=1e-6 * np.abs(ref[name]).max(), err_msg=name)
