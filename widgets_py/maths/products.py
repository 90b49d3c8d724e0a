"""Who computes the mini-GPT's matrix products and runs its passes: the one question the maths
asks of its runtime (`current()`), and numpy's answer where nobody provides another.

The maths is pure numpy and knows no runtime. Natively `@` goes to BLAS and numpy's layers run
the model (eager.py). Pyodide's numpy has no BLAS, so there the acceleration layer
(widgets_py.accel.backend) answers instead: a WebAssembly SIMD kernel and passes compiled for
it. Whoever runs the code provides the answer for a block (engine.session does, for a build, a
test or the browser's worker), the way decimal.localcontext sets a precision for a block.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Protocol

import numpy as np


class Products(Protocol):
    path: str  # "blas" (natively), "wasm-simd" or "einsum" (Pyodide)
    kernel: Any  # what runs the optimiser's update in one call (accel.kernel.Kernel), or None

    def mm(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., K] @ b [K, N] -> [..., N]."""

    def mm_nt(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., N] @ b [K, N].T -> [..., K]: the tied head, and gradients through a weight."""

    def mm_tn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [M, K].T @ b [M, N] -> [K, N]: a weight gradient, summed over the M rows."""

    def compiled(self, p: dict, cfg) -> Any:
        """What runs model cfg's passes with parameters p faster than numpy's layers (eager.Eager's
        interface), or None."""


class Numpy:
    """numpy's products (BLAS natively) and its layers (eager.py)."""

    path = "blas"
    kernel = None

    def mm(self, a, b):
        return a @ b

    def mm_nt(self, a, b):
        return a @ b.T

    def mm_tn(self, a, b):
        return a.T @ b

    def compiled(self, p, cfg):
        return None


NUMPY = Numpy()
_provider: ContextVar[Callable[[], Products]] = ContextVar("products", default=lambda: NUMPY)


def current() -> Products:
    return _provider.get()()


@contextmanager
def provided(provider: Callable[[], Products]):
    """provider() answers current() within the block (called at each question, so that what it
    returns may be made when first asked: the browser's kernel compiles then)."""
    token = _provider.set(provider)
    try:
        yield
    finally:
        _provider.reset(token)


def provide(provider: Callable[[], Products]) -> None:
    """provider() answers current() from now on in this context: a process that is one run
    (the browser's worker, engine.session.start)."""
    _provider.set(provider)
