"""The code panel's Python side (widgets_py/engine/edits.py), in CPython: the shipped source,
an edited module standing in for one call, errors reported with their line."""

from __future__ import annotations

import json

import pytest

from build_hooks.runtime import bundle
from widgets_py.engine import browser, edits, registry

CONSTANT = 'KV_FORMAT = "bf16"'  # roofline's format of the KV cache


def shipped(name: str = "roofline") -> dict:
    return json.loads(browser.source(name))


def edited(code: str, key: str = "test", params: dict | None = None) -> dict:
    return json.loads(browser.render_edited("roofline", key, code, json.dumps(params or {})))


@pytest.mark.parametrize("name", registry.names())
def test_source_is_the_module_that_declares_the_widget(name):
    src = shipped(name)
    module = edits.module_of(name)
    assert module.WIDGET is registry.get(name) and src["module"] == module.__name__
    compile(src["source"], src["file"], "exec")  # the whole module, not a fragment
    assert f'"{name}"' in src["source"] or f"'{name}'" in src["source"]


def test_source_is_the_text_the_wheel_ships():
    src = shipped()
    package = bundle.make_package(bundle.package_files())
    assert bundle.members(package)[src["module"].replace(".", "/") + ".py"].decode() == src["source"]


def test_a_changed_constant_changes_the_numbers_for_that_call_only():
    code = shipped()["source"]
    assert CONSTANT in code
    before = json.loads(json.dumps(registry.reply("roofline", {}, "wide")))
    after = edited(code.replace(CONSTANT, 'KV_FORMAT = "fp8"'))
    assert after["values"]["kv_prompt_gb"] == pytest.approx(before["values"]["kv_prompt_gb"] / 2)
    assert after["figure"] != before["figure"]
    assert json.loads(json.dumps(registry.reply("roofline", {}, "wide"))) == before  # the shipped widget is back
    assert registry.get("roofline") is edits.module_of("roofline").WIDGET


def test_the_shipped_text_run_as_an_edit_gives_the_shipped_numbers():
    assert edited(shipped()["source"]) == json.loads(json.dumps(registry.reply("roofline", {}, "wide")))


def test_a_syntax_error_names_its_line():
    lines = shipped()["source"].split("\n")
    lines.insert(30, "def (")
    error = edited("\n".join(lines))["error"]
    assert error["kind"] == "SyntaxError" and error["line"] == 31


def test_an_exception_names_the_deepest_line_of_the_edit():
    code = shipped()["source"]
    target = "def roofline("
    head, tail = code.split(target)
    first_line_of_body = head.count("\n") + 2
    body_start = tail.index("\n") + 1
    code = head + target + tail[:body_start] + "    1 / 0\n" + tail[body_start:]
    error = edited(code)["error"]
    assert error == {"kind": "ZeroDivisionError", "message": "division by zero", "line": first_line_of_body}


def test_an_edit_must_keep_its_widget():
    code = shipped()["source"]
    assert edited(code.replace("WIDGET = ", "OTHER = "))["error"]["kind"] == "TypeError"
    assert edited(code + '\nWIDGET = __import__("dataclasses").replace(WIDGET, name="x")\n')["error"]["kind"] == "ValueError"


def test_edits_are_kept_per_key():
    code = shipped()["source"]
    fp8 = edited(code.replace(CONSTANT, 'KV_FORMAT = "fp8"'), key="a")
    int4 = edited(code.replace(CONSTANT, 'KV_FORMAT = "int4"'), key="b")
    assert fp8["values"]["kv_prompt_gb"] == pytest.approx(2 * int4["values"]["kv_prompt_gb"])
    assert edited(code.replace(CONSTANT, 'KV_FORMAT = "fp8"'), key="a") == fp8


def test_an_edit_computes_what_the_weights_keep_for_itself():
    """Results kept for the weights (session.cached: a prefill, a drawn figure) are the
    edited code's own: an edit that changes how one is computed shows its change, even at
    parameters the shipped code has already answered."""
    params = {"position": 37}
    code = shipped("sampling")["source"]
    before = registry.reply("sampling", params)  # the shipped prefill and figure, kept
    drawn = code.replace('"tw-s2" if keep[tok]', '"tw-s4" if keep[tok]')
    prompt = code.replace("return corpus.data()[1][:position]", "return corpus.data()[1][1:position + 1]")
    assert drawn != code and prompt != code
    figure = json.loads(browser.render_edited("sampling", "a", drawn, json.dumps(params)))["figure"]
    assert "tw-s4" in figure and "tw-s4" not in before["figure"]
    values = json.loads(browser.render_edited("sampling", "b", prompt, json.dumps(params)))["values"]
    assert values["context_tail"] != before["values"]["context_tail"]
    assert registry.reply("sampling", params) == before  # and the shipped code keeps its own
