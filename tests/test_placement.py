"""Which package each module ships in (build_hooks/runtime/placement.py): the code's holds what
the worker's entry and more than one side need; each calculator's own, what it alone needs; and
nothing that only the model widgets or a reader's code run comes before they need it (issue 44)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from build_hooks import imports
from build_hooks.runtime import bundle, placement
from conftest import ROOT
from widgets_py.engine import registry

PACKAGE = "widgets_py/"


def module(name: str) -> str:
    """The archive name of widget or exercise `name`'s module."""
    return Path(registry.module_file(name)).resolve().relative_to(ROOT).as_posix()


def ours(names: list[str]) -> list[str]:
    """Those of the package's own chapters (not the suite's fixture chapter, conftest.py)."""
    return [n for n in names if Path(registry.module_file(n)).resolve().is_relative_to(ROOT / PACKAGE)]


def code() -> dict[str, Path]:
    return bundle.split(bundle.package_files())[0]


def sites() -> dict[str, dict[str, str]]:
    return imports.import_sites({p: path.read_text() for p, path in code().items()})


def calculators() -> list[str]:
    return [n for n in ours(registry.names()) if not registry.get(n).models]


def test_every_module_is_in_one_package_and_each_side_where_its_calls_need_it():
    placed = placement.place(code())
    parts = [placed.code, placed.models, placed.reader, *placed.widgets.values()]
    assert set().union(*parts) == set(code()) and sum(map(len, parts)) == len(code())  # each in exactly one
    for name in calculators():
        assert module(name) in placed.widgets[name], name  # every calculator here has a package of its own
    for name in ours(registry.names()):
        if registry.get(name).models:
            assert module(name) in placed.models, name
    for name in ours(registry.exercise_names()):
        assert module(name) in placed.reader, name
    assert {PACKAGE + "engine/browser.py", PACKAGE + "engine/registry.py"} <= placed.code  # the worker's entry
    assert {p for p in code() if p.endswith("/__init__.py")} <= placed.code  # no folder the registry lists lacks its own
    assert {PACKAGE + "engine/edits.py", PACKAGE + "engine/exercise.py", PACKAGE + "engine/protocol.py"} <= placed.reader
    assert {PACKAGE + "maths/gpt.py", PACKAGE + "accel/backend.py", PACKAGE + "engine/trainer.py"} <= placed.models
    assert PACKAGE + "maths/batching_sim.py" in placed.widgets["batching"]  # what one calculator alone imports
    assert PACKAGE + "maths/frontier.py" in placed.code  # what several do


def test_what_a_later_package_imports_at_its_top_is_in_it_or_in_the_code_s():
    """Each later package needs the code's alone: a module of one never imports another's when imported."""
    placed, found = placement.place(code()), sites()
    later = {"models": placed.models, "reader": placed.reader, **placed.widgets}
    for side, own in {"code": placed.code, **later}.items():
        for path in own:
            wrong = {t for t, when in found[path].items() if when == imports.TOP and t not in own | placed.code}
            assert not wrong, f"{side}: {path} imports {wrong} at its top"


def test_only_the_deferring_modules_import_a_later_package_s_module_in_a_call():
    placed, found = placement.place(code()), sites()
    late = {(path, t) for path in placed.code for t, when in found[path].items()
            if when == imports.CALL and t not in placed.code}
    assert late and {path for path, _ in late} <= set(placement.DEFERRING)


# The worker's boot in a copy of the package that holds only the code's package's modules and
# one calculator's own (a module left out is absent, as in the browser, where no finder lists
# it): its entry's prepare, the warm-up without the model data, the calculator at its defaults
# and its values alone (a prose number's call).
ONLY_THESE = """
import json, sys
from widgets_py.engine import browser, registry
browser.prepare()
warm = browser.WarmUp(False)
while not (task := json.loads(warm.advance()))["done"]:
    pass
assert not task["failed"], task["failed"]
name = sys.argv[1]
run = browser.Run(name, "{}")
while json.loads(run.advance()).get("partial"):
    pass
browser.fixed(name, "{}")
print(json.dumps(registry.names()))
"""


def run_with(tmp_path: Path, paths: set[str], name: str) -> subprocess.CompletedProcess:
    for path in paths:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    return subprocess.run([sys.executable, "-c", ONLY_THESE, name], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(tmp_path)})


def test_every_calculator_runs_with_the_code_s_package_and_its_own_alone(tmp_path):
    placed = placement.place(code())
    for name in calculators():
        done = run_with(tmp_path / name, set(placed.code | placed.widgets[name]), name)
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [name]  # the others' modules are not there


def test_a_calculator_without_a_module_it_alone_imports_fails_there(tmp_path):
    placed = placement.place(code())
    done = run_with(tmp_path, set(placed.code | placed.widgets["batching"]) - {PACKAGE + "maths/batching_sim.py"},
                    "batching")
    assert done.returncode != 0 and "batching_sim" in done.stderr


def test_without_the_deferring_exception_the_model_code_would_come_first(monkeypatch):
    """What a non-deferring module imports in a call goes with it (fmt.py's formats): without
    DEFERRING's exception, so would the entry's model-data imports."""
    assert PACKAGE + "maths/numformats.py" in placement.place(code()).code
    monkeypatch.setattr(placement, "DEFERRING", ())
    assert PACKAGE + "accel/backend.py" in placement.place(code()).code


def test_the_exercises_that_drive_a_model_widget_need_the_model_data():
    needing = placement.needing_models()
    widgets = {n for n in registry.names() if registry.get(n).models}
    driving = {n for n in registry.exercise_names() if (e := registry.exercise(n)).drives and e.drives.widget in widgets}
    assert set(needing) == widgets | driving and {"sampling", "training"} <= widgets
    # named, apart from the rule: the sampling chain drives sampling, the speculative tokens speculative
    assert {"sampling_chain", "spec_tokens"} <= set(needing) and not {"kv_bytes", "roofline"} & set(needing)


def test_an_exercise_that_drives_a_calculator_needs_its_package():
    own = {name: f"key-{name}" for name in calculators()}
    found = placement.driving(own)
    driving = [n for n in registry.exercise_names() if (e := registry.exercise(n)).drives and e.drives.widget in own]
    assert driving and all(found[n] == own[registry.exercise(n).drives.widget] for n in driving)
    assert found["kv_bytes"] == own["kv_cache"] and "sampling_chain" not in found  # named, apart from the rule
    assert {k: v for k, v in found.items() if k in own} == own
