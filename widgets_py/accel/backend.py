"""Who runs the mini-GPT, for one session (engine.session): one object owns the choice and
answers the maths' question (maths.products: the products, and who runs a model's passes)
instead of module-level switches.

Natively numpy has BLAS: eager.py runs the model's layers, products are `@` (`compiled` asks
`runs` which of eager.py and compiled.py runs a model's passes). Pyodide's numpy
has no BLAS: its matmul falls back to a loop that walks the right-hand matrix down its columns
and accumulates through memory. There the model's passes run on kernel.py's WebAssembly SIMD
kernel, compiled from the same model code (tape.py, compiled.py), one call each; products
outside them (a head's logits) go to the kernel too. Where it cannot load (no WebAssembly
SIMD: Safari before 16.4; `failure` says why), einsum's two faster loops over contiguous rows
stand in: "axpy" (out[i, :] += a[i, k] * b[k, :]) and "dot" (out[i, n] = a[i, :] · bt[n, :],
accumulated in a register); dot wins when the summed axis is at least as long as the output
row, axpy otherwise; both beat matmul 1.5-3× (benchmarks/training.py measures the peak of
each). Same products, summed in another float32 order.

Tests build the backend they want (`Backend(kernel=wasm_host.kernel(), einsum=True)`, the
browser's path on wasmtime) and run under a session that holds it.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..maths import gpt
from . import kernel as wasm
from . import tape
from .compiled import Compiled

# A kernel call costs 20-30 us whatever its size (copies in and out through JavaScript): it
# wins from about this many multiply-adds (measured in Pyodide: 8-16 rows × 32 × 96 break even)
KERNEL_MACS = 1 << 15
FEW_ROWS = 4  # up to this many rows (a decode step), matmul's small fixed cost wins instead


# Which configs the kernel's programs compute: every field a size, or one of the choices its
# primitives know (tape.py); any other is refused (`refusal` says why) and runs numpy's layers,
# their products still on the kernel. A field added to GPTConfig is refused until tape.py
# knows it.
SIZES = gpt.SIZES  # the programs are laid out for them
CHOICES = {"activation": tape.ACTIVATIONS, "norm": tuple(tape.NORMS)}


@lru_cache(maxsize=64)  # asked at every pass (a decode step's): configs are frozen
def refusal(cfg) -> str | None:
    """Why the kernel's programs cannot run `cfg` (a gpt.GPTConfig), or None if they can."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name in SIZES:
            continue
        if f.name not in CHOICES:
            return f"GPTConfig.{f.name}: a field the kernel does not know"
        if value not in CHOICES[f.name]:
            return f"GPTConfig.{f.name}={value!r}: the kernel computes {', '.join(map(repr, CHOICES[f.name]))}"
    return None


@dataclass(eq=False)
class Backend:
    kernel: wasm.Kernel | None = None  # the WebAssembly SIMD kernel (Pyodide), or None
    einsum: bool = False  # numpy without BLAS: einsum's loops where the kernel does not run
    failure: str | None = None  # why the browser's kernel did not load
    kernel_macs: int = KERNEL_MACS  # a product goes to the kernel from this size (tests: 0, every one)
    packed: dict[int, tuple[dict, np.ndarray]] = field(default_factory=dict)  # id(p) -> (p, its vector), read-only p
    programs: dict = field(default_factory=dict)  # compiled passes (compiled.py), by pass, model, shapes

    @property
    def path(self) -> str:
        """"blas" (natively), "wasm-simd" or "einsum" (Pyodide)."""
        return "blas" if not self.einsum else "einsum" if self.kernel is None else "wasm-simd"

    def takes(self, *xs: np.ndarray) -> bool:
        """Whether the kernel runs on these arrays (float32 only: the tests' float64 model runs numpy)."""
        return self.kernel is not None and all(x.dtype == np.float32 for x in xs)

    def runs(self, cfg, *xs: np.ndarray) -> bool:
        """Whether model `cfg`'s passes on these arrays run on the kernel (refusal: why not)."""
        return self.takes(*xs) and refusal(cfg) is None

    def compiled(self, p, cfg):
        """The kernel's programs for model cfg's passes with parameters p where they run
        (compiled.py); None elsewhere (numpy's layers run them: eager.py)."""
        return Compiled(self, p, cfg, gpt.shapes(cfg)) if self.runs(cfg, p["wte"]) else None

    # ---- matrix products: BLAS natively; in Pyodide the kernel, or einsum's contiguous loops
    def mm(self, a, b):
        """a [..., K] @ b [K, N] -> [..., N]."""
        if not self.einsum:
            return a @ b
        return self._product(a.reshape(-1, a.shape[-1]), b=b).reshape(*a.shape[:-1], b.shape[1])

    def mm_nt(self, a, b):
        """a [..., N] @ b [K, N].T -> [..., K]: the tied head, and gradients through a weight."""
        if not self.einsum:
            return a @ b.T
        return self._product(a.reshape(-1, a.shape[-1]), bt=b).reshape(*a.shape[:-1], b.shape[0])

    def mm_tn(self, a, b):
        """a [M, K].T @ b [M, N] -> [K, N]: a weight gradient, summed over the M rows."""
        if not self.einsum:
            return a.T @ b
        if a.size * b.shape[1] >= self.kernel_macs and self.takes(a, b):
            return self.kernel.tn(a, b)
        return np.einsum("km,nm->kn", np.ascontiguousarray(a.T), np.ascontiguousarray(b.T))  # dot: M is long

    def _product(self, a2, b=None, bt=None):
        """a2 [M, K] @ [K, N], the right side given as b [K, N] or as bt [N, K]."""
        if a2.shape[0] <= FEW_ROWS:
            return a2 @ (b if b is not None else bt.T)
        n = b.shape[1] if b is not None else bt.shape[0]
        if a2.size * n >= self.kernel_macs and self.takes(a2, b if b is not None else bt):
            return self.kernel.nn(a2, b if b is not None else np.ascontiguousarray(bt.T))  # bt: a weight, small
        if a2.shape[1] >= n:  # long sums, narrow output: contiguous dot products
            return np.einsum("ik,nk->in", a2, np.ascontiguousarray(b.T) if bt is None else bt)
        return np.einsum("ik,kn->in", a2, np.ascontiguousarray(bt.T) if b is None else b)  # row updates


def for_runtime() -> Backend:
    """This runtime's backend: BLAS natively; in Pyodide the kernel, or einsum if it cannot load."""
    if sys.platform != "emscripten":
        return Backend()
    kernel, failure = wasm.browser_kernel()
    return Backend(kernel=kernel, einsum=True, failure=failure)


def warm(backend: Backend) -> None:
    """Every pass of the browser's kernel once, on a toy model: V8 starts a WebAssembly
    function in its baseline tier and sets up its first calls, which a widget's first change
    would otherwise pay (the worker calls this when idle, after the widgets' modules)."""
    kernel = backend.kernel
    if kernel is None:
        return
    cfg = gpt.GPTConfig(vocab=8, d=32, layers=1, heads=4, context=32)  # the mini-GPT's widths: loops that run
    p = gpt.init(cfg, 0)  # long enough for V8 to optimise them
    idx = np.arange(128).reshape(4, 32) % cfg.vocab  # [B, T]
    gpt.loss(p, cfg, idx, idx)  # forward and the held-out loss's head
    gpt.backward(p, cfg, gpt.forward(p, cfg, idx, idx)[2])  # training's forward, loss head and backward
    gpt.extend(p, cfg, [1, 2, 3], gpt.extend(p, cfg, [4, 5])[1])  # prefill, then decode after a cache
    kernel.nn(p["wte"], p["wte"].T.copy())  # a product alone (sampling's head, at its sizes)
    zeros = np.zeros(8, np.float32)
    kernel.adamw(zeros.copy(), zeros.copy(), zeros.copy(), zeros, np.zeros(8, np.int32), 0.1, 0.01, 1.0, 0.01, 0.1, 0.01, 1e-8)
