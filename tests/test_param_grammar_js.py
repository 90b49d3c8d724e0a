"""The browser's number grammar (docs/assets/tw/numbers.js) equals the Python one
(widgets_py.engine.params.parse_number) on the same cases, run in Node (issue 15 §5)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

from conftest import ROOT
from test_param_grammar import BAD_FLOAT_TEXT, BAD_INT_TEXT
from widgets_py.engine.params import parse_number

CASES = sorted(set(BAD_INT_TEXT + BAD_FLOAT_TEXT + [
    "16", "016", "-3", "0", "0.25", "1e0", "1e2", "2.5E1", "12", "1e-3", "8.0", "1e999", "-1e999",
    "%208%20", "0x10", "1e1", " 16 ", "٨", "８", "1_6", "Infinity", "NaN", "1,5", "٫5", "", "e5", "1e+2"]))


@pytest.fixture(scope="module")
def js_results() -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = ((ROOT / "docs" / "assets" / "tw" / "numbers.js").read_text() +
              f"\nconst cases = {json.dumps(CASES)};\n"
              "const out = {};\nfor (const k of ['int', 'float']) out[k] = cases.map((c) => {"
              " const v = globalThis.tw.parseNumber(c, k); return v === null ? null : String(v); });\n"
              "process.stdout.write(JSON.stringify(out));\n")
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("index, text", list(enumerate(CASES)))
def test_js_and_python_agree(js_results, kind, index, text):
    py = parse_number(text, kind)
    js = js_results[kind][index]
    if py is None:
        assert js is None, (text, js)
    elif math.isinf(py):
        assert js == ("Infinity" if py > 0 else "-Infinity")
    else:
        assert js is not None and float(js) == py, (text, js, py)


def test_a_grid_sliders_labels_are_pythons():
    """Long integer sliders (widget_html.is_grid) ship [min, step, count], not their lists: the
    page computes value and label (url-state.js tw.slider), which must be Param.display's."""
    from build_hooks.pages.widget_html import is_grid
    from widgets_py.engine import fmt, registry

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    grids = [p for n in registry.names() for p in registry.get(n).params if is_grid(p)]
    assert any(p.name == "seed" for p in grids)
    ints = sorted({v for p in grids for v in p.positions()} | {-1234, -5, 12345, 1234567})
    script = ("globalThis.window = globalThis.self = globalThis;\n" +
              (ROOT / "docs" / "assets" / "tw" / "protocol.js").read_text() +  # first, as on the page (mkdocs.yml)
              (ROOT / "docs" / "assets" / "tw" / "numbers.js").read_text() +
              (ROOT / "docs" / "assets" / "tw" / "url-state.js").read_text() +
              f"\nprocess.stdout.write(JSON.stringify({json.dumps(ints)}.map(window.tw.grouped)));\n")
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [fmt.number(v) for v in ints]
    for p in grids:
        assert [p.display(v) for v in p.positions()] == [fmt.number(v) for v in p.positions()], p.name


def run_numbers_js(body: str):
    """The value printed (as JSON) by `body`, run in Node after numbers.js."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = (ROOT / "docs" / "assets" / "tw" / "numbers.js").read_text() + "\nconst tw = globalThis.tw;\n" + body
    done = subprocess.run([node, "-"], input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# Exact ties (0.125, 2.5, -0.5: Python rounds them to even, toFixed away from zero), values
# just off a tie (1.15, 1.005: their doubles lie below it), a value that rounds to zero (no
# minus sign), grouping, huge values (toFixed's exponent form), non-finite ones.
NUMBERS = [0, 0.5, 1.5, 2.5, -0.5, -2.5, 0.125, 0.375, 1.15, 1.005, 2.675, -0.4, -0.04, 3.14159, 999.5, 1000,
           1234.5, -1234567.891, 68719476736, 0.0002, 1e21, 1.5e22, -1e300, 123456789.987654, float("nan"),
           float("inf"), float("-inf")]


def test_format_number_and_percent_are_fmt_s():
    from widgets_py.engine import fmt

    cases = [(x, d) for x in NUMBERS for d in range(4)]
    payload = json.dumps([[x if math.isfinite(x) else str(x), d] for x, d in cases])
    out = run_numbers_js(f"const n = (x) => typeof x === 'string' ? Number(x.replace('inf', 'Infinity')) : x;\n"
                         f"process.stdout.write(JSON.stringify({payload}.map(([x, d]) => [tw.formatNumber(n(x), d), tw.percent(n(x) / 100, d)])));")
    for (x, d), (number, percent) in zip(cases, out):
        assert number == fmt.number(x, d), (x, d)
        assert percent == fmt.percent(x / 100, d), (x, d)


def test_a_reader_s_answer_reads_what_fmt_writes():
    """quiz.js's reader input takes back every number fmt.number writes (Catalan grouping, a
    decimal comma, U+2212 minus) and the plain forms; what is not a number is NaN."""
    from widgets_py.engine import fmt

    finite = [(x, d) for x in NUMBERS if math.isfinite(x) and abs(x) < 1e21 for d in range(4)]
    written = [fmt.number(x, d) for x, d in finite]
    plain = ["68719476736", "68 719 476 736", "6,87e10", "6.87E10", "1234.5", "+3", "-3", ".5", "5.", " 12 "]
    wrong = ["", "abc", "1,2,3", "1.23.4", "12.34.567", "0x10", "inf", "1e", "--1", "1_000"]
    out = run_numbers_js(f"process.stdout.write(JSON.stringify({json.dumps(written + plain + wrong)}.map((t) => {{"
                         " const v = tw.readAnswer(t); return Number.isNaN(v) ? null : v; })));")
    for (x, d), text, value in zip(finite, written, out):
        assert value == float(f"{x:.{d}f}"), (x, d, text, value)
    assert out[len(written):len(written) + len(plain)] == [68719476736, 68719476736, 6.87e10, 6.87e10, 1234.5, 3, -3,
                                                           0.5, 5, 12]
    assert out[len(written) + len(plain):] == [None] * len(wrong)


def test_a_slider_s_nearest_position_is_python_s():
    """A value from the URL lands where the build would place it (Param.nearest_index): the
    nearest position, the first on a tie; a long integer run (a grid) the same."""
    from build_hooks.pages.widget_html import is_grid
    from widgets_py.engine import registry

    sliders = [p for n in registry.names() for p in registry.get(n).params if p.kind in ("int", "float")]
    cases = []
    for p in sliders:
        positions = p.positions()
        shape = {"grid": [positions[0], positions[1] - positions[0], len(positions)]} if is_grid(p) else positions
        ends = positions[:12] + positions[-12:]  # a grid's thousands of positions: its two ends
        probes = {positions[0] - 1, positions[-1] + 1e6} | {(a + b) / 2 for a, b in zip(ends, ends[1:])}
        probes |= {v + 0.3 * (positions[1] - positions[0]) for v in positions[:5]} if len(positions) > 1 else set()
        cases += [(p, shape, v) for v in sorted(probes)]
    assert any("grid" in shape for _, shape, _ in cases) and any(isinstance(shape, list) for _, shape, _ in cases)
    out = run_numbers_js(f"process.stdout.write(JSON.stringify({json.dumps([[s, v] for _, s, v in cases])}"
                         ".map(([s, v]) => tw.nearestIndex(s, v))));")
    assert out == [p.nearest_index(v) for p, _, v in cases]
