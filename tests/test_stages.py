"""Long computes in stages (engine.widget.Partial): what the browser is shown on the way,
and that the end is exactly the one-shot run."""

from __future__ import annotations

import dataclasses
import html
import json

import pytest

from widgets_py.cap15 import clock, quantize
from widgets_py.engine import browser, registry, session
from widgets_py.engine.registry import is_measured, names, replies, reply
from widgets_py.engine.widget import Partial, finish


def final(name: str, params: dict | None = None) -> tuple[list[dict], dict]:
    *partials, last = replies(name, params)
    return partials, last


@pytest.mark.parametrize("name", names())
def test_the_last_stage_is_the_one_shot_reply(name):
    partials, last = final(name)
    assert all(p["partial"] for p in partials) and "partial" not in last
    once = reply(name)
    assert last.keys() == once.keys()
    assert last["values"].keys() == once["values"].keys()
    for key, value in once["values"].items():
        assert is_measured(name, key) or last["values"][key] == value, key
    if not registry.get(name).timed:
        assert last == once


def test_quantize_shows_its_figure_first_then_each_format_int4_first():
    session.forget()  # nothing measured for these weights yet
    partials, last = final("quantize", {"group": 32})
    assert len(partials) == 1 + 5  # the original model, then five formats
    first = partials[0]
    assert "loss_original" not in first["values"] and "loss_int4" not in first["values"]
    assert first["values"]["outlier_ratio"] == last["values"]["outlier_ratio"]
    assert "es mesura…" in first["tables"] and "es mesura…" not in last["tables"]
    assert "loss_int4" in partials[2]["values"] and "loss_int8" not in partials[2]["values"]
    done = [p["done"] for p in partials]
    assert done == sorted(done) and 0 <= done[0] and done[-1] < 1
    for p in partials:  # what a partial shows is what the end shows
        assert all(last["values"][k] == v for k, v in p["values"].items())
        assert all(last["text"][k] == t for k, t in p["text"].items())
        assert p["message"]


def test_the_worker_warms_the_staged_widgets_at_their_defaults():
    """browser.WarmUp.staged: every staged compute but the clock, whose timings are the
    reader's to ask for. Once they ran at their defaults, a quantize group change scores only
    the four formats with a scale (the original model and BF16 are kept), and the defaults
    come back in one stage."""
    warmed = browser.WarmUp.staged()
    assert warmed == [n for n in names() if registry.is_staged(n) and n != "clock"]
    assert {"quantize", "sampling", "speculative", "batching"} <= set(warmed)
    session.forget()
    for name in warmed:
        final(name)
    partials, _ = final("quantize", {"group": 32})
    assert [p["message"] for p in partials] == [quantize.MESSAGES[n] for n in ("int4", "int8", "nf4", "fp8")]
    assert final("quantize")[0] == []


def test_quantize_reports_only_the_stages_a_change_needs():
    final("quantize", {"group": 16})
    assert final("quantize", {"group": 16})[0] == []  # all measured already: one stage
    partials, _ = final("quantize", {"group": 16, "granularity": "tensor"})
    assert 1 <= len(partials) <= 4  # bf16 has no scale, the original did not change


def test_clock_shows_each_context_length_as_it_is_timed_then_refines_the_whole_figure():
    """Every point timed once, a length at a time: the first full figure; then each round of
    further timings shows the fastest so far, never a slower one."""
    partials, last = final("clock", {"repeats": 3})
    seen = [len(clock.timed(p["values"])) for p in partials]  # a slow timing series repeats its partial
    assert seen == sorted(seen) and sorted(set(seen)) == list(range(len(clock.LENGTHS) + 1))
    assert "bytes_decode" in partials[0]["values"]  # counted from the shapes, at once
    refining = [p for p in partials if len(clock.timed(p["values"])) == len(clock.LENGTHS)]
    assert sorted({p["message"] for p in refining}) == [f"afinant: mesura {k} de 3 de cada punt" for k in (2, 3)]
    assert all("measures" not in p["values"] and "mesures per punt" not in p["figure"] for p in partials)  # not yet said
    for key in [k for k in last["values"] if k.startswith(("prefill_ms", "decode_us"))]:
        shown = [p["values"][key] for p in refining] + [last["values"][key]]
        assert shown == sorted(shown, reverse=True), key
    assert clock.timed(last["values"]) == list(clock.LENGTHS) and last["values"]["measures"] == 3


def test_a_long_timing_series_is_cut_into_short_stages(monkeypatch):
    """Stages of at most about STAGE_S: with every timing slower than that, each one is a stage."""
    monkeypatch.setattr(clock, "STAGE_S", 0.0)
    partials, _ = final("clock", {"repeats": 2})
    assert len(partials) == len(clock.LENGTHS) * len(clock.PHASES) * 2  # a prefill and a decode per length, twice


def machine(monkeypatch, cost: float) -> list[float]:
    """clock.py's time on a machine where a pass of the mini-GPT takes `cost` seconds: the
    time is a counter that each pass advances (by `cost`) and each reading (by 0.1 µs). The
    time, in seconds, in the list returned."""
    now, extend = [0.0], clock.gpt.extend

    class Counter:
        @staticmethod
        def perf_counter():
            now[0] += 1e-7
            return now[0]

    def slow(*args):
        now[0] += cost
        return extend(*args)

    monkeypatch.setattr(clock, "time", Counter)
    monkeypatch.setattr(clock.gpt, "extend", slow)
    return now


def test_a_slow_machine_gets_fewer_repeats_within_the_budget_and_is_told(monkeypatch):
    """50 ms a pass (a phone, a busy CPU): every point timed once (1.2 s with the untimed first
    calls), then rounds of 12 timings (0.6 s) until BUDGET_S: 7 timings a point of the 15 asked
    (8 for the points the last round reached), the run over within a timing of the budget, and
    the figure, its text and the panel say so."""
    now = machine(monkeypatch, 0.05)
    result = registry.run("clock", {"repeats": 15})
    assert clock.BUDGET_S < now[0] <= clock.BUDGET_S + 0.05 + 1e-3
    assert result.values["measures"] == 7
    assert clock.timed(result.values) == list(clock.LENGTHS)
    assert "almenys 7 de 15 mesures per punt: límit de 5 s" in result.figure
    assert "la més ràpida d'almenys 7 de les 15 mesures demanades" in result.alt
    assert registry.formatted("clock", result.values)["measures"] == "7"


def test_a_very_slow_machine_still_times_every_point_once(monkeypatch):
    """1 s a pass: the first full figure takes 24 s, past the budget, but no point is left out."""
    now = machine(monkeypatch, 1.0)
    values = finish(clock.clock(repeats=5, seed=0))
    assert values["measures"] == 1 and clock.timed(values) == list(clock.LENGTHS)
    assert now[0] == pytest.approx(len(clock.LENGTHS) * 4 * 1.0, abs=1e-2)  # per length: 2 untimed calls, 2 timed


def test_a_fast_machine_does_all_its_repeats(monkeypatch):
    """1 ms a pass (CPython here takes 0.2 ms to 13 ms): the most repeats, 15, in well under the
    budget. On a counter, as the real clock of a busy machine could pass 5 s."""
    now = machine(monkeypatch, 1e-3)
    result = registry.run("clock", {"repeats": 15})
    assert now[0] < clock.BUDGET_S / 2
    assert result.values["measures"] == 15
    assert "la més ràpida de 15 mesures per punt" in result.figure and "almenys" not in result.figure


def coarse_clock(monkeypatch, step: float) -> list[float]:
    """clock.py's time as a browser tells it: in steps of `step` seconds; reading it takes
    0.1 µs. The real time, in seconds, in the list returned."""
    now = [0.0]

    class Coarse:
        @staticmethod
        def perf_counter():
            now[0] += 1e-7
            return now[0] // step * step

    monkeypatch.setattr(clock, "time", Coarse)
    return now


@pytest.mark.parametrize("step", [1e-4, 1e-3])  # Chromium's clock; Firefox's and WebKit's
def test_a_call_shorter_than_the_clocks_step_is_timed_in_batches(monkeypatch, step):
    """A browser's clock steps 0.1 ms or 1 ms (Pyodide's perf_counter with it); a 10 µs
    decode step timed one call at a time reads 0 (and the figure's log axis then fails), and
    timed in batches of 2 ms it reads up to 50 % short in steps of 1 ms. In batches of 20
    steps it reads its own duration."""
    now = coarse_clock(monkeypatch, step)

    def call():
        now[0] += 1e-5

    assert clock.clock_step() == pytest.approx(step)
    shortest = clock.shortest_timing(clock.clock_step())
    for phase in range(10):  # wherever in the clock's step the timing starts
        now[0] = 7 + phase * step / 10
        seconds, n = clock.timing(call, 1, shortest)
        assert seconds == pytest.approx(1e-5, rel=0.06), phase
        again, more = clock.timing(call, n, shortest)  # the next starts at n, doubled if it read short
        assert again == pytest.approx(1e-5, rel=0.06) and more in (n, 2 * n), phase


def test_the_clocks_step_is_read_where_it_runs_and_sets_every_timings_length(monkeypatch):
    """clock() times with batches of 20 of the clock's steps (2 ms at least, a stage at most),
    the step read where it runs: CPython's, a browser's 1 ms."""
    assert clock.clock_step() < 1e-5  # CPython's own clock
    assert [clock.shortest_timing(s) for s in (1e-9, 1e-4, 1e-3, 0.1)] == [0.002, 0.002, 0.02, clock.STAGE_S]
    asked = []

    def timing(fn, n, shortest):
        asked.append(shortest)
        return 1e-3, n

    monkeypatch.setattr(clock, "timing", timing)
    coarse_clock(monkeypatch, 1e-3)
    assert clock.clock_step(reads=1) == pytest.approx(1e-3)
    finish(clock.clock(repeats=1, seed=0))
    assert asked == [pytest.approx(0.02)] * 2 * len(clock.LENGTHS)


def test_a_compute_that_yields_something_else_is_refused():
    def bad(**params):
        yield {"not": "a Partial"}
        return {}

    with registry.substituted("roofline", dataclasses.replace(registry.get("roofline"), compute=bad)):
        with pytest.raises(AssertionError, match="not Partial"):
            list(replies("roofline"))
        with pytest.raises(AssertionError, match="not Partial"):
            registry.run("roofline")


def test_a_partial_may_lack_outputs_the_end_may_not():
    def short(**params):
        yield Partial({}, 0.0, "res encara")
        return {}

    shell = dataclasses.replace(registry.get("roofline"), compute=short, figure=lambda p, s: ("<svg></svg>", ""), tables=None)
    with registry.substituted("roofline", shell):
        stages = replies("roofline")
        assert next(stages)["values"] == {}
        with pytest.raises(AssertionError, match="outputs not computed"):
            next(stages)


def test_sampling_shows_the_distribution_then_the_sample_as_it_grows():
    from widgets_py.cap15 import sampling

    partials, last = final("sampling")
    assert "sample" not in partials[0]["values"] and "es genera…" in partials[0]["tables"]
    assert partials[0]["values"]["kept"] == last["values"]["kept"]  # the distribution comes whole, first
    grown = [p["values"]["sample_so_far"] for p in partials[1:]]
    assert [len(s) for s in grown] == list(range(sampling.SAMPLE_STAGE, sampling.SAMPLE_CHARS, sampling.SAMPLE_STAGE))
    assert all(last["values"]["sample"].startswith(s) for s in grown)  # each the beginning of the final text
    assert all(html.escape(s) + "…" in p["tables"] for s, p in zip(grown, partials[1:]))
    assert "…</mark>" not in last["tables"] and "sample_so_far" not in last["values"]


def test_batching_keeps_its_sweep_when_only_the_slots_change():
    """The sweep of slot counts depends on the queue alone: moving the slots finds it kept,
    with the same numbers; another queue computes it again."""
    session.forget()
    cold_partials, cold = final("batching", {"slots": 16})
    assert cold_partials  # the sweep was computed, in stages
    assert final("batching", {"slots": 4})[0] == []
    partials, warm = final("batching", {"slots": 16})
    assert partials == [] and warm == cold
    assert final("batching", {"slots": 16, "requests": 40})[0]  # another queue


# ---- engine.stages: the engine schedules the stages a widget declares ------------------------

def test_a_stage_reports_progress_only_when_it_computes():
    from widgets_py.engine.session import Session
    from widgets_py.engine.stages import stage

    made = []
    with Session().active():
        run = lambda: stage(("t", 1), lambda: made.append(1) or 42, Partial({}, 0.5, "calculant"))  # noqa: E731
        partials = []
        gen = run()
        while True:
            try:
                partials.append(next(gen))
            except StopIteration as end:
                assert end.value == 42
                break
        assert [p.message for p in partials] == ["calculant"]
        assert list(run()) == [] and finish(run()) == 42 and made == [1]  # kept: no report, no second compute


def test_evaluate_many_skips_what_is_kept_and_shows_the_values_so_far():
    """Every evaluation is a stage, in order; one the memo has costs no stage; each stage
    shows the values found before it."""
    from widgets_py.engine.session import Session
    from widgets_py.engine.stages import Evaluation, evaluate_many

    with Session().active():
        session.cached(("e", "b"), lambda: "kept")
        evaluations = [Evaluation(("e", name), f"fent {name}", lambda name=name: name.upper()) for name in "abc"]
        gen = evaluate_many(evaluations, lambda values: sorted(values.values()))
        seen = []
        while True:
            try:
                seen.append(next(gen))
            except StopIteration as end:
                result = end.value
                break
    assert [(p.message, p.done, p.state) for p in seen] == [("fent a", 0.0, ["kept"]), ("fent c", 0.5, ["A", "kept"])]
    assert result == {("e", "a"): "A", ("e", "b"): "kept", ("e", "c"): "C"}


def test_the_warm_up_runs_every_task_in_order_and_notes_what_fails(monkeypatch):
    """browser.WarmUp, which worker.js pumps a task per turn once the page is interactive:
    every widget module, the preparations, then each staged widget at its defaults a stage
    per task (their stages keep what a reader's first change would pay). A module that fails
    to import is noted, in the line worker.js shows, and the rest go on."""
    from widgets_py.engine.session import Session

    modules = [*registry.modules(), "widgets_py.cap15.absent"]
    monkeypatch.setattr(registry, "modules", lambda: modules)
    with Session().active():
        warm = browser.WarmUp()
        tasks = []
        while not (task := json.loads(warm.advance()))["done"]:
            tasks.append(task)
        assert task["failed"] == ["widgets_py.cap15.absent: ModuleNotFoundError: No module named 'widgets_py.cap15.absent'"]
        staged = browser.WarmUp.staged()
        assert "quantize" in staged and "clock" not in staged  # clock times the machine: when asked
        assert len(tasks) > len(modules) + len(browser.preparations()) + len(staged)  # staged runs: a task per stage
