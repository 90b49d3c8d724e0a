"""Which package each module ships in (build_hooks/runtime/placement.py): the code's holds what the
calculators need and nothing only the model widgets or a reader's code run (issue 44)."""

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


def packages() -> tuple[set[str], set[str], set[str]]:
    return placement.packages(bundle.split(bundle.package_files())[0])


def test_every_module_is_in_one_package_and_each_side_where_its_calls_need_it():
    boot, models, reader = packages()
    code = set(bundle.split(bundle.package_files())[0])
    assert boot | models | reader == code and not (boot & models or boot & reader or models & reader)
    for name in ours(registry.names()):
        assert module(name) in (models if registry.get(name).models else boot), name
    for name in ours(registry.exercise_names()):
        assert module(name) in reader, name
    assert {PACKAGE + "engine/browser.py", PACKAGE + "engine/registry.py"} <= boot  # the worker's entry
    assert {p for p in code if p.endswith("/__init__.py")} <= boot  # no folder the registry lists lacks its own
    assert {PACKAGE + "engine/edits.py", PACKAGE + "engine/exercise.py", PACKAGE + "engine/protocol.py"} <= reader
    assert {PACKAGE + "maths/gpt.py", PACKAGE + "accel/backend.py", PACKAGE + "engine/trainer.py"} <= models


def test_what_a_later_package_imports_at_its_top_is_in_it_or_in_the_code_s():
    """Each later package needs the code's alone: a module of the model data's never imports a
    reader's module when imported, nor the reverse."""
    boot, models, reader = packages()
    sites = imports.import_sites({p: (ROOT / p).read_text() for p in boot | models | reader})
    for own, other in ((boot, models | reader), (models, reader), (reader, models)):
        for path in own:
            wrong = {t for t, when in sites[path].items() if when == imports.TOP and t in other}
            assert not wrong, f"{path} imports {wrong} at its top"


def test_only_the_deferring_modules_import_a_later_package_s_module_in_a_call():
    boot, models, reader = packages()
    sites = imports.import_sites({p: (ROOT / p).read_text() for p in boot | models | reader})
    late = {(path, t) for path in boot for t, when in sites[path].items() if when == imports.CALL and t not in boot}
    assert late and {path for path, _ in late} <= set(placement.DEFERRING)


# The worker's boot in a copy of the package that holds only the code's package's modules (a
# module the split left out is absent, as in the browser, where no finder lists it): its
# entry's prepare, the warm-up without the model data, each calculator run at its defaults
# and its values alone (a prose number's call).
ONLY_THE_CODE = """
import json
from widgets_py.engine import browser, registry
browser.prepare()
warm = browser.WarmUp(False)
while not (task := json.loads(warm.advance()))["done"]:
    pass
assert not task["failed"], task["failed"]
ran = []
for name in registry.names():
    run = browser.Run(name, "{}")
    while json.loads(run.advance()).get("partial"):
        pass
    browser.fixed(name, "{}")
    ran.append(name)
print(json.dumps(ran))
"""


def test_every_calculator_runs_with_the_code_s_package_alone(tmp_path):
    boot, _, _ = packages()
    for path in boot:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    done = subprocess.run([sys.executable, "-c", ONLY_THE_CODE], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(ran) == sorted(n for n in ours(registry.names()) if not registry.get(n).models)


def test_a_module_imported_in_a_call_of_a_calculator_s_code_goes_with_it(monkeypatch):
    """Not a deferring module: what it imports in a call is the calculators' too (fmt.py's
    formats), so without DEFERRING's exception the entry's model-data imports would be too."""
    boot, _, _ = packages()
    assert PACKAGE + "maths/numformats.py" in boot
    monkeypatch.setattr(placement, "DEFERRING", ())
    assert PACKAGE + "accel/backend.py" in packages()[0]


def test_the_exercises_that_drive_a_model_widget_need_the_model_data():
    needing = placement.needing_models()
    widgets = {n for n in registry.names() if registry.get(n).models}
    driving = {n for n in registry.exercise_names() if (e := registry.exercise(n)).drives and e.drives.widget in widgets}
    assert set(needing) == widgets | driving and {"sampling", "training"} <= widgets
