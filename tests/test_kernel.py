"""The WebAssembly SIMD kernel the browser runs the mini-GPT with (widgets_py/accel/kernel.py,
wasm/*.c) and the programs Python compiles for it (program.py, tape.py, compiled.py): the
committed binary is its sources built; programs lay their buffers out without overlaps, with
slack; its products are float64's within float32 rounding, at every shape (odd rows and
columns, one of each) and in both layouts; its exponential is within an ulp; and every pass
of the model (the forward, after a KV cache, a held-out loss, a training step) is numpy's
layers in float64 within rounding."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wasm_host import WasmtimeHost, kernel, on_kernel, wasmtime  # noqa: F401  (skips the module without wasmtime)

from widgets_py.engine import session
from widgets_py.engine.session import Session
from widgets_py.accel import backend, compiled, kernel_build, primitives, program, tape
from widgets_py.maths import gpt
from widgets_py.accel import kernel as wasm
from widgets_py.accel.backend import Backend
from widgets_py.accel.builder import Builder
from widgets_py.accel.program import P, Buffer, Dim, Ref, lay_out


# ---- the binary and its sources ------------------------------------------------------------

def test_the_generated_header_is_current():
    """wasm/ops.h is primitives.OPS written as C: a struct per primitive and run()'s dispatch."""
    assert wasm.HEADER.read_text() == primitives.header(), "regenerate: python -m widgets_py.accel.kernel_build"


def test_the_committed_binary_is_its_sources_built():
    """Debian 12's clang 14 builds the same bytes from wasm/*.c: what ships is what the
    sources say (./dev test installs clang-14 and lld-14; a machine without them skips)."""
    if kernel_build.toolchain() is None:
        if os.environ.get("CI"):
            pytest.fail(f"no {' or '.join(kernel_build.CLANG)}: ./dev test installs clang-14 and lld-14")
        pytest.skip(f"no {' or '.join(kernel_build.CLANG)} (apt-get install clang-14 lld-14)")
    assert wasm.WASM.read_bytes() == kernel_build.build(), "rebuild: python -m widgets_py.accel.kernel_build"


def test_the_binary_exports_run_and_starts_programs_past_its_stack():
    host = WasmtimeHost()
    assert host.heap == wasm.STACK == 4 * wasm.HEAP


# ---- programs: layout and encoding ---------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 9), st.integers(0, 20), st.integers(0, 8)),
                min_size=1, max_size=30))
def test_buffers_alive_at_once_never_share_memory(spans):
    """Each buffer from its first op to its last (or to the end), laid out first-fit among the
    dead: two whose lifetimes meet get disjoint regions, each with its slack (3 rows of its
    width + 8 floats), each on a 64-byte line."""
    buffers = []
    for rows, width, first, length in spans:
        b = Buffer((rows, width))
        b.first, b.last = first, first + length if length < 8 else float("inf")
        buffers.append(b)
    end = lay_out(buffers, 4096)
    for b in buffers:
        assert b.at % program.ALIGN == 0 and b.at >= 4096 and b.at + b.extent() <= end
        assert b.extent() == b.shape[0] * b.shape[1] + 3 * b.shape[1] + 8
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if a.first <= b.last and b.first <= a.last:  # alive at once
                assert a.at + a.extent() <= b.at or b.at + b.extent() <= a.at, (a, b)


def test_a_buffer_that_grows_with_the_cache_lies_after_the_others():
    """Sizes affine in P (a KV cache's length) go last, so the others' addresses do not move."""
    fixed, grows = Buffer((4, 8)), Buffer((2, P + 3, 8))
    for b in (fixed, grows):
        b.first, b.last = 0, 1
    end = lay_out([grows, fixed], 4096)
    assert fixed.at == 4096 and grows.at >= fixed.at + fixed.extent()  # after it, whatever P
    assert isinstance(end, Dim) and end.at(5) == grows.at + 2 * (5 + 3) * 8 + 3 * 8 + 8


def test_a_tape_is_each_ops_code_length_and_fields():
    b = Builder()
    x, y = b.input("x", (3, 5)), b.input("y", (3, 5))
    out = b.new((3, 5))
    b.emit("add", out=out, x=x, y=y, n=15)
    b.emit("divide", x=out, n=15, s=0.5)
    b.phase(out)
    prog = b.program(wasm.HEAP)
    tape_ = prog.phases[0].tape
    assert list(tape_[:6]) == [primitives.CODES["add"], 6, 4 * out.buffer.at, 4 * x.buffer.at, 4 * y.buffer.at, 15]
    assert list(tape_[6:9]) == [primitives.CODES["divide"], 5, 4 * out.buffer.at]
    assert tape_[10].view(np.float32) == np.float32(0.5)
    assert prog.phases[0].at == wasm.HEAP and x.buffer.at >= wasm.HEAP + tape_.size


def test_a_field_that_grows_with_the_cache_is_patched_by_the_kernel_at_each_run():
    """A tape whose fields grow with P starts with a patch op, (index, a, b) per such field:
    the kernel sets each to a + b·p before it runs, so one tape, written once, serves every p
    (here: the last two rows of an input of P + 2 rows)."""
    b = Builder()
    x = b.input("x", (P + 2, 4))
    last = b.new((2, 4))
    b.emit("copy", dst=last, src=Ref(x.buffer, P * 4, (2, 4)), n=8)
    b.phase(last)
    prog = b.program(wasm.HEAP)
    tape_ = prog.phases[0].tape
    assert tape_[0] == primitives.PATCH and tape_[1] == 2 + 3  # one field grows: the source's address
    index, a, slope = tape_[2:5]
    assert tape_[index - 1] == 4 * last.buffer.at and (a, slope) == (4 * x.buffer.at, 4 * 4)
    k = kernel()
    for p in (1, 6, 3):
        rows = np.arange((p + 2) * 4, dtype=np.float32).reshape(p + 2, 4)
        (got,) = k.run(prog, 0, {"x": rows}, p)
        np.testing.assert_array_equal(got, rows[-2:])
    assert sum(1 for _, n in k.host.writes if n == tape_.size) == 1  # the tape, written once


def test_a_dead_buffers_memory_goes_to_the_next_buffer_that_fits():
    """Lifetimes: x and y are read by ops 0 and 1, a lives from op 0 to op 2, b from op 2 on.
    b (twice x's size) takes the memory of x and y, joined once both are dead; c, the size
    of a, takes a's, freed after op 2 (an op's output never shares its inputs' memory)."""
    bd = Builder()
    x, y = bd.input("x", (8,)), bd.input("y", (8,))
    a, b, c = bd.new((8,)), bd.new((24,)), bd.new((8,))
    bd.emit("copy", dst=a, src=x, n=8)  # op 0: x's last
    bd.emit("add", out=a, x=a, y=y, n=8)  # op 1: y's last; no buffer born here
    bd.emit("copy", dst=b, src=a, n=8)  # op 2: a's last
    bd.emit("copy", dst=c, src=b, n=8)  # op 3
    bd.phase(c)
    prog = bd.program(wasm.HEAP)
    region = program.aligned(Buffer((8,)).extent())  # 8 floats, then 8 of slack: 16
    assert region == 16 and program.aligned(Buffer((24,)).extent()) == 2 * region
    assert (x.buffer.at, y.buffer.at, a.buffer.at) == (prog.phases[0].at + 32, prog.phases[0].at + 48, prog.phases[0].at + 64)
    assert b.buffer.at == x.buffer.at and c.buffer.at == a.buffer.at
    assert prog.end == (a.buffer.at + region, 0)


def test_dead_regions_are_joined_with_their_neighbours_and_empty_ones_dropped():
    free = [[32, 16], [0, 16], [60, 0], [16, 16], [64, 1], [80, 4]]
    assert program._merged(free) == [[0, 48], [64, 1], [80, 4]]


def test_a_tapes_length_is_known_before_its_layout_and_its_addresses_fit_in_int32():
    """builder.program() places the buffers after the tapes, whose lengths `length` gives
    before any place is known: exactly the tape encode() writes, patch op included."""
    bd = Builder()
    x = bd.input("x", (P + 2, 4))
    last, total = bd.new((2, 4)), bd.new((2, 4))
    bd.emit("copy", dst=last, src=Ref(x.buffer, P * 4, (2, 4)), n=8)
    bd.emit("add", out=total, x=last, y=last, n=P + 8)
    bd.phase(total)
    prog = bd.program(wasm.HEAP)
    assert program.length(bd.ops) == prog.phases[0].tape.size == (2 + 3 * 2) + (2 + 3) + (2 + 4)  # patch, copy, add
    assert program.length(bd.ops[:1]) == program.encode(bd.ops[:1]).size == (2 + 3) + (2 + 3)
    fixed = [("copy", {"dst": None, "src": None, "n": 8}, frozenset())]
    assert program.length(fixed) == program.encode(fixed).size == 5
    assert list(program.encode([("copy", {"dst": None, "src": None}, frozenset())])) == [primitives.CODES["copy"], 5, 0, 0, 0]
    for n in (2**31 - 1, -2**31):
        program.encode([("copy", {"dst": None, "src": None, "n": n}, frozenset())])
    with pytest.raises(ValueError, match=r"^copy.n grows with P, but its op did not say so$"):
        program.encode([("copy", {"dst": None, "src": None, "n": P + 1}, frozenset())])
    assert list(program.encode([("copy", {"dst": None, "src": None, "n": Dim(1)}, frozenset())]))[-1] == 1  # P cancelled out
    for n in (2**31, -2**31 - 1):
        with pytest.raises(ValueError, match="^a program reaches past the kernel's 2 GB of addresses$"):
            program.encode([("copy", {"dst": None, "src": None, "n": n}, frozenset())])


def test_a_field_grows_with_P_by_its_size_its_buffers_size_or_its_offset():
    fixed, long = Buffer((8, 4)), Buffer((P + 2, 4))
    assert program.growing("f*", Ref(fixed, P, (1, 4))) and program.growing("f*", Ref(fixed, P * 4, (1, 4)))
    assert not program.growing("f*", Ref(fixed, Dim(4), (1, 4)))  # worked out with P, which cancels out
    assert not program.growing("f*", Ref(fixed, 4, (1, 4))) and not program.growing("f*", None)
    assert program.growing("f*", Ref(long, 0, (2, 4)))
    assert program.growing("i", P + 1) and not program.growing("i", Dim(3)) and not program.growing("i", 3)


def test_an_item_of_a_ref_and_what_cannot_be_read_back():
    cache = Ref(Buffer((2, 3, 5)), 7, (2, 3, 5))  # [layers, rows, width]
    layer = cache[1]
    assert (program.dim(layer.offset).a, layer.shape, layer.rows, layer.width) == (7 + 15, (3, 5), 3, 5)
    assert cache[1][2].shape == (5,) and program.dim(cache[1][2].offset).a == 7 + 15 + 10
    with pytest.raises(TypeError, match=r"^a size grows with P at most linearly: 0 \+ 1·P × 0 \+ 1·P$"):
        P * P
    grown = Buffer((P + 2, 4))
    grown.at = Dim(64, 16)
    with pytest.raises(ValueError, match=r"^Buffer\(.*\) is read back, but its place or size grows with the cache's length$"):
        program.place(Ref(grown, 0, (2, 4)))  # its place grows, its shape does not
    still = Buffer((2, 4))
    still.at = 64
    assert program.place(Ref(still, 4, (4,))) == (68, (4,))


def test_an_op_refuses_fields_it_has_not_a_value_overwritten_in_place_and_an_unended_phase():
    b = Builder()
    x = b.input("x", (4,))
    with pytest.raises(TypeError, match=r"add has no field w, z: it has f\* out, f\* x, f\* y, i n"):
        b.emit("add", out=x, x=x, z=x, w=x, n=4)
    b.emit("divide", x=x, n=4, s=2.0)
    halved = b.in_place(x, "divide")
    with pytest.raises(ValueError, match=r"Buffer\(4,\) was overwritten in place by divide: use that op's result"):
        b.emit("copy", dst=b.new((4,)), src=x, n=4)
    b.emit("copy", dst=b.new((4,)), src=halved, n=4)
    with pytest.raises(RuntimeError, match="^the program's last phase has not ended$"):
        b.program(wasm.HEAP)  # ops after the last phase()
    b.phase(halved)
    b.program(wasm.HEAP)
    with pytest.raises(RuntimeError, match="^the program's last phase has not ended$"):
        Builder().program(wasm.HEAP)  # no phase at all


def test_an_input_lies_apart_from_what_the_ops_before_its_last_read_write():
    """An input is written before the first op: its memory is not a buffer the first ops
    write and then let die (lay_out: inputs are born before op 0)."""
    b = Builder()
    x, y = b.input("x", (64,)), b.input("y", (64,))
    b.emit("copy", dst=b.new((64,)), src=y, n=64)  # written by op 0 and never read: dead after it
    out = b.new((64,))
    b.emit("copy", dst=out, src=x, n=64)  # x read at op 1
    b.phase(out)
    x_values = np.arange(64, dtype=np.float32)
    (got,) = kernel().run(b.program(wasm.HEAP), 0, {"x": x_values, "y": -x_values})
    np.testing.assert_array_equal(got, x_values)


def test_an_input_the_program_writes_is_written_again_at_each_run():
    """A program run again keeps an unchanged read-only input where it lies, but not one its
    ops overwrite: exp_rows on the same read-only array twice, the same answer."""
    x = (4 * np.random.default_rng(4).standard_normal((6, 30))).astype(np.float32)
    x.flags.writeable = False
    k = kernel()
    first = k.exp_rows(x)
    for a, b in zip(first, k.exp_rows(x)):
        np.testing.assert_array_equal(a, b)


def test_one_program_serves_every_length_of_a_kv_cache():
    """A decode step's program is compiled once: its tape is base + P·slope, P the cache's
    length, and every step's logits are numpy's in float64 within rounding."""
    cfg = gpt.GPTConfig(vocab=11, d=12, layers=2, heads=3, context=20, mlp=2)
    p = perturbed(cfg, 3)
    tokens = np.random.default_rng(3).integers(0, 11, 14)
    with on_kernel() as run:
        _, kv = gpt.extend(p, cfg, tokens[:3])
        before = len(run.backend.programs)
        steps = []
        for t in tokens[3:]:
            step, kv = gpt.extend(p, cfg, [t], kv)
            steps.append(step)
        assert len(run.backend.programs) == before + 1
    _, kv = gpt.extend(float64(p), cfg, tokens[:3])
    for t, step in zip(tokens[3:], steps):
        want, kv = gpt.extend(float64(p), cfg, [t], kv)
        np.testing.assert_allclose(step, want, rtol=1e-4, atol=1e-4)


def test_a_programs_weights_stay_in_the_kernel_while_it_runs_again():
    """Decode steps run one program again and again with the same read-only weights: they are
    copied into the kernel once; another program in between, or other weights, copies them
    again (and the steps' logits do not depend on which)."""
    from widgets_py.engine import session

    cfg, p, _ = session.load("mini")
    weights = sum(v.size for v in p.values())
    k = kernel()
    with on_kernel(k):
        _, kv = gpt.extend(p, cfg, [1, 2, 3])
        _, kv = gpt.extend(p, cfg, [4], kv)
        copies = lambda: sum(1 for _, n in k.host.writes if n == weights)  # noqa: E731
        before = copies()
        steps = []
        for t in (5, 6, 7):
            step, kv = gpt.extend(p, cfg, [t], kv)
            steps.append(step)
        assert copies() == before  # three steps, no copy
        k.nn(np.ones((8, 8), np.float32), np.ones((8, 8), np.float32))  # another program
        again, _ = gpt.extend(p, cfg, [8], kv)
        assert copies() == before + 1
        trained = {name: v.copy() for name, v in p.items()}  # writable: copied at every run
        gpt.extend(trained, cfg, [8], kv)
        gpt.extend(trained, cfg, [8], kv)
        assert copies() == before + 3
    with on_kernel():  # a fresh kernel, every step copying its weights in
        _, kv = gpt.extend(p, cfg, [1, 2, 3, 4])
        for t, step in zip((5, 6, 7), steps):
            want, kv = gpt.extend(p, cfg, [t], kv)
            np.testing.assert_array_equal(step, want)


# ---- products ----------------------------------------------------------------------------

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


def test_natively_there_is_no_browser_kernel_and_nothing_was_tried():
    """CPython multiplies with BLAS: the browser's kernel is not even attempted (its loading,
    BrowserHost, is covered in Chromium: the training test requires the wasm-simd path)."""
    assert wasm.browser_kernel() == (None, None)


def test_a_browser_without_webassembly_simd_keeps_einsum(monkeypatch):
    """Where the browser cannot compile the kernel (no SIMD: Safari before 16.4), loading
    gives None, and says why, so the model keeps numpy's einsum."""
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
    monkeypatch.setattr(wasm.sys, "platform", "emscripten")
    assert wasm.browser_kernel() == (None, "CompileError: invalid opcode 0xfd (SIMD)")
    fallback = backend.for_runtime()  # wasm.sys is sys: the backend module sees emscripten too
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


# ---- the model's passes ----------------------------------------------------------------

def perturbed(cfg, seed, scale=0.3):
    rng = np.random.default_rng(seed)
    return {k: v + np.float32(scale) * rng.standard_normal(v.shape, np.float32) for k, v in gpt.init(cfg, seed % 97).items()}


def float64(p):
    return {k: v.astype(np.float64) for k, v in p.items()}


def passes(p, cfg, fn, **inputs):
    """fn's outputs on the kernel (wasmtime) and in numpy's float64 (eager.py): the same pass."""
    from widgets_py.maths.eager import Eager

    got = compiled.Compiled(Backend(kernel=kernel(), einsum=True), p, cfg, gpt.shapes(cfg)).call(fn, **inputs)
    as64 = {k: None if v is None else v.astype(np.float64) if k != "past" else [tuple(m.astype(np.float64) for m in kv) for kv in v]
            for k, v in inputs.items()}
    return got, Eager(float64(p), cfg).call(fn, **as64)


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 3), t=st.integers(1, 11), heads=st.integers(1, 3), hs=st.integers(1, 9),
       layers=st.integers(1, 2), mlp=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_the_forward_is_numpys_in_float64_within_rounding(batch, t, heads, hs, layers, mlp, seed):
    """Any width (odd ones: the SIMD loops' tails), heads of any size, sequences of any
    length side by side: numpy's layers in float64 agree within float32 rounding. Widths from
    4: below, a layer norm's output (±1 at a width of 2) turns rounding in the inputs into
    errors past any float32 tolerance (see the backward's test)."""
    assume(heads * hs >= 4)
    cfg = gpt.GPTConfig(vocab=11, d=heads * hs, layers=layers, heads=heads, context=t, mlp=mlp)
    x = np.random.default_rng(seed).standard_normal((batch, t, cfg.d)).astype(np.float32)
    got, ref = passes(perturbed(cfg, seed), cfg, gpt.transformer, x=x)
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(past=st.integers(0, 9), t=st.integers(1, 9), heads=st.integers(1, 3), hs=st.integers(1, 9),
       layers=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_the_forward_after_a_kv_cache_is_numpys_in_float64(past, t, heads, hs, layers, seed):
    """New positions after `past` cached ones (a decode step, a speculative verification):
    the output and the cache's new keys and values, against numpy's layers in float64."""
    assume(heads * hs >= 4)
    cfg = gpt.GPTConfig(vocab=11, d=heads * hs, layers=layers, heads=heads, context=past + t)
    rng = np.random.default_rng(seed)
    cache = None if past == 0 else [tuple(rng.standard_normal((1, heads, past, hs)).astype(np.float32) for _ in "kv")
                                    for _ in range(layers)]
    x = rng.standard_normal((1, t, cfg.d)).astype(np.float32)
    (xf, new), (ref_xf, ref_new) = passes(perturbed(cfg, seed), cfg, gpt.extension, x=x, past=cache)
    np.testing.assert_allclose(xf, ref_xf, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(new, ref_new, rtol=1e-4, atol=1e-5)


def test_a_kv_cache_holds_one_sequence():
    cfg = gpt.GPTConfig(vocab=11, d=8, layers=1, heads=2, context=4)
    run = compiled.Compiled(Backend(kernel=kernel(), einsum=True), gpt.init(cfg, 0), cfg, gpt.shapes(cfg))
    with pytest.raises(ValueError, match="a KV cache holds one sequence, not 2"):
        run.call(gpt.extension, x=np.zeros((2, 3, 8), np.float32), past=None)


def test_token_ids_outside_the_vocabulary_are_refused():
    cfg = gpt.GPTConfig(vocab=7, d=8, layers=1, heads=2, context=6)
    p, zeros = gpt.init(cfg, 0), np.zeros((2, 6), int)
    with on_kernel():
        with pytest.raises(ValueError, match=r"targets outside the vocabulary \(0 to 6\)"):
            gpt.loss(p, cfg, zeros, np.full((2, 6), 7))
        with pytest.raises(ValueError, match="idx outside the vocabulary"):
            gpt.runner(p, cfg).start(gpt.training, gpt.training_backward, x=np.zeros((2, 6, 8), np.float32),
                                         idx=np.full((2, 6), -1), targets=zeros)


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 3), t=st.integers(1, 9), heads=st.integers(1, 3), hs=st.sampled_from([2, 4, 6, 8]),
       layers=st.integers(1, 2), mlp=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_the_backward_gives_numpys_gradients_in_float64(batch, t, heads, hs, layers, mlp, seed):
    """A training step in two calls (the forward and the loss head, then every block's
    backward and the embedding's) at widths that are not multiples of 4 too (the positions
    need an even one), any head size and length: every parameter's gradient is numpy's in
    float64 within rounding. Not at a width of 2: a layer norm over two features outputs ±1
    whatever its input, and its gradient is a difference of nearly equal terms (numpy's own
    float32 misses float64 by 2e-4 there)."""
    assume(heads * hs >= 4)
    cfg = gpt.GPTConfig(vocab=13, d=heads * hs, layers=layers, heads=heads, context=t, mlp=mlp)
    p = perturbed(cfg, seed, 0.2)
    rng = np.random.default_rng(seed)
    idx, targets = rng.integers(0, cfg.vocab, (batch, t)), rng.integers(0, cfg.vocab, (batch, t))
    ref = gpt.backward(float64(p), cfg, gpt.forward(float64(p), cfg, idx, targets)[2])
    with on_kernel():
        got = gpt.backward(p, cfg, gpt.forward(p, cfg, idx, targets)[2])
    assert got.keys() == ref.keys()
    scale = max(np.abs(g).max() for g in ref.values())  # a tiny gradient is a difference of larger terms
    for name in ref:
        assert got[name].dtype == np.float32 and got[name].shape == ref[name].shape, name
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-5 * scale, err_msg=name)


def test_what_training_keeps_stays_put_under_products_and_goes_with_the_next_pass():
    """The training forward leaves the backward's inputs in the kernel's memory: products and
    exponentials run past them meanwhile, and any other pass makes them stale, which the
    backward and the caches refuse rather than read what another pass wrote there."""
    cfg = gpt.GPTConfig(vocab=11, d=8, layers=2, heads=2, context=5, mlp=2)
    p = gpt.init(cfg, 4)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 11, (2, 5))
    k = kernel()
    with on_kernel(k):
        run = gpt.forward(p, cfg, idx, idx)[2]
        before = {name: run.caches[name] for name in run.caches}
        big = rng.standard_normal((96, 96)).astype(np.float32)  # its operands reach far past the forward's buffers
        np.testing.assert_allclose(k.nn(big, big), big.astype(np.float64) @ big, rtol=1e-4, atol=1e-3)
        k.exp_rows(big)
        after = gpt.forward(p, cfg, idx, idx)[2]  # a fresh forward's caches, read out again
        for name, cache in before.items():
            for x, y in zip(cache if isinstance(cache, tuple) else (cache,), after.caches[name] if isinstance(cache, tuple) else (after.caches[name],)):
                np.testing.assert_array_equal(x, y, err_msg=name)
        grads = gpt.backward(p, cfg, after)
        with pytest.raises(RuntimeError, match="another pass"):  # read once
            gpt.backward(p, cfg, after)
        run = gpt.forward(p, cfg, idx, idx)[2]
        gpt.hidden_states(p, cfg, idx)  # another pass
        for stale in (lambda: run.caches["h0.qkv"], lambda: gpt.backward(p, cfg, run)):
            with pytest.raises(RuntimeError, match="another pass"):
                stale()
        run = gpt.forward(p, cfg, idx, idx)[2]
        k.nn(big, big)  # a product between the two calls is not another pass
        again = gpt.backward(p, cfg, run)
    for name in grads:
        np.testing.assert_array_equal(grads[name], again[name], err_msg=name)


def test_the_embeddings_gradient_is_numpys_add_at_bit_for_bit():
    """The scatter adds each row of its source to its token's row, in row order: np.add.at's
    sums, bit for bit, repeated tokens included."""
    rng = np.random.default_rng(5)
    ids, src, start = rng.integers(0, 7, 18), rng.standard_normal((18, 9)).astype(np.float32), rng.standard_normal((7, 9)).astype(np.float32)
    b = Builder()
    dst = b.input("dst", (7, 9))
    b.emit("scatter", dst=dst, ids=b.input("ids", (18,)), src=b.input("src", (18, 9)), rows=18, c=9)
    b.phase(b.in_place(dst, "scatter"))
    (got,) = kernel().run(b.program(wasm.HEAP), 0, {"dst": start, "ids": ids, "src": src})
    want = start.copy()
    np.add.at(want, ids, src)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 70), steps=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_adamw_in_the_kernel_is_numpys_to_the_bit(n, steps, seed):
    """train.AdamW's step through the kernel (the browser's) and through numpy (natively):
    the same parameters and moments, bit for bit, after each of several steps, with the
    decoupled decay on matrices only, at sizes that are not multiples of 4."""
    from widgets_py.maths import train

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


def test_the_loss_head_is_the_kernels_pieces_to_the_bit():
    """The tied head and the cross-entropy, forward and backward (logits, softmax, dlogits,
    wte's and xf's gradients), as a program's primitives, give the bits of the kernel's
    products and exponentials called one at a time with numpy between them."""
    cfg = gpt.GPTConfig(vocab=13, d=12, layers=1, heads=3, context=7, mlp=2)
    rng = np.random.default_rng(8)
    p = gpt.init(cfg, 9)
    p["wte"] = p["wte"] + np.float32(0.5) * rng.standard_normal(p["wte"].shape, np.float32)
    xf, targets = rng.standard_normal((4, 7, 12)).astype(np.float32), rng.integers(0, 13, (4, 7))
    t = tape.Tape(cfg, gpt.shapes(cfg), keep=True)
    x_in, ids = t.input("x", xf.shape), t.input("targets", targets.shape)
    logits = t.head(x_in)
    t.phase(logits, *t.cross_entropy(logits, ids))
    dxf = t.head_backward(t.cross_entropy_backward())
    t.phase(dxf, t.g("wte"))
    k = kernel()
    prog = t.program(k.base)
    inputs = {"weights": compiled.packed(Backend(), p, gpt.shapes(cfg)), "x": xf, "targets": targets}
    got_logits, top, total = k.run(prog, 0, inputs)
    got_dxf, dw = k.run(prog, 1, {})
    want = k.nn(xf.reshape(-1, 12), np.ascontiguousarray(p["wte"].T)).reshape(4, 7, 13)
    e, want_top, want_total = k.exp_rows(want)
    dlogits = e / want_total
    np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1, -1)
    dlogits /= targets.size
    for got, ref in ((got_logits, want), (top, want_top), (total, want_total),
                     (dw, k.tn(dlogits.reshape(-1, 13), xf.reshape(-1, 12))), (got_dxf, k.nn(dlogits.reshape(-1, 13), p["wte"]).reshape(4, 7, 12))):
        np.testing.assert_array_equal(got.reshape(ref.shape).view(np.uint32), ref.view(np.uint32))


def test_a_held_out_loss_in_one_call_is_the_kernels_pieces_to_the_bit_and_float64s_within_rounding():
    """gpt.loss through the kernel (the forward, then the head's loss parts where its output
    lies) gives the bits of the forward, the head's product and exp_rows called one by one,
    and numpy's float64 loss within float32 rounding."""
    cfg = gpt.GPTConfig(vocab=13, d=12, layers=2, heads=3, context=7, mlp=2)
    rng = np.random.default_rng(5)
    p = gpt.init(cfg, 3)
    p["wte"] = p["wte"] + np.float32(0.5) * rng.standard_normal(p["wte"].shape, np.float32)  # logits that differ
    idx, targets = rng.integers(0, 13, (5, 7)), rng.integers(0, 13, (5, 7))
    k = kernel()
    with on_kernel(k):
        picked, top, total = gpt.runner(p, cfg).call(gpt.held_out, x=gpt.embed(p, cfg, idx), targets=targets)
        logits = k.nn(gpt.hidden_states(p, cfg, idx).reshape(-1, 12), np.ascontiguousarray(p["wte"].T)).reshape(5, 7, 13)
        got = gpt.loss(p, cfg, idx, targets)
    _, want_top, want_total = k.exp_rows(logits)
    for got_part, ref in ((picked, np.take_along_axis(logits, targets[..., None], -1)), (top, want_top), (total, want_total)):
        np.testing.assert_array_equal(got_part.view(np.uint32), ref.view(np.uint32))
    ref = gpt.loss(float64(p), cfg, idx, targets)
    assert abs(got - ref) < 1e-6 * abs(ref)  # float32 rounding: some 1e-7 here


def test_warming_the_kernel_runs_every_primitive_the_shipped_models_use():
    """backend.warm, which the worker runs when idle so that no widget's first change pays
    for the kernel's first calls, runs every primitive a ReLU and LayerNorm model's passes,
    products and AdamW use (GELU's are a config's choice, a standalone ReLU a variant's)."""
    k = kernel()
    with on_kernel(k):
        backend.warm(session.current().products())
    codes = {code: op for op, code in primitives.CODES.items()}
    assert {codes[c] for c in k.host.calls} == set(primitives.OPS) - {"gelu", "gelu_backward", "relu"}


def test_quantizes_activation_maxima_read_the_kernels_kept_caches():
    """SmoothQuant's activation maxima read each layer's cache after a training-style forward:
    through the kernel they come from its memory (compiled.Kept), numpy's within rounding."""
    from widgets_py.cap15 import quantize
    from widgets_py.engine import session

    cfg, p, _ = session.load("mini")
    ref = quantize.activation_maxima(p, cfg)
    with on_kernel():
        got = quantize.activation_maxima(p, cfg)
    assert got.keys() == ref.keys()
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-5, atol=1e-6 * np.abs(ref[name]).max(), err_msg=name)
