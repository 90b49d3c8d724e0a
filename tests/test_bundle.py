"""The browser's bundle follows Pyodide's convention: deterministic packages in a valid lock."""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile

import pytest
from pyodide_lock import PyodideLockSpec

from build_hooks.runtime import assets, bundle, zips
from conftest import ROOT


def test_wheel_is_byte_identical_for_identical_inputs_and_changes_with_them(tmp_path):
    files = bundle.package_files()
    first, second = bundle.make_package(files), bundle.make_package(bundle.package_files())
    assert first == second
    edited = dict(files)
    extra = tmp_path / "extra.py"
    extra.write_text("X = 1\n")
    edited["widgets_py/extra.py"] = extra
    third = bundle.make_package(edited)
    assert third.sha256 != first.sha256 and third.file_name != first.file_name  # a new name: no stale cache


def test_a_package_carries_code_weights_corpus_and_the_metadata_that_names_it():
    package = bundle.make_package(bundle.package_files())
    members = bundle.members(package)
    names = set(members)
    assert {"widgets_py/engine/registry.py", "widgets_py/maths/weights/mini.npz", "widgets_py/maths/data/ca.txt"} <= names
    assert not any("__pycache__" in n for n in names)
    version = package.file_name.removeprefix(bundle.NAME + "-").removesuffix(zips.TAR_BZ2)
    metadata = members[f"{bundle.NAME}-{version}.dist-info/METADATA"].decode()
    assert f"Name: {bundle.NAME}\nVersion: {version}\n" in metadata and "Requires-Dist: numpy" in metadata
    assert {n for n in names if ".dist-info/" in n} == {f"{bundle.NAME}-{version}.dist-info/{f}" for f in ("METADATA", "top_level.txt")}


def test_a_package_is_an_archive_that_python_s_unpacking_reads_as_pyodide_does(tmp_path):
    """Pyodide's loader calls shutil.unpack_archive, which picks the format by the file's name."""
    package = bundle.make_package(bundle.package_files())
    path = tmp_path / package.file_name
    path.write_bytes(package.data)
    shutil.unpack_archive(path, tmp_path / "site-packages")
    assert (tmp_path / "site-packages" / "widgets_py" / "engine" / "registry.py").read_bytes() == \
        (ROOT / "widgets_py" / "engine" / "registry.py").read_bytes()
    with tarfile.open(fileobj=io.BytesIO(package.data)) as t:
        assert all(i.mtime == 0 and i.uid == i.gid == 0 and not i.uname and i.mode == 0o644 for i in t.getmembers())
    _, data = bundle.split(bundle.package_files())
    models = bundle.make_package(data, name=bundle.MODELS_NAME)  # the model data: a zip, faster to unpack
    assert models.file_name.endswith(zips.ZIP)
    (tmp_path / models.file_name).write_bytes(models.data)
    shutil.unpack_archive(tmp_path / models.file_name, tmp_path / "site-packages")
    assert (tmp_path / "site-packages" / "widgets_py" / "maths" / "data" / "ca.txt").read_bytes() == \
        (ROOT / "widgets_py" / "maths" / "data" / "ca.txt").read_bytes()


def test_lock_is_valid_for_pyodide_and_pins_both_packages():
    wheel = bundle.make_package(bundle.package_files())
    lock = PyodideLockSpec(**json.loads(bundle.lock(wheel)))
    lock.check_wheel_filenames()
    assert lock.info.version == assets.PYODIDE_VERSION
    ours = lock.packages[bundle.PACKAGE_KEY]
    assert ours.sha256 == wheel.sha256 and ours.depends == ["numpy"] and ours.imports == [bundle.NAME]
    assert lock.packages["numpy"].sha256 == assets.PINNED[assets.NUMPY_WHEEL]


def test_no_folder_or_file_of_the_bundle_is_written_in_the_browser_code():
    """The worker and the kernel learn the layout from the site config (bundle.site_config)."""
    config = bundle.site_config(bundle.make_package(bundle.package_files()), {}, {})
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
    config = bundle.site_config(bundle.make_package(bundle.package_files()), {}, versions)
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
    lock = PyodideLockSpec(**json.loads(bundle.lock(bundle.make_package(code), models=None,
                                                    sources=bundle.make_package(apart, name=bundle.SOURCES_NAME))))
    lock.check_wheel_filenames()
    assert lock.packages[bundle.SOURCES_KEY].depends == [] and lock.packages[bundle.SOURCES_KEY].imports == []


def test_each_calculator_s_own_package_is_in_the_lock_and_the_config_after_the_code_s(tmp_path):
    """assemble.split_packages: every module in one of our packages (placement.py), each
    calculator's own locked as needing the code's, and named in the site config for the
    calculator and for each exercise that drives it."""
    from build_hooks.runtime import assemble, placement

    code, data = bundle.split(bundle.package_files())
    wheel, models, sources, widgets = assemble.split_packages(code, data, {})
    placed = placement.place(code)
    assert {w: set(bundle.members(p)) - {n for n in bundle.members(p) if ".dist-info/" in n} for w, p in widgets.items()} \
        == {w: set(names) for w, names in placed.widgets.items()}
    assert set(code) <= set(bundle.members(wheel)) | set(bundle.members(models)) | set(bundle.members(sources)) \
        | {n for p in widgets.values() for n in bundle.members(p)}
    lock = PyodideLockSpec(**json.loads(bundle.lock(wheel, None, models, sources, widgets)))
    key = bundle.widget_package("kv_cache")[1]
    assert lock.packages[key].depends == [bundle.PACKAGE_KEY] and lock.packages[key].sha256 == widgets["kv_cache"].sha256
    config = bundle.site_config(wheel, {}, {}, models, sources, widgets)
    assert config["widgets"]["kv_cache"] == key and config["widgets"]["kv_bytes"] == key  # the exercise that drives it
    assert config["page"] == []  # each page's is its own (prerender.config_attribute)
