"""§3 continuous batching simulator: the seed's regime, negative controls, invariants."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from widgets_py import run
from widgets_py.cap15.batching import LONG_PROMPT, costs, workload
from widgets_py.models.batching_sim import Request, simulate


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


def test_chunking_cuts_the_p99_gap_under_load_and_costs_the_long_prompts_ttft():
    # SARATHI-Serve's measure: P99 time between tokens, sustained load, many long prompts
    v = run("batching").values
    decode_ms, prefill_ms = costs(8)
    assert v["long_requests"] >= 8
    assert v["gap_p99_whole_ms"] > decode_ms + LONG_PROMPT * prefill_ms * 0.9  # p99 sees the stalls
    assert v["gap_max_chunked_ms"] <= decode_ms + 512 * prefill_ms + 1e-9
    assert v["gap_p99_chunked_ms"] < v["gap_p99_whole_ms"] / 4
    assert v["gap_p50_chunked_ms"] == v["gap_p50_whole_ms"] == pytest.approx(decode_ms)  # the median is blind
    assert v["long_ttft_chunked_s"] > v["long_ttft_whole_s"]  # the price: long prompts start later
    assert v["throughput_chunked"] == pytest.approx(v["throughput_whole"], rel=0.05)


def test_without_long_prompts_chunking_has_nothing_to_cut():
    v = run("batching", {"long_pct": 0}).values
    assert v["long_requests"] == 0 and v["long_ttft_whole_s"] == 0.0
    assert v["gap_p99_whole_ms"] < 2 * costs(8)[0]  # only the short prompts' prefills


def test_a_single_long_prompt_moves_the_maximum_not_the_p99():
    # why the old one-prompt scenario misled: one stall touches under 1 % of the intervals
    decode_ms, prefill_ms = costs(8)
    reqs = workload(80, 1.0, 0.0, seed=10)
    reqs[20].prompt = LONG_PROMPT
    whole = simulate(reqs, 8, True, decode_ms, prefill_ms).metrics(8)
    assert whole["gap_max_ms"] > decode_ms + 0.9 * LONG_PROMPT * prefill_ms
    assert whole["gap_p99_ms"] < decode_ms + 600 * prefill_ms


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("gap, chunk", [(0.0, None), (10.0, None), (5.0, 256)])
def test_every_request_is_served_once_and_in_causal_order(continuous, gap, chunk):
    reqs = workload(60, 1.0, gap, seed=1, long_share=0.2)
    decode_ms, prefill_ms = costs(8)
    out = simulate(reqs, 8, continuous, decode_ms, prefill_ms, chunk)
    assert sorted(r.id for r in out.requests) == list(range(60))
    for r in out.requests:
        assert r.arrival_ms <= r.start_ms < r.first_token_ms <= r.finish_ms
        assert r.finish_iter - r.start_iter >= r.output  # one token per iteration at most
    # every slot-iteration is either busy or idle; tokens emitted equal tokens requested
    assert out.busy_slot_iterations <= 8 * out.iterations
    assert sum(c for _, c in out.gaps) == sum(r.output - 1 for r in out.requests)


def test_static_admits_only_into_an_empty_batch():
    reqs = [Request(i, 0.0, 10, out) for i, out in enumerate([5, 50, 5, 5, 5])]
    out = simulate(reqs, 2, False, 1.0, 0.0)
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
    run = simulate(_pair(6), 2, True, 1.0, 0.0, kv_blocks=4, block_tokens=4)
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
    tight = simulate(_pair(6), 2, True, 1.0, 0.0, kv_blocks=6, block_tokens=4)
    free = simulate(_pair(6), 2, True, 1.0, 0.0)
    assert tight.preemptions == 0 and tight.peak_blocks == 6
    assert [r.to_dict() for r in tight.requests] == [r.to_dict() for r in free.requests]


def test_admission_waits_for_blocks_not_slots():
    # prompts of 8 tokens (2 blocks), 2 tokens each (longest cache 9: 3 blocks), a pool of 3: the
    # second request has a free slot but not its 2 blocks until the first one finishes
    reqs = [Request(0, 0.0, 8, 2), Request(1, 0.0, 8, 2)]
    run = simulate(reqs, 2, True, 1.0, 0.0, kv_blocks=3, block_tokens=4)
    assert run.preemptions == 0 and run.max_running == 1
    assert [r.start_iter for r in run.requests] == [0, 2] and [r.finish_iter for r in run.requests] == [2, 4]


def test_infinite_memory_is_the_slot_only_run():
    # negative control: an unbounded pool and an ample one give today's run, bit for bit
    reqs = workload(80, 1.0, 5.0, seed=3, long_share=0.2)
    decode_ms, prefill_ms = costs(16)
    for chunk in (None, 512):
        free = simulate(reqs, 16, True, decode_ms, prefill_ms, chunk)
        ample = simulate(reqs, 16, True, decode_ms, prefill_ms, chunk, kv_blocks=10**7)
        assert [r.to_dict() for r in ample.requests] == [r.to_dict() for r in free.requests]
        assert ample.gaps == free.gaps and ample.end_ms == free.end_ms and ample.preemptions == 0


@pytest.mark.parametrize("blocks", [400, 800, 1600])
def test_a_small_pool_bounds_the_batch_and_serves_everyone(blocks):
    reqs = workload(60, 1.0, 0.0, seed=1, long_share=0.2)
    decode_ms, prefill_ms = costs(32)
    run = simulate(reqs, 32, True, decode_ms, prefill_ms, 512, kv_blocks=blocks)
    assert run.peak_blocks <= blocks and run.max_running < 32
    assert all(r.finish_iter > 0 for r in run.requests)
    assert sum(c for _, c in run.gaps) == sum(r.output - 1 for r in run.requests)


def test_a_request_larger_than_the_pool_is_refused():
    with pytest.raises(ValueError, match="needs 3 KV blocks alone; the pool has 2"):
        simulate(_pair(6), 2, True, 1.0, 0.0, kv_blocks=2, block_tokens=4)


def test_the_widget_default_memory_never_binds_and_a_small_pool_does():
    v = run("batching").values
    assert v["continuous_preemptions"] == v["static_preemptions"] == 0 and not v["memory_bound"]
    assert v["continuous_max_running"] == 8
    small = run("batching", {"slots": 64, "kv_memory": "1"}).values
    assert small["memory_bound"] and small["continuous_max_running"] < 64
    assert small["continuous_preemptions"] > 0 and small["continuous_recomputed_tokens"] > 0
    assert small["kv_tokens"] == small["kv_blocks"] * 16
