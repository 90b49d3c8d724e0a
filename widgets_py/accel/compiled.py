"""gpt's passes on the browser's kernel: each compiled once per shape (a Tape's program, kept on
the session's backend) and run in one call. A training step's forward and backward are two
phases of one program: the backward reads in place what the forward kept.

A runner's interface is eager.py's: call(pass, **inputs); start(forward, backward, **inputs)
then finish() -> gradients; `caches` -> each layer's cache after a training forward. Inputs
are float32 arrays, token ids (`idx`, `targets`) and a KV cache, `past`, each layer's (keys,
values) [1, H, P, hs] (packed here, [L, 2, 1, H, P, hs]), whose length P is the program's
free size: one program for every step of a decode.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from . import program
from . import kernel as wasm
from ..maths.layers import split_heads
from .tape import Tape

PROGRAMS_MAX = 128  # compiled passes a session keeps (Backend.programs)
IDS = ("idx", "targets")  # inputs that are token ids


class Compiled:
    """A runner of model `cfg` with parameters p (of `shapes`: gpt.shapes, the packing order)
    on the backend's kernel."""

    def __init__(self, be, p: dict, cfg, shapes: dict):
        self.be, self.p, self.cfg, self.shapes = be, p, cfg, shapes
        self.kernel = be.kernel
        self.program: program.Program | None = None  # a training step's, between start() and finish()
        self.caches: Mapping = {}  # after start(): each layer's cache, as eager.py keeps it (Kept)

    def call(self, fn, **inputs):
        """fn(ops, cfg, **inputs) on the kernel: one call. -> its outputs, as arrays."""
        past = inputs.get("past")
        if past is not None:  # each layer's (keys, values) [1, H, P, hs]: one array for the kernel
            inputs["past"] = np.concatenate([m for pair in past for m in pair], axis=None).reshape(
                len(past), 2, *past[0][0].shape)  # [L, 2, 1, H, P, hs]
        prog, single = self._compiled((fn,), inputs)
        outs = self.kernel.run(prog, 0, self._arrays(inputs), 0 if past is None else past[0][0].shape[-2])
        return outs[0] if single else tuple(outs)

    def start(self, forward, backward, **inputs):
        """A training step's forward: one call, what `backward` reads left in the kernel's memory."""
        self.program, single = self._compiled((forward, backward), inputs)
        self.caches = Kept(self)
        outs = self.kernel.run(self.program, 0, self._arrays(inputs))
        return outs[0] if single else tuple(outs)

    def finish(self) -> dict[str, np.ndarray]:
        """The backward's call: every parameter's gradient, by name."""
        (flat,) = self.kernel.run(self.program, 1, {})
        out, at = {}, 0
        for name, shape in self.shapes.items():
            out[name] = flat[at:at + self.p[name].size].reshape(shape)
            at += self.p[name].size
        return out

    def _arrays(self, inputs: dict) -> dict[str, np.ndarray]:
        out = {"weights": packed(self.be, self.p, self.shapes)}
        for name, x in inputs.items():
            if x is None:
                continue
            if name in IDS:  # the ufuncs' reduce: ndarray.min/max's wrappers cost more in Pyodide
                x = np.asarray(x)
                if x.size and not 0 <= np.minimum.reduce(x, axis=None) <= np.maximum.reduce(x, axis=None) < self.cfg.vocab:
                    raise ValueError(f"{name} outside the vocabulary (0 to {self.cfg.vocab - 1})")
            elif x.dtype != np.float32:
                raise TypeError(f"the kernel computes in float32, not {x.dtype}")
            out[name] = x
        return out

    def _compiled(self, fns: tuple, inputs: dict) -> tuple[program.Program, bool]:
        """The program of these passes for inputs of these shapes (a cache's length left out),
        compiled once per session: every pass starts where the kernel's memory does, over
        anything another left there."""
        key = (fns, self.cfg, tuple(inputs), *(None if x is None else x.shape[:-2] + x.shape[-1:] if name == "past"
                                               else x.shape for name, x in inputs.items()))
        kept = self.be.programs.get(key)
        if kept is None:
            if len(self.be.programs) >= PROGRAMS_MAX:
                self.be.programs.clear()
            specs = tuple((name, _spec(name, x)) for name, x in inputs.items())
            kept = self.be.programs[key] = compile_passes(fns, self.cfg, self.shapes, specs, wasm.HEAP)
        return kept


def _spec(name: str, x) -> tuple | None:
    """What a program is compiled for: an input's shape (a cache's length left free)."""
    if x is None:
        return None
    shape = tuple(np.shape(x))
    return (*shape[:-2], program.P, shape[-1]) if name == "past" else shape


def compile_passes(fns: tuple, cfg, shapes: dict, specs: tuple, start: int) -> tuple[program.Program, bool]:
    """fns[0](tape, cfg, **inputs) and, for training, fns[1] after it, recorded and laid out
    from `start`: (the program, whether the first returns one array)."""
    tape = Tape(cfg, shapes, keep=len(fns) > 1)
    inputs = {name: None if shape is None else tape.input(name, shape) for name, shape in specs}
    outs = fns[0](tape, cfg, **inputs)
    single = not isinstance(outs, tuple)
    tape.phase(*((outs,) if single else outs))
    for fn in fns[1:]:
        fn(tape, cfg, **inputs)
        tape.phase(tape.grads)
    return tape.program(start), single


def packed(be, p: dict, shapes: dict) -> np.ndarray:
    """Every parameter as one float32 vector, in the order of `shapes`: the kernel's `weights`.
    Packed at each call, as training updates p in place; a dict of read-only arrays
    (session.load's) is packed once and kept, on the session's backend."""
    kept = be.packed.get(id(p))
    if kept is not None and kept[0] is p:
        return kept[1]
    flat = np.concatenate([p[name] for name in shapes], axis=None)
    if not any(v.flags.writeable for v in p.values()):
        if len(be.packed) >= PACKED_MAX:
            be.packed.clear()
        flat.flags.writeable = False  # as its parameters: the kernel may keep it where it lies between runs
        be.packed[id(p)] = (p, flat)
    return flat


PACKED_MAX = 16  # parameter dicts kept packed


class Kept(Mapping):
    """A training forward's caches in the kernel's memory, by layer name, read out (once) in
    eager.py's form: valid while the kernel runs no other pass."""

    def __init__(self, run: Compiled):
        self.run, self.read = run, {}

    def __getitem__(self, name: str):
        if name not in self.read:
            run = self.run
            if run.kernel.live is not run.program:
                raise RuntimeError("the kernel has run another pass since this training forward: what it kept is gone")
            kind, *xs = run.program.kept[name]
            self.read[name] = _as_cache(kind, name, [run.kernel.read(*x) for x in xs], run.p, run.cfg)
        return self.read[name]

    def __iter__(self):
        return (name for name, kept in self.run.program.kept.items() if kept[0] != "softmax")

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _as_cache(kind: str, name: str, arrays: list, p: dict, cfg):
    """What the kernel kept of a layer, as that layer's numpy cache (layers.py)."""
    if kind == "norm":
        return arrays[0], p[f"{name}.w"], arrays[1]
    if kind == "linear":
        return arrays[0], p[f"{name}.w"]
    if kind == "head":
        return arrays[0], p["wte"]
    if kind == "attention":
        qkv, att = arrays
        c = qkv.shape[-1] // 3
        return (*(split_heads(qkv[..., j * c:(j + 1) * c], cfg.heads) for j in range(3)), att)
    return arrays[0]  # an activation's: ReLU's output, GELU's input
