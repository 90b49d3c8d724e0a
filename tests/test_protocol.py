"""The browser's protocol is one schema (widgets_py/engine/protocol.py): protocol.js and
types/protocol.d.ts are what it generates; what Python sends (every widget's reply and
steps, the fixed values, the shipped source, an edit's error, a training run's progress) is
what its TypedDicts say, checked by typeguard; and worker.js calls browser.py only by the
entries it lists."""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
from pathlib import Path

import pytest
from typeguard import TypeCheckError, check_type

from build_hooks.runtime import bundle
from widgets_py.engine import browser, edits, protocol, registry
from widgets_py.engine.session import Session

ROOT = Path(__file__).resolve().parents[1]
TW = ROOT / "docs" / "assets" / "tw"


@pytest.mark.parametrize("path, text", [(protocol.JS, protocol.javascript), (protocol.DTS, protocol.typescript)])
def test_the_generated_files_are_the_schema_s(path, text):
    assert path.read_text() == text(), f"{path.relative_to(ROOT)}: run .venv/bin/python -m widgets_py.engine.protocol --write"


def test_protocol_js_gives_the_constants():
    script = f"globalThis.self = globalThis; require({json.dumps(str(protocol.JS))}); console.log(JSON.stringify(self.tw.protocol))"
    done = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == protocol._constants()


def test_the_schema_refuses_what_it_does_not_say():
    """A check that can fail: a reply without its figure, with a key of its own, a step with
    a wrong type."""
    good = {"values": {}, "text": {}, "figure": "<svg/>", "layout": "wide", "alt": "", "tables": ""}
    check_type(good, protocol.WidgetReply)
    for bad, kind in (({k: v for k, v in good.items() if k != "figure"}, protocol.WidgetReply),
                      (good | {"extra": 1}, protocol.WidgetReply),
                      (good | {"partial": True, "done": "0,5", "message": ""}, protocol.RunStep)):
        with pytest.raises(TypeCheckError):
            check_type(bad, kind)


def test_the_warm_up_and_the_site_config_are_the_schema_s():
    warm = browser.WarmUp()
    while not (task := json.loads(warm.advance()))["done"]:
        check_type(task, protocol.WarmTask)
    check_type(task, protocol.WarmDone)
    wheel = bundle.Archive("widgets_py-1-py3-none-any.whl", b"", "0" * 64)
    check_type(bundle.site_config(wheel, {"pyodide.asm.wasm": "1" * 64}, {"assets/tw/worker.js": "2" * 16}),
               protocol.SiteConfig)


def test_worker_js_calls_only_the_listed_entries():
    worker = (TW / "worker.js").read_text()
    assert set(re.findall(r"\bentry\.(\w+)\(", worker)) == set(protocol.ENTRIES)
    for name in protocol.ENTRIES:
        assert callable(getattr(browser, name)), name
    for cls, methods in protocol.METHODS.items():
        for method in methods:
            assert callable(getattr(getattr(browser, cls), method)), (cls, method)
    assert set(re.findall(r"\brun\.(\w+)\(", worker)) - {"destroy"} == set(protocol.METHODS["Run"])
    assert set(re.findall(r"\btrainer\.(\w+)\(", worker)) - {"destroy"} == set(protocol.METHODS["Trainer"])
    assert set(re.findall(r"\bwarm\.(\w+)\(", worker)) - {"destroy"} == set(protocol.METHODS["WarmUp"])


def test_the_build_rehearses_every_entry_the_worker_calls():
    """browser.rehearse is the worker's call sequence written once (the build compiles what
    it imports, build_hooks/runtime/bytecode.py): it calls every entry worker.js calls, and no other."""
    called = {node.func.id for node in ast.walk(ast.parse(inspect.getsource(browser.rehearse)))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and hasattr(browser, node.func.id)}
    assert called == set(protocol.ENTRIES)
    assert "rehearse" not in protocol.ENTRIES


@pytest.mark.parametrize("name", registry.names())
def test_every_widget_s_reply_and_steps_are_the_schema_s(name):
    run = browser.Run(name, "{}", "compact")
    while True:
        reply = json.loads(run.advance())
        if not reply.get("partial"):
            break
        check_type(reply, protocol.RunStep)
    check_type(reply, protocol.WidgetReply)
    assert reply["layout"] == "compact"
    check_type(json.loads(browser.fixed(name, "{}")), protocol.FixedReply)
    check_type(json.loads(browser.source(name)), protocol.SourceReply)


def test_an_edit_s_error_is_the_schema_s():
    name = registry.names()[0]
    check_type(json.loads(edits.render(name, "k", "def broken(:\n", "{}")), protocol.EditError)


def test_a_training_run_s_progress_is_the_schema_s():
    with Session().active():  # the run's end replaces the model: in this session only
        training_run_progress()


def training_run_progress():
    name = next(n for n in registry.names() if registry.get(n).trainable)
    widget = registry.get(name)
    steps = next(p for p in widget.params if p.name == widget.trainable.steps).min
    trainer = browser.Trainer(name, json.dumps({widget.trainable.steps: steps}))
    first = json.loads(trainer.advance(2, draw=False))
    check_type(first, protocol.TrainProgress)
    assert "figure" not in first
    last = json.loads(trainer.advance(steps, draw=False))
    check_type(last, protocol.TrainProgress)
    assert last["done"] and "figure" in last
