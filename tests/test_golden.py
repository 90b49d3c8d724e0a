"""Golden files pin every widget's default run (SimPy's docs/conftest.py habit).

A new widget's file, or one after an intended change: `UPDATE_GOLDEN=NAME ./dev test -k NAME
tests/test_golden.py` (NAME[,NAME…], or `1` for all), then review the diff. Only the named
widgets are written, and only where a value moved beyond the tolerance (`tolerance.py`) or
the file is new: float32 sums that differ from CPU to CPU never rewrite a file.
"""

import json
import os
from pathlib import Path

import pytest

import tolerance
from conftest import SCAFFOLD
from widgets_py import names, run
from widgets_py.engine.registry import is_measured

GOLDEN = Path(__file__).parent / "golden"
# the scaffolded chapter's widget (conftest.py) keeps the golden file `./dev new` wrote for it
ELSEWHERE = (SCAFFOLD / "tests" / "golden",)


def to_update(name: str, asked: str | None = None) -> bool:
    """Whether UPDATE_GOLDEN (`1`, or widget names separated by commas) names this widget."""
    asked = os.environ.get("UPDATE_GOLDEN", "") if asked is None else asked
    return asked == "1" or name in {n.strip() for n in asked.split(",")}


def moved(name: str, values: dict, pinned: dict) -> list[str]:
    """The keys whose value is not the pinned one within tolerance (or that are new or gone)."""
    keys = sorted(values.keys() | pinned.keys())
    return [k for k in keys if k not in values or k not in pinned or values[k] != tolerance.expected(name, k, pinned[k])]


@pytest.mark.parametrize("name", names())
def test_default_run_matches_golden_file(name):
    path = next((d / f"{name}.json" for d in ELSEWHERE if (d / f"{name}.json").is_file()), GOLDEN / f"{name}.json")
    values = {k: v for k, v in run(name).values.items() if not is_measured(name, k)}  # timings vary
    pinned = json.loads(path.read_text()) if path.is_file() else None
    if to_update(name) and (pinned is None or moved(name, values, pinned)):
        path.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
        pinned = values
    assert pinned is not None, (f"{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
                                f"does not exist: UPDATE_GOLDEN={name} ./dev test -k {name} tests/test_golden.py writes it")
    assert not moved(name, values, pinned), (f"{name}: {', '.join(moved(name, values, pinned))} moved from the golden "
                                             f"file; if intended, UPDATE_GOLDEN={name} ./dev test -k {name} tests/test_golden.py")


def test_an_update_touches_only_the_widgets_named_and_only_what_moved():
    assert to_update("roofline", "roofline,cost") and not to_update("sampling", "roofline,cost")
    assert to_update("sampling", "1") and not to_update("sampling", "")
    pinned = {"a": 1.0, "b": 2.0}
    assert moved("roofline", {"a": 1.0 * (1 + 1e-7), "b": 2.0}, pinned) == []  # CPU noise: nothing to write
    assert moved("roofline", {"a": 1.1, "b": 2.0}, pinned) == ["a"]
    assert moved("roofline", {"a": 1.0}, pinned) == ["b"]
