"""The model data apart (issue 44): the mini-GPTs' weights, the corpus and the WebAssembly
kernel are a wheel of their own (bundle.MODEL_DATA), which the browser fetches after the
calculators are interactive. What runs before it is in must not need it, and what is
declared to need it (Widget.models) must."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from build_hooks.runtime import bundle
from widgets_py.engine import registry

# Run in a copy of the package without the model data: the worker's first part of the
# warm-up, every widget at its defaults (a run and its fixed values), every exercise's
# solution checked. Prints what each did.
WITHOUT_DATA = r"""
import json, sys
import widgets_py
assert widgets_py.__file__.startswith(sys.argv[1]), widgets_py.__file__  # the copy, not the project
from widgets_py.engine import browser, registry
from widgets_py.engine.session import Session

def outcome(f):
    try:
        f()
        return "ok"
    except Exception as e:
        return type(e).__name__

def run(name):
    r = browser.Run(name, "{}")
    while json.loads(r.advance()).get("partial"):
        pass
    browser.fixed(name, "{}")

def check(name):
    e = json.loads(browser.exercise(name, True))
    verdict = json.loads(browser.check_exercise(name, e["solution"]))["verdict"]
    assert verdict == "pass", verdict

with Session().active():
    warm = browser.WarmUp(False)
    while not (task := json.loads(warm.advance()))["done"]:
        pass
    print(json.dumps({"warm": task["failed"],
                      "widgets": {n: outcome(lambda: run(n)) for n in registry.names()},
                      "exercises": {n: outcome(lambda: check(n)) for n in registry.exercise_names()}}))
"""


def test_the_model_data_is_the_weights_the_corpus_and_the_kernel():
    code, data = bundle.split(bundle.package_files())
    assert set(code).isdisjoint(data) and set(code) | set(data) == set(bundle.package_files())
    assert {Path(n).suffix for n in data} == {".npz", ".json", ".txt", ".wasm"}, sorted(data)
    assert "widgets_py/maths/data/ca.txt" in data and "widgets_py/accel/wasm/kernel.wasm" in data
    assert not any(n.endswith(".py") for n in data)


def test_only_the_widgets_declared_models_need_the_model_data(tmp_path):
    """Without the model data, the first part of the warm-up, every calculator and every
    exercise work; each widget declared `models` fails (so none is declared needlessly)."""
    code, _ = bundle.split(bundle.package_files())
    for name, path in code.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, tmp_path / name)
    done = subprocess.run([sys.executable, "-c", WITHOUT_DATA, str(tmp_path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["warm"] == []
    assert set(seen["exercises"].values()) == {"ok"}, seen["exercises"]
    models = {n for n in seen["widgets"] if registry.get(n).models}  # the project's (a test may add a chapter)
    assert models == {"clock", "quantize", "sampling", "speculative", "training"}
    assert {n for n, r in seen["widgets"].items() if r != "ok"} == models, seen["widgets"]
