"""An iteration-level serving simulator: static vs continuous batching, chunked prefill.

The engine steps through forward passes (iterations) of a batch of `slots`. Its one
hypothesis is the memory-bound decode step: a decode iteration costs about the same whatever the
number of occupied slots (the weights are read once for all); prefill adds time in
proportion to the prompt tokens processed in that iteration. Runs of plain decode iterations are
skipped in one step up to the next event (a finish or an arrival), as event-driven
simulators do, so the cost grows with the number of requests, not of tokens.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import asdict, dataclass, field

import numpy as np

from .quantiles import percentile, weighted_percentile


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
            "ttft_p95_s": percentile(ttft, 95) / 1e3,
            "latency_p95_s": percentile(latency, 95) / 1e3,
            "gap_max_ms": float(gap_values.max()),
            "gap_p50_ms": weighted_percentile(gap_values, gap_counts, 50),
            "gap_p99_ms": weighted_percentile(gap_values, gap_counts, 99),
        }


def simulate(requests: list[Request], slots: int, continuous: bool, decode_ms: float,
             prefill_ms_per_token: float, chunk: int | None = None) -> Run:
    """Serve `requests` (copied) and return what happened.

    static: a new batch is admitted only when every slot is empty;
    continuous: a request enters as soon as a slot is free.
    chunk: prefill tokens processed per iteration across the batch (None: whole prompts).

    A decoding request is kept as the iteration its last token comes out of, in a heap: a
    run of plain decode iterations, or a step, touches only the requests that finish in it,
    not every slot (the simulation's cost grows with the requests, not with slots × events).
    """
    reqs = [Request(r.id, r.arrival_ms, r.prompt, r.output) for r in requests]
    queue = deque(sorted(reqs, key=lambda r: (r.arrival_ms, r.id)))
    run = Run(requests=reqs)
    prefilling: deque[list] = deque()  # [request, prompt tokens left], first come, first served
    decoding: list[tuple[int, int, Request]] = []  # heap of (iteration of its last token, id, request)
    busy = 0  # requests holding a slot
    free = list(range(slots))
    now = 0.0
    while queue or busy:
        if continuous or not busy:  # admission
            while free and queue and queue[0].arrival_ms <= now:
                r = queue.popleft()
                r.start_ms, r.start_iter, r.slot = now, run.iterations, free.pop(0)
                busy += 1
                if r.prompt:
                    prefilling.append([r, r.prompt])
                else:  # nothing to prefill: it decodes from the next iteration on
                    heapq.heappush(decoding, (run.iterations + r.output, r.id, r))
                if not queue:  # every request admitted: from here on, slots only drain
                    run.drain_at = (run.iterations, run.busy_slot_iterations)
        if not busy:  # nothing to do until the next arrival
            now = queue[0].arrival_ms
            continue
        if not prefilling:  # plain decode: skip ahead to the next finish or admissible arrival
            k = decoding[0][0] - run.iterations
            if continuous and free and queue:
                k = min(k, max(1, math.ceil((queue[0].arrival_ms - now) / decode_ms)))
            run.gaps.append((decode_ms, k * busy))
            now += k * decode_ms
            run.iterations += k
            run.busy_slot_iterations += k * busy
        else:  # one iteration with prefill work in it
            was_decoding = busy - len(prefilling)  # before this iteration's prefill work
            budget = chunk or sum(a[1] for a in prefilling)
            spent, done = 0, 0
            for a in prefilling:  # first come, first served: the prompts it completes come first
                take = min(a[1], budget - spent)
                a[1] -= take
                spent += take
                done += a[1] == 0
            duration = decode_ms + spent * prefill_ms_per_token
            if was_decoding:
                run.gaps.append((duration, was_decoding))
            now += duration
            run.iterations += 1
            run.busy_slot_iterations += busy
            for _ in range(done):  # the first token comes out of the prefill pass
                r = prefilling.popleft()[0]
                r.first_token_ms = now
                heapq.heappush(decoding, (run.iterations + r.output - 1, r.id, r))
        finished = False
        while decoding and decoding[0][0] == run.iterations:
            r = heapq.heappop(decoding)[2]
            r.finish_ms, r.finish_iter = now, run.iterations
            free.append(r.slot)
            busy -= 1
            finished = True
        if finished:
            free.sort()
    run.end_ms = now
    return run
