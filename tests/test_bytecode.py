"""Bytecode for what the worker imports (build_hooks/runtime/bytecode.py): where it goes, what it leaves
unchanged, and that the reader's interpreter really reads it instead of compiling."""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import zipfile

import pytest

from build_hooks.runtime import assets, bytecode, zips

MAGIC_312 = (3531).to_bytes(2, "little") + b"\r\n"  # importlib.util.MAGIC_NUMBER of CPython 3.12
CHECKED_HASH = 0b11  # PEP 552 flags: hash-based, checked against the source


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2025, 6, 5, 3, 9, 0)), data)
    return out.getvalue()


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {name: z.read(name) for name in z.namelist()}


def test_adding_to_an_archive_keeps_every_member_records_the_new_ones_and_strips_back():
    original = _zip({"pkg/a.py": b"A = 1\n", "pkg-1.dist-info/RECORD": b"pkg/a.py,sha256=x,6\n"})
    extra = {"pkg/__pycache__/a.cpython-312.pyc": b"\xcb\r\r\n..."}
    added = bytecode.add_to_zip(original, extra, record="pkg-1.dist-info/RECORD")
    got = members(added)
    assert got["pkg/a.py"] == b"A = 1\n" and got["pkg/__pycache__/a.cpython-312.pyc"] == extra["pkg/__pycache__/a.cpython-312.pyc"]
    assert got["pkg-1.dist-info/RECORD"] == b"pkg/a.py,sha256=x,6\npkg/__pycache__/a.cpython-312.pyc,,\n"
    with zipfile.ZipFile(io.BytesIO(added)) as z:
        assert z.getinfo("pkg/a.py").date_time == (2025, 6, 5, 3, 9, 0)  # members already there keep their time
    assert bytecode.add_to_zip(original, extra, record="pkg-1.dist-info/RECORD") == added  # same inputs, same bytes
    assert bytecode.add_to_zip(original, {}) == original
    assert members(bytecode.strip(added)) == members(original)  # the single-file export ships none


def test_a_rewrite_keeps_the_compressed_bytes_of_the_members_it_does_not_change():
    """zips.rewrite copies an unchanged member as it is (numpy's wheel: a second of every build
    was deflating its members again), renamed or not; a changed one is deflated anew."""
    from build_hooks.runtime import zips

    words = random.Random(0).choices([b"numpy", b"wheel", b"member", b"deflate", b"zip", b"byte"], k=4000)
    body = b" ".join(words)  # text that zlib's levels 1 and 6 pack differently
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in ("a/x.bin", "a/y.bin", "a/z.bin"):
            z.writestr(zipfile.ZipInfo(name, date_time=(2025, 6, 5, 3, 9, 0)), body,
                       compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)  # not zlib's default level
    original = out.getvalue()
    renamed = {"a/y.bin": "b/y.bin"}
    done = zips.rewrite(original, lambda name, data: (renamed.get(name, name), data + b"!" if name == "a/z.bin" else data),
                        {"c/new.bin": body})

    def raw(data: bytes) -> dict[str, tuple[bytes, tuple]]:  # name -> (compressed bytes, timestamp)
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            assert z.testzip() is None  # every CRC holds
            found = {}
            for info in z.infolist():
                z.fp.seek(info.header_offset + 26)
                skip = int.from_bytes(z.fp.read(2), "little") + int.from_bytes(z.fp.read(2), "little")
                z.fp.seek(skip, io.SEEK_CUR)
                found[info.filename] = (z.fp.read(info.compress_size), info.date_time)
            return found

    before, after = raw(original), raw(done)
    assert list(after) == ["a/x.bin", "b/y.bin", "a/z.bin", "c/new.bin"]
    assert after["a/x.bin"] == before["a/x.bin"] and after["b/y.bin"] == before["a/y.bin"]
    assert members(done)["a/z.bin"] == body + b"!" and after["a/z.bin"][1] == (2025, 6, 5, 3, 9, 0)
    assert members(done)["c/new.bin"] == body


def test_bytecode_goes_where_each_importer_looks_for_it():
    pycs = {"/lib/python312.zip/json/__init__.py": b"1", "/lib/python312.zip/typing.py": b"2",
            "/lib/python3.12/site-packages/numpy/_core/multiarray.py": b"3",
            "/lib/python3.12/site-packages/widgets_py/engine/browser.py": b"4"}
    assert bytecode.stdlib_entries(pycs) == {"json/__init__.pyc": b"1", "typing.pyc": b"2"}  # zipimport: beside
    assert bytecode.wheel_entries(pycs, "numpy") == {"numpy/_core/__pycache__/multiarray.cpython-312.pyc": b"3"}
    assert bytecode.wheel_entries(pycs, "widgets_py") == {"widgets_py/engine/__pycache__/browser.cpython-312.pyc": b"4"}


@pytest.mark.build
def test_the_site_serves_the_pinned_archives_and_bytecode_of_what_the_worker_imports(site):
    """With node: numpy's wheel and the stdlib trimmed to bytecode of what the worker imports
    (tests/test_trimmed_runtime.py), the pinned archives beside them; without: the pinned files."""
    from build_hooks.runtime import trim

    runtime = site / "pyodide"
    for name in ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm"):
        assert assets.sha256((runtime / name).read_bytes()) == assets.PINNED[name], name
    lock = json.loads((runtime / "pyodide-lock.json").read_text())
    for spec in lock["packages"].values():
        assert assets.sha256((runtime / spec["file_name"]).read_bytes()) == spec["sha256"], spec["file_name"]
    stdlib = members((runtime / "python_stdlib.zip").read_bytes())
    numpy = members((runtime / lock["packages"]["numpy"]["file_name"]).read_bytes())
    shipped = {key: zips.members((runtime / spec["file_name"]).read_bytes()) for key, spec in lock["packages"].items()
               if key.startswith("widgets-py") and key != "widgets-py-sources"}  # our packages but the sources'
    code = shipped["widgets-py"]
    ours = {n for package in shipped.values() for n in package if n.endswith(".pyc")}
    if shutil.which("node"):  # CI has node: the bytecode must be there
        for pyc in ("json/__init__.pyc", "_pyodide/_base.pyc", "typing.pyc"):
            assert stdlib[pyc][:4] == MAGIC_312 and int.from_bytes(stdlib[pyc][4:8], "little") == CHECKED_HASH, pyc
        assert numpy["numpy/__init__.pyc"][:4] == MAGIC_312
        # our modules as bytecode alone, their source in the package apart that the worker fetches when read
        sources = zips.tar_members((runtime / lock["packages"]["widgets-py-sources"]["file_name"]).read_bytes())
        assert "widgets_py/engine/browser.pyc" in code and "widgets_py/engine/browser.py" not in code
        assert code["widgets_py/engine/browser.pyc"][:4] == MAGIC_312
        assert {n[:-1] for n in ours} <= set(sources) and not any(n[:-1] in p for p in shipped.values() for n in ours)
        assert not any("__pycache__" in n for p in shipped.values() for n in p)
        assert assets.sha256((runtime / trim.STDLIB_FULL).read_bytes()) == assets.PINNED["python_stdlib.zip"]
        assert assets.sha256((runtime / assets.NUMPY_WHEEL).read_bytes()) == assets.PINNED[assets.NUMPY_WHEEL]
    else:
        assert assets.sha256((runtime / "python_stdlib.zip").read_bytes()) == assets.PINNED["python_stdlib.zip"]
        assert lock["packages"]["numpy"]["sha256"] == assets.PINNED[assets.NUMPY_WHEEL] and not ours
        assert "widgets-py-sources" not in lock["packages"]  # every source in the code's package


CHECK = """\
import importlib, importlib.machinery, importlib.util, json, sys, zipimport
def from_source():
    return sorted(m.__spec__.origin for m in list(sys.modules.values())
                  if getattr(m, "__spec__", None) and (m.__spec__.origin or "").endswith(".py"))
compiled, booted = [], from_source()
source_to_code, compile_source = importlib.machinery.SourceFileLoader.source_to_code, zipimport._compile_source
def spy(self, data, path, *args, **kwargs):
    compiled.append(path)
    return source_to_code(self, data, path, *args, **kwargs)
def spy_zip(path, source):
    compiled.append(path)
    return compile_source(path, source)
importlib.machinery.SourceFileLoader.source_to_code, zipimport._compile_source = spy, spy_zip
import numpy
from widgets_py.engine import registry
for name in registry.modules():  # the widget modules, as the warm-up imports them
    importlib.import_module(name)
def columns(code):  # a location table with column ranges, in `code` or a function of it
    return any(col is not None for _, _, col, _ in code.co_positions()) or any(
        columns(c) for c in code.co_consts if isinstance(c, type(code)))
with_columns = [name for name in ("json", "numpy._core.numeric", "widgets_py.engine.registry")
                if columns(importlib.util.find_spec(name).loader.get_code(name))]
json.dumps({"booted_from_source": booted, "compiled": compiled, "loaded": len(sys.modules), "with_columns": with_columns})
"""

RUN = """\
const [runtime, script, ...more] = process.argv.slice(2);
const { loadPyodide } = require(runtime + "/pyodide.js");
(async () => {
  const py = await loadPyodide({ indexURL: runtime + "/", lockFileURL: runtime + "/pyodide-lock.json" });
  const lock = JSON.parse(require("fs").readFileSync(runtime + "/pyodide-lock.json", "utf8"));
  const ours = Object.keys(lock.packages).filter((key) => key.startsWith("widgets-py") && key !== "widgets-py-sources");
  await py.loadPackage([...ours, ...more], { messageCallback: () => {} }); // code, model data, each calculator's own
  console.log(py.runPython(require("fs").readFileSync(script, "utf8")));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
"""  # node: boot a site's runtime, install the widgets (and the packages named after the script), print
# what the script returns (test_trimmed_runtime too)


@pytest.mark.build
def test_the_readers_interpreter_reads_the_bytecode_and_compiles_nothing(site, tmp_path):
    """Pyodide's boot, numpy's import and every widget module's, as the worker does them, in
    the same interpreter (node): a bytecode file with the wrong magic or flags would be
    skipped silently and its source compiled, which this sees."""
    if not shutil.which("node"):
        pytest.skip("no node here to run Pyodide outside a browser (CI has it)")
    (tmp_path / "run.js").write_text(RUN)
    (tmp_path / "check.py").write_text(CHECK)
    done = subprocess.run(["node", str(tmp_path / "run.js"), str(site / "pyodide"), str(tmp_path / "check.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["loaded"] > 300  # the imports did happen
    assert got["booted_from_source"] == [] and got["compiled"] == []
    assert got["with_columns"] == []  # compiled without column ranges (bytecode.py: PYTHONNODEBUGRANGES)


def test_without_node_the_build_ships_the_pinned_files_and_says_so(monkeypatch, tmp_path, capsys):
    """No node on PATH: no bytecode, one line on stderr, and the archives exactly as pinned."""
    from build_hooks.runtime import assemble, bundle

    files = {name: assets.fetch(name) for name in assets.PINNED}  # the cached copies, before moving the cache
    monkeypatch.setenv("TEXTBOOK_CACHE", str(tmp_path))  # no bytecode cached: node would be needed
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(assets, "fetch", files.__getitem__)
    assert bytecode.runtime({"pyodide.js": b""}, b"{}") is None
    assert "no bytecode compiled" in capsys.readouterr().err
    core, numpy, wheel, models, sources, widgets = assemble.assemble(is_serve=False)
    assert {name: assets.sha256(data) for name, data in core.items()} == {
        name: digest for name, digest in assets.PINNED.items() if name != assets.NUMPY_WHEEL}
    assert (numpy.file_name, numpy.sha256) == (assets.NUMPY_WHEEL, assets.PINNED[assets.NUMPY_WHEEL])
    code, data = bundle.split(bundle.package_files())
    assert (wheel, models) == (bundle.make_package(code), bundle.make_package(data, name=bundle.MODELS_NAME))
    assert sources is None and widgets == {}  # no bytecode: every module and source stays in the code's package


@pytest.mark.build
def test_the_same_inputs_compile_to_the_same_bytes(tmp_path):
    """Two interpreters, each compiling what its boot and `import json` loaded: the same bytes
    (no timestamps, nothing from the run), as every machine must ship the same archives."""
    if not shutil.which("node"):
        pytest.skip("no node here to run Pyodide outside a browser (CI has it)")
    from build_hooks.runtime import bundle

    files = {name: assets.fetch(name).read_bytes() for name in assets.PINNED}
    files["pyodide-lock.json"] = bundle.lock(None).encode()
    first, second = (bytecode._compile(files, "numpy", "import json", tmp_path / f"{i}.zip") for i in (1, 2))
    assert len(first.pycs) > 100 and first == second


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs Pyodide's Python at build time")
def test_python_raising_under_pyodide_is_one_line_naming_its_error(tmp_path, capsys):
    """A widget whose code raises stops the bytecode stage first; it says so in one line naming
    the error, not with Pyodide's JavaScript frames before the build's own report (issue 42)."""
    files = {name: assets.fetch(name).read_bytes() for name in assets.PINNED}
    files["pyodide-lock.json"] = bytecode.bundle.lock(None).encode()
    assert bytecode._compile(files, "numpy", "raise ValueError('escala negativa')", tmp_path / "x.zip") is None
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["textbook: no bytecode compiled: under Pyodide the widgets' Python raised ValueError: escala negativa"]
    assert not (tmp_path / "x.zip").exists()
