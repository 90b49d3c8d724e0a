"""The browser's bundle follows Pyodide's convention: a deterministic wheel in a valid lock."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from pyodide_lock import PyodideLockSpec

from build_hooks.runtime import assets, bundle
from conftest import ROOT


def test_wheel_is_byte_identical_for_identical_inputs_and_changes_with_them(tmp_path):
    files = bundle.package_files()
    first, second = bundle.make_wheel(files), bundle.make_wheel(bundle.package_files())
    assert first == second
    edited = dict(files)
    extra = tmp_path / "extra.py"
    extra.write_text("X = 1\n")
    edited["widgets_py/extra.py"] = extra
    third = bundle.make_wheel(edited)
    assert third.sha256 != first.sha256 and third.file_name != first.file_name  # a new name: no stale cache


def test_wheel_carries_code_weights_corpus_and_a_record_of_them():
    wheel = bundle.make_wheel(bundle.package_files())
    with zipfile.ZipFile(io.BytesIO(wheel.data)) as z:
        names = set(z.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        record = z.read(f"{info}/RECORD").decode()
    assert {"widgets_py/engine/registry.py", "widgets_py/maths/weights/mini.npz", "widgets_py/maths/data/ca.txt"} <= names
    assert not any("__pycache__" in n for n in names)
    assert {line.split(",")[0] for line in record.splitlines()} == names


def test_lock_is_valid_for_pyodide_and_pins_both_packages():
    wheel = bundle.make_wheel(bundle.package_files())
    lock = PyodideLockSpec(**json.loads(bundle.lock(wheel)))
    lock.check_wheel_filenames()
    assert lock.info.version == assets.PYODIDE_VERSION
    ours = lock.packages[bundle.PACKAGE_KEY]
    assert ours.sha256 == wheel.sha256 and ours.depends == ["numpy"] and ours.imports == [bundle.NAME]
    assert lock.packages["numpy"].sha256 == assets.PINNED[assets.NUMPY_WHEEL]


def test_no_folder_or_file_of_the_bundle_is_written_in_the_browser_code():
    """The worker and the kernel learn the layout from the site config (bundle.site_config)."""
    config = bundle.site_config(bundle.make_wheel(bundle.package_files()), {}, {})
    for script in ("worker.js", "kernel.js", "host.js"):
        js = re.sub(r"//.*", "", (ROOT / "docs" / "assets" / "tw" / script).read_text())  # code, not comments
        for value in (config["runtime"], config["lock"], config["package"], config["entry"], "assets/tw/"):
            assert value not in js, (script, value)


def test_the_worker_s_url_names_its_version_and_those_of_what_it_imports():
    """worker.js imports protocol.js and lockdown.js at the versions its URL names: a new build
    of either is a new URL of the worker, which no cache pairs with the old one."""
    versions = {"assets/tw/worker.js": "w1", "assets/tw/protocol.js": "p2", "assets/tw/lockdown.js": "l3",
                "pyodide/pyodide-lock.json": "k4"}
    assert bundle.worker_url(versions) == "assets/tw/worker.js?v=w1&protocol=p2&lockdown=l3"
    assert bundle.worker_url({}) == "assets/tw/worker.js"  # a bare site: nothing versioned
    config = bundle.site_config(bundle.make_wheel(bundle.package_files()), {}, versions)
    assert config["worker"] == bundle.worker_url(versions)
    js = (ROOT / "docs" / "assets" / "tw" / "worker.js").read_text()
    imported = set(re.findall(r'script\("(\w+)"\)', js))
    assert imported == set(bundle.WORKER_IMPORTS) and all(f"{k}.js" == v for k, v in bundle.WORKER_IMPORTS.items())


def test_protocol_constants_are_written_once():
    """Message type strings live in protocol.js; the kernel and the worker use its names."""
    protocol = (ROOT / "docs" / "assets" / "tw" / "protocol.js").read_text()
    types = set(re.findall(r'^\s+[A-Z]+: "([a-z:]+)"', protocol, re.M))
    assert {"init", "run", "train", "reply", "event:loaded"} <= types
    for script in ("worker.js", "kernel.js", "host.js", "trainer.js"):
        js = (ROOT / "docs" / "assets" / "tw" / script).read_text()
        for t in types:
            assert f'"{t}"' not in js, (script, t)


def test_the_worker_s_modules_ship_as_bytecode_alone_and_their_source_apart():
    """assemble.sourceless: a module with bytecode goes where Python's sourceless loader finds it
    (`pkg/mod.pyc`), its source to the sources' wheel; a module without, as source; bytecode of
    no file of the package is refused."""
    from build_hooks.runtime import assemble

    code, _ = bundle.split(bundle.package_files())
    pycs = {"widgets_py/engine/__pycache__/fmt.cpython-312.pyc": b"fmt", "widgets_py/__pycache__/__init__.cpython-312.pyc": b"i"}
    members, apart = assemble.sourceless(code, pycs)
    assert members == {"widgets_py/engine/fmt.pyc": b"fmt", "widgets_py/__init__.pyc": b"i"}
    assert apart == {n: code[n] for n in ("widgets_py/engine/fmt.py", "widgets_py/__init__.py")}
    with pytest.raises(AssertionError, match="gone.pyc"):  # bytecode of a file the package does not have
        assemble.sourceless(code, {"widgets_py/engine/__pycache__/gone.cpython-312.pyc": b""})
    lock = PyodideLockSpec(**json.loads(bundle.lock(bundle.make_wheel(code), models=None,
                                                    sources=bundle.make_wheel(apart, name=bundle.SOURCES_NAME))))
    lock.check_wheel_filenames()
    assert lock.packages[bundle.SOURCES_KEY].depends == [] and lock.packages[bundle.SOURCES_KEY].imports == []
