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

A request is a record that owns its transitions, as vidur's `Request` does (`admit`,
`prefill_chunk`, `first_token`, `preempt`, `finish`): where it stands lives on it alone. The
`Scheduler` decides when, one `step()` at a time as SimPy's `Environment.step`, and keeps the
batch's tallies on a `Run`; a run's `metrics()` are a record too.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

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


def decode_pass(decodes: int, cached: float) -> Pass:
    """`decodes` sequences holding `cached` tokens of cache in all each decode one token."""
    return Pass(0, decodes, cached, cached + decodes)


@dataclass(eq=False)
class Request:
    """A request, what happened to it, and where its cache stands (vidur's `num_processed_tokens`).

    Its decode is kept as the iteration it started from, not token by token: a run of decode
    iterations skipped in one step touches no request but those that finish in it.
    """
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
    written: int = 0  # tokens it had written when its decode started (kept through a preemption)
    prefill: int = 0  # tokens its (re)prefill processes: the prompt and the tokens it had written
    left: int = 0  # of those, still to prefill
    decode_from: int = -1  # iteration its decode started from (-1: waiting or prefilling)
    stalled_ms: float = math.nan  # its last token's time, when a preemption cut its decode

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def decoding(self) -> bool:
        return self.decode_from >= 0

    @property
    def last_iter(self) -> int:
        """Iterations done when its last token comes out (it is decoding)."""
        return self.decode_from + self.output - self.written

    def cached(self, iteration: int) -> int:
        """Tokens in its cache once `iteration` iterations are done."""
        return self.prefill + iteration - self.decode_from if self.decoding else self.prefill - self.left

    def written_by(self, iteration: int) -> int:
        return self.written + iteration - self.decode_from if self.decoding else self.written

    def admit(self, iteration: int, now: float, slot: int) -> None:
        """Into `slot`: it prefills its prompt and what it had written (recompute), if anything."""
        if math.isnan(self.start_ms):
            self.start_ms = now
        self.start_iter, self.slot = iteration, slot
        self.prefill = self.left = self.prompt + self.written
        self.decode_from = -1 if self.prefill else iteration  # nothing to prefill: it decodes from the next iteration

    def prefill_chunk(self, budget: int) -> int:
        """Prefill up to `budget` more of its tokens; returns how many."""
        take = min(self.left, budget)
        self.left -= take
        return take

    def first_token(self, iteration: int, now: float) -> float:
        """Its prefill done, a token comes out of the pass and it decodes from here on; returns
        the wait since its last token when a preemption had cut its decode (else NaN)."""
        if math.isnan(self.first_token_ms):
            self.first_token_ms = now
        stalled, self.stalled_ms = now - self.stalled_ms, math.nan
        self.decode_from, self.written = iteration, self.written + 1
        return stalled

    def preempt(self, iteration: int, now: float) -> int:
        """Its cache dropped (vLLM V1's recompute); it keeps what it has written. Returns the
        tokens it lost."""
        lost = self.cached(iteration)
        if self.decoding:
            self.stalled_ms = now
        self.written = self.written_by(iteration)
        self.preemptions += 1
        self.recomputed_tokens += lost
        self.decode_from = -1
        return lost

    def finish(self, iteration: int, now: float) -> None:
        self.finish_ms, self.finish_iter = now, iteration


@dataclass(frozen=True)
class Metrics:
    """What a run measured (`Run.metrics`): one scheduling policy's numbers, read by name."""
    throughput: float  # generated tokens per second, from the first arrival to the last token
    iterations: int
    occupied: float  # slots busy in an average iteration
    idle: float  # share of the slot-iterations left empty
    drain_idle: float  # the share of all slot-iterations left empty once the queue was empty
    ttft_p95_s: float  # 95th percentile of the time to first token
    latency_p95_s: float  # 95th percentile of the time from arrival to last token
    gap_max_ms: float  # worst time between two tokens of an answer
    gap_p50_ms: float
    gap_p99_ms: float
    preemptions: int
    recomputed_tokens: int
    max_running: int  # most requests in the batch at once


@dataclass
class Run:
    requests: list[Request]
    slots: int
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

    def metrics(self) -> Metrics:
        ttft = np.array([r.first_token_ms - r.arrival_ms for r in self.requests])  # [n]
        latency = np.array([r.finish_ms - r.arrival_ms for r in self.requests])  # [n]
        occupied = self.busy_slot_iterations / self.iterations
        drain_iters = self.iterations - self.drain_at[0]
        drain_busy = self.busy_slot_iterations - self.drain_at[1]
        gap_values = np.array([g for g, _ in self.gaps]) if self.gaps else np.zeros(1)  # [g]
        gap_counts = np.array([c for _, c in self.gaps]) if self.gaps else np.ones(1, dtype=int)  # [g]
        return Metrics(
            throughput=self.throughput(), iterations=self.iterations, occupied=occupied,
            idle=1.0 - occupied / self.slots,
            drain_idle=(drain_iters * self.slots - drain_busy) / (self.iterations * self.slots),
            ttft_p95_s=percentile(ttft, 95) / 1e3, latency_p95_s=percentile(latency, 95) / 1e3,
            gap_max_ms=float(gap_values.max()), gap_p50_ms=weighted_percentile(gap_values, gap_counts, 50),
            gap_p99_ms=weighted_percentile(gap_values, gap_counts, 99),
            preemptions=self.preemptions, recomputed_tokens=self.recomputed_tokens, max_running=self.max_running)


class Scheduler:
    """Who runs in each iteration, one `step()` at a time, and what the iterations cost.

    The batch (`running`) is kept in admission order: the last one is preempted first. Its
    prefilling requests are served first come, first served; its decoding ones sit in a heap
    keyed by the iteration of their last token, so a step finds the next finish without
    visiting every slot.
    """

    def __init__(self, requests: list[Request], slots: int, continuous: bool, cost: Cost,
                 chunk: int | None, pool: BlockPool):
        self.continuous, self.cost, self.chunk, self.pool = continuous, cost, chunk, pool
        self.run = Run(requests=requests, slots=slots)
        self.queue = deque(sorted(requests, key=lambda r: (r.arrival_ms, r.id)))
        self.running: list[Request] = []
        self.prefilling: deque[Request] = deque()
        self.decoding: list[tuple[int, int, Request]] = []  # heap of (iteration of its last token, id, request)
        self.free = list(range(slots))  # heap: the lowest free slot is taken first
        self.now = 0.0
        self.cached = 0  # tokens in the caches of the running requests

    @property
    def pending(self) -> bool:
        return bool(self.queue or self.running)

    def step(self) -> None:
        """Blocks for the running, admissions, then one iteration with prefill work in it or a
        run of plain decode iterations, and the requests that finish; idle, the next arrival."""
        preempted = self.pool.bounded and bool(self.running) and self.make_room()
        if (self.continuous or not self.running) and not preempted:  # V1: no admission in a step that preempted
            self.admit()
        if not self.running:  # nothing to do until the next arrival
            self.now = self.queue[0].arrival_ms
            return
        self.run.max_running = max(self.run.max_running, len(self.running))
        if self.prefilling:
            self.prefill_iteration()
        else:
            self.decode_run()
        self.finish_due()

    def admit(self) -> None:
        """Waiting requests that have arrived, into free slots, while their prompts' blocks fit."""
        run = self.run
        while self.free and self.queue and self.queue[0].arrival_ms <= self.now:
            r = self.queue[0]
            need = r.prompt + r.written or 1
            if not self.pool.fits(r.id, need):
                break  # first come, first served: the head waits for blocks, the rest behind it
            self.queue.popleft()
            self.pool.grow(r.id, need)
            r.admit(run.iterations, self.now, heapq.heappop(self.free))
            self.running.append(r)
            if r.decoding:
                heapq.heappush(self.decoding, (r.last_iter, r.id, r))
            else:
                self.prefilling.append(r)
            if not self.queue:  # every request admitted: from here on, slots only drain
                run.drain_at = (run.iterations, run.busy_slot_iterations)

    def make_room(self) -> bool:
        """Blocks for the next token of every decoding request, oldest first, preempting the
        last admitted while they lack; returns whether it preempted."""
        preempted, i = False, 0
        while i < len(self.running):  # a preemption takes the last: the ones before it stay put
            r, i = self.running[i], i + 1
            if not r.decoding:
                continue
            need = r.cached(self.run.iterations) + 1
            while not self.pool.fits(r.id, need):
                victim = self.running[-1]
                self.preempt(victim)
                preempted = True
                if victim is r:
                    break
            else:
                self.pool.grow(r.id, need)
        return preempted

    def preempt(self, r: Request) -> None:
        """Recompute: drop its cache and blocks, back to the front of the queue."""
        run = self.run
        self.running.remove(r)
        if r.decoding:
            self.decoding.remove((r.last_iter, r.id, r))
            heapq.heapify(self.decoding)
        else:
            self.prefilling.remove(r)
        self.cached -= r.preempt(run.iterations, self.now)
        run.evicted.append((r.slot, r.start_iter, run.iterations))
        self.pool.release(r.id)
        heapq.heappush(self.free, r.slot)
        self.queue.appendleft(r)

    def decode_run(self) -> None:
        """Plain decode iterations, skipped in one step up to the next finish, admissible
        arrival or missing block; the run costs k times its middle iteration."""
        run, busy = self.run, len(self.running)
        k = self.decoding[0][0] - run.iterations
        if self.continuous and self.free and self.queue and self.queue[0].arrival_ms > self.now:
            step_ms = self.cost(decode_pass(busy, self.cached))
            k = min(k, max(1, math.ceil((self.queue[0].arrival_ms - self.now) / step_ms)))
        if self.pool.bounded:
            k = self.decode_fit(k)
        step_ms = self.cost(decode_pass(busy, self.cached + busy * (k - 1) / 2))
        run.gaps.append((step_ms, k * busy))
        self.now += k * step_ms
        run.iterations += k
        run.busy_slot_iterations += k * busy
        self.cached += k * busy

    def decode_fit(self, k_max: int) -> int:
        """Most plain decode iterations (>= 1, <= k_max) the free blocks allow; grows the caches'
        blocks to them. Nothing prefills: every running request decodes."""
        cached = np.array([r.cached(self.run.iterations) for r in self.running])  # [n]
        held = np.array([self.pool.held.get(r.id, 0) for r in self.running])  # [n]
        size = self.pool.size
        lo, hi = 1, k_max
        while lo < hi:  # bisect the largest k whose extra blocks fit
            mid = (lo + hi + 1) // 2
            extra = int(np.maximum(0, -(-(cached + mid) // size) - held).sum())
            lo, hi = (mid, hi) if extra <= self.pool.free else (lo, mid - 1)
        for r, c in zip(self.running, cached):
            self.pool.grow(r.id, int(c) + lo)
        return lo

    def prefill_iteration(self) -> None:
        """One iteration with prefill work: the chunk budget, first come first served, and the
        decodes riding along (SARATHI); a token comes out of each prefill it completes."""
        run, busy = self.run, len(self.running)
        decodes = busy - len(self.prefilling)  # decoding before this iteration's prefill work
        budget = self.chunk or sum(r.left for r in self.prefilling)
        decoding_cached = self.cached - sum(r.prefill - r.left for r in self.prefilling)  # what the decodes read
        spent, done, kv, pairs = 0, 0, float(decoding_cached), float(decoding_cached + decodes)
        for r in self.prefilling:  # the prompts it completes come first
            prefix = r.prefill - r.left
            take = r.prefill_chunk(budget - spent)
            if take:  # its chunk reads the prefix it has cached and writes its own
                kv += prefix + take
                pairs += causal_pairs(take, prefix)
            spent += take
            done += r.left == 0
        duration = self.cost(Pass(spent, decodes, kv, pairs))
        if decodes:
            run.gaps.append((duration, decodes))
        self.now += duration
        run.iterations += 1
        run.busy_slot_iterations += busy
        self.cached += spent + decodes
        for _ in range(done):
            r = self.prefilling.popleft()
            stalled = r.first_token(run.iterations, self.now)
            if not math.isnan(stalled):  # a recomputed request's next token, after its wait
                run.gaps.append((stalled, 1))
            heapq.heappush(self.decoding, (r.last_iter, r.id, r))

    def finish_due(self) -> None:
        """The requests whose last token came out of the iterations just done leave the batch."""
        while self.decoding and self.decoding[0][0] == self.run.iterations:
            r = heapq.heappop(self.decoding)[2]
            self.cached -= r.cached(self.run.iterations)
            r.finish(self.run.iterations, self.now)
            self.running.remove(r)
            self.pool.release(r.id)
            heapq.heappush(self.free, r.slot)


def simulate(requests: list[Request], slots: int, continuous: bool, cost: Cost, chunk: int | None = None,
             kv_blocks: int | None = None, block_tokens: int = 16) -> Run:
    """Serve `requests` (copied) and return what happened; `cost(Pass)` is an iteration's ms.

    static: a new batch is admitted only when every slot is empty;
    continuous: a request enters as soon as a slot is free (and, with `kv_blocks`, its prompt's blocks).
    chunk: prefill tokens processed per iteration across the batch (None: whole prompts).
    kv_blocks: blocks of `block_tokens` tokens in the KV pool (None: memory never runs out).
    """
    reqs = [Request(r.id, r.arrival_ms, r.prompt, r.output) for r in requests]
    pool = BlockPool(kv_blocks, block_tokens)
    for r in reqs:  # the largest cache a request ever holds: its prompt and all its tokens but the last
        if pool.bounded and blocks_for(r.prompt + r.output - 1, block_tokens) > kv_blocks:
            raise ValueError(f"request {r.id} needs {blocks_for(r.prompt + r.output - 1, block_tokens)} KV blocks "
                             f"alone; the pool has {kv_blocks}")
    scheduler = Scheduler(reqs, slots, continuous, cost, chunk, pool)
    while scheduler.pending:
        scheduler.step()
    scheduler.run.end_ms, scheduler.run.peak_blocks = scheduler.now, pool.peak
    return scheduler.run
