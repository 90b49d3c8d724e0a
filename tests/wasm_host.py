"""The SIMD kernel (widgets_py/accel/wasm/kernel.wasm) run natively by wasmtime, behind the
same Kernel code the browser uses: tests exercise its programs outside a browser."""

from __future__ import annotations

import numpy as np
import pytest

from widgets_py.accel import kernel as wasm
from widgets_py.accel import primitives

wasmtime = pytest.importorskip("wasmtime")


class WasmtimeHost:
    def __init__(self, binary: bytes | None = None, fill: float = np.nan):
        self.store = wasmtime.Store()
        module = wasmtime.Module(self.store.engine, binary if binary is not None else wasm.WASM.read_bytes())
        exports = wasmtime.Instance(self.store, module, []).exports(self.store)
        self.memory, self._run = exports["memory"], exports["run"]
        self.heap = exports["__heap_base"].value(self.store)  # bytes
        self.fill = np.float32(fill)  # what fresh memory holds: NaN shows any read of slack that leaks
        self.calls: list[int] = []  # the opcodes of every op run, in order (tests read them)
        self.writes: list[tuple[int, int]] = []  # (at, floats) of every write, in order
        self._poison(0)

    def run(self, tape: int, n: int, p: int) -> None:
        ops = np.frombuffer(self.memory.read(self.store, tape, tape + 4 * n), np.int32)
        at = 0
        while at < n:
            if ops[at] != primitives.PATCH:
                self.calls.append(int(ops[at]))
            at += int(ops[at + 1])
        self._run(self.store, tape, n, p)

    def _poison(self, start_page: int) -> None:
        size = self.memory.data_len(self.store)
        start = start_page * wasm.PAGE
        self.memory.write(self.store, np.full((size - start) // 4, self.fill, np.float32).tobytes(), start)

    def reserve(self, floats: int) -> None:
        have = self.memory.data_len(self.store) // 4
        if floats > have:
            pages = self.memory.size(self.store)
            self.memory.grow(self.store, -(-(floats - have) * 4 // wasm.PAGE))
            self._poison(pages)

    def write(self, at: int, x: np.ndarray) -> None:
        self.writes.append((at, x.size))
        self.memory.write(self.store, x.astype(np.float32, copy=False).tobytes(), 4 * at)

    def read(self, at: int, out: np.ndarray) -> None:
        out[...] = np.frombuffer(self.memory.read(self.store, 4 * at, 4 * (at + out.size)), np.float32).reshape(out.shape)


def kernel(**kw) -> wasm.Kernel:
    return wasm.Kernel(WasmtimeHost(**kw))


def on_kernel(k=None):
    """A session (engine.session) whose products run on `k`, a fresh wasmtime kernel if None,
    the way Pyodide's do: the browser's path, natively. Active within a `with` block."""
    from widgets_py.engine.session import Session
    from widgets_py.accel.backend import Backend

    return Session(backend=Backend(kernel=k if k is not None else kernel(), einsum=True)).active()
