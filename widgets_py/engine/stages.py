"""The stages of a long compute, scheduled by the engine: a widget says what it computes and
how it is shown, and the engine decides what runs and when.

    value = yield from stage(key, make, Partial(state, done, message))
    values = yield from evaluate_many(evaluations, shown)

`stage` is one result kept in the session's memo (engine.session): a stage already computed
for these weights costs no progress report. `evaluate_many` computes independent results
(`Evaluation`s: a memo key and how to compute it), a stage each, in order, so that each
shows as it arrives; those the memo has are skipped.

The throttles of how often a stage is shown live in protocol.py (SCHEDULE), beside the
messages that carry them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

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
    make: Callable[[], Any]  # computes it


def evaluate_many(evaluations: list[Evaluation], shown: Callable[[dict], Any]):
    """{key: value} of every evaluation, a stage each (see the module's docstring);
    `shown(values so far)` is the state each stage's Partial shows. A generator:
    `values = yield from evaluate_many(...)`."""
    values = {e.key: session.cached(e.key, None) for e in evaluations if session.has(e.key)}
    todo = [e for e in evaluations if e.key not in values]
    for i, e in enumerate(todo):
        yield Partial(shown(dict(values)), i / len(todo), e.message)
        values[e.key] = session.cached(e.key, e.make)
    return {e.key: values[e.key] for e in evaluations}
