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
    from build_hooks.widget_html import is_grid
    from widgets_py.engine import fmt, registry

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    grids = [p for n in registry.names() for p in registry.get(n).params if is_grid(p)]
    assert any(p.name == "seed" for p in grids)
    ints = sorted({v for p in grids for v in p.positions()} | {-1234, -5, 12345, 1234567})
    script = ("globalThis.window = globalThis;\n" + (ROOT / "docs" / "assets" / "tw" / "url-state.js").read_text() +
              f"\nprocess.stdout.write(JSON.stringify({json.dumps(ints)}.map(window.tw.grouped)));\n")
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [fmt.number(v) for v in ints]
    for p in grids:
        assert [p.display(v) for v in p.positions()] == [fmt.number(v) for v in p.positions()], p.name
