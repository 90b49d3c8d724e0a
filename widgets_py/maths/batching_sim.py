"""An iteration-level serving simulator: static vs continuous batching, chunked prefill, KV blocks.

The engine steps through forward passes (iterations) of a batch of at most `slots`. What an
iteration costs is the caller's `cost`, a function of the iteration's `Pass`: the prompt
tokens it prefills, the sequences that each decode a token, the cache it reads and writes,
the (query, key) pairs attention computes. The serving widgets pass the roofline of
`serving.step_time` (one home for the physics): the weights are read once per iteration
whatever it holds, so a decode that rides along with a prefill chunk costs little more than
the chunk (SARATHI's piggybacking, Agrawal et al. 2023, arXiv 2308.16369). Runs of plain
decode iterations are skipped in one step up to the next event (a finish, an arrival, a block
the pool cannot give), as event-driven simulators do, so the cost grows with the number of
requests, not of tokens; such a run costs k times its middle iteration, exact while a decode
step's cost grows linearly with the cache it reads (memory-bound decode, as it is for every
model here: its attention reads a byte of cache for a few FLOPs).

Memory, when the run has a block budget (`kv_blocks`, a `kv_blocks.BlockPool`), follows vLLM
V1's scheduler (`vllm/v1/core/sched/scheduler.py`): the running requests get their new tokens'
blocks first, in admission order; when the pool has none left, the last-admitted running request
is preempted (its blocks freed, its cache dropped, back to the front of the queue: preemption by
recompute, V1's only mode), and no new request is admitted in that iteration. A waiting request
is admitted when a slot is free and its prompt's blocks fit (taken whole, chunked or not: V1
takes a chunk's at a time). Re-admitted, it prefills its prompt and the tokens it had already
written. Without a budget no request ever waits for memory: the slots are the only limit.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import asdict, dataclass, field

import numpy as np

from typing import Callable

from .kv_blocks import BlockPool, blocks_for
from .quantiles import percentile, weighted_percentile
from .serving import causal_pairs


@dataclass(frozen=True)
class Pass:
    """What one iteration computes, for its cost (`serving.step_time` reads the same three
    quantities: tokens, cache tokens moved, attended pairs)."""
    prefill: int  # prompt tokens it prefills (its chunks)
    decodes: int  # sequences that each decode one token
    kv_tokens: float  # cache tokens it reads (the decodes' contexts, the chunks' prefixes) or writes (the chunks)
    pairs: float  # (query, key) pairs of its attention

    @property
    def tokens(self) -> int:
        return self.prefill + self.decodes


Cost = Callable[[Pass], float]  # ms of one iteration


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
    preemptions: int = 0  # times its cache was dropped to make room
    recomputed_tokens: int = 0  # cached tokens it lost, prefilled again

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
    evicted: list[tuple[int, int, int]] = field(default_factory=list)  # (slot, first, last iteration) of preempted stays
    max_running: int = 0  # most requests in the batch at once
    peak_blocks: int = 0  # most KV blocks held at once

    @property
    def preemptions(self) -> int:
        return sum(r.preemptions for r in self.requests)

    @property
    def recomputed_tokens(self) -> int:
        return sum(r.recomputed_tokens for r in self.requests)

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
            "preemptions": self.preemptions,
            "recomputed_tokens": self.recomputed_tokens,
            "max_running": self.max_running,
        }




@dataclass(eq=False)
class Live:
    """A request in the batch, and where its cache stands (vidur's `num_processed_tokens`)."""
    r: Request
    prefill: int  # tokens its (re)prefill processes: the prompt and the tokens it had already written
    left: int  # of those, still to prefill
    decode_from: int = -1  # iteration its decode started from (-1: still prefilling)
    written_at_start: int = 0  # tokens it had written when that decode started
    alive: bool = True  # False once it finished or was preempted (its heap entry is stale)

    def cached(self, iteration: int) -> int:
        """Tokens in its cache once `iteration` iterations are done."""
        if self.decode_from < 0:
            return self.prefill - self.left
        return self.prefill + iteration - self.decode_from

    def written(self, iteration: int) -> int:
        return self.written_at_start + iteration - self.decode_from if self.decode_from >= 0 else self.written_at_start


def decode_pass(decodes: int, cached: float) -> Pass:
    """`decodes` sequences holding `cached` tokens of cache in all each decode one token."""
    return Pass(0, decodes, cached, cached + decodes)


def simulate(requests: list[Request], slots: int, continuous: bool, cost: Cost, chunk: int | None = None,
             kv_blocks: int | None = None, block_tokens: int = 16) -> Run:
    """Serve `requests` (copied) and return what happened; `cost(Pass)` is an iteration's ms.

    static: a new batch is admitted only when every slot is empty;
    continuous: a request enters as soon as a slot is free (and, with `kv_blocks`, its prompt's blocks).
    chunk: prefill tokens processed per iteration across the batch (None: whole prompts).
    kv_blocks: blocks of `block_tokens` tokens in the KV pool (None: memory never runs out).

    A decoding request is kept as the iteration its last token comes out of, in a heap: a
    run of plain decode iterations, or a step, touches only the requests that finish in it,
    not every slot (the simulation's cost grows with the requests, not with slots × events).
    """
    reqs = [Request(r.id, r.arrival_ms, r.prompt, r.output) for r in requests]
    pool = BlockPool(kv_blocks, block_tokens)
    for r in reqs:  # the largest cache a request ever holds: its prompt and all its tokens but the last
        if pool.bounded and blocks_for(r.prompt + r.output - 1, block_tokens) > kv_blocks:
            raise ValueError(f"request {r.id} needs {blocks_for(r.prompt + r.output - 1, block_tokens)} KV blocks "
                             f"alone; the pool has {kv_blocks}")
    queue = deque(sorted(reqs, key=lambda r: (r.arrival_ms, r.id)))
    run = Run(requests=reqs)
    written = {r.id: 0 for r in reqs}  # tokens each request has written, kept through a preemption
    since = {}  # request id -> time of the last token it wrote before it was preempted
    running: list[Live] = []  # the batch, in admission order: the last one is preempted first
    prefilling: deque[Live] = deque()  # first come, first served
    decoding: list[tuple[int, int, Live]] = []  # heap of (iteration of its last token, id, request)
    free = list(range(slots))
    now = 0.0
    cached_sum = 0  # tokens in the caches of the running requests

    def top() -> tuple[int, int, Live] | None:  # the next finish, stale entries dropped
        while decoding and not decoding[0][2].alive:
            heapq.heappop(decoding)
        return decoding[0] if decoding else None

    def preempt(live: Live) -> None:  # recompute: drop its cache, back to the front of the queue
        nonlocal cached_sum
        cached_sum -= live.cached(run.iterations)
        r, live.alive = live.r, False
        running.remove(live)
        if live.decode_from < 0:
            prefilling.remove(live)
        else:
            since[r.id] = now
        written[r.id] = live.written(run.iterations)
        r.preemptions += 1
        r.recomputed_tokens += live.cached(run.iterations)
        run.evicted.append((r.slot, r.start_iter, run.iterations))
        pool.release(r.id)
        free.append(r.slot)
        free.sort()
        queue.appendleft(r)

    def make_room() -> bool:  # blocks for the next token of every decoding request, oldest first
        preempted = False
        for live in list(running):
            if not live.alive or live.decode_from < 0:
                continue
            need = live.cached(run.iterations) + 1
            while not pool.fits(live.r.id, need):
                victim = running[-1]
                preempt(victim)
                preempted = True
                if victim is live:
                    break
            else:
                pool.grow(live.r.id, need)
        return preempted

    def decode_fit(k_max: int) -> int:  # most plain decode iterations the free blocks allow (>= 1)
        lives = [lv for lv in running if lv.decode_from >= 0]
        cached = np.array([lv.cached(run.iterations) for lv in lives])  # [n]
        held = np.array([pool.held.get(lv.r.id, 0) for lv in lives])  # [n]
        extra = lambda k: int(np.maximum(0, -(-(cached + k) // block_tokens) - held).sum())  # noqa: E731
        lo, hi = 1, k_max
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if extra(mid) <= pool.free else (lo, mid - 1)
        for lv, c in zip(lives, cached):
            pool.grow(lv.r.id, int(c) + lo)
        return lo

    while queue or running:
        preempted = make_room() if pool.bounded and running else False
        if (continuous or not running) and not preempted:  # admission (V1: none in an iteration that preempted)
            while free and queue and queue[0].arrival_ms <= now:
                r = queue[0]
                prefill = r.prompt + written[r.id]
                if not pool.fits(r.id, prefill or 1):
                    break  # first come, first served: the head waits for blocks, the rest behind it
                queue.popleft()
                pool.grow(r.id, prefill or 1)
                if math.isnan(r.start_ms):
                    r.start_ms = now
                r.start_iter, r.slot = run.iterations, free.pop(0)
                live = Live(r, prefill, prefill, written_at_start=written[r.id])
                running.append(live)
                if prefill:
                    prefilling.append(live)
                else:  # nothing to prefill: it decodes from the next iteration on
                    live.decode_from = run.iterations
                    heapq.heappush(decoding, (run.iterations + r.output, r.id, live))
                if not queue:  # every request admitted: from here on, slots only drain
                    run.drain_at = (run.iterations, run.busy_slot_iterations)
        if not running:  # nothing to do until the next arrival
            now = queue[0].arrival_ms
            continue
        busy = len(running)
        run.max_running = max(run.max_running, busy)
        if not prefilling:  # plain decode: skip ahead to the next finish, admissible arrival or missing block
            k = top()[0] - run.iterations
            if continuous and free and queue and queue[0].arrival_ms > now:
                k = min(k, max(1, math.ceil((queue[0].arrival_ms - now) / cost(decode_pass(busy, cached_sum)))))
            if pool.bounded:
                k = decode_fit(k)
            step_ms = cost(decode_pass(busy, cached_sum + busy * (k - 1) / 2))  # the run's middle iteration
            run.gaps.append((step_ms, k * busy))
            now += k * step_ms
            run.iterations += k
            run.busy_slot_iterations += k * busy
            cached_sum += k * busy
        else:  # one iteration with prefill work in it
            was_decoding = busy - len(prefilling)  # before this iteration's prefill work
            budget = chunk or sum(a.left for a in prefilling)
            decoding_cached = cached_sum - sum(a.prefill - a.left for a in prefilling)  # what the decodes read
            spent, done, kv, pairs = 0, 0, float(decoding_cached), float(decoding_cached + was_decoding)
            for a in prefilling:  # first come, first served: the prompts it completes come first
                take = min(a.left, budget - spent)
                if take:  # its chunk reads the prefix it has cached and writes its own
                    prefix = a.prefill - a.left
                    kv += prefix + take
                    pairs += causal_pairs(take, prefix)
                a.left -= take
                spent += take
                done += a.left == 0
            duration = cost(Pass(spent, was_decoding, kv, pairs))
            if was_decoding:
                run.gaps.append((duration, was_decoding))
            now += duration
            run.iterations += 1
            run.busy_slot_iterations += busy
            cached_sum += spent + was_decoding
            for _ in range(done):  # a token comes out of the prefill pass
                live = prefilling.popleft()
                r = live.r
                if math.isnan(r.first_token_ms):
                    r.first_token_ms = now
                if r.id in since:  # a recomputed request's next token, after its wait
                    run.gaps.append((now - since.pop(r.id), 1))
                live.decode_from, live.written_at_start = run.iterations, live.written_at_start + 1
                heapq.heappush(decoding, (run.iterations + r.output - live.written_at_start, r.id, live))
        finished = False
        while top() is not None and decoding[0][0] == run.iterations:
            live = heapq.heappop(decoding)[2]
            cached_sum -= live.cached(run.iterations)
            r, live.alive = live.r, False
            r.finish_ms, r.finish_iter = now, run.iterations
            running.remove(live)
            pool.release(r.id)
            free.append(r.slot)
            finished = True
        if finished:
            free.sort()
    run.end_ms = now
    run.peak_blocks = pool.peak
    return run
