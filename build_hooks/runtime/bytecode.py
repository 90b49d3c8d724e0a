"""Bytecode for what the browser imports, compiled at build time by Pyodide's own CPython.

Pyodide 0.27.7's `python_stdlib.zip`, the numpy wheel and our wheel hold Python source only,
and Pyodide never writes `__pycache__` (`sys.dont_write_bytecode`), so every visit compiled
every module it imported, most of them standard-library modules Pyodide's own package loader
imports. `benchmarks/budget.py` times a bare Pyodide + numpy boot both ways in one run (in
Chromium here: 6.2 s as published, 3.3 s with this bytecode).

Node runs the pinned runtime, does what the reader's worker does, lists the source file of
every module then loaded that has no bytecode yet, and compiles that list with `py_compile`,
checked-hash (PEP 552): the import hashes the source, which ships unchanged beside it, and
uses the bytecode if the hash matches (a SipHash of the bytes: microseconds, where compiling
takes milliseconds), so a changed source is never shadowed by stale bytecode (the tests
patch modules in a wheel, readers may too). Only imported modules get bytecode, so the
archives grow by what is used; a module first imported later, on a rarely taken path, is
compiled on first use as before. Two stages, each cached under a hash of its inputs:

- `runtime()`: Pyodide's boot, its package loader and `import numpy`. It depends on the
  pinned files alone, so it is kept with them in the Pyodide cache and made once per machine
  (`./dev` makes it when it fetches them);
- `package()`: our entry module and every widget module warmed, on top of the first stage.
  It changes with our code, and is skipped under `mkdocs serve`.

The bytecode carries line numbers but no column ranges (`PYTHONNODEBUGRANGES`, PEP 657): a
traceback through a shipped module names its line without the `^^^` under the expression,
and the location tables, a fifth of a module's deflated bytecode, are not downloaded (a
reader's own code, compiled in the browser, keeps them). Our own modules' bytecode also
leaves out their functions' docstrings, which no call reads (the «Codi» panel shows the
source, with them): a tenth of the code's package.

The bytes depend only on the inputs: the same wasm interpreter, hash-based .pyc (no
timestamps), sorted lists; marshal sorts frozen sets (Python 3.11+) and the string hash seed
is fixed anyway; and marshal's references depend on the compiled code alone (compiling in a
fresh interpreter gave the same bytes for all 267 modules; a test compiles twice).

No node: the archives ship as they are, a line on stderr says so, and the site works the
same, slower to start.
"""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .. import cache
from . import assets, bundle, zips

TAG = "cpython-312"  # sys.implementation.cache_tag of Pyodide 0.27.7's Python 3.12.7
STDLIB = "/lib/python312.zip/"  # where Pyodide mounts python_stdlib.zip
STDLIB_FILE = "python_stdlib.zip"
SITE_PACKAGES = "/lib/python3.12/site-packages/"
OUT = "/bytecode/"  # the host folder node mounts, inside the interpreter

NODE = """\
const [dir, out, pkg, script] = process.argv.slice(2);
const { loadPyodide } = require(dir + "/pyodide.js");
const fs = require("fs");
(async () => {
  const py = await loadPyodide({ indexURL: dir + "/", lockFileURL: dir + "/pyodide-lock.json",
                                 env: { PYTHONHASHSEED: "0", PYTHONNODEBUGRANGES: "1" }, stdout: (s) => process.stderr.write(s + "\\n") });
  await py.loadPackage(pkg, { messageCallback: () => {}, errorCallback: (m) => process.stderr.write(m + "\\n") });
  py.FS.mkdirTree("/bytecode");
  py.FS.mount(py.FS.filesystems.NODEFS, { root: out }, "/bytecode");
  py.runPython(fs.readFileSync(script, "utf8"));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""

# what the worker imports ({imports}), listed (`imported`: what the trimmed runtime keeps, trim.py)
# before this script's own imports, then each module loaded from source compiled to /bytecode/<path>c
SCRIPT = """\
import sys
{imports}
imported = sorted({{m.__spec__.origin for m in list(sys.modules.values())
                   if getattr(m, "__spec__", None) and (m.__spec__.origin or "").startswith("/")}})
import ast, importlib.util, json, os, py_compile, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc
def has_bytecode(origin):
    return origin.endswith(".pyc") or os.path.exists(importlib.util.cache_from_source(origin))
origins = sorted({{m.__spec__.origin for m in list(sys.modules.values())
                  if getattr(m, "__spec__", None) and (m.__spec__.origin or "").endswith(".py")
                  and not has_bytecode(m.__spec__.origin)}})
stdlib = zipfile.ZipFile({stdlib!r}.rstrip("/"))
for origin in origins:
    source = origin
    if origin.startswith({stdlib!r}):  # a zip member: py_compile wants a file
        source = "/tmp/source.py"
        with open(source, "wb") as f:
            f.write(stdlib.read(origin[len({stdlib!r}):]))
    cfile = {out!r} + origin.lstrip("/") + "c"
    if not origin.startswith({ours!r}):
        py_compile.compile(source, cfile=cfile, dfile=origin, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        continue
    # ours: as py_compile does it, but without the functions' docstrings, which no call reads
    # (a module's, edits.py does; a dataclass without one would compute one at its import)
    with open(source, "rb") as f:
        data = f.read()
    tree = ast.parse(data, origin)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.copy_location(ast.Pass(), node.body[0])]
    os.makedirs(os.path.dirname(cfile), exist_ok=True)
    with open(cfile, "wb") as f:
        f.write(_code_to_hash_pyc(compile(tree, origin, "exec", dont_inherit=True), importlib.util.source_hash(data), True))
with open({out!r} + "files.json", "w") as f:
    json.dump({{"compiled": origins, "imported": imported}}, f)
"""

RUNTIME_IMPORTS = "import numpy"
# What the worker does with the package (the entry's rehearse(): worker.js's calls, written
# once), so that every module it imports is listed, those imported inside functions too; then
# `{scanned}`, every module the package's source names in an import statement (one on a path
# not taken there, too). The list is what trim.py keeps.
PACKAGE_IMPORTS = """\
import importlib
import {entry} as entry
entry.rehearse()
for name in {scanned!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
"""


def _key(files: dict[str, bytes], imports: str) -> str:
    """A hash of everything the result depends on: the files, what is imported, how it is compiled."""
    return cache.key(cache.listing(files), (NODE + SCRIPT + imports).encode())[:16]


@dataclass(frozen=True)
class Stage:
    """What a stage left: the bytecode it compiled (interpreter path -> .pyc bytes) and the
    interpreter path of every module its imports loaded (source, bytecode or extension)."""
    pycs: dict[str, bytes]
    imported: tuple[str, ...]


def _read(data: bytes) -> Stage:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        listed = json.loads(z.comment)
        return Stage({name: z.read(name.lstrip("/")) for name in listed["compiled"]}, tuple(listed["imported"]))


def _write(path: Path, stage: Stage) -> None:
    """The stage as a cache entry: each module's bytecode a member, the two lists in the comment."""
    listed = {"compiled": sorted(stage.pycs), "imported": list(stage.imported)}
    members = {name.lstrip("/"): data for name, data in sorted(stage.pycs.items())}
    cache.write(path, zips.write(members, compression=zipfile.ZIP_STORED, comment=json.dumps(listed).encode()))


def python_error(stderr: str) -> str | None:
    """The last line of the Python traceback in node's stderr (`ValueError: …`), without the
    JavaScript frames Pyodide adds after it; None if Python raised nothing."""
    if "PythonError:" not in stderr:
        return None
    text = stderr.split("PythonError:", 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("at ")]
    return lines[-1] if lines else None


def _compile(files: dict[str, bytes], package: str, imports: str, cached: Path) -> Stage | None:
    """What `imports` loaded and the bytecode of each module it loaded from source; None without node.

    `files`: Pyodide's core files, the wheels and a lock listing them, as the site would serve
    them; `package` is loaded with loadPackage, then `imports` run.
    """
    if (entry := cache.read(cached)) is not None:
        return _read(entry)
    script = SCRIPT.format(imports=imports, stdlib=STDLIB, out=OUT, ours=SITE_PACKAGES + bundle.NAME + "/")
    with tempfile.TemporaryDirectory(prefix="tw-bytecode-") as tmp:
        work, out = Path(tmp) / "runtime", Path(tmp) / "out"
        work.mkdir()
        out.mkdir()
        for name, data in files.items():
            (work / name).write_bytes(data)
        (work / "run.js").write_text(NODE)
        (work / "script.py").write_text(script)
        try:
            subprocess.run(["node", str(work / "run.js"), str(work), str(out), package, str(work / "script.py")],
                           check=True, capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:  # no node: the archives ship as they are
            detail = (getattr(exc, "stderr", b"") or b"").decode(errors="replace").strip()
            raised = python_error(detail)
            if raised:  # our Python's own error: the build reports it where it comes from
                assets.progress(f"no bytecode compiled: under Pyodide the widgets' Python raised {raised}")
            else:
                assets.progress(f"no bytecode compiled ({type(exc).__name__}: {detail[-300:] or exc}); "
                                "the browser will compile Python source on every visit")
            return None
        listed = json.loads((out / "files.json").read_text())
        stage = Stage({name: (out / (name.lstrip("/") + "c")).read_bytes() for name in listed["compiled"]},
                      tuple(listed["imported"]))
    _write(cached, stage)
    assets.progress(f"bytecode of {len(stage.pycs)} modules compiled by Pyodide's Python, cached in {cached}")
    return stage


def runtime(pinned: dict[str, bytes], lock: bytes) -> Stage | None:
    """Stage 1: Pyodide's boot, its loader and numpy's import, kept beside the pinned files."""
    files = {**pinned, "pyodide-lock.json": lock}
    return _compile(files, "numpy", RUNTIME_IMPORTS,
                    assets.cache_dir() / f"bytecode-{_key(files, RUNTIME_IMPORTS)}.zip")


def package(files: dict[str, bytes], key: str, entry: str, scanned: list[str] = ()) -> Stage | None:
    """Stage 2: the package `key` (with stage 1's bytecode in `files`): what the worker does with
    it through `entry`, and the modules `scanned` (imports named in its source, scanned())."""
    imports = PACKAGE_IMPORTS.format(entry=entry, scanned=sorted(scanned))
    folder = cache.folder("bytecode")  # an entry per edit of the package: pruned
    stage = _compile(files, key, imports, folder / f"{_key(files, imports)}.zip")
    cache.prune(folder)
    return stage


def scanned(sources: dict[str, bytes], own: str) -> list[str]:
    """Every absolute module name an import statement of `sources` names but the package `own`:
    a module imported on a path the package stage does not take still ships (trim.py)."""
    names = set()
    for data in sources.values():
        for node in ast.walk(ast.parse(data)):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return sorted(n for n in names if n.split(".")[0] not in (own, "__future__"))


def stdlib_entries(pycs: dict[str, bytes]) -> dict[str, bytes]:
    """Members to add to python_stdlib.zip: zipimport reads `mod.pyc` beside `mod.py`."""
    return {o[len(STDLIB):] + "c": data for o, data in pycs.items() if o.startswith(STDLIB)}


def wheel_entries(pycs: dict[str, bytes], top: str) -> dict[str, bytes]:
    """Members to add to the wheel of the package `top`: `dir/__pycache__/mod.cpython-312.pyc`."""
    out = {}
    for origin, data in pycs.items():
        rel = origin[len(SITE_PACKAGES):] if origin.startswith(SITE_PACKAGES) else None
        if rel and rel.split("/")[0] == top:
            folder, _, name = rel.rpartition("/")
            out[f"{folder}/__pycache__/{name[:-3]}.{TAG}.pyc"] = data
    return out


def add_to_zip(data: bytes, extra: dict[str, bytes], *, record: str | None = None) -> bytes:
    """`data` (a zip) with `extra` members added; a wheel's RECORD (its archive name) lists them.

    Without a RECORD to change, the new members are appended and every member already there
    keeps its very bytes; with one, the archive is rewritten, each member keeping its name,
    content and timestamp. New members get the earliest zip timestamp: the same inputs give
    the same bytes.
    """
    if not extra:
        return data
    if record is None:
        return zips.append(data, extra)
    listed = "".join(f"{name},,\n" for name in sorted(extra)).encode()  # a .pyc needs no hash (PEP 376)
    return zips.rewrite(data, lambda name, body: (name, body + listed if name == record else body), extra)


def strip(data: bytes) -> bytes:
    """`data` (a zip) without its bytecode, and a wheel's RECORD without the lines naming it."""
    return zips.without(data, lambda name: name.endswith(".pyc"))


def strip_tar(data: bytes) -> bytes:
    """`data` (one of our packages, a tar.bz2) as a plain tar without its bytecode."""
    return zips.plain_tar(data, lambda name: name.endswith(".pyc"))


if __name__ == "__main__":  # `python -m build_hooks.runtime.bytecode`: stage 1 ahead of a build (./dev does it)
    pinned = {name: assets.fetch(name).read_bytes() for name in assets.PINNED}
    done = runtime(pinned, bundle.lock(None).encode())
    print(f"{len(done.pycs)} modules with bytecode" if done is not None else "no node: no bytecode", file=sys.stderr)
