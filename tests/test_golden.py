"""Golden files pin every widget's default run (SimPy's docs/conftest.py habit).

After an intended change: `UPDATE_GOLDEN=1 ./dev test tests/test_golden.py`, then review the diff.
"""

import json
import os
from pathlib import Path

import pytest

from widgets_py import names, run

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", names())
def test_default_run_matches_golden_file(name):
    path = GOLDEN / f"{name}.json"
    values = run(name).values
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(path.read_text())
    assert values.keys() == pinned.keys()
    for key, value in pinned.items():
        assert values[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
