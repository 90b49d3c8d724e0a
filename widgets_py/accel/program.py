"""A program of the browser kernel's primitives (primitives.py): its buffers, their layout in
the kernel's memory, and the int32 tape the kernel runs in one call. builder.py writes
programs (tape.py: gpt's passes); this module lays them out and encodes them:

    [opcode, length, field, field, ...] [opcode, length, ...] ...   (int32)

An address is a byte address in the kernel's memory; a size counts floats; a float field is
its float32 bits. A program may have one free size, `P`, the length of a KV cache (a decode
step's past grows by one each time): a size or address that depends on it is affine in it,
`Dim(a, b)` = a + b·P (such buffers lie after the others). Such a tape starts with a `patch`
op listing those fields as (index, a, b), which the kernel's `run(tape, n, p)` sets to a + b·p
before the rest runs: one program, and one tape, serve every step of a decode.

Buffers are laid out by their lifetimes: each from the op that first writes it (or the
program's start, for an input) to the last op that reads it (or the end: outputs, and what a
later phase reads), the memory of a dead buffer given to the next one that fits. Each buffer
is followed by slack, 3 rows of its own width and 8 floats: a product's blocks of 4 rows x 8
columns read and write that far past their operands, into rows and columns nobody reads back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .primitives import CODES, FIELDS, PATCH

ALIGN = 16  # floats: each buffer starts on a 64-byte line


class Dim:
    """a + b·P: a size or an address in floats that grows with the program's free size P."""

    __slots__ = ("a", "b")

    def __init__(self, a: int, b: int = 0):
        self.a, self.b = a, b

    def __add__(self, other) -> Dim:
        other = dim(other)
        return Dim(self.a + other.a, self.b + other.b)

    __radd__ = __add__

    def __mul__(self, k) -> Dim:
        if not isinstance(k, int):
            raise TypeError(f"a size grows with P at most linearly: {self!r} × {k!r}")
        return Dim(self.a * k, self.b * k)

    __rmul__ = __mul__

    def at(self, p: int) -> int:
        return self.a + self.b * p

    def __repr__(self) -> str:
        return f"{self.a} + {self.b}·P"


P = Dim(0, 1)


def dim(x) -> Dim:
    return x if isinstance(x, Dim) else Dim(int(x))


def size(shape: tuple) -> int | Dim:
    return math.prod(shape)


class Buffer:
    """One region of a program: its shape (the last axis a row; any size may hold P), the
    ops that write and read it first and last, and where the layout put it."""

    def __init__(self, shape: tuple):
        self.shape = tuple(shape)  # float32 or int32 alike: 4 bytes each
        self.size = size(self.shape)  # floats, or a Dim
        self.dynamic = isinstance(self.size, Dim)  # grows with P: laid out after the others
        self.first: int | None = None  # op index (-1: written before the program runs)
        self.last: int | None = None  # op index (math.inf: read after it, or by a later phase)
        self.at: int | Dim | None = None  # floats from the program's start
        self.base = self  # the buffer whose memory this one is (an op writing in place, tape.py)
        self.replaced_by: str | None = None  # the in-place op that made this buffer's values stale

    def extent(self) -> int | Dim:
        """Floats it occupies: its size, then slack for a product's blocks."""
        row = self.shape[-1] if len(self.shape) > 1 else 0  # a flat vector is never a product's row
        return self.size + 3 * row + 8

    def __repr__(self) -> str:
        return f"Buffer{self.shape}"


@dataclass(frozen=True)
class Ref:
    """An operand: a buffer, `offset` floats in, seen with `shape` (a view, or the whole)."""

    buffer: Buffer
    offset: int | Dim
    shape: tuple

    def __getitem__(self, i: int) -> Ref:
        """The i-th item along the first axis (a layer of a KV cache)."""
        return Ref(self.buffer, dim(self.offset) + i * size(self.shape[1:]), self.shape[1:])

    @property
    def rows(self) -> int:
        return size(self.shape[:-1])

    @property
    def width(self) -> int:
        return self.shape[-1]


def ref(buffer: Buffer) -> Ref:
    return Ref(buffer, 0, buffer.shape)


@dataclass(frozen=True)
class Phase:
    """One call: its tape (at `at`, in floats), and what it returns."""

    at: int
    tape: np.ndarray  # int32: a patch op if any field grows with P, then the ops
    outputs: tuple  # (at, shape) of each array read after the call: none depends on P


@dataclass(frozen=True)
class Program:
    """Ops laid out in the kernel's memory from `start` (floats), ready to run: the tapes of its
    phases (a training step's forward, then its backward: one call each, what the first keeps
    read in place by the second), its inputs, written before the first, and where everything
    ends. Every place is plain integers, worked out once: a decode step runs its program
    hundreds of times, in a Python that Pyodide makes several times slower than CPython."""

    start: int
    phases: tuple[Phase, ...]
    inputs: dict  # name -> (at, at per P, floats, floats per P, stays: lives to the end, never written)
    end: tuple[int, int]  # floats, floats per P
    kept: dict  # layer name -> (kind, (at, shape) or None, ...): what a backward reads (tape.py)


def place(x: Ref) -> tuple[int, tuple]:
    """Where an array lies (floats from the memory's start) and its shape, neither growing with P."""
    at, shape = dim(x.buffer.at) + x.offset, tuple(dim(n) for n in x.shape)
    if at.b or any(n.b for n in shape):
        raise ValueError(f"{x.buffer} is read back, but its place or size grows with the cache's length")
    return at.a, tuple(n.a for n in shape)


def lay_out(buffers: list[Buffer], start: int) -> int | Dim:
    """Each buffer's `at` (floats from the memory's start), from `start`: the static ones by their lifetimes (first fit
    among the dead), those that grow with P after them, in order. -> where they all end."""
    static = [b for b in buffers if b.base is b and not b.dynamic and b.first is not None]
    free: list[list[int]] = []  # [offset, floats] of dead regions, by offset
    end = aligned(start)
    births: dict[int, list[Buffer]] = {}
    deaths: dict[float, list[Buffer]] = {}
    for b in static:
        births.setdefault(b.first, []).append(b)
        deaths.setdefault(b.last, []).append(b)
    for i in sorted(births.keys() | {k for k in deaths if k != math.inf}):
        for b in births.get(i, ()):  # an op's outputs never share memory with its inputs:
            need = aligned(b.extent())  # those that die at i are freed after it
            spot = next((f for f in free if f[1] >= need), None)
            if spot is None:
                b.at, end = end, end + need
            else:
                b.at, spot[0], spot[1] = spot[0], spot[0] + need, spot[1] - need
        for b in deaths.get(i, ()):
            free.append([b.at, aligned(b.extent())])
        free = _merged(free)
    at: int | Dim = end
    for b in buffers:
        if b.base is b and b.dynamic and b.first is not None:
            b.at, at = at, dim(at) + b.extent()
    for b in buffers:
        if b.base is not b:
            b.at = b.base.at
    return at


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _merged(free: list[list[int]]) -> list[list[int]]:
    """Dead regions by offset, neighbours joined; empty ones dropped."""
    out: list[list[int]] = []
    for f in sorted(free):
        if f[1] <= 0:
            continue
        if out and out[-1][0] + out[-1][1] == f[0]:
            out[-1][1] += f[1]
        else:
            out.append(list(f))
    return out


def growing(kind: str, value) -> bool:
    """Whether a field may grow with P, known before the layout (which only a buffer's place
    waits for): a size in P, or an address in a buffer that grows, or at an offset that does.
    Decided once per op (builder.emit), so that the tape's length is known before its layout."""
    if kind[-1] == "*":
        return isinstance(value, Ref) and (value.buffer.base.dynamic or isinstance(value.offset, Dim) and value.offset.b != 0)
    return isinstance(value, Dim) and value.b != 0


def encode(ops: list[tuple[str, dict, frozenset]]) -> np.ndarray:
    """ops (op, fields, the fields that grow) -> their int32 tape, their buffers laid out;
    first the patch op, if any field grows."""
    body: list[int] = []
    patch: list[tuple[int, int, int]] = []  # (index in body, a, b)
    for op, values, grows in ops:
        fields = FIELDS[op]
        body += [CODES[op], 2 + len(fields)]
        for kind, name in fields:
            value = values.get(name, 0)
            if kind[-1] == "*":
                value = 0 if value is None else 4 * (value.buffer.at + value.offset)  # int, or a Dim
            elif kind == "f":
                value = int(np.float32(value).view(np.int32))
            if name in grows:
                value = dim(value)
                patch.append((len(body), value.a, value.b))
                value = value.a
            elif isinstance(value, Dim):  # an offset worked out with P, that P cancels out of
                if value.b:
                    raise ValueError(f"{op}.{name} grows with P, but its op did not say so")
                value = value.a
            body.append(value)
    head = 2 + 3 * len(patch) if patch else 0  # the patch op's length: the body's indices shift by it
    tape = ([PATCH, head] + [v for i, a, b in patch for v in (head + i, a, b)] if patch else []) + body
    out = np.array(tape, np.int64)
    if out.size and (out.max() >= 2**31 or out.min() < -2**31):
        raise ValueError("a program reaches past the kernel's 2 GB of addresses")
    return out.astype(np.int32)


def length(ops: list[tuple[str, dict, frozenset]]) -> int:
    """int32s the tape of these ops takes."""
    grows = sum(len(g) for _, _, g in ops)
    return sum(2 + len(FIELDS[op]) for op, _, _ in ops) + (2 + 3 * grows if grows else 0)
