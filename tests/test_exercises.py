"""Exercises (issue 41), in CPython: every exercise proven as the build proves it, plausible wrong
answers caught with feedback naming the call, and the reader's errors explained (the line of an
exception, NaN, a wrong shape, a wrong type). The page's side (editor, buttons, time limit) is
tested in the browser; the directive and the build's proof in test_exercise_directive.py."""

from __future__ import annotations

import contextlib
import re
import signal
import sys
import time

import numpy as np
import pytest

from widgets_py.engine import registry
from widgets_py.engine.exercise import Exercise, mismatch

CHAPTER = [n for n in registry.exercise_names() if registry.declared_at(n)[0].startswith("widgets_py/cap15/")]


def ex(name: str) -> Exercise:
    return registry.exercise(name)


def edited(name: str, old: str, new: str) -> str:
    """The exercise's solution with one change: a wrong answer a reader could write."""
    solution = ex(name).solution
    assert old in solution, f"{name}: the solution no longer holds {old!r}"
    return solution.replace(old, new)


# exercise -> (what is wrong, the wrong answer); each must fail, naming a call
WRONG = {
    "decode_ceiling": [
        ("bits instead of bytes", edited("decode_ceiling", "params * bytes_per_param", "params * bytes_per_param * 8")),
        ("bandwidth in GB/s", edited("decode_ceiling", "return bandwidth /", "return bandwidth / 1e9 /")),
        ("bytes per parameter forgotten", edited("decode_ceiling", "params * bytes_per_param", "params")),
    ],
    "kv_bytes": [
        ("query heads instead of KV heads", edited("kv_bytes", "n_layers * n_kv_heads", "n_layers * n_heads")),
        ("K only, not V", edited("kv_bytes", "per_token = 2 *", "per_token = 1 *")),
        ("bits instead of bytes", edited("kv_bytes", '{"fp32": 4, "bf16": 2, "fp8": 1, "int8": 1}',
                                         '{"fp32": 32, "bf16": 16, "fp8": 8, "int8": 8}')),
    ],
    "paged_waste": [
        ("blocks rounded down", edited("paged_waste", "-(-n // block)", "n // block")),
        ("one block too many when full", edited("paged_waste", "-(-n // block)", "n // block + 1")),
        ("the waste of the largest only", edited("paged_waste", "return blocks * block - sum(lengths)",
                                                 "return max(-(-n // block) * block - n for n in lengths)")),
    ],
    "sampling_chain": [
        ("top-p on the whole distribution, before top-k", edited(
            "sampling_chain", "q = np.where(keep, p, 0.0) / p[keep].sum()", "q = p")),
        ("filters at temperature 1, temperature after them", edited(
            "sampling_chain", "z = np.asarray(logits, dtype=float) / temperature",
            "z = np.asarray(logits, dtype=float)").replace(
            "q = np.where(keep, p, 0.0)\n    return", "p = np.exp((z - z.max()) / temperature)\n"
            "    q = np.where(keep, p, 0.0)\n    return")),
        ("min-p against 1, not the largest", edited("sampling_chain", "q >= min_p * q.max()", "q >= min_p")),
    ],
    "spec_tokens": [
        ("the bonus token forgotten", edited("spec_tokens", "range(gamma + 1)", "range(gamma)")),
        ("the ceiling 1/(1 - alpha)", "def tokens_per_pass(alpha, gamma):\n    return 1 / (1 - alpha)\n"),
        ("linear in gamma", "def tokens_per_pass(alpha, gamma):\n    return 1 + alpha * gamma\n"),
    ],
    "int4_error": [
        ("sixteen levels: absmax / 8", edited("int4_error", "/ 7)  # [sortides]", "/ 8)  # [sortides]")),
        ("truncation, not rounding", edited("int4_error", "np.round(block / scale)", "np.trunc(block / scale)")),
        ("scale kept in float64, not BF16", edited("int4_error", "scale = bf16(np.abs(block).max(axis=0) / 7)",
                                                   "scale = np.abs(block).max(axis=0) / 7")),
        ("groups along the output axis", edited("int4_error", "scale = bf16(np.abs(block).max(axis=0) / 7)",
                                                "scale = bf16(np.abs(block).max(axis=1, keepdims=True) / 7)")),
    ],
    "request_cost": [
        ("per minute, not per hour", edited("request_cost", "/ 3600", "/ 60")),
        ("the prefill forgotten", edited("request_cost", "seconds = prefill_s + ", "seconds = ")),
        ("the prefill shared by the batch", edited("request_cost", "prefill_s + answer * step_s / concurrency",
                                                   "(prefill_s + answer * step_s) / concurrency")),
    ],
}


def test_chapter_15_has_its_exercises():
    assert set(WRONG) <= set(CHAPTER) and len(CHAPTER) >= 6


@pytest.mark.parametrize("name", CHAPTER)
def test_an_exercise_is_found_where_it_is_declared(name):
    """The build's errors send its author to the `EXERCISE =` line of its module."""
    from conftest import ROOT

    where, line = registry.declared_at(name)
    assert (ROOT / where).read_text().splitlines()[line - 1].startswith("EXERCISE = Exercise(")
    assert registry.exercise(name).name == name


@pytest.mark.parametrize("name", CHAPTER)
def test_the_build_proof_holds(name):
    assert ex(name).proof() is None


@pytest.mark.parametrize("name", CHAPTER)
def test_the_reference_and_the_solution_pass_every_case(name):
    e = ex(name)
    for verdict in (e.grade(e.reference), e.check(e.solution)):
        assert verdict.verdict == "pass" and verdict.passed == verdict.total == len(e.examples) + e.hidden, verdict


@pytest.mark.parametrize("name", CHAPTER)
def test_the_starter_fails_naming_a_case(name):
    e = ex(name)
    verdict = e.check(e.starter)
    assert verdict.verdict == "fail", verdict
    assert verdict.call.startswith(f"{e.function}(") and verdict.call in verdict.message
    assert verdict.expected and verdict.got and verdict.expected != verdict.got


@pytest.mark.parametrize("name, why, code", [(n, why, code) for n, cases in WRONG.items() for why, code in cases],
                         ids=[f"{n}: {why}" for n, cases in WRONG.items() for why, _ in cases])
def test_a_plausible_wrong_answer_fails(name, why, code):
    e = ex(name)
    verdict = e.check(code)
    assert verdict.verdict in ("fail", "error"), f"{why}: {verdict}"
    assert verdict.call.startswith(f"{e.function}(") and verdict.call in verdict.message, verdict


@pytest.mark.parametrize("name", CHAPTER)
def test_hidden_cases_are_the_same_everywhere_and_apart_from_the_examples(name):
    e = ex(name)
    first, again = e.cases(), e.cases()
    assert [c.hidden for c in first] == [False] * len(e.examples) + [True] * e.hidden
    for a, b in zip(first, again):
        assert a.args.keys() == b.args.keys()
        assert all(np.array_equal(a.args[k], b.args[k]) for k in a.args)


def test_an_exception_names_the_readers_line():
    code = "def tokens_per_pass(alpha, gamma):\n    x = 1\n    return x / 0\n"
    verdict = ex("spec_tokens").check(code)
    assert verdict.verdict == "error" and verdict.line == 3
    assert "ZeroDivisionError a la línia 3" in verdict.message and verdict.call in verdict.message


def test_an_error_while_the_module_runs_names_its_line():
    syntax = ex("spec_tokens").check("def tokens_per_pass(alpha, gamma):\n    return (1 +\n\nx = ]\n")
    assert syntax.verdict == "error" and syntax.line is not None and "no s'executa" in syntax.message
    leaving = ex("spec_tokens").check("import sys\nsys.exit(3)\n")
    assert leaving.verdict == "error" and leaving.line == 2 and "SystemExit" in leaving.message


def test_a_missing_function_is_named():
    verdict = ex("kv_bytes").check("def kv_bytes(*args):\n    return 0\n")
    assert verdict.verdict == "error" and "`kv_cache_bytes`" in verdict.message


def test_nan_is_explained():
    verdict = ex("spec_tokens").check("def tokens_per_pass(alpha, gamma):\n    return float('nan')\n")
    assert verdict.verdict == "fail" and "NaN" in verdict.message
    array = ex("sampling_chain").check("import numpy as np\ndef sampling_probs(logits, **others):\n"
                                       "    z = np.zeros(len(logits))\n    return z / z.sum()\n")
    assert array.verdict == "fail" and "NaN" in array.message and "índex 0" in array.message


def test_a_wrong_shape_is_explained():
    verdict = ex("int4_error").check(edited("int4_error", "return out", "return out.ravel()"))
    assert verdict.verdict == "fail" and "forma (6, 2)" in verdict.message and "forma (12,)" in verdict.message


def test_a_wrong_type_is_explained():
    floats = ex("kv_bytes").check(edited("kv_bytes", "return per_token * tokens * batch",
                                         "return per_token * tokens * batch / 1"))
    assert floats.verdict == "fail" and "enter" in floats.message and "`float`" in floats.message
    nothing = ex("spec_tokens").check("def tokens_per_pass(alpha, gamma):\n    pass\n")
    assert nothing.verdict == "fail" and "`NoneType`" in nothing.message
    scalar = ex("sampling_chain").check("def sampling_probs(logits, **others):\n    return 1.0\n")
    assert scalar.verdict == "fail" and "s'esperava un array de forma (8,)" in scalar.message


def test_an_answer_that_modifies_its_arguments_does_not_change_the_expected_value():
    code = edited("sampling_chain", "z = np.asarray(logits, dtype=float) / temperature",
                  "logits /= temperature\n    z = logits")
    assert ex("sampling_chain").check(code).verdict == "pass"


def test_a_verdict_is_plain_data_for_the_page():
    import json

    verdict = ex("kv_bytes").check(ex("kv_bytes").starter).to_dict()
    assert json.loads(json.dumps(verdict)) == verdict and verdict["verdict"] == "fail" and verdict["hidden"] is False


@contextlib.contextmanager
def hangs_after(seconds: float):
    """Within the block, SIGALRM raises after `seconds`: a check that the time limit does not stop
    fails (as the reader's error) instead of hanging the suite."""
    def ring(*_):
        raise AssertionError(f"not stopped after {seconds} s")
    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("code, line", [
    ("while True:\n    pass\n", 1),  # while the module runs
    ("def decode_ceiling(**kw):\n    while 1: pass\n", 2),  # in the function, a loop that never leaves its line
    ("def decode_ceiling(**kw):\n    n = 0\n    while True:\n        try:\n            n += 1\n        except Exception:\n            pass\n", 3),
])
def test_a_loop_of_the_readers_lines_stops_itself_naming_its_line(code, line):
    """The reader's lines stop after the time limit (reader_code.time_limited): `timeout`, the line
    it had reached, the worker kept; an `except Exception` in the loop does not swallow it."""
    start = time.monotonic()
    with hangs_after(5):
        verdict = ex("decode_ceiling").check(code, seconds=0.5)
    took = time.monotonic() - start
    assert verdict.verdict == "timeout" and verdict.line is not None, verdict
    assert "en 0,5 s" in verdict.message and f"línia {verdict.line}" in verdict.message, verdict.message
    assert line <= verdict.line <= line + 4 and 0.5 <= took < 2, (verdict, took)


def test_the_time_limit_traces_only_the_readers_lines_and_puts_back_the_tracer_it_found():
    """Frames of other files (the chapter's reference, numpy) run untraced, at full speed, and a
    debugger's or coverage's tracer is in place again after the check."""
    from widgets_py.engine import reader_code

    def debugger(frame, event, arg):
        return None

    previous = sys.gettrace()
    sys.settrace(debugger)
    try:
        with reader_code.time_limited("<exercici: x>", 10):
            assert sys.gettrace()(sys._getframe(), "call", None) is None  # this frame is not the reader's
        assert sys.gettrace() is debugger
        assert ex("decode_ceiling").check("while True:\n    pass\n", seconds=0.2).verdict == "timeout"
        assert sys.gettrace() is debugger
    finally:
        sys.settrace(previous)


def test_the_pages_limit_comes_after_pythons_own():
    """The page restarts Python only for what Python's own limit cannot stop (a loop inside one C
    call): its limit (exercise.js LIMIT_MS) leaves Python's a margin to answer first."""
    from pathlib import Path

    from widgets_py.engine.exercise import TIME_LIMIT_S

    js = (Path(__file__).resolve().parents[1] / "docs/assets/tw/exercise.js").read_text()
    page_ms = int(re.search(r"const LIMIT_MS = (\d+);", js).group(1))
    assert page_ms >= TIME_LIMIT_S * 1000 + 3000, (page_ms, TIME_LIMIT_S)


def test_an_interrupt_is_the_pages_not_a_verdict():
    """The page stops a run that takes too long (Pyodide's interrupt: KeyboardInterrupt): it is
    not graded as the reader's error, it reaches the worker, which answers `timeout`."""
    with pytest.raises(KeyboardInterrupt):
        ex("spec_tokens").check("def tokens_per_pass(alpha, gamma):\n    raise KeyboardInterrupt\n")


@pytest.mark.parametrize("expected, got, words", [
    (3, 3.0, ["enter", "`float`"]),
    (3, True, ["enter", "`bool`"]),
    (1.0, "1.0", ["nombre", "`str`"]),
    (1.0, float("inf"), ["inf", "divisió per zero"]),
    (2.0, 2.1, ["2.1", "5,0 %"]),
    (np.zeros((2, 3)), [[0, 0, 0]], ["forma (2, 3)", "forma (1, 3)"]),
    (np.zeros(3), np.array([0, 0, 1e-3]), ["índex 2", "0.001"]),
])
def test_mismatches_say_what_differs(expected, got, words):
    reason = mismatch(expected, got, rtol=1e-9, atol=1e-12)
    assert reason is not None and all(w in reason for w in words), reason


@pytest.mark.parametrize("expected, got", [
    (3, np.int64(3)), (1.0, 1.0 + 1e-12), (2.0, np.float32(2.0)), (np.arange(3.0), [0, 1, 2]), (0.0, 1e-13),
])
def test_what_is_equal_within_tolerance_passes(expected, got):
    assert mismatch(expected, got, rtol=1e-9, atol=1e-12) is None


def test_the_contract_refuses_a_malformed_exercise():
    e = ex("spec_tokens")
    from dataclasses import replace

    with pytest.raises(ValueError, match="1 to 3 hints"):
        replace(e, hints=())
    with pytest.raises(ValueError, match="visible example"):
        replace(e, examples=())
    with pytest.raises(ValueError, match="lowercase"):
        replace(e, name="Tokens per pass")


def test_the_proof_refuses_a_starter_that_passes_and_a_reference_that_fails():
    from dataclasses import replace

    e = ex("spec_tokens")
    assert "codi inicial ja passa" in replace(e, starter=e.solution).proof()
    assert "referència no passa" in replace(e, reference=lambda alpha, gamma: float("nan")).proof()
    assert "referència falla" in replace(e, reference=lambda alpha, gamma: 1 / 0).proof()
    assert "solució no passa" in replace(e, solution=e.starter).proof()


# ---- the page: the directive, the static HTML, the build's proof -------------------------

class Config:
    """The part of a MkDocs config the statement's rendering reads."""
    markdown_extensions = ["attr_list", "md_in_html", "tables", "toc", "pymdownx.superfences"]
    mdx_configs: dict = {}


@pytest.mark.parametrize("name", CHAPTER)
def test_the_static_html_shows_the_statement_and_the_starter_and_hides_the_rest(name):
    from html import unescape

    from build_hooks.pages import exercises

    e = ex(name)
    html = exercises.html(name, Config())
    assert html.startswith(f'<div class="tw-exercise" id="tw-ex-{name}" data-exercise="{name}">')
    assert f"<code>{e.function}(" in html and "<p>" in html  # the statement, rendered
    # the starter: focusable and named, since a long line scrolls inside it at 360 px (test_screens.py)
    assert f'<pre class="tw-exercise-starter" tabindex="0" aria-label="Codi inicial: ' in html
    assert '<code class="language-python">' in html
    text = re.sub(r"<[^>]+>", "", unescape(html))  # what a reader (and the search index) reads
    assert e.starter in text
    solution_only = [line.strip() for line in e.solution.splitlines() if line.strip() and line.strip() not in e.starter]
    hints = [re.sub(r"[*`]", "", hint)[:40] for hint in e.hints]  # as Markdown would render them
    assert solution_only and all(part not in text for part in solution_only + hints)


def test_the_directive_stands_alone_and_names_itself_when_misspelt():
    from build_hooks.pages import directives

    [d] = directives.scan("# P\n\n<!-- md:exercise kv_bytes -->\n")
    assert (d.kind, d.args, d.line) == ("exercise", "kv_bytes", 3)
    for text, words in (("Text <!-- md:exercise kv_bytes -->\n", "sol a la seva línia"),
                        ("<!-- md:exercice kv_bytes -->\n", "md:exercise"),
                        ("<!-- md:exercise  -->\n", "buida")):
        with pytest.raises(directives.DirectiveError, match=words) as refused:
            directives.scan("# P\n\n" + text)
        assert refused.value.line == 3


def _build(tmp_path, body: str, exercise: str | None = None):
    """A one-page project with the book's hooks (test_directives._project), and `exercise`, the
    text of a module, as the one module of an extra chapter, widgets_py/cap97/ex_prova.py."""
    import subprocess

    from conftest import ROOT, generator
    from test_directives import _project

    if exercise is None:
        return _project(tmp_path, body)
    project = tmp_path / "project"
    package = project / "widgets_py"
    (package / "cap97").mkdir(parents=True)
    for part in (ROOT / "widgets_py").iterdir():
        if part.name != "__pycache__":
            (package / part.name).symlink_to(part)
    (package / "cap97" / "__init__.py").write_text('"""A chapter with one exercise."""\n')
    (package / "cap97" / "ex_prova.py").write_text(exercise)
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_text(body)
    for part in ("build_hooks", "includes", "overrides"):
        (project / part).symlink_to(ROOT / part)
    config = (ROOT / "mkdocs.yml").read_text()
    (project / "mkdocs.yml").write_text(config[: config.index("\nnav:")] + "\n")
    done = subprocess.run(generator.build_command(tmp_path / "site"), cwd=project, capture_output=True, text=True,
                          timeout=300)
    return done, tmp_path / "site" / "index.html"


PROVA = '''"""An exercise the build must refuse."""

from ..engine.exercise import Exercise


def reference(alpha, gamma):
    return REFERENCE


EXERCISE = Exercise(
    name="prova", title="Prova", statement="Prova.", function="f",
    starter="def f(alpha, gamma):\\n    return STARTER\\n", solution="def f(alpha, gamma):\\n    return 1.0\\n",
    hints=("Cap.",), reference=reference, examples=({"alpha": 0.5, "gamma": 1},),
    draw=lambda rng: {"alpha": float(rng.random()), "gamma": 2},
)
'''
PROVA_LINE = PROVA.split("\n").index("EXERCISE = Exercise(") + 1


@pytest.mark.build
@pytest.mark.parametrize("reference, starter, words", [
    ('float("nan")', "0.0", ["referència no passa", "NaN"]),
    ("1.0", "1.0", ["codi inicial ja passa"]),
], ids=["a reference that fails", "a starter that passes"])
def test_the_build_stops_at_an_exercise_it_cannot_prove(tmp_path, reference, starter, words):
    module = PROVA.replace("return REFERENCE", f"return {reference}").replace("return STARTER", f"return {starter}")
    done, _ = _build(tmp_path, "# Proves\n\nText.\n", module)
    assert done.returncode != 0, "the build accepted it"
    message = next((l for l in done.stderr.splitlines() if "ex_prova.py:" in l), "")
    where = f"widgets_py/cap97/ex_prova.py:{PROVA_LINE}: l'exercici 'prova' no es pot publicar"
    assert where in message, done.stderr[-1500:]
    assert all(w in message for w in words), message


@pytest.mark.build
@pytest.mark.parametrize("body, line, words", [
    ("Text.\n\n<!-- md:exercise kv_bites -->\n", 5, ["exercici desconegut 'kv_bites'", "kv_bytes"]),
    ("<!-- md:widget kv_cache -->\n<!-- md:exercise kv_bytes -->\n\nText.\n\n<!-- md:exercise kv_bytes -->\n", 8,
     ["'kv_bytes' ja és en aquesta pàgina, a la línia 4"]),
    ("<!-- md:exercise kv_bytes seed=3 -->\n", 3, ["no pren paràmetres"]),
    ("Text.\n\n<!-- md:exercicis -->\n", 5, ["<!-- md:exercicis --> en una pàgina sense exercicis"]),
    ("Text.\n\n<!-- md:exercise kv_bytes -->\n", 5,
     ["l'exercici 'kv_bytes' mou la figura 'kv_cache', que no és en aquesta pàgina", "<!-- md:widget kv_cache -->"]),
], ids=["unknown", "repeated", "parameters", "a list without exercises", "its figure elsewhere"])
def test_a_misplaced_exercise_stops_the_build_at_its_line(tmp_path, body, line, words):
    done, _ = _build(tmp_path, "# Proves\n\n" + body)
    assert done.returncode != 0, "the build accepted it"
    message = next((l for l in done.stderr.splitlines() if "index.md:" in l), "")
    assert f"index.md:{line}:" in message and all(w in message for w in words), done.stderr[-1500:]


@pytest.mark.build
def test_a_placed_exercise_is_in_the_page_and_its_solution_is_not_in_the_search_index(tmp_path):
    e = ex("kv_bytes")
    done, page = _build(tmp_path, "# Proves\n\n<!-- md:widget kv_cache -->\n\n"
                                  "!!! example \"Practica\"\n\n    <!-- md:exercise kv_bytes -->\n\n"
                                  "<!-- md:exercicis -->\n\nPer llistar-los: `<!-- md:exercicis -->`.\n")
    assert done.returncode == 0, done.stderr[-1500:]
    html = page.read_text()
    # the page's list of exercises: a link to each (exercise.js marks and counts the solved ones)
    assert f'<li data-listed="kv_bytes"><a href="#tw-ex-kv_bytes">{e.title}</a></li>' in html
    assert html.count('data-exercise="kv_bytes"') == 1 and "md:exercise " not in html
    assert html.count("data-listed=") == 1 and "<code>&lt;!-- md:exercicis --&gt;</code>" in html  # code stays code
    assert "<code>kv_cache_bytes(n_layers, n_heads, n_kv_heads, d_head, cache, tokens, batch)</code>" in html
    index = (page.parent / "search" / "search_index.json").read_text()
    assert "kv_cache_bytes" in index  # the statement is searchable
    assert "n_layers * n_kv_heads" not in html + index and "K i V dels caps de" not in html + index


def test_an_exercise_answers_what_the_chapter_s_widget_shows():
    """The reference is the chapter's own code: at a widget's setting, the exercise's answer is
    the number on the page (the roofline's ceiling and cache, the cost of a request)."""
    from widgets_py.cap15 import ex_decode_ceiling, ex_kv_bytes

    _, roofline = registry.compute("roofline", {"model": "llama-3-70b", "gpu": "h100-80gb", "weight_format": "bf16",
                                                "prompt_tokens": 8192})
    ceiling = ex("decode_ceiling").reference(**ex_decode_ceiling.case("llama-3-70b", "h100-80gb", "bf16"))
    assert ceiling == pytest.approx(roofline["decode_tps_weights"], rel=1e-12)
    cache = ex("kv_bytes").reference(**ex_kv_bytes.case("llama-3-70b", "bf16", 8192, 1))
    assert cache / 1e9 == pytest.approx(roofline["kv_prompt_gb"], rel=1e-12)
    setting = {"model": "llama-3-70b", "gpu": "h100-80gb", "n_gpus": 4, "context": 8192, "concurrency": 32,
               "price": 3.0, "prompt": 2000, "answer": 500}
    _, cost = registry.compute("cost", setting)
    dollars = ex("request_cost").reference(prefill_s=cost["prefill_s"], step_s=cost["decode_s"] / 500 * 32, answer=500,
                                           concurrency=32, dollars_per_hour=3.0 * 4)
    assert dollars == pytest.approx(cost["request_dollars"], rel=1e-12)


# ---- a passing answer drives its widget (exercise.Drives) ----------------------------------

DRIVING = [n for n in CHAPTER if ex(n).drives is not None]
# settings of the driven widget where the reader's function decides what is shown
DRIVEN_AT = {
    "kv_bytes": [{}, {"model": "llama-3-8b", "cache_format": "fp8"}, {"model": "gpt2-xl", "cache_format": "fp32"}],
    "sampling_chain": [{}, {"temperature": 0.7, "top_k": 5, "top_p": 0.8, "min_p": 0.05},
                       {"temperature": 1.4, "top_p": 0.6, "penalty": 1.3}, {"temperature": 0.0}],
    "spec_tokens": [{}, {"coupling": "rejection", "k": 6}, {"draft_every": "16", "k": 2}],
}
# a wrong function behind the seam moves the figure (so the figure calls the reader's function)
MOVED_BY = {"kv_bytes": ({}, "bytes_per_token"), "sampling_chain": ({"top_k": 3, "top_p": 0.9}, "kept"),
            "spec_tokens": ({}, "tokens_per_pass_law")}


def driven_reply(name: str, code: str, params: dict) -> dict:
    import json

    from widgets_py.engine import browser
    shipped = json.loads(browser.source(ex(name).drives.widget))["source"]
    return json.loads(browser.render_edited(ex(name).drives.widget, f"ex-{name}", ex(name).driven(code, shipped),
                                            json.dumps(params)))


def test_the_exercises_that_name_a_widget_in_the_issue_drive_it():
    assert {n: ex(n).drives.widget for n in DRIVING} == {"kv_bytes": "kv_cache", "sampling_chain": "sampling",
                                                         "spec_tokens": "speculative"}
    assert set(DRIVEN_AT) == set(DRIVING) == set(MOVED_BY)


@pytest.mark.parametrize("name", DRIVING)
def test_a_pass_carries_the_widget_driven_by_the_answer_and_a_fail_does_not(name):
    import json

    from widgets_py.engine import browser
    passed = json.loads(browser.check_exercise(name, ex(name).solution))
    assert passed["verdict"] == "pass"
    assert passed["figure"] == {"widget": ex(name).drives.widget,
                                "code": ex(name).driven(ex(name).solution, json.loads(browser.source(
                                    ex(name).drives.widget))["source"]),
                                "exercise": ex(name).title, "title": registry.get(ex(name).drives.widget).title}
    assert f"def {ex(name).drives.seam}(" in passed["figure"]["code"].split("_la_teva_solucio()")[-1]
    failed = json.loads(browser.check_exercise(name, ex(name).starter))
    assert failed["verdict"] == "fail" and "figure" not in failed


@pytest.mark.parametrize("name", DRIVING)
def test_the_solution_behind_the_seam_gives_the_widgets_own_numbers(name):
    import json

    for params in DRIVEN_AT[name]:
        got = driven_reply(name, ex(name).solution, params)
        assert "error" not in got, got
        want = json.loads(json.dumps(registry.reply(ex(name).drives.widget, params, "wide")))
        assert got["text"] == want["text"] and got["figure"] == want["figure"], params
        numbers = {k: v for k, v in want["values"].items() if isinstance(v, float)}
        assert {k: got["values"][k] for k in numbers} == pytest.approx(numbers, rel=1e-12), params
        assert {k: v for k, v in got["values"].items() if k not in numbers} == {
            k: v for k, v in want["values"].items() if k not in numbers}, params


@pytest.mark.parametrize("name", DRIVING)
def test_a_wrong_function_behind_the_seam_moves_the_figure(name):
    import json

    params, value = MOVED_BY[name]
    wrong = WRONG[name][0][1]
    got = driven_reply(name, wrong, params)["values"][value]
    want = json.loads(json.dumps(registry.reply(ex(name).drives.widget, params, "wide")))["values"][value]
    assert got != pytest.approx(want)


def test_the_readers_names_cannot_shadow_the_widgets_own():
    """An answer's helper named like a function of the widget's module stays the answer's."""
    code = ex("sampling_chain").solution + "\n\ndef softmax(x):\n    raise RuntimeError('the reader\\'s')\n"
    got = driven_reply("sampling_chain", code, {})
    assert "error" not in got, got


def test_the_int4_starters_bf16_rounds_as_ml_dtypes_does():
    """The starter hands the reader a bf16 rounding (its prelude); ml_dtypes, the reference
    implementation of bfloat16, rounds the same float32 values to the same numbers."""
    import ml_dtypes

    from widgets_py.cap15 import ex_int4_error
    namespace: dict = {}
    exec(ex_int4_error.PRELUDE, namespace)  # noqa: S102 - the book's own text
    x = np.random.default_rng(4).normal(0, 3, 20_000).astype(np.float32)
    x = np.concatenate([x, np.float32([0.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -1.5 - 2**-8, 3.4e38])])  # ties to even
    assert np.array_equal(namespace["bf16"](x), x.astype(ml_dtypes.bfloat16).astype(np.float64))


def test_the_kv_starters_bytes_are_the_books_formats():
    from widgets_py.cap15 import ex_kv_bytes
    from widgets_py.maths.numformats import FORMATS
    from widgets_py.maths.serving import CACHE_FORMATS
    namespace: dict = {}
    exec(ex_kv_bytes.PRELUDE + "    pass\n", namespace)  # noqa: S102 - the book's own text
    assert namespace["BYTES"] == {k: FORMATS[k].nbytes for k in CACHE_FORMATS}
