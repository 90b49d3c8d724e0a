"""The SIMD kernel (widgets_py/models/sgemm.wasm) run natively by wasmtime, behind the same
Kernel code the browser uses: tests exercise its products and passes outside a browser."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from widgets_py.models import sgemm

wasmtime = pytest.importorskip("wasmtime")


class WasmtimeHost:
    def __init__(self, wasm: bytes = sgemm.WASM.read_bytes(), fill: float = np.nan):
        self.store = wasmtime.Store()
        exports = wasmtime.Instance(self.store, wasmtime.Module(self.store.engine, wasm), []).exports(self.store)
        self.memory = exports["memory"]
        for name in sgemm.EXPORTS:  # the same functions the browser's host offers, bound to this store
            setattr(self, name, functools.partial(exports[name], self.store))
        self.fill = np.float32(fill)  # what fresh memory holds: NaN shows any read of slack that leaks
        self._poison(0)

    def _poison(self, start_page: int) -> None:
        size = self.memory.data_len(self.store)
        start = start_page * sgemm.PAGE
        self.memory.write(self.store, np.full((size - start) // 4, self.fill, np.float32).tobytes(), start)

    def reserve(self, floats: int) -> None:
        have = self.memory.data_len(self.store) // 4
        if floats > have:
            pages = self.memory.size(self.store)
            self.memory.grow(self.store, -(-(floats - have) * 4 // sgemm.PAGE))
            self._poison(pages)

    def write(self, at: int, x: np.ndarray) -> None:
        self.memory.write(self.store, x.astype(np.float32, copy=False).tobytes(), 4 * at)

    def read(self, at: int, out: np.ndarray) -> None:
        out[...] = np.frombuffer(self.memory.read(self.store, 4 * at, 4 * (at + out.size)), np.float32).reshape(out.shape)


def kernel(**kw) -> sgemm.Kernel:
    return sgemm.Kernel(WasmtimeHost(**kw))


def on_kernel(k=None):
    """A session (engine.session) whose products run on `k`, a fresh wasmtime kernel if None,
    the way Pyodide's do: the browser's path, natively. Active within a `with` block."""
    from widgets_py.engine.session import Session
    from widgets_py.models.backend import Backend

    return Session(backend=Backend(kernel=k if k is not None else kernel(), einsum=True)).active()
