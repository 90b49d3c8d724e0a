"""Reproducible prerenders of widgets that time the machine they run on.

A widget such as the clock *measures* (its outputs marked `measured` in the registry).
Prerendered as measured, every build would bake different timings into its page, its
figure and the search index, so no two builds of the same source would be identical and
every returning reader would download the site again. So the build shows reference values
instead, measured once with `python -m build_hooks.pages.reference` and kept in `measured.json`
beside this file, labelled as such in the page ("valors de referència"); the reader's own
browser measures again as soon as Python is ready (the widget's autorun).

A reference must show what the prose says it shows, on whatever machine records it, busy or
not: it is the most typical of ROUNDS whole runs (after one untimed run), each output's
spread across the rounds kept beside it, so a test can tell a real trend from noise.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
from math import log
from pathlib import Path

from mkdocs.exceptions import PluginError

from widgets_py.engine import registry, svg

PINNED = Path(__file__).with_name("measured.json")
LABEL = "{runtime}, valors de referència"  # the `runtime` output as the page shows it


class StaleReference(PluginError):
    """measured.json does not hold exactly the measured outputs the widget returns now."""


def _pinned() -> dict:
    return json.loads(PINNED.read_text()) if PINNED.is_file() else {}


def _measured_keys(name: str, values: dict) -> list[str]:
    return sorted(k for k in values if registry.is_measured(name, k))


def pin(name: str, values: dict, pinned: dict | None = None) -> dict:
    """`values` with its measured entries replaced by the reference ones (unchanged if none)."""
    keys = _measured_keys(name, values)
    if not keys:
        return values
    entry = (_pinned() if pinned is None else pinned).get(name)
    if entry is None or sorted(entry["values"]) != keys:
        raise StaleReference(f"{PINNED.name}: no reference timings for widget '{name}' with outputs {keys}; "
                             f"measure them with `.venv/bin/python -m build_hooks.pages.reference` and commit the file")
    return {**values, **entry["values"]}


def run(name: str, params: dict) -> registry.Result:
    """registry.run in every layout the page holds (engine.svg.LAYOUTS), with the measured
    values (and the figures and tables drawn from them) pinned."""
    result = registry.run(name, params, svg.LAYOUTS)
    values = pin(name, result.values)
    if values is result.values:
        return result
    widget = registry.get(name)
    assert getattr(widget, "values", None) is None, f"{name}: a measured widget's state must be its values"
    return registry.draw(name, params, values, svg.LAYOUTS)


def compute(name: str, raw: dict) -> tuple[dict, dict]:
    """registry.compute, with the measured values pinned."""
    params, values = registry.compute(name, raw)
    return params, pin(name, values)


ROUNDS = 9  # whole runs of a measuring widget behind one reference


def spread(samples: list[float]) -> float:
    """Half the interquartile range over the median: how far a typical run strays, as a
    fraction; one disturbed run out of nine moves it little (a standard deviation would)."""
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return (q3 - q1) / 2 / median


def typical(runs: list[dict], keys: list[str]) -> dict:
    """The run closest to every key's median (the sum of |log(value / median)|): a real run,
    so values derived from others (a ratio) stay exactly consistent, and not one a busy
    moment slowed."""
    medians = {k: statistics.median(r[k] for r in runs) for k in keys}
    return min(runs, key=lambda r: sum(abs(log(r[k] / medians[k])) for k in keys))


def record(rounds: int = ROUNDS) -> dict:
    """Measure every measured widget at its defaults, here and now."""
    out = {}
    for name in registry.names():
        params, values = registry.compute(name, {})  # also the untimed run
        keys = _measured_keys(name, values)
        if not keys:
            continue
        runs = [registry.compute(name, {})[1] for _ in range(rounds)]
        timings = [k for k in keys if isinstance(values[k], float)]  # not a count (the clock's `measures`) nor a name
        best = typical(runs, timings)
        measured = {k: best[k] for k in keys}
        if "runtime" in measured:
            measured["runtime"] = LABEL.format(runtime=measured["runtime"])
        out[name] = {"measured_on": f"{platform.machine()}, Python {sys.version.split()[0]}", "params": params,
                     "rounds": rounds, "spread": {k: round(spread([r[k] for r in runs]), 4) for k in timings},
                     "values": measured}
    return out


if __name__ == "__main__":  # `python -m build_hooks.pages.reference`: measure and pin the reference timings
    PINNED.write_text(json.dumps(record(), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"{PINNED}: {', '.join(_pinned())}")
