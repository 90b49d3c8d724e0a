"""Who runs the mini-GPT, for one session (engine.session): one object owns the choice, and
gpt.py asks it (`runner`) instead of module-level switches.

Natively numpy has BLAS: eager.py runs the model's layers, products are `@` (gpt.runner
asks `runs` which of eager.py and compiled.py runs a model's passes). Pyodide's numpy
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

from ..engine import session
from . import kernel as wasm
from . import tape

# A kernel call costs 20-30 us whatever its size (copies in and out through JavaScript): it
# wins from about this many multiply-adds (measured in Pyodide: 8-16 rows × 32 × 96 break even)
KERNEL_MACS = 1 << 15


# Which configs the kernel's programs compute: every field a size, or one of the choices its
# primitives know (tape.py); any other is refused (`refusal` says why) and runs numpy's layers,
# their products still on the kernel. A field added to GPTConfig is refused until tape.py
# knows it.
SIZES = ("vocab", "d", "layers", "heads", "context", "mlp")  # the programs are laid out for them
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

def for_runtime() -> Backend:
    """This runtime's backend: BLAS natively; in Pyodide the kernel, or einsum if it cannot load."""
    if sys.platform != "emscripten":
        return Backend()
    kernel, failure = wasm.browser_kernel()
    return Backend(kernel=kernel, einsum=True, failure=failure)


def current() -> Backend:
    """The session's backend, made for this runtime when first asked."""
    run = session.current()
    if run.backend is None:
        run.backend = for_runtime()
    return run.backend

