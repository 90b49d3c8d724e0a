"""The mini-GPT's float32 work in a WebAssembly SIMD kernel, for numpy in Pyodide.

Pyodide's numpy has no BLAS and is compiled without SIMD: its fastest products (einsum's row
loops, see layers.py) reach about 4 GFLOP/s here. The kernel (wasm/*.c, built by clang into
the committed wasm/kernel.wasm) multiplies in blocks of 4 rows × 8 columns held in eight
f32x4 registers, about 4× faster at the mini-GPT's shapes (benchmarks/training.py measures
both in the same run), and knows the model's other primitives (norms, attention, softmax,
AdamW...; primitives.OPS). It knows no model: tape.py compiles each pass of gpt.py into a
program of primitives, and `Kernel.run` writes the program's inputs and tape into the
kernel's memory, makes one call, and reads its outputs back (numpy's cost per call in
Pyodide, tens of microseconds some forty times a block, would outweigh this model's
arithmetic). A product alone, a loss's exponentials and AdamW are one-op programs.

Each product sums over k in order, one float32 multiply and add at a time: not BLAS's order,
so natively and in the browser the last bits differ, as they already did with einsum.
`python -m widgets_py.accel.kernel_build` regenerates wasm/ops.h from primitives.OPS and
rebuilds kernel.wasm with Debian's clang 14 (tests/test_kernel.py fails until the committed
binary is its sources built); the tests run the kernel in wasmtime, behind this module's code.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import program
from .builder import Builder
from .primitives import FIELDS
from .program import Program

HERE = Path(__file__).resolve().parent / "wasm"
WASM, HEADER = HERE / "kernel.wasm", HERE / "ops.h"
PAGE = 65536  # bytes in a WebAssembly memory page
STACK = 16384  # bytes below the programs' memory: C's stack (the kernel keeps its values in locals)
HEAP = STACK // 4  # floats: where programs start (the module's __heap_base, tested)
VIEWS = 256  # views of the kernel's memory kept (BrowserHost)


class Kernel:
    """The kernel's calls on a host that holds its memory (the browser's, or wasmtime's)."""

    def __init__(self, host):
        self.host = host
        self.live: Program | None = None  # a program whose later phase reads what it left in memory
        self.last: tuple[Program, dict] | None = None  # the program run last, and its inputs

    @property
    def base(self) -> int:
        """Where a one-op program goes (floats): past what a training forward keeps, so a
        product between it and its backward leaves that in place."""
        return self.live.end[0] if self.live is not None else HEAP

    def run(self, prog: Program, phase: int, inputs: dict[str, np.ndarray], p: int = 0) -> list[np.ndarray]:
        """One phase of a program: its inputs written (the first phase's), its tape run in one
        call, its outputs read back. p: the program's free size (a KV cache's length)."""
        if phase == 0:
            if self.live is not None and prog.start < self.live.end[0]:
                self.live = None  # this program writes over what it kept
            if len(prog.phases) > 1:
                self.live = prog
        elif self.live is not prog:
            raise RuntimeError("the kernel has run another pass since this training forward: what it kept is gone")
        elif phase + 1 == len(prog.phases):
            self.live = None  # read once: what comes next may take its place
        self.host.reserve(prog.end[0] + prog.end[1] * p)
        before = self.last[1] if self.last is not None and self.last[0] is prog else {}
        for name, x in inputs.items():
            at, at_p, floats, floats_p, stays = prog.inputs[name]
            if x.size != floats + floats_p * p:
                raise ValueError(f"{name}: {x.shape} for a program built for {floats} + {floats_p}·P floats (P = {p})")
            if stays and before.get(name) is x and not x.flags.writeable:
                continue  # still there, unchanged: a decode step's weights, the same program each step
            if x.dtype != np.float32:
                x = x.astype(np.int32, copy=False).view(np.float32)  # token ids: int32, as the kernel reads them
            self.host.write(at + at_p * p, x if x.flags.c_contiguous else np.ascontiguousarray(x))
        if phase == 0:
            self.last = (prog, inputs)
        step = prog.phases[phase]
        if not before or phase:  # else the tape is where this program left it (patched in place)
            self.host.write(step.at, step.tape.view(np.float32))
        self.host.run(4 * step.at, step.tape.size, p)
        return [self.read(at, shape) for at, shape in step.outputs]

    def read(self, at: int, shape: tuple) -> np.ndarray:
        """The array of `shape` that lies at `at` (floats): a program's output, or what it kept."""
        out = np.empty(shape, np.float32)
        self.host.read(at, out)
        return out

    # ---- one-op programs ------------------------------------------------------------------

    def nn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., M, K] @ b [..., K, N] -> [..., M, N]; leading axes a batch, pair by pair."""
        *batch, m, k = a.shape
        return self._product(a, b, batch, m, k, b.shape[-1], k, 1)  # A's row i at i·K floats, element p at p

    def tn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., S, M].T @ b [..., S, N] -> [..., M, N]: summed over the S rows, no transpose made."""
        *batch, k, m = a.shape
        return self._product(a, b, batch, m, k, b.shape[-1], 1, m)  # A's row i is a's column i

    def _product(self, a, b, batch, m, k, n, sa_i, sa_p):
        if b.shape[:-2] != tuple(batch) or b.shape[-2] != k:
            raise ValueError(f"shapes {a.shape} and {b.shape} do not multiply")
        _float32(a, b)
        count = math.prod(batch)  # not np.prod: numpy's Python-level wrappers cost more in Pyodide
        prog = _product(count * m * k, count * k * n, m, k, n, sa_i, sa_p, count, self.base)
        return self.run(prog, 0, {"a": a, "b": b})[0].reshape(*batch, m, n)

    def exp_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A softmax's parts over the last axis, as a loss needs them: x [..., N] ->
        (exp(x - max) [..., N], max [..., 1], sum of the exponentials [..., 1]). The passes run
        this primitive inside them; alone, it is the tests' handle on it."""
        _float32(x)
        *lead, n = x.shape
        e, top, total = self.run(_exp_rows(math.prod(lead), n, self.base), 0, {"x": x})
        return e.reshape(x.shape), top.reshape(*lead, 1), total.reshape(*lead, 1)

    def adamw(self, p: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, decayed: np.ndarray,
              k1, k2, decay, lr, c1, c2, eps) -> None:
        """train.AdamW's update of p, m, v [n] in place, from g [n], the decay applied where the
        int32 mask `decayed` is -1: numpy's float32 operations in its order, the same bits.
        The scalars are float32 (numpy casts a Python float to the array's type)."""
        _float32(p, m, v, g)
        n = p.size
        if not (m.size == v.size == g.size == decayed.size == n and decayed.dtype == np.int32
                and all(x.flags.c_contiguous for x in (p, m, v))):
            raise ValueError("AdamW's arrays must be contiguous, of one size, the mask int32")
        prog, at = _adamw(n)
        step = prog.phases[0]  # the scalars change every step: written into the tape, not compiled in
        tape = step.tape.copy()
        tape[at:at + 7] = np.array([k1, k2, decay, lr, c1, c2, eps], np.float32).view(np.int32)
        patched = Program(prog.start, (program.Phase(step.at, tape, step.outputs),), prog.inputs, prog.end, {})
        for x, out in zip((p, m, v), self.run(patched, 0, {"p": p, "m": m, "v": v, "g": g, "mask": decayed})):
            x[...] = out


@lru_cache(maxsize=256)
def _product(a_size: int, b_size: int, m, k, n, sa_i, sa_p, count, start) -> Program:
    b = Builder()
    c = b.new((count * m, n))
    b.emit("product", a=b.input("a", (a_size,)), b=b.input("b", (b_size,)), c=c, m=m, k=k, n=n,
           sa_i=sa_i, sa_p=sa_p, count=count)
    b.phase(c)
    return b.program(start)


@lru_cache(maxsize=64)
def _exp_rows(rows: int, n: int, start: int) -> Program:
    b = Builder()
    x, stats = b.input("x", (rows, n)), b.new((2, rows))
    b.emit("softmax", x=x, stats=stats, rows=rows, n=n, tq=1, offset=n - 1, norm=0, scale=1.0)
    b.phase(b.in_place(x, "softmax"), program.Ref(stats.buffer, 0, (rows,)), program.Ref(stats.buffer, rows, (rows,)))
    return b.program(start)


@lru_cache(maxsize=16)
def _adamw(n: int) -> tuple[Program, int]:
    """AdamW's program over n floats, and where its first scalar lies in the tape."""
    b = Builder()
    p, m, v = (b.input(name, (n,)) for name in "pmv")
    b.emit("adamw", p=p, m=m, v=v, g=b.input("g", (n,)), mask=b.input("mask", (n,)), n=n)
    b.phase(*(b.in_place(x, "AdamW") for x in (p, m, v)))
    names = [name for _, name in FIELDS["adamw"]]
    return b.program(HEAP), 2 + names.index("k1")


def _float32(*xs) -> None:
    if any(x.dtype != np.float32 for x in xs):
        raise TypeError(f"the kernel computes in float32, not {', '.join(str(x.dtype) for x in xs)}")


class BrowserHost:
    """The kernel instantiated by the browser's WebAssembly, from Pyodide: copies through
    JsBuffer.assign / assign_to (Pyodide's public API for buffers)."""

    def __init__(self, wasm: bytes):
        from js import Float32Array, WebAssembly
        from pyodide.ffi import to_js

        self._f32 = Float32Array
        exports = WebAssembly.Instance.new(WebAssembly.Module.new(to_js(wasm))).exports
        self.memory, self.run = exports.memory, exports.run
        self.floats = Float32Array.new(self.memory.buffer)
        self.capacity = self.floats.length  # kept as a Python int: a JS property read per call costs
        self.views = {}  # (offset, size) -> Float32Array view: the same shapes recur every step

    def reserve(self, floats: int) -> None:
        if floats > self.capacity:
            self.memory.grow(-(-(floats - self.capacity) * 4 // PAGE))
            self.floats = self._f32.new(self.memory.buffer)  # growing detaches the old views
            self.capacity = self.floats.length
            self.views.clear()

    def view(self, at: int, size: int):
        """A view of the kernel's memory, kept: making one per copy was half a call's fixed cost."""
        v = self.views.get((at, size))
        if v is None:
            if len(self.views) >= VIEWS:
                self.views.clear()
            v = self.views[at, size] = self.floats.subarray(at, at + size)
        return v

    def write(self, at: int, x: np.ndarray) -> None:
        self.view(at, x.size).assign(x)

    def read(self, at: int, out: np.ndarray) -> None:
        self.view(at, out.size).assign_to(out)


def browser_kernel() -> tuple[Kernel | None, str | None]:
    """(the kernel in Pyodide, None), or (None, why not): not in a browser (no reason: none
    is tried), or no WebAssembly SIMD there (then accel.backend keeps einsum)."""
    if sys.platform != "emscripten":
        return None, None
    try:
        return Kernel(BrowserHost(WASM.read_bytes())), None
    except Exception as e:  # a browser without WebAssembly SIMD (Safari < 16.4) compiles nothing
        return None, f"{type(e).__name__}: {e}"
