"""Golden files pin every widget's default run (SimPy's docs/conftest.py habit).

After an intended change: `UPDATE_GOLDEN=1 ./dev test tests/test_golden.py`, then review the diff.
"""

import json
import os
from pathlib import Path

import pytest

import tolerance
from widgets_py import names, run
from widgets_py.engine.registry import is_measured

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", names())
def test_default_run_matches_golden_file(name):
    path = GOLDEN / f"{name}.json"
    values = {k: v for k, v in run(name).values.items() if not is_measured(name, k)}  # timings vary
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(path.read_text())
    assert values.keys() == pinned.keys()
    for key, value in pinned.items():
        # the weights are committed bytes; float32 sums still differ from CPU to CPU
        assert values[key] == tolerance.expected(name, key, value), key
