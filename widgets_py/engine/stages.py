"""The stages of a long compute, scheduled by the engine: a widget says what it computes and
how it is shown, and the engine decides what runs, where and when.

    value = yield from stage(key, make, Partial(state, done, message))
    values = yield from evaluate_many(evaluations, shown)

`stage` is one result kept in the session's memo (engine.session): a stage already computed
for these weights costs no progress report. `evaluate_many` computes independent results
(`Evaluation`s: a memo key, how to compute it here, and how to record it as a pass for the
kernel's helper, engine/offload.py), a stage each, in order. Those the memo has are skipped.
Where the helper answers, the last half of the rest goes to it first, and this worker
computes the first half meanwhile; before the stage that reads a job's reply the worker
waits for it (browser.Run.waiting reads `helper.awaited`, worker.js waits at most
protocol.JOB_MS), and a job failed or late is computed here. A run dropped midway (a newer
change won) cancels the jobs it has not read.

The throttles of how often a stage is shown live in protocol.py (SCHEDULE), beside the
messages that carry them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..engine import offload
from . import session
from .widget import Partial


def stage(key: tuple, make: Callable[[], Any], progress: Partial):
    """make(), kept per `key` with the weights (session.cached); `progress` is shown
    first, unless the memo has it already. A generator: `value = yield from stage(...)`."""
    if not session.has(key):
        yield progress
    return session.cached(key, make)


@dataclass(frozen=True)
class Evaluation:
    key: tuple  # its memo key (session.cached)
    message: str  # Catalan: the status line while it is computed
    here: Callable[[], Any]  # computes it in this worker
    job: Callable[[], Any] | None = None  # records it as the helper's job (offload.Job, or None: here)


def evaluate_many(evaluations: list[Evaluation], shown: Callable[[dict], Any]):
    """{key: value} of every evaluation, a stage each (see the module's docstring);
    `shown(values so far)` is the state each stage's Partial shows. A generator:
    `values = yield from evaluate_many(...)`."""
    values = {e.key: session.cached(e.key, None) for e in evaluations if session.has(e.key)}
    todo = [e for e in evaluations if e.key not in values]
    jobs: dict[tuple, Any] = {}  # key -> the helper's job for it
    helper = session.current().helper
    away = todo[(len(todo) + 1) // 2:] if offload.available() and any(e.job for e in todo) else []
    try:
        for i, e in enumerate(todo):
            if helper is not None:
                helper.awaited = jobs.get(e.key)  # the worker waits for it before this stage
            yield Partial(shown(dict(values)), i / len(todo), e.message)
            if i == 0 and away:  # the helper's share goes out before this worker's first
                jobs = {a.key: job for a in away if a.job and (job := a.job()) is not None}
            job = jobs.get(e.key)
            values[e.key] = session.cached(e.key, e.here if job is None else job.result)
    finally:
        if helper is not None:
            helper.awaited = None
        offload.cancel(jobs.values())  # a newer change won: the helper drops what it has not started
    return {e.key: values[e.key] for e in evaluations}
