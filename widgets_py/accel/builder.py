"""Programs as they are written: ops of the kernel's vocabulary (primitives.py) on new
buffers, each op numbered (across phases) so that every buffer knows its lifetime, then laid
out (program.py). tape.py's Tape writes gpt's passes with it; kernel.py its one-op programs
(a product, a softmax, AdamW)."""

from __future__ import annotations

import math

from .primitives import KINDS, OPS
from .program import Buffer, Phase, Program, Ref, aligned, dim, encode, growing, lay_out, length, place, ref, size


class Builder:
    """A program being written: its ops, buffers, inputs, phases and what each returns."""

    def __init__(self):
        self.ops: list[tuple[str, dict]] = []
        self.buffers: list[Buffer] = []
        self.inputs: dict[str, Buffer] = {}
        self.phases: list[int] = [0]  # the first op of each phase
        self.outputs: list[tuple] = []  # what each finished phase returns
        self.kept: dict = {}

    def new(self, shape: tuple) -> Ref:
        buffer = Buffer(shape)
        self.buffers.append(buffer)
        return ref(buffer)

    def input(self, name: str, shape: tuple) -> Ref:
        """A buffer written before the program runs."""
        x = self.new(shape)
        x.buffer.first = x.buffer.last = -1
        self.inputs[name] = x.buffer
        return x

    def emit(self, op: str, **fields) -> None:
        kinds = KINDS[op]
        unknown = fields.keys() - kinds.keys()
        if unknown:
            raise TypeError(f"{op} has no field {', '.join(sorted(unknown))}: it has {OPS[op]}")
        index = len(self.ops)
        for value in fields.values():
            if isinstance(value, Ref):
                if value.buffer.replaced_by:
                    raise ValueError(f"{value.buffer} was overwritten in place by {value.buffer.replaced_by}: "
                                     "use that op's result")
                b = value.buffer.base
                b.first = index if b.first is None else b.first
                b.last = index if b.last is None else max(b.last, index)
        grows = frozenset(name for name, value in fields.items() if growing(kinds[name], value))
        self.ops.append((op, fields, grows))

    def in_place(self, x: Ref, op: str) -> Ref:
        """x as the op that overwrites it leaves it: the same memory, under a new name, and x
        itself no longer readable (a later read would see the new values)."""
        alias = Buffer(x.buffer.shape)
        alias.base = x.buffer.base
        x.buffer.replaced_by = op
        self.buffers.append(alias)
        return Ref(alias, x.offset, x.shape)

    def keep(self, *xs: Ref | None) -> None:
        """These stay where they are to the program's end: read after it, or by a later phase."""
        for x in xs:
            if x is not None:
                x.buffer.base.last = math.inf

    def phase(self, *outputs: Ref) -> None:
        """The current phase ends, returning `outputs`; the ops after it are the next call's."""
        self.keep(*outputs)
        self.outputs.append(outputs)
        self.phases.append(len(self.ops))

    def program(self, start: int) -> Program:
        """The ops laid out from `start` (floats): the tapes first, then the buffers, by their
        lifetimes. The last phase must have ended (phase())."""
        bounds = self.phases  # phase() appends a bound and its outputs: one more bound than outputs
        if not self.outputs or bounds[-1] != len(self.ops):
            raise RuntimeError("the program's last phase has not ended")
        phases = [self.ops[a:b] for a, b in zip(bounds, bounds[1:])]
        at, tapes = start, []
        for ops in phases:
            tapes.append(at)
            at = aligned(at + length(ops))
        end = dim(lay_out(self.buffers, at))
        inputs = {}
        for name, b in self.inputs.items():
            at, floats = dim(b.at), dim(size(b.shape))
            inputs[name] = (at.a, at.b, floats.a, floats.b, b.last == math.inf and not b.replaced_by)
        kept = {name: (kind, *(place(x) for x in xs)) for name, (kind, *xs) in self.kept.items()}
        return Program(start, tuple(Phase(tape_at, encode(ops), tuple(place(x) for x in outs))
                                    for tape_at, ops, outs in zip(tapes, phases, self.outputs)),
                       inputs, (end.a, end.b), kept)
