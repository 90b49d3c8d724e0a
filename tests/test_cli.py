"""The widget CLI contract: list, describe, run; bad input exits non-zero with one line."""

import json
import subprocess
import sys

import pytest

from widgets_py import ParamError, run


def cli(*args):
    return subprocess.run([sys.executable, "-m", "widgets_py", *args], capture_output=True, text=True)


def test_list_and_describe():
    assert "roofline" in cli("list").stdout.split()
    spec = json.loads(cli("describe", "roofline").stdout)
    batch = next(p for p in spec["params"] if p["name"] == "batch")
    assert (batch["kind"], batch["min"], batch["max"], batch["default"]) == ("int", 1, 256, 32)
    assert batch["label"] == "Seqüències al lot"


def test_run_prints_plain_json_numbers():
    done = cli("run", "roofline", "batch=1", "model=gpt2-xl")
    assert done.returncode == 0
    values = json.loads(done.stdout)
    assert isinstance(values["tpot_ms"], float) and values["batch_gain"] == pytest.approx(1.0)


@pytest.mark.parametrize("arg, words", [
    ("batch=0", ["batch", "1..256"]),
    ("batch=2.5", ["batch", "enter"]),
    ("prompt_tokens=abc", ["prompt_tokens", "16..131072"]),
    ("model=gpt5", ["model", "llama-3-70b"]),
    ("colour=red", ["colour", "batch"]),
])
def test_bad_input_is_one_line_naming_parameter_and_range(arg, words):
    done = cli("run", "roofline", arg)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines


def test_unknown_widget():
    done = cli("run", "nope")
    assert done.returncode == 2 and "roofline" in done.stderr


def test_python_api_raises_param_error():
    with pytest.raises(ParamError, match="batch"):
        run("roofline", {"batch": 1000})
