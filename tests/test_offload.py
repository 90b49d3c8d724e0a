"""The kernel's helper (widgets_py/engine/offload.py, assets/tw/helper.js) in CPython: passes
recorded on one kernel and replayed on another give the same bits, and the quantize widget
answers the same with the helper as without it, whether its jobs come back, fail or are
dropped. Here both kernels are wasmtime's; the browser suite runs the real helper."""

from __future__ import annotations

import numpy as np
import pytest
from typeguard import check_type

from wasm_host import WasmtimeHost, kernel, on_kernel  # noqa: F401  (skips the module without wasmtime)
from widgets_py.cap15 import quantize
from widgets_py.engine import browser, protocol, registry, session
from widgets_py.engine.widget import finish
from widgets_py.accel import backend, primitives
from widgets_py.maths import corpus, gpt, train
from widgets_py.engine import offload
from widgets_py.accel import kernel as wasm
from widgets_py.accel.compiled import Compiled


class Typed:
    """A read as the helper sends it back: Pyodide's API of a Float32Array (assign_to)."""

    def __init__(self, array):
        self.array = array

    def assign_to(self, out):
        out[...] = self.array.reshape(out.shape)


class Helper:
    """worker.js's client of the helper, replaying each job on a kernel of its own (helper.js's
    loop, in wasmtime): its reply is there at once, or it failed, or it never comes."""

    def __init__(self, answer: str = "reads"):
        self.host, self.answer, self.module = WasmtimeHost(), answer, None
        self.ready, self.jobs, self.replies, self.cancelled = False, [], {}, []

    def load(self, module, wasm):
        self.module, self.wasm = module, wasm
        self.ready = True  # helper.js answers {ready: true} once its instance is made

    def submit(self, ops, id):
        self.jobs.append(id)
        if self.answer == "never":
            return
        if self.answer == "error":
            self.replies[id] = None
            return
        check_type(ops, list[protocol.Op])  # the ops as the schema says helper.js gets them
        reads = []
        for op in ops:
            if op[0] == "reserve":
                self.host.reserve(op[1])
            elif op[0] == "write":
                self.host.write(op[1], op[2])
            elif op[0] == "call":
                getattr(self.host, op[1])(*op[2])
            else:
                reads.append(np.empty(op[2], np.float32))
                self.host.read(op[1], reads[-1])
        self.replies[id] = [Typed(r) for r in reads]

    def take(self, id):
        return self.replies.pop(id, None)

    def cancel(self, ids):
        self.cancelled += ids


@pytest.fixture
def kernelled():
    """The models run on the wasmtime kernel, as in the browser, in a session of their own:
    no helper, nothing measured yet."""
    k = kernel()
    k.host.module = "the worker's compiled module"
    with on_kernel(k):
        yield k


def connected(answer: str = "reads") -> Helper:
    helper = Helper(answer)
    offload.connect(helper)
    assert helper.module == "the worker's compiled module" and helper.wasm == wasm.WASM.read_bytes()
    with offload.waited():
        assert offload.available()
    assert not offload.available()  # only for a caller that waits
    return helper


def test_a_recorded_pass_replayed_on_another_kernel_gives_its_bits(kernelled):
    cfg, p, _ = session.load("mini")
    x, y = train.windows(cfg, corpus.data()[1], 512)
    here = Compiled(session.current().products(), p, cfg, gpt.shapes(cfg)).call(gpt.held_out, x=gpt.embed(p, cfg, x), targets=y)
    recorder = offload.Recorder()
    there = Compiled(session.current().products(), p, cfg, gpt.shapes(cfg), kernel=wasm.Kernel(recorder)).call(
        gpt.held_out, x=gpt.embed(p, cfg, x), targets=y)
    offload.connect(Helper())
    job = offload.Job(session.current().helper, recorder, lambda: gpt.nll(*there), lambda: pytest.fail("computed here"))
    assert job.result() == gpt.loss(p, cfg, x, y)
    for a, b in zip(here, there):
        assert a.tobytes() == b.tobytes()


def test_a_helper_not_ready_gets_no_job(kernelled):
    helper = connected()
    helper.ready = False  # its kernel did not load, or it stopped answering (worker.js)
    with offload.waited():
        finish(quantize.quantization("group", 32, 40.0, "none"))
    assert helper.jobs == []


def test_a_compute_run_at_once_sends_no_job(kernelled):
    """A reply in one call (the prose's fixed numbers, the code panel's edits, the build)
    reads every stage at once: nothing would wait for the helper's reply."""
    helper = connected()
    registry.reply("quantize", {"group": 32})
    assert helper.jobs == []


def test_a_recorder_offers_only_what_the_kernel_exports():
    """A host's calls are the kernel's exports: `run` and nothing else (a misspelt call fails
    here, not in helper.js)."""
    with pytest.raises(AttributeError):
        offload.Recorder().nonexistent
    recorder = offload.Recorder()
    recorder.run(64, 12, 3)
    assert recorder.ops == [("call", "run", [64, 12, 3])]


@pytest.mark.parametrize("answer", ["reads", "error", "never"])
def test_quantize_answers_the_same_with_the_helper(kernelled, answer):
    """The last half of what a change must score goes to the helper (the original model and
    five formats: NF4, FP8 and BF16); its losses, or this worker's if its jobs fail or are
    late (worker.js stops waiting), are the values computed without it, to the bit."""
    params = dict(granularity="group", group=32, outliers=40.0, outlier_handling="none")
    alone = finish(quantize.quantization(**params))
    session.forget()
    helper = connected(answer)
    before = len(kernelled.host.calls)
    with offload.waited():  # as browser.Run advances a staged compute
        helped = finish(quantize.quantization(**params))
    assert helped == alone
    assert len(helper.jobs) == 3
    losses = kernelled.host.calls[before:].count(primitives.CODES["pick"])  # the held-out losses this worker computed
    assert losses == (3 if answer == "reads" else 6)  # failed or late jobs: computed here
    session.forget()
    assert finish(quantize.quantization(**params | {"group": 16})) != alone  # the test can tell


def test_the_worker_waits_for_a_job_before_the_stage_that_reads_it(kernelled):
    helper = connected("never")
    run = browser.Run("quantize", '{"group": 16}')
    waits = []
    for _ in range(4):  # the original, INT4, INT8 here; then NF4 is the helper's
        run.advance()
        waits.append(run.waiting())
    assert waits[:3] == [None, None, None]
    assert waits[3] == helper.jobs[0]  # NF4's job, never answered
    del run  # a newer change won: the run is dropped
    assert helper.cancelled == helper.jobs and len(helper.jobs) == 3


def test_every_widget_answers_with_the_helper_connected(kernelled):
    connected()
    for name in registry.names():
        assert registry.reply(name, {})["values"]


def test_a_run_never_waits_for_another_run_s_job(kernelled):
    """Between two of quantize's stages (its next one reads a helper's job), a run of another
    widget takes a turn: it has no job to wait for (the job belongs to quantize's stage)."""
    helper = connected("never")
    quantize_run = browser.Run("quantize", '{"group": 16}')
    for _ in range(4):
        quantize_run.advance()
    assert quantize_run.waiting() == helper.jobs[0]
    other = browser.Run("training", "{}")
    other.advance()
    assert other.waiting() is None and quantize_run.waiting() == helper.jobs[0]
