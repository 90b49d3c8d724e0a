"""float32 matrix products by a WebAssembly SIMD kernel, for numpy in Pyodide.

Pyodide's numpy has no BLAS and is compiled without SIMD: its fastest products (einsum's
row loops, see gpt.py) reach about 4 GFLOP/s here. `sgemm.wat` computes C = A @ B in blocks
of 4 rows × 8 columns held in eight f32x4 registers, about 4× faster at the mini-GPT's shapes
(benchmarks/training.py measures both in the same run). It runs in a memory of its own: a
product copies A and B in and C out, at memcpy speed, a small part of the product's time.

The kernel is the committed `sgemm.wasm`, assembled from `sgemm.wat` (`python -m
widgets_py.models.sgemm` re-assembles it; tests/test_sgemm.py checks the two agree and runs
the kernel through this module's code in wasmtime, against float64 products). Each output
is summed over k in order, one float32 multiply and add at a time: not BLAS's order, so
natively and in the browser the last bits differ, as they already did with einsum.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WAT, WASM = HERE / "sgemm.wat", HERE / "sgemm.wasm"
PAGE = 65536  # bytes in a WebAssembly memory page
VIEWS = 256  # views of the kernel's memory kept (three per product shape)


def layout(m: int, k: int, n: int, count: int = 1) -> tuple[int, int, int]:
    """Offsets (in floats) of B and C after A at 0, and the floats the products need.

    The kernel reads up to 3 rows past A (a last block of 4 rows), 7 floats past B's rows (a
    last block of 8 columns) and writes as far past C: each region is followed by slack, and
    what is read or written there only reaches rows and columns nobody reads back.
    """
    slack = 3 * max(m, k, n) + 8
    b = count * m * k + slack
    c = b + count * k * n + slack
    return b, c, c + count * m * n + slack


class Kernel:
    """C = A @ B on a host that holds the kernel's memory (the browser's, or wasmtime's).
    Leading axes are a batch: one call multiplies every pair, as numpy's matmul does."""

    def __init__(self, host):
        self.host = host

    def nn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., M, K] @ b [..., K, N] -> [..., M, N]."""
        *batch, m, k = a.shape
        n = b.shape[-1]
        return self._product(a, b, batch, m, k, n, 4 * k, 4)  # A's row i at i·K floats, element p at p

    def tn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., S, M].T @ b [..., S, N] -> [..., M, N]: summed over the S rows, no transpose made."""
        *batch, k, m = a.shape
        n = b.shape[-1]
        return self._product(a, b, batch, m, k, n, 4, 4 * m)  # A's row i is a's column i

    def _product(self, a, b, batch, m, k, n, row_bytes, step_bytes):
        if b.shape[:-2] != tuple(batch) or b.shape[-2] != k:
            raise ValueError(f"shapes {a.shape} and {b.shape} do not multiply")
        if a.dtype != np.float32 or b.dtype != np.float32:
            raise TypeError(f"the kernel multiplies float32, not {a.dtype} and {b.dtype}")
        count = math.prod(batch)  # not np.prod: numpy's Python-level wrappers cost more in Pyodide
        ob, oc, end = layout(m, k, n, count)
        self.host.reserve(end)
        self.host.write(0, a if a.flags.c_contiguous else np.ascontiguousarray(a))
        self.host.write(ob, b if b.flags.c_contiguous else np.ascontiguousarray(b))
        self.host.sgemm(0, 4 * ob, 4 * oc, m, k, n, row_bytes, step_bytes, count)
        out = np.empty((*batch, m, n), np.float32)
        self.host.read(oc, out)
        return out


class BrowserHost:
    """The kernel instantiated by the browser's WebAssembly, from Pyodide: copies through
    JsBuffer.assign / assign_to (Pyodide's public API for buffers)."""

    def __init__(self, wasm: bytes):
        from js import Float32Array, WebAssembly
        from pyodide.ffi import to_js

        self._f32 = Float32Array
        exports = WebAssembly.Instance.new(WebAssembly.Module.new(to_js(wasm))).exports
        self.memory, self.sgemm = exports.memory, exports.sgemm
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


FAILURE = None  # why the browser kernel could not load (then gpt.py keeps einsum)


def browser_kernel() -> Kernel | None:
    """The kernel in Pyodide, or None (not in a browser, or no WebAssembly SIMD there)."""
    global FAILURE
    if sys.platform != "emscripten":
        return None
    try:
        return Kernel(BrowserHost(WASM.read_bytes()))
    except Exception as e:  # a browser without WebAssembly SIMD (Safari < 16.4) compiles nothing
        FAILURE = f"{type(e).__name__}: {e}"
        return None


def assemble() -> bytes:
    """sgemm.wat -> WebAssembly bytes (wasmtime's assembler: a test and authoring tool only)."""
    import wasmtime

    return bytes(wasmtime.wat2wasm(WAT.read_text()))


if __name__ == "__main__":
    WASM.write_bytes(assemble())
    print(f"{WASM.name}: {WASM.stat().st_size} bytes from {WAT.name}")
