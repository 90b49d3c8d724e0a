"""§3 continuous batching simulator: the seed's regime, negative controls, invariants, and the
cost of an iteration under the serving roofline (a mixed iteration worked by hand, SARATHI's
piggybacked decodes)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from widgets_py import run
from widgets_py.cap15.batching import LONG_PROMPT, chunk_pass, decode_ms, roofline_ms, workload
from widgets_py.maths.batching_sim import Pass, Request, Scheduler, decode_pass, simulate
from widgets_py.maths.kv_blocks import BlockPool
from widgets_py.maths.serving import causal_pairs


def flat(step_ms: float, per_prompt_token_ms: float = 0.0):
    """A cost for the scheduler's own traces (who runs when does not depend on the cost): a
    fixed step, plus a price per prompt token."""
    return lambda p: step_ms + p.prefill * per_prompt_token_ms


def test_default_run_is_in_the_seed_regime():
    v = run("batching").values
    assert 2.0 <= v["gain"] <= 4.0
    assert 0.60 <= v["static_idle"] <= 0.75
    assert v["continuous_idle"] < 0.10
    assert (v["out_min"], v["out_max"]) == (8, 390)
    assert v["continuous_throughput"] == pytest.approx(v["gain"] * v["static_throughput"])


def test_identical_lengths_give_exactly_no_gain():
    v = run("batching", {"variability": 0}).values
    assert v["gain"] == 1.0 and v["static_iterations"] == v["continuous_iterations"]


def test_one_slot_gives_no_gain():
    for variability in (0, 50, 100):
        assert run("batching", {"slots": 1, "variability": variability}).values["gain"] == pytest.approx(1.0, abs=1e-12)


def test_chunking_cuts_the_p99_gap_under_load_and_raises_the_throughput():
    # SARATHI-Serve's measure: P99 time between tokens, sustained load, many long prompts. Under
    # the roofline a chunk's decodes ride on its weight read: the batch serves more, not less
    v = run("batching").values
    assert v["long_requests"] >= 8
    assert v["gap_p99_whole_ms"] > roofline_ms(chunk_pass(LONG_PROMPT, 0))  # p99 sees a whole long prefill
    assert v["gap_p99_chunked_ms"] < v["gap_p99_whole_ms"] / 4
    assert v["gap_max_chunked_ms"] < 1.5 * v["mixed_ms"]  # a chunk and the decodes riding along
    assert v["gap_p50_chunked_ms"] == pytest.approx(v["gap_p50_whole_ms"], rel=0.01)  # the median is blind
    assert v["gap_p50_whole_ms"] == pytest.approx(decode_ms(8), rel=0.05)
    assert v["throughput_chunked"] > 1.05 * v["throughput_whole"]


def test_chunks_below_the_ridge_point_starve_the_long_prompts():
    # a chunk of 64 tokens is memory-bound (it costs the weights' read, like a decode step): a
    # 4 k prompt then takes 64 iterations, and its TTFT, the queue's, grows
    small, good = run("batching", {"chunk_tokens": 64}).values, run("batching", {"chunk_tokens": 256}).values
    assert small["chunk_ms"] == pytest.approx(small["decode_ms"], rel=0.05)
    assert small["long_ttft_chunked_s"] > 3 * good["long_ttft_chunked_s"]
    assert small["throughput_chunked"] < good["throughput_chunked"]


def test_without_long_prompts_chunking_has_nothing_to_cut():
    v = run("batching", {"long_pct": 0}).values
    assert v["long_requests"] == 0 and v["long_ttft_whole_s"] == 0.0
    assert v["gap_p99_whole_ms"] < 2 * decode_ms(8)  # only the short prompts' prefills


def test_a_single_long_prompt_moves_the_maximum_not_the_p99():
    # why the old one-prompt scenario misled: one stall touches under 1 % of the intervals
    reqs = workload(80, 1.0, 0.0, seed=10)
    reqs[20].prompt = LONG_PROMPT
    whole = simulate(reqs, 8, True, roofline_ms).metrics()
    assert whole.gap_max_ms > 0.9 * roofline_ms(chunk_pass(LONG_PROMPT, 7))
    assert whole.gap_p99_ms < roofline_ms(chunk_pass(600, 7))


# --- an iteration's cost: the serving roofline, max(FLOPs / peak, bytes / bandwidth) ---------------
# By hand, from Llama 3 8B's config.json (meta-llama/Meta-Llama-3-8B: hidden 4096, 32 layers, 32
# heads of 128, 8 KV heads, MLP 14336, vocabulary 128 256, untied head) and the H100 SXM datasheet
# (989 TFLOP/s dense bf16, 3,35 TB/s HBM3); the weights are read once per pass, the input
# embedding only a row per token (scaling book, inference.md, "Theoretical Step Time").
LAYER = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336  # attention's q, k, v, o + the MLP's three
MATRICES = 32 * LAYER + 4096 * 128256  # and the output head
NORMS = (2 * 32 + 1) * 4096  # RMSNorm weights: read, not multiplied
PEAK, BANDWIDTH = 989.4e12, 3.35e12
PER_PAIR = 2 * 32 * (128 + 128) * 32  # QKᵀ and AV FLOPs for one (query, key) pair, all layers
KV_BYTES = 2 * 8 * 128 * 2 * 32  # K and V, 8 heads of 128, bf16, 32 layers: bytes per cached token


def by_hand(tokens: int, kv_tokens: float, pairs: float) -> float:
    """ms of one pass of Llama 3 8B in bf16 on one H100 SXM."""
    weight_bytes = 2 * (MATRICES + NORMS + tokens * 4096)  # the embedding's rows, one per token
    matmuls = max(2 * MATRICES * tokens / PEAK, weight_bytes / BANDWIDTH)
    attention = max(pairs * PER_PAIR / PEAK, kv_tokens * KV_BYTES / BANDWIDTH)
    return 1e3 * (matmuls + attention)


def test_a_mixed_iteration_costs_the_roofline_worked_by_hand():
    # request 0 decodes; request 1 (a 1 000-token prompt) arrives and is prefilled 512 tokens at
    # a time: its first chunk shares a pass with request 0's decode
    passes = []

    def logged(p: Pass) -> float:
        passes.append((p, roofline_ms(p)))
        return passes[-1][1]

    simulate([Request(0, 0.0, 100, 60), Request(1, 20.0, 1000, 5)], 2, True, logged, chunk=512)
    mixed = [(p, ms) for p, ms in passes if p.prefill and p.decodes]
    first, ms = mixed[0]
    assert (first.prefill, first.decodes) == (512, 1)
    context = first.kv_tokens - 512  # request 0's cache: its prompt and the tokens it has written
    assert 100 < context < 160 and first.pairs == context + 1 + causal_pairs(512, 0)
    assert ms == pytest.approx(by_hand(513, first.kv_tokens, first.pairs), rel=2e-3)
    second = mixed[1][0]  # the second chunk reads the first one's cache
    assert second.prefill == 488 and second.pairs == pytest.approx(context + 2 + causal_pairs(488, 512))
    # compute-bound: the chunk's FLOPs, not the weights' read, set the time (and not their sum)
    assert ms == pytest.approx(2 * MATRICES * 513 / PEAK * 1e3, rel=0.03)
    assert ms < by_hand(512, 512, causal_pairs(512, 0)) + by_hand(1, context, context + 1) - 4.0


def test_piggybacked_decodes_cost_an_order_of_magnitude_less_than_decode_only_iterations():
    # SARATHI (Agrawal et al. 2023, arXiv 2308.16369): decodes batched with a prefill chunk
    # "cost up to an order of magnitude less compared to a decode-only batch"
    riding = (roofline_ms(chunk_pass(512, 7)) - roofline_ms(chunk_pass(512, 0))) / 7
    alone = roofline_ms(decode_pass(7, 7 * 306)) / 7
    assert riding < alone / 10


def test_a_run_of_decode_iterations_costs_the_sum_of_its_iterations():
    # a run skipped in one step costs k times its middle iteration: the sum, while decode is
    # memory-bound (its cost linear in the cache it reads)
    out = simulate([Request(0, 0.0, 10, 200)], 1, True, roofline_ms)
    expected = roofline_ms(Pass(10, 0, 10, causal_pairs(10, 0)))  # the prefill, whose pass gives token 1
    expected += sum(roofline_ms(decode_pass(1, 10 + i)) for i in range(199))
    assert out.end_ms == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("gap, chunk", [(0.0, None), (10.0, None), (5.0, 256)])
def test_every_request_is_served_once_and_in_causal_order(continuous, gap, chunk):
    reqs = workload(60, 1.0, gap, seed=1, long_share=0.2)
    out = simulate(reqs, 8, continuous, roofline_ms, chunk)
    assert sorted(r.id for r in out.requests) == list(range(60))
    for r in out.requests:
        assert r.arrival_ms <= r.start_ms < r.first_token_ms <= r.finish_ms
        assert r.finish_iter - r.start_iter >= r.output  # one token per iteration at most
    # every slot-iteration is either busy or idle; tokens emitted equal tokens requested
    assert out.busy_slot_iterations <= 8 * out.iterations
    assert sum(c for _, c in out.gaps) == sum(r.output - 1 for r in out.requests)


def test_static_admits_only_into_an_empty_batch():
    reqs = [Request(i, 0.0, 10, out) for i, out in enumerate([5, 50, 5, 5, 5])]
    out = simulate(reqs, 2, False, flat(1.0))
    starts = sorted(r.start_iter for r in out.requests)
    assert starts == [0, 0, 50, 50, 55]  # the second batch waits for the 50-token request


def test_seeded_and_deterministic():
    assert run("batching", {"seed": 3}).values == run("batching", {"seed": 3}).values
    assert run("batching", {"seed": 3}).values != run("batching", {"seed": 4}).values


# --- KV blocks: vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py) ------------------------------
# Running requests get their blocks first, in admission order; when `allocate_slots` finds none,
# `preempted_req = self.running.pop()` (the last admitted) loses its blocks and
# `num_computed_tokens = 0` (recompute), goes back with `waiting.prepend_request`, and no waiting
# request is scheduled in that step (`if not preempted_reqs`). Hand traces, blocks of 4 tokens.

def _pair(output: int) -> list[Request]:
    return [Request(0, 0.0, 4, output), Request(1, 0.0, 4, output)]


def test_a_trace_where_preemption_must_happen():
    # two prompts of 4 tokens, 6 tokens each: the longest cache is 4 + 6 - 1 = 9 tokens, 3 blocks
    # each, 6 in all; a pool of 4 runs out at iteration 5, when request 0 writes its 9th token.
    run = simulate(_pair(6), 2, True, flat(1.0), kv_blocks=4, block_tokens=4)
    a, b = run.requests
    assert (a.preemptions, b.preemptions) == (0, 1)  # the last admitted goes, not the one that needs the block
    assert b.recomputed_tokens == 8  # its 4 prompt tokens and 4 of its 5 written ones were cached
    assert a.finish_iter == 6  # request 0 never waits
    # request 1 comes back when request 0 frees its blocks (iteration 6), prefills 4 + 5 tokens in
    # one pass (iteration 7), whose token is its 6th and last
    assert b.start_iter == 6 and b.finish_iter == 7 and run.iterations == 7
    assert run.preemptions == 1 and run.peak_blocks == 4
    assert sum(c for _, c in run.gaps) == 2 * 5  # every token after the first once, the wait included


def test_a_trace_where_preemption_must_not_happen():
    # the same pair in 6 blocks: exactly what both need at their longest; nothing is preempted
    # and the run is the unbounded one, iteration for iteration
    tight = simulate(_pair(6), 2, True, flat(1.0), kv_blocks=6, block_tokens=4)
    free = simulate(_pair(6), 2, True, flat(1.0))
    assert tight.preemptions == 0 and tight.peak_blocks == 6
    assert [r.to_dict() for r in tight.requests] == [r.to_dict() for r in free.requests]


def test_admission_waits_for_blocks_not_slots():
    # prompts of 8 tokens (2 blocks), 2 tokens each (longest cache 9: 3 blocks), a pool of 3: the
    # second request has a free slot but not its 2 blocks until the first one finishes
    reqs = [Request(0, 0.0, 8, 2), Request(1, 0.0, 8, 2)]
    run = simulate(reqs, 2, True, flat(1.0), kv_blocks=3, block_tokens=4)
    assert run.preemptions == 0 and run.max_running == 1
    assert [r.start_iter for r in run.requests] == [0, 2] and [r.finish_iter for r in run.requests] == [2, 4]


def test_infinite_memory_is_the_slot_only_run():
    # negative control: an unbounded pool and an ample one give today's run, bit for bit
    reqs = workload(80, 1.0, 5.0, seed=3, long_share=0.2)
    for chunk in (None, 512):
        free = simulate(reqs, 16, True, roofline_ms, chunk)
        ample = simulate(reqs, 16, True, roofline_ms, chunk, kv_blocks=10**7)
        assert [r.to_dict() for r in ample.requests] == [r.to_dict() for r in free.requests]
        assert ample.gaps == free.gaps and ample.end_ms == free.end_ms and ample.preemptions == 0


@pytest.mark.parametrize("blocks", [400, 800, 1600])
def test_a_small_pool_bounds_the_batch_and_serves_everyone(blocks):
    reqs = workload(60, 1.0, 0.0, seed=1, long_share=0.2)
    run = simulate(reqs, 32, True, roofline_ms, 512, kv_blocks=blocks)
    assert run.peak_blocks <= blocks and run.max_running < 32
    assert all(r.finish_iter > 0 for r in run.requests)
    assert sum(c for _, c in run.gaps) == sum(r.output - 1 for r in run.requests)


def test_a_request_owns_its_transitions():
    # a 10-token prompt, 5 tokens to write: prefilled in two chunks, preempted after 3 tokens,
    # re-prefilled with them (recompute), its last 2 tokens after
    r = Request(0, 0.0, 10, 5)
    r.admit(3, 1.0, slot=2)
    assert (r.prefill, r.left, r.decoding, r.cached(3)) == (10, 10, False, 0)
    assert r.prefill_chunk(4) == 4 and r.cached(4) == 4 and r.prefill_chunk(100) == 6
    assert np.isnan(r.first_token(5, 2.0))  # token 1 comes out of the prefill pass; no wait before it
    assert (r.first_token_ms, r.written, r.last_iter) == (2.0, 1, 9)  # tokens 2-5 at iterations 6-9
    assert (r.cached(7), r.written_by(7)) == (12, 3)
    assert r.preempt(7, 3.0) == 12 and (r.written, r.preemptions, r.recomputed_tokens, r.decoding) == (3, 1, 12, False)
    r.admit(8, 4.0, slot=0)
    assert (r.start_ms, r.prefill) == (1.0, 13)  # admitted first at 1.0; prompt + the 3 tokens it wrote
    r.prefill_chunk(13)
    assert r.first_token(9, 5.0) == 2.0  # token 4, 2 ms after token 3
    assert (r.written, r.last_iter) == (4, 10)
    r.finish(10, 6.0)
    assert (r.finish_iter, r.finish_ms) == (10, 6.0)


def test_each_step_is_one_event():
    # the preemption trace above, a step at a time: the prefill pass; the 4 decode iterations
    # the pool allows (2 blocks each); request 1 preempted and request 0's last iteration; the
    # re-prefill of request 1's 4 + 5 tokens, whose token is its last
    reqs = _pair(6)
    scheduler = Scheduler(reqs, 2, True, flat(1.0), None, BlockPool(4, 4))
    trace = []
    while scheduler.pending:
        scheduler.step()
        trace.append((scheduler.run.iterations, [r.id for r in scheduler.running], [r.id for r in scheduler.queue]))
    assert trace == [(1, [0, 1], []), (5, [0, 1], []), (6, [], [1]), (7, [], [])]
    assert reqs[1].written == 6 and reqs[1].recomputed_tokens == 8


def test_a_request_larger_than_the_pool_is_refused():
    with pytest.raises(ValueError, match="needs 3 KV blocks alone; the pool has 2"):
        simulate(_pair(6), 2, True, flat(1.0), kv_blocks=2, block_tokens=4)


def test_the_widget_default_memory_never_binds_and_a_small_pool_does():
    v = run("batching").values
    assert v["continuous_preemptions"] == v["static_preemptions"] == 0 and not v["memory_bound"]
    assert v["continuous_max_running"] == 8
    small = run("batching", {"slots": 64, "kv_memory": "1"}).values
    assert small["memory_bound"] and small["continuous_max_running"] < 64
    assert small["continuous_preemptions"] > 0 and small["continuous_recomputed_tokens"] > 0
    assert small["kv_tokens"] == small["kv_blocks"] * 16


def test_a_small_pool_costs_waiting_more_than_throughput():
    # what §3 says of 64 slots and 1 GB of cache: preemptions, a barely moved throughput, and
    # the waits (TTFT, latency) longer: the requests that do not fit queue, the preempted ones
    # queue again and prefill anew
    free, tight = run("batching", {"slots": 64}).values, run("batching", {"slots": 64, "kv_memory": "1"}).values
    assert tight["continuous_preemptions"] > 0 and tight["continuous_max_running"] < 64
    assert tight["continuous_throughput"] == pytest.approx(free["continuous_throughput"], rel=0.05)
    assert tight["continuous_ttft_p95_s"] > 1.5 * free["continuous_ttft_p95_s"]
    assert tight["continuous_latency_p95_s"] > free["continuous_latency_p95_s"]
