"""The WebAssembly SIMD matmul kernel the browser multiplies with (widgets_py/models/sgemm):
the committed binary is its source assembled, and its products are float64's within
float32 rounding, at every shape (odd rows and columns, one of each) and in both layouts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wasm_host import kernel, wasmtime  # noqa: F401  (skips the module without wasmtime)

from widgets_py.models import sgemm


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
    assert sgemm.browser_kernel() is None and sgemm.FAILURE is None


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
    monkeypatch.setattr(sgemm, "FAILURE", None)
    assert sgemm.browser_kernel() is None
    assert sgemm.FAILURE == "CompileError: invalid opcode 0xfd (SIMD)"
