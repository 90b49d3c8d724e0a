"""An iteration-level serving simulator: static vs continuous batching, chunked prefill.

The engine steps through forward passes (iterations) of a batch of `slots`. Its one
hypothesis is the memory-bound decode step: a decode iteration costs about the same whatever the
number of occupied slots (the weights are read once for all); prefill adds time in
proportion to the prompt tokens processed in that iteration. Runs of plain decode iterations are
skipped in one step up to the next event (a finish or an arrival), as event-driven
simulators do, so the cost grows with the number of requests, not of tokens.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class Request:
    id: int
    arrival_ms: float  # when it enters the queue
    prompt: int  # prompt tokens to prefill
    output: int  # tokens to generate (>= 1; the first comes out of the prefill pass)
    start_ms: float = math.nan  # admitted into a slot
    slot: int = -1  # which slot served it
    start_iter: int = -1  # iteration at admission
    finish_iter: int = -1  # iterations completed when it finished
    first_token_ms: float = math.nan
    finish_ms: float = math.nan

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Run:
    requests: list[Request]
    iterations: int = 0
    busy_slot_iterations: int = 0  # sum over iterations of occupied slots
    drain_at: tuple[int, int] = (0, 0)  # (iterations, busy slot-iterations) when the queue emptied
    end_ms: float = 0.0
    gaps: list[tuple[float, int]] = field(default_factory=list)  # (inter-token interval, how many tokens)

    def throughput(self) -> float:
        """Generated tokens per second, from the first arrival to the last token."""
        tokens = sum(r.output for r in self.requests)
        t0 = min(r.arrival_ms for r in self.requests)
        return tokens / ((self.end_ms - t0) / 1e3)

    def metrics(self, slots: int) -> dict:
        ttft = np.array([r.first_token_ms - r.arrival_ms for r in self.requests])  # [n]
        latency = np.array([r.finish_ms - r.arrival_ms for r in self.requests])  # [n]
        occupied = self.busy_slot_iterations / self.iterations
        drain_iters = self.iterations - self.drain_at[0]
        drain_busy = self.busy_slot_iterations - self.drain_at[1]
        gap_values = np.array([g for g, _ in self.gaps]) if self.gaps else np.zeros(1)
        gap_counts = np.array([c for _, c in self.gaps]) if self.gaps else np.ones(1, dtype=int)
        return {
            "throughput": self.throughput(),
            "iterations": self.iterations,
            "occupied": occupied,
            "idle": 1.0 - occupied / slots,
            "drain_idle": (drain_iters * slots - drain_busy) / (self.iterations * slots),
            "ttft_p95_s": float(np.percentile(ttft, 95)) / 1e3,
            "latency_p95_s": float(np.percentile(latency, 95)) / 1e3,
            "gap_max_ms": float(gap_values.max()),
            "gap_p50_ms": weighted_percentile(gap_values, gap_counts, 50),
            "gap_p99_ms": weighted_percentile(gap_values, gap_counts, 99),
        }


def weighted_percentile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """Percentile of a sample given as distinct values with repetition counts."""
    order = np.argsort(values)
    cum = np.cumsum(counts[order])  # [k]
    return float(values[order][np.searchsorted(cum, q / 100 * cum[-1])])


def simulate(requests: list[Request], slots: int, continuous: bool, decode_ms: float,
             prefill_ms_per_token: float, chunk: int | None = None) -> Run:
    """Serve `requests` (copied) and return what happened.

    static: a new batch is admitted only when every slot is empty;
    continuous: a request enters as soon as a slot is free.
    chunk: prefill tokens processed per iteration across the batch (None: whole prompts).
    """
    reqs = [Request(r.id, r.arrival_ms, r.prompt, r.output) for r in requests]
    queue = deque(sorted(reqs, key=lambda r: (r.arrival_ms, r.id)))
    run = Run(requests=reqs)
    active: list[list] = []  # [request, prompt tokens left, output tokens left, slot]
    free = list(range(slots))
    now = 0.0
    while queue or active:
        if continuous or not active:  # admission
            while free and queue and queue[0].arrival_ms <= now:
                r = queue.popleft()
                r.start_ms, r.start_iter, r.slot = now, run.iterations, free.pop(0)
                active.append([r, r.prompt, r.output, r.slot])
                if not queue:  # every request admitted: from here on, slots only drain
                    run.drain_at = (run.iterations, run.busy_slot_iterations)
        if not active:  # nothing to do until the next arrival
            now = queue[0].arrival_ms
            continue
        prefilling = [a for a in active if a[1] > 0]
        if not prefilling:  # plain decode: skip ahead to the next finish or admissible arrival
            k = min(a[2] for a in active)
            if continuous and free and queue:
                k = min(k, max(1, math.ceil((queue[0].arrival_ms - now) / decode_ms)))
            run.gaps.append((decode_ms, k * len(active)))
            now += k * decode_ms
            run.iterations += k
            run.busy_slot_iterations += k * len(active)
            for a in active:
                a[2] -= k
        else:  # one iteration with prefill work in it
            decoding = [a for a in active if a[1] == 0]  # before this iteration's prefill work
            budget = chunk or sum(a[1] for a in prefilling)
            done_now, spent = [], 0
            for a in prefilling:  # first come, first served
                take = min(a[1], budget - spent)
                a[1] -= take
                spent += take
                if a[1] == 0:
                    done_now.append(a)
            duration = decode_ms + spent * prefill_ms_per_token
            if decoding:
                run.gaps.append((duration, len(decoding)))
            now += duration
            run.iterations += 1
            run.busy_slot_iterations += len(active)
            for a in done_now:
                a[0].first_token_ms = now
            for a in decoding + done_now:
                a[2] -= 1
        finished = [a for a in active if a[2] == 0]
        if finished:
            for a in finished:
                a[0].finish_ms, a[0].finish_iter = now, run.iterations
                free.append(a[3])
            active = [a for a in active if a[2] > 0]
            free.sort()
    run.end_ms = now
    return run
