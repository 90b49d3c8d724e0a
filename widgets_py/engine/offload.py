"""Kernel passes run by the kernel's helper: a second worker with the same WebAssembly kernel
and no Python (assets/tw/helper.js), so that a compute of independent passes uses the
reader's second core too. The quantize widget scores four to six formats a change, each a
forward over 4,096 held-out tokens whose dense products already run near the SIMD peak of
one core (benchmarks/recompute.py times a change).

A pass is recorded by running it (compiled.py, kernel.Kernel's own code) on a `Recorder`,
a host that only notes what it is asked (reserve, write, the kernel's `run`, read). The helper replays the
notes on its own instance and sends the reads back; they fill the arrays the Kernel's code
returned. The same kernel on the same inputs: the bits of the pass run here.

worker.js connects the helper once the page has given it one (kernel.js); without it, or
if a job fails, `Job.result()` computes the pass here, so the answer never depends on it.
"""

from __future__ import annotations

import itertools
import sys
from contextlib import contextmanager

import numpy as np

from ..accel import kernel as wasm
from ..accel.compiled import Compiled
from ..maths import gpt, train
from . import session

class Helper:
    """The session's link to the helper (engine.session: `helper`): worker.js's client of it
    (ready, load(module, bytes), submit(ops, id), take(id), cancel(ids)), the ids of its jobs,
    and whether the caller waits for a job before the stage that reads it (waited())."""

    def __init__(self, client):
        self.client = client
        self.ids = itertools.count(1)
        self.waits = False
        self.awaited = None  # the Job the next stage reads (engine.stages): the worker waits for it


def connect(client) -> None:
    """worker.js's client of the helper: it gets the kernel, then jobs. Not where this
    runtime has no kernel (no WebAssembly SIMD: the helper could not run it either).

    The helper gets the compiled module: V8 shares a module's code between workers, tiered
    up by this worker's warm-up (accel.backend.warm), where a fresh compile would run a held-out
    loss, one long call, in its baseline tier (measured: 50-60 ms against 25). The bytes go
    along, for a helper that cannot receive the module (a page opened from disk)."""
    kernel = session.current().products().kernel
    if kernel is None:
        return
    client.load(kernel.host.module, _js(wasm.WASM.read_bytes()))
    session.current().helper = Helper(client)


def available() -> bool:
    """Whether passes go to the helper: connected, its kernel in, answering (worker.js), and a
    caller that waits for them (a compute run to its end at once would read no reply)."""
    helper = session.current().helper
    return helper is not None and helper.waits and bool(helper.client.ready)


@contextmanager
def waited():
    """Within the block, the caller waits for the job the next stage reads (Helper.awaited,
    set by engine.stages) before that stage (browser.Run, in the worker): only then do
    passes go to the helper."""
    helper = session.current().helper
    if helper is None:
        yield
        return
    before, helper.waits = helper.waits, True
    try:
        yield
    finally:
        helper.waits = before


class Recorder:
    """A host for kernel.Kernel that records instead of running: ops as helper.js replays
    them (engine.protocol.Op: addresses and sizes in floats), and the arrays its reads will
    fill, in order."""

    def __init__(self):
        self.ops: list[tuple] = []  # engine.protocol.Op
        self.outs: list[np.ndarray] = []

    def reserve(self, floats: int) -> None:
        self.ops.append(("reserve", int(floats)))

    def write(self, at: int, x: np.ndarray) -> None:
        self.ops.append(("write", int(at), np.ascontiguousarray(x, np.float32).ravel()))  # sent (copied) by Job, at once

    def read(self, at: int, out: np.ndarray) -> None:
        self.ops.append(("read", int(at), out.size))
        self.outs.append(out)

    def run(self, tape: int, n: int, p: int) -> None:  # the kernel's one export
        self.ops.append(("call", "run", [int(tape), int(n), int(p)]))


class Job:
    """A recorded pass sent to the helper, under an id of its own: worker.js keeps its reply
    and, before the stage that reads it, waits for it (Helper.awaited, engine.stages). result()
    fills the arrays the pass returned and finishes them, or computes the pass here if the
    reply is not there (failed, or late: worker.js stops waiting)."""

    def __init__(self, helper: Helper, recorder: Recorder, finish, fallback):
        self.helper = helper
        self.id = next(helper.ids)
        self.outs, self.finish, self.fallback = recorder.outs, finish, fallback
        self.taken = False
        helper.client.submit(_outgoing(recorder.ops), self.id)

    def result(self):
        self.taken = True
        reads = self.helper.client.take(self.id)  # the reads, in order, or None
        if reads is None:
            return self.fallback()
        for out, read in zip(self.outs, reads):
            read.assign_to(out)
        return self.finish()


def _js(x):
    """x as JavaScript values in Pyodide (to_js); elsewhere (tests, whose client replays in
    wasmtime) as it is."""
    if sys.platform != "emscripten":
        return x
    from pyodide.ffi import to_js

    return to_js(x)


def _outgoing(ops: list[tuple]):
    """The ops for the client: in Pyodide each write a Float32Array of its own (worker.js
    transfers its buffer)."""
    if sys.platform == "emscripten":
        from js import Float32Array

        ops = [op if op[0] != "write" else ["write", op[1], _typed(Float32Array, op[2])] for op in ops]
    return _js(ops)


def _typed(kind, x: np.ndarray):
    array = kind.new(x.size)
    array.assign(x)
    return array


def evaluate(p, cfg: gpt.GPTConfig, data: np.ndarray, tokens: int, then=lambda loss: loss) -> Job | None:
    """then(train.evaluate(p, cfg, data, tokens)) as a helper's job, or None (no helper, or
    weights the kernel does not take: evaluate here)."""
    helper = session.current().helper
    if helper is None or not session.current().products().runs(cfg, p["wte"]):
        return None
    recorder = Recorder()
    idx, targets = train.windows(cfg, data, tokens)
    run = Compiled(session.current().products(), p, cfg, gpt.shapes(cfg), kernel=wasm.Kernel(recorder))
    parts = run.call(gpt.held_out, x=gpt.embed(p, cfg, idx), targets=targets)
    return Job(helper, recorder, lambda: then(gpt.nll(*parts)), lambda: then(train.evaluate(p, cfg, data, tokens)))


def cancel(jobs) -> None:
    """Jobs whose results were not taken (a newer change won): the helper drops those not
    started, and worker.js the replies of the others."""
    jobs = list(jobs)
    for helper in {job.helper for job in jobs}:
        ids = [job.id for job in jobs if job.helper is helper and not job.taken]
        if ids:
            helper.client.cancel(_js(ids))
